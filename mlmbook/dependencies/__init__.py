"""Chapter 1: statistical dependencies between positions, and the trees they induce.

Zhang & Hashimoto (2021) and Hoover et al. (2021) score every pair of positions of a sentence by how
strongly a masked LM makes them depend on each other (conditional mutual information, CPMI), read a
tree off that score matrix, and compare it with the gold tree by unlabelled undirected attachment
score (UUAS). ``figures`` is imported on its own (it needs matplotlib).
"""
from . import design, evaluate, mechanism, questions, regime, sample, summary, truncation
from .baselines import adjacent_edges, random_counts
from .cmi import GridSettings, cmi_grid, gibbs_limit, grid_rows, left_out_bound, truth_cmi
from .cpmi import cpmi, cpmi_rows
from .dmv import dmv_trees
from .gibbs import GibbsSettings, cmi_gibbs
from .pieces import WINDOW, pieces_to_words
from .policy import cmi_candidates, cmi_scores, exact_prefix, undetermined
from .trees import decode, maximum_spanning_tree, uuas_counts

__all__ = [
    "WINDOW", "pieces_to_words", "GridSettings", "cmi_grid", "grid_rows", "gibbs_limit",
    "left_out_bound", "truth_cmi", "GibbsSettings", "cmi_gibbs", "cpmi", "cpmi_rows", "cmi_scores",
    "cmi_candidates", "exact_prefix", "undetermined", "decode", "maximum_spanning_tree",
    "uuas_counts", "adjacent_edges", "dmv_trees", "random_counts",
    "design", "evaluate", "mechanism", "questions", "regime", "sample", "summary", "truncation",
]
