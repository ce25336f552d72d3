r"""Joints of two masked tokens derived from an MLM's conditionals (chapter 2).

Torroba Hennigen & Kim (2023), *Deriving Language Models from Masked Language Models*.
For two masked positions A and B of a sentence an MLM gives the conditionals
:math:`q(a \mid b)`, :math:`q(b \mid a)` and the both-masked marginals; the modules, in
reading order:

==================  ===========================================================================
:mod:`.conditionals` :class:`PairConditionals`; querying a model (:func:`iter_pair_conditionals`,
                     :func:`pair_conditionals`, :func:`topk_candidates`) through
                     :mod:`mlmbook.queries`
:mod:`.derive`       the joints :func:`naive`, :func:`mrf`, :func:`mrf_local`, :func:`hcb`
                     (:func:`derive_all`), and :func:`support_blocks` / :func:`match_blocks`
:mod:`.ag`           the Arnold–Gokhale joint :func:`ag` (accelerated, with an error bound)
:mod:`.metrics`      divergences to the MLM and to the truth, perplexities, :func:`evaluate_pair`,
                     :func:`stack`, :func:`summarize`
:mod:`.truth`        the toy world's exact joints, :func:`truth_joints`, :func:`restrict_joint`
:mod:`.sampling`     the sample of pairs, :func:`choose_pairs`
:mod:`.regime`       one rung of the model ladder: :func:`rung_pairs`, :func:`rung_point`,
                     :func:`verdict`, :func:`gain_trend`
==================  ===========================================================================

KL, total variation, perplexity and the bootstrap are those of :mod:`mlmbook.stats`.
"""
from .ag import AGResult, ag, ag_objective
from .conditionals import (PairConditionals, default_candidates, gold_index, iter_pair_conditionals,
                           pair_conditionals, pair_conditionals_batch, topk_candidates)
from .derive import (METHODS, default_pivot, derive_all, hcb, match_blocks, mrf, mrf_local, naive,
                     support_blocks)
from .metrics import (AGGREGATE, compatibility, conditional_divergence, conditional_divergences,
                      evaluate_pair, kl_joint, pair_ppl, stack, summarize, truth_conditional_kl, tv_joint,
                      unary_ppl)
from .sampling import choose_pairs
from .regime import LADDER_METHODS, gain_trend, rung_pairs, rung_point, verdict
from .truth import restrict_joint, truth_joints

__all__ = ["PairConditionals", "default_candidates", "gold_index", "iter_pair_conditionals", "pair_conditionals",
           "pair_conditionals_batch", "topk_candidates", "METHODS", "naive", "mrf", "mrf_local", "default_pivot",
           "hcb", "support_blocks", "match_blocks", "derive_all", "AGResult", "ag", "ag_objective",
           "compatibility", "conditional_divergence", "conditional_divergences", "kl_joint", "tv_joint",
           "truth_conditional_kl", "pair_ppl", "unary_ppl", "evaluate_pair", "stack", "AGGREGATE", "summarize",
           "truth_joints", "restrict_joint", "LADDER_METHODS", "rung_pairs", "rung_point", "verdict", "gain_trend", "choose_pairs"]
