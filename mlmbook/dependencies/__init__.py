"""Chapter 1: statistical dependencies between positions, and the trees they induce.

Zhang & Hashimoto (2021) and Hoover et al. (2021) score every pair of positions of a
sentence by how strongly a masked LM makes them depend on each other (conditional mutual
information, CPMI), read a tree off that score matrix, and compare it with the gold
syntactic tree by unlabelled undirected attachment score (UUAS).

==============  ===========================================================================
module          what
==============  ===========================================================================
``pieces``      sub-word pieces, the pairs to score, piece scores -> word scores
``cmi``         the CMI grid (full, or K candidates per position), the Gibbs chain's limit, the truth's CMI
``policy``      which CMI estimator a budget affords (exact grid, or top-K with its bound)
``truncation``  the top-K grid on the truth: exact and truncated CMI from the same exact joints
``gibbs``       the paper's Monte Carlo estimator of CMI
``cpmi``        Hoover et al.'s contextual PMI
``trees``       decoding (maximum spanning tree, Eisner), UUAS counting
``baselines``   adjacent chain, uniformly random trees, random projective trees
``dmv``         the dependency model with valence, trained by EM
``sample``      the sentences scored (punctuation read, not scored), recall by relation
``design``      chapter 1's sample: sizes per profile, a nested length-stratified order
``questions``   the rows of chapter 1's primary questions: a UUAS difference per sentence
``evaluate``    a model's trees and counts, its CMI against the truth's
``mechanism``   the model's CMI on gold edges the truth leaves at zero, against other such pairs
``regime``      the ladder of models beside the truth's trees (descriptive)
``summary``     chapter 1's tables: its numbers beside the papers', every toy model's fit beside its trees
``figures``     the chapter's figures, one function each (imported on its own: it needs matplotlib)
==============  ===========================================================================

Intervals and answers come from :mod:`mlmbook.stats` (:func:`~mlmbook.stats.ratio` on the counts of
:func:`uuas_counts`, :func:`~mlmbook.stats.describe` and the chapter's study on the rows of
:func:`questions.uuas_rows`). Gold edges: :func:`mlmbook.corpus.edges_from_heads`.
"""
from . import design, evaluate, mechanism, questions, regime, sample, summary, truncation
from .baselines import (
    adjacent_edges,
    prufer_to_edges,
    random_counts,
    random_projective_tree,
    random_tree_edges,
)
from .cmi import CMIGrid, cmi_grid, gibbs_limit, grid_rows, left_out_bound, truth_cmi
from .cpmi import cpmi, cpmi_rows
from .dmv import DMV, FIRST, LATER, LEFT, RIGHT, dmv_trees
from .gibbs import cmi_gibbs
from .pieces import WINDOW, pieces_to_words
from .policy import CMIScores, cmi_candidates, cmi_scores, exact_prefix, undetermined
from .trees import (
    decode,
    eisner,
    maximum_spanning_tree,
    sentence_uuas,
    symmetrize,
    tree_from_scores,
    uuas,
    uuas_counts,
)

__all__ = [
    "WINDOW", "pieces_to_words", "CMIGrid", "cmi_grid", "grid_rows", "gibbs_limit",
    "left_out_bound", "truth_cmi", "cmi_gibbs", "cpmi", "cpmi_rows", "CMIScores", "cmi_scores",
    "cmi_candidates", "exact_prefix", "undetermined",
    "decode", "symmetrize", "maximum_spanning_tree", "eisner", "tree_from_scores",
    "uuas", "uuas_counts", "sentence_uuas",
    "adjacent_edges", "random_tree_edges", "random_projective_tree", "prufer_to_edges",
    "DMV", "LEFT", "RIGHT", "FIRST", "LATER", "dmv_trees", "random_counts",
    "design", "evaluate", "mechanism", "questions", "regime", "sample", "summary", "truncation",
]
