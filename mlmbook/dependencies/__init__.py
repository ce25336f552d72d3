"""Chapter 1: statistical dependencies between positions, and the trees they induce.

Zhang & Hashimoto (2021) and Hoover et al. (2021) score every pair of positions of a
sentence by how strongly a masked LM makes them depend on each other (conditional mutual
information, CPMI), read a tree off that score matrix, and compare it with the gold
syntactic tree by unlabelled undirected attachment score (UUAS).

==============  ===========================================================================
module          what
==============  ===========================================================================
``pieces``      sub-word pieces, the pairs to score, piece scores -> word scores
``cmi``         the exact CMI grid (full or top-K), the Gibbs chain's limit, the truth's CMI
``gibbs``       the paper's Monte Carlo estimator of CMI
``cpmi``        Hoover et al.'s contextual PMI
``trees``       decoding (maximum spanning tree, Eisner), UUAS counting
``baselines``   adjacent chain, uniformly random trees, random projective trees
``dmv``         the dependency model with valence, trained by EM
``sample``      the sentences scored (punctuation read, not scored), recall by relation
``evaluate``    a model's trees and counts, its CMI against the truth's, paired verdicts
``regime``      the ladder of models against the truth's trees
``figures``     the chapter's figures, one function each (imported on its own: it needs matplotlib)
==============  ===========================================================================

Intervals and verdicts come from :mod:`mlmbook.stats` (:func:`~mlmbook.stats.ratio` on the
counts of :func:`uuas_counts`, :func:`~mlmbook.stats.decide`); :func:`evaluate.compare` does
both for two parsers. Gold edges: :func:`mlmbook.corpus.edges_from_heads`.
"""
from . import evaluate, regime, sample
from .baselines import (
    adjacent_edges,
    prufer_to_edges,
    random_projective_tree,
    random_tree_edges,
)
from .cmi import CMIGrid, cmi_grid, gibbs_limit, grid_rows, left_out_bound, truth_cmi
from .cpmi import cpmi
from .dmv import DMV, FIRST, LATER, LEFT, RIGHT
from .gibbs import cmi_gibbs
from .pieces import WINDOW, pieces_to_words
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
    "WINDOW", "pieces_to_words", "CMIGrid", "cmi_grid", "grid_rows", "gibbs_limit", "left_out_bound",
    "truth_cmi", "cmi_gibbs", "cpmi",
    "decode", "symmetrize", "maximum_spanning_tree", "eisner", "tree_from_scores",
    "uuas", "uuas_counts", "sentence_uuas",
    "adjacent_edges", "random_tree_edges", "random_projective_tree", "prufer_to_edges",
    "DMV", "LEFT", "RIGHT", "FIRST", "LATER", "evaluate", "regime", "sample",
]
