r"""Masked diffusion (chapter 6): an MLM read as a generator that reveals tokens in some order.

==============  ======================================================================================
module          what
==============  ======================================================================================
``exact``       the :math:`2^n` masked queries of one sentence (:func:`reveal_table`) and what they
                give exactly: the random-order mixture and the random-order sampler with ``k``
                positions per step (:func:`mixture`), the NELBO (:func:`nelbo`), left to right
``sample``      the reveal samplers simulated (:func:`simulate`), the confidence-ordered sampler's
                probability of a sentence (:func:`confident_log_prob`), the NELBO by Monte Carlo
``measure``     the chapter's measurements as functions (per sentence, per sampler, per recipe)
``figures``     the chapter's figures
==============  ======================================================================================
"""
from .exact import MAX_TOKENS, left_to_right, mixture, nelbo, reveal_table, truth_log_prob
from .sample import ORDERS, confident_log_prob, distinct_share, nelbo_mc, simulate

__all__ = ["MAX_TOKENS", "reveal_table", "mixture", "nelbo", "left_to_right", "truth_log_prob",
           "ORDERS", "simulate", "confident_log_prob", "nelbo_mc", "distinct_share"]
