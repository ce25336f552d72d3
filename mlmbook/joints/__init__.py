r"""Joints of two (or k) masked tokens derived from an MLM's conditionals (chapter 2).

Torroba Hennigen & Kim (2023), *Deriving Language Models from Masked Language Models*.
For two masked positions A and B of a sentence an MLM gives the conditionals
:math:`q(a \mid b)`, :math:`q(b \mid a)` and the both-masked marginals; the modules, in
reading order:

==================  ===========================================================================
:mod:`.conditionals` :class:`PairConditionals`; querying a model (:func:`iter_pair_conditionals`,
                     :func:`pair_conditionals`, :func:`topk_candidates`) through
                     :mod:`mlmbook.queries`
:mod:`.derive`       the joints :func:`naive`, :func:`mrf`, :func:`mrf_local`, :func:`hcb`
                     (:func:`derive_all`), :func:`support_blocks` / :func:`match_blocks`, and
                     :func:`anchor` (a joint's conditionals on the MLM's own marginals)
:mod:`.ag`           the Arnold–Gokhale joint :func:`ag` (accelerated, with an error bound)
:mod:`.metrics`      divergences to the MLM and to the truth, perplexities, incompatibility
                     (:func:`compatibility`, :func:`nearest_compatible`), :func:`evaluate_pair`,
                     :func:`stack`, :func:`summarize`
:mod:`.truth`        the toy world's exact joints, :func:`truth_joints`, :func:`restrict_joint`,
                     and of k positions, :func:`site_joint`, :func:`site_chain`
:mod:`.ksite`        beyond two tokens: :class:`SiteConditionals`, :func:`independent_k`,
                     :func:`chain_k`, :func:`ag_k`, :func:`topk_site_candidates`
:mod:`.sampling`     the sample: :func:`experiment_sentences`, :func:`choose_pairs`,
                     :func:`tree_distance`
:mod:`.experiment`   the experiment: :func:`measure` every joint on every pair, described in
                     :func:`methods_table` and :func:`truth_table`
:mod:`.study`        the effects of the chapter's primary questions, the rows that answer
                     them (:func:`ppl_rows`, :func:`gap_rows`) and the sample sizes (:class:`Plan`)
:mod:`.regime`       one rung of the model ladder: :func:`rung_pairs`, :func:`rung_point`,
                     :func:`per_sentence`
:mod:`.knob`         soft zeros: :func:`blocked_sample`, :func:`exact_blocks`
:mod:`.figures`      the chapter's figures (imported on their own: ``joints.figures``)
==================  ===========================================================================

KL, total variation, perplexity, intervals and the decision rule are those of :mod:`mlmbook.stats`.
"""
from .ag import TOL_FLOOR, AGResult, ag, ag_objective
from .conditionals import (
                           PairConditionals,
                           default_candidates,
                           gold_index,
                           iter_pair_conditionals,
                           pair_conditionals,
                           pair_conditionals_batch,
                           topk_candidates,
)
from .derive import METHODS, anchor, default_pivot, derive_all, hcb, match_blocks, mrf, mrf_local, naive, support_blocks
from .experiment import ROWS, cell, measure, methods_table, queries_of, truth_table
from .knob import blocked_sample, exact_blocks, word_pairs
from .ksite import (
                           K_JOINTS,
                           SiteConditionals,
                           ag_k,
                           ag_k_objective,
                           chain_k,
                           independent_k,
                           k_token_kls,
                           k_token_pools,
                           site_conditionals_batch,
                           topk_site_candidates,
)
from .metrics import (
                           AGGREGATE,
                           block_error,
                           compatibility,
                           conditional_divergence,
                           conditional_divergences,
                           evaluate_pair,
                           kl_joint,
                           nearest_compatible,
                           pair_ppl,
                           stack,
                           summarize,
                           truth_conditional_kl,
                           tv_joint,
                           unary_ppl,
)
from .regime import LADDER_METHODS, per_sentence, rung_pairs, rung_point
from .sampling import Source, choose_pairs, experiment_pairs, experiment_sentences, item_for, marked, tree_distance
from .study import (
    KL_SHARE,
    KNOB_EFFECT,
    PPL_EFFECT,
    Plan,
    exp_interval,
    gap_rows,
    ppl_rows,
)
from .truth import restrict_joint, site_chain, site_joint, truth_joints

__all__ = ["PairConditionals", "default_candidates", "gold_index", "iter_pair_conditionals", "pair_conditionals",
           "pair_conditionals_batch", "topk_candidates", "METHODS", "naive", "mrf", "mrf_local", "default_pivot",
           "hcb", "support_blocks", "match_blocks", "anchor", "derive_all", "AGResult", "ag", "ag_objective",
           "TOL_FLOOR", "compatibility", "nearest_compatible", "conditional_divergence", "conditional_divergences",
           "kl_joint", "tv_joint", "block_error", "truth_conditional_kl", "pair_ppl", "unary_ppl",
           "evaluate_pair", "stack", "AGGREGATE", "summarize", "truth_joints", "restrict_joint",
           "site_joint", "SiteConditionals", "site_conditionals_batch", "topk_site_candidates",
           "site_chain", "independent_k", "chain_k", "ag_k", "ag_k_objective", "LADDER_METHODS",
           "rung_pairs", "rung_point", "per_sentence", "choose_pairs", "experiment_sentences",
           "tree_distance", "ROWS", "cell", "measure", "methods_table", "queries_of", "truth_table",
           "blocked_sample", "exact_blocks", "word_pairs", "KL_SHARE", "KNOB_EFFECT", "PPL_EFFECT",
           "Plan", "exp_interval", "gap_rows", "ppl_rows", "K_JOINTS", "k_token_pools",
           "k_token_kls", "item_for", "marked", "experiment_pairs", "Source"]
