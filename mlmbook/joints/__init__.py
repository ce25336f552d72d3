r"""Joints of two (or k) masked tokens derived from an MLM's conditionals (chapter 2).

Torroba Hennigen & Kim (2023), *Deriving Language Models from Masked Language Models*. For two
masked positions A and B an MLM gives :math:`q(a \mid b)`, :math:`q(b \mid a)` and the both-masked
marginals. :mod:`.figures` is imported on its own (``joints.figures``)."""
from .ag import TOL_FLOOR, ag, ag_objective
from .conditionals import (
                           PairConditionals,
                           default_candidates,
                           gold_index,
                           iter_pair_conditionals,
                           pair_conditionals,
                           pair_conditionals_batch,
                           topk_candidates,
)
from .derive import METHODS, anchor, default_pivot, derive_all, hcb, mrf, mrf_local, naive, support_blocks
from .experiment import cell, measure, methods_table, queries_of, truth_table
from .knob import blocked_sample, exact_blocks, word_pairs
from .ksite import (
                           K_JOINTS,
                           ag_k,
                           chain_k,
                           k_token_kls,
                           k_token_pools,
                           site_conditionals_batch,
                           topk_site_candidates,
)
from .metrics import (
                           block_error,
                           compatibility,
                           evaluate_pair,
                           kl_joint,
                           nearest_compatible,
                           tv_joint,
)
from .regime import LADDER_METHODS, rung_pairs, rung_point
from .sampling import Source, choose_pairs, experiment_pairs, experiment_sentences, item_for, marked
from .study import (
    KL_SHARE,
    KNOB_EFFECT,
    PPL_EFFECT,
    Plan,
    gap_rows,
    ppl_rows,
)
from .truth import site_chain, site_joint, truth_joints

__all__ = ["PairConditionals", "default_candidates", "gold_index", "iter_pair_conditionals",
           "pair_conditionals", "pair_conditionals_batch", "topk_candidates", "METHODS", "naive",
           "mrf", "mrf_local", "default_pivot", "hcb", "support_blocks", "anchor", "derive_all",
           "ag", "ag_objective", "TOL_FLOOR", "compatibility", "nearest_compatible", "kl_joint",
           "tv_joint", "block_error", "evaluate_pair", "truth_joints", "site_joint",
           "site_conditionals_batch", "topk_site_candidates", "site_chain", "chain_k", "ag_k",
           "LADDER_METHODS", "rung_pairs", "rung_point", "choose_pairs", "experiment_sentences",
           "cell", "measure", "methods_table", "queries_of", "truth_table", "blocked_sample",
           "exact_blocks", "word_pairs", "KL_SHARE", "KNOB_EFFECT", "PPL_EFFECT", "Plan",
           "gap_rows", "ppl_rows", "K_JOINTS", "k_token_pools", "k_token_kls", "item_for", "marked",
           "experiment_pairs", "Source"]
