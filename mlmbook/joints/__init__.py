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
:mod:`.sampling`     the sample of pairs, :func:`choose_pairs`, with :func:`tree_distance`
:mod:`.regime`       one rung of the model ladder: :func:`rung_pairs`, :func:`rung_point`,
                     :func:`gap_interval`, :func:`gain_trend`, :func:`per_sentence`
:mod:`.verdicts`     comparisons in words, from verdicts only: :func:`paper_agreement`,
                     :func:`best_against`
==================  ===========================================================================

KL, total variation, perplexity, the bootstrap and the decision rule are those of
:mod:`mlmbook.stats`.
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
from .ksite import (
                           SiteConditionals,
                           ag_k,
                           ag_k_objective,
                           chain_k,
                           independent_k,
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
from .regime import LADDER_METHODS, gain_trend, gap_interval, per_sentence, rung_pairs, rung_point
from .sampling import choose_pairs, tree_distance
from .truth import restrict_joint, site_chain, site_joint, truth_joints
from .verdicts import best_against, listing, paper_agreement, where

__all__ = ["PairConditionals", "default_candidates", "gold_index", "iter_pair_conditionals", "pair_conditionals",
           "pair_conditionals_batch", "topk_candidates", "METHODS", "naive", "mrf", "mrf_local", "default_pivot",
           "hcb", "support_blocks", "match_blocks", "anchor", "derive_all", "AGResult", "ag", "ag_objective",
           "TOL_FLOOR", "compatibility", "nearest_compatible", "conditional_divergence", "conditional_divergences",
           "kl_joint", "tv_joint", "block_error", "truth_conditional_kl", "pair_ppl", "unary_ppl", "evaluate_pair",
           "stack", "AGGREGATE", "summarize", "truth_joints", "restrict_joint", "site_joint", "SiteConditionals",
           "site_conditionals_batch", "topk_site_candidates", "site_chain", "independent_k", "chain_k", "ag_k",
           "ag_k_objective", "LADDER_METHODS",
           "rung_pairs", "rung_point", "gap_interval", "gain_trend", "per_sentence", "choose_pairs",
           "tree_distance", "paper_agreement", "best_against", "listing", "where"]
