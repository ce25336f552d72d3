"""Chapter 1: statistical dependencies between positions, and the trees they induce.

Zhang & Hashimoto (2021) and Hoover et al. (2021) score every pair of positions of a
sentence by how strongly a masked LM makes them depend on each other (conditional mutual
information, CPMI), read a tree off that score matrix, and compare it with the gold
syntactic tree by unlabelled undirected attachment score (UUAS).

The scores: ``pieces`` (sub-word pieces, piece scores -> word scores), ``cmi`` (the CMI grid, the
Gibbs chain's limit, the truth's CMI), ``policy`` (which CMI estimator a budget affords),
``truncation`` (the top-K grid on the truth), ``gibbs`` (the paper's sampler), ``cpmi`` (Hoover et
al.'s). The trees: ``trees`` (decoding, UUAS), ``baselines`` (adjacent chain, random trees), ``dmv``
(the dependency model with valence). The chapter: ``sample`` and ``design`` (its sentences),
``questions``, ``evaluate``, ``mechanism``, ``regime``, ``summary`` and ``figures`` (imported on its
own: it needs matplotlib). Intervals and answers come from :mod:`mlmbook.stats` (on the counts of
:func:`uuas_counts` and the rows of :func:`questions.uuas_rows`); gold edges from
:func:`mlmbook.corpus.edges_from_heads`.
"""
from . import design, evaluate, mechanism, questions, regime, sample, summary, truncation
from .baselines import (
    adjacent_edges,
    prufer_to_edges,
    random_counts,
    random_tree_edges,
)
from .cmi import (
    CMIGrid,
    GridSettings,
    cmi_grid,
    gibbs_limit,
    grid_rows,
    left_out_bound,
    truth_cmi,
)
from .cpmi import cpmi, cpmi_rows
from .dmv import DMV, FIRST, LATER, LEFT, RIGHT, dmv_trees
from .gibbs import GibbsSettings, cmi_gibbs
from .pieces import WINDOW, pieces_to_words
from .policy import CMIScores, cmi_candidates, cmi_scores, exact_prefix, undetermined
from .trees import (
    decode,
    eisner,
    maximum_spanning_tree,
    symmetrize,
    tree_from_scores,
    uuas,
    uuas_counts,
)

__all__ = [
    "WINDOW", "pieces_to_words", "CMIGrid", "GridSettings", "cmi_grid", "grid_rows", "gibbs_limit",
    "left_out_bound", "truth_cmi", "GibbsSettings", "cmi_gibbs", "cpmi", "cpmi_rows", "CMIScores",
    "cmi_scores", "cmi_candidates", "exact_prefix", "undetermined",
    "decode", "symmetrize", "maximum_spanning_tree", "eisner", "tree_from_scores",
    "uuas", "uuas_counts",
    "adjacent_edges", "random_tree_edges", "prufer_to_edges",
    "DMV", "LEFT", "RIGHT", "FIRST", "LATER", "dmv_trees", "random_counts",
    "design", "evaluate", "mechanism", "questions", "regime", "sample", "summary", "truncation",
]
