r"""Chapter 5's primary questions: the paper's claims, their effects of interest, and the rows that answer them.

Sana et al. (2026) claim that an MLM's conditionals need not come from any joint (the rectangle
test) and that its tempered Glauber chain mixes in :math:`O(n \log n)` steps at high temperature.
The chapter tests those claims in four questions (:func:`primary_questions`), one Bonferroni family
(:class:`mlmbook.stats.Study`); every unit is a sentence.

=============  ==========================================================================  ===============
key            measure                                                                     needs the truth
=============  ==========================================================================  ===============
``rectangles`` :math:`\log_{10}` of the MLM's random-pair :math:`|\Delta|` over the float32 noise   no
               floor (orders of magnitude above rounding)
``growth_hot`` exponent :math:`\beta` of the MLM chain's exact :math:`t_\text{mix}` against   yes (frames)
               :math:`m`, at :math:`T = 3`
``shape_hot``  leave-one-out squared log error of :math:`t \propto m^\beta`, relative to     yes
               :math:`t \propto m H_m`, at :math:`T = 3`
``growth_t1``  the exponent against :math:`m` at :math:`T = 1`                              yes
=============  ==========================================================================  ===============

The exact frames need the toy language's truth (it picks each site's rival word), so a model
without it answers the rectangle question only: its family is that one question, declared before
any data from the model alone.

**Exponents as ratios of sums.** The least-squares slope of :math:`y_k = \log t_k` on
:math:`x_k = \log m_k` over sentences :math:`k` is :math:`\hat\beta = \sum_k \tilde x_k \tilde y_k /
\sum_k \tilde x_k^2` (centred values): a ratio of per-sentence sums, so the study layer's tests apply
with the sentence as the unit (:func:`slope_rows`), and its linearised standard error is the
heteroskedasticity-robust (sandwich) one. The :math:`m \log m` hypothesis is the coupon collector's
shape :math:`t \propto m H_m`; over the design's lengths it has an exponent against :math:`m` of its own,
:math:`\beta_\star` (:func:`mlogm_exponent`, about 1.39 for :math:`n = 4 \dots 11`): the growth questions
test :math:`\beta` against :math:`\beta_\star` with the trust issue's margin of 0.1, which tells
:math:`m \log m` apart from :math:`m^{1.25}` and :math:`m^{1.5}` but not from :math:`m^{\beta_\star}`.

**The model comparison** (:func:`shape_rows`) is what could tell them apart: each sentence's
squared error of :math:`\log t` when it is left out of the fit, under the power law (two free
parameters) and under :math:`m H_m` (one), summed into
:math:`(\text{MSE}_\text{power} - \text{MSE}_{mH}) / \text{MSE}_{mH}`. A 10 % difference is the effect of
interest; within it the two shapes fit alike on these lengths.

Planning standard deviations (:data:`PLANNING_SD`) are the committed plan's (:mod:`mlmbook.plans`):
the per-sentence standard deviations of each question's unit contributions in the ``pilot`` profile
(the full design's lengths, on sentences and models of its own).
"""
from __future__ import annotations

import numpy as np

from ..plans import fill, planning_sds
from ..stats import Question

__all__ = ["TINY", "RECT_EFFECT", "GROWTH_EFFECT", "SHAPE_EFFECT", "CHAPTER", "PLANNING_SD", "primary_questions",
           "mlogm_exponent", "coupon", "slope_rows", "shape_rows", "rectangle_rows"]

RECT_EFFECT = 1.0
"""One order of magnitude above the float32 noise floor: the rectangles' effect of interest."""
TINY = 1e-16
r"""A :math:`|\Delta|` below this (float64 rounding) counts as this, so that its logarithm is finite."""
GROWTH_EFFECT = 0.1
"""The growth exponent's margin around :math:`m \\log m`'s (issue 34): tells :math:`m^{1.25}`, :math:`m^{1.5}` apart."""
SHAPE_EFFECT = 0.1
"""A leave-one-out squared error 10 % higher or lower under the power law than under :math:`m H_m`."""

CHAPTER = "05_glauber"
PLANNING_SD = planning_sds(CHAPTER)
"""Per-sentence standard deviation of each question's unit contributions in the pilot: the committed plan's
(:func:`mlmbook.plans.planning_sds`; empty without a plan)."""


def coupon(m) -> np.ndarray:
    """:math:`m H_m` for ``m`` free sites: the coupon collector's expected steps to touch every site."""
    m = np.atleast_1d(np.asarray(m, dtype=np.int64))
    return np.array([k * sum(1.0 / j for j in range(1, k + 1)) for k in m])


def mlogm_exponent(lengths) -> float:
    r""":math:`\beta_\star`: the least-squares slope of :math:`\log(m H_m)` on :math:`\log m` over the units'
    sentence lengths (:math:`m = n - 1` free sites), the exponent against :math:`m` that :math:`t \propto m H_m`
    shows on exactly this design."""
    m = np.asarray(lengths, dtype=np.float64) - 1
    d, g = slope_rows(np.log(m), np.log(coupon(m.astype(np.int64))))
    return float(d.sum() / g.sum())


def primary_questions(toy: bool, lengths=None) -> list[Question]:
    """The chapter's primary questions: the rectangle question, and with the toy truth the three scaling ones.

    ``lengths`` (one per scaling unit) fixes :math:`\\beta_\\star`, the growth questions' reference,
    from the design alone (before any time is measured).
    """
    qs = [Question("rectangles", "the MLM's rectangles: log10 of |Δ| over the float32 noise floor", RECT_EFFECT,
                   "one order of magnitude over float noise", measure="", reference=0.0,
                   sample="plan.rect_sentences",
                   words={"above": "above float noise", "below": "below float noise",
                          "equivalent": "at float noise"})]
    if not toy:
        return fill(CHAPTER, qs)
    beta = mlogm_exponent(lengths)
    growth = {"above": "steeper than the coupon collector's", "below": "shallower than the coupon collector's",
              "equivalent": "as the coupon collector's (±0.1)"}
    qs += [Question("growth_hot", "T = 3: growth exponent of the MLM chain's exact mixing time", GROWTH_EFFECT,
                    "±0.1 around the coupon collector's", measure="exponent", reference=beta,
                    words=growth, sample="plan.scaling_units"),
           Question("shape_hot", "T = 3: a power law's error against the coupon collector's curve", SHAPE_EFFECT,
                    "10 % of the curve's squared error", measure="ratio", reference=0.0,
                    sample="plan.scaling_units",
                    words={"above": "the coupon collector's fits better", "below": "the power law fits better",
                           "equivalent": "the two fit alike (within 10 %)"}),
           Question("growth_t1", "T = 1: growth exponent of the MLM chain's exact mixing time", GROWTH_EFFECT,
                    "±0.1 around the coupon collector's", measure="exponent", reference=beta,
                    words=growth, sample="plan.scaling_units")]
    return fill(CHAPTER, qs)


def slope_rows(x, y) -> tuple[np.ndarray, np.ndarray]:
    r"""Per-unit contributions whose ratio of sums is the least-squares slope of ``y`` on ``x``:
    :math:`d_k = \tilde x_k \tilde y_k`, :math:`g_k = \tilde x_k^2` (values centred on their means)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    xc = x - x.mean()
    return xc * (y - y.mean()), xc ** 2


def shape_rows(lengths, times) -> tuple[np.ndarray, np.ndarray]:
    r"""Leave-one-out comparison of :math:`\log t = c + \beta \log m` (power law) with
    :math:`\log t = c + \log(m H_m)` (the coupon collector's :math:`m \log m`), one row per unit.

    Each unit is left out in turn, both models are fitted by least squares on the others and predict
    its :math:`\log t`. Returns ``(values, weights)``: the power law's squared error minus :math:`m H_m`'s,
    and :math:`m H_m`'s; their ratio of sums is the power law's relative excess error (> 0: :math:`m \log m`
    predicts better).
    """
    m = np.asarray(lengths, dtype=np.float64) - 1
    y = np.log(np.asarray(times, dtype=np.float64))
    x, c = np.log(m), np.log(coupon(m.astype(np.int64)))
    n = len(y)
    err_power, err_coupon = np.empty(n), np.empty(n)
    for k in range(n):
        keep = np.arange(n) != k
        err_coupon[k] = (y[k] - c[k] - np.mean(y[keep] - c[keep])) ** 2
        A = np.column_stack([np.ones(n - 1), x[keep]])
        coef = np.linalg.lstsq(A, y[keep], rcond=None)[0]
        err_power[k] = (y[k] - coef[0] - coef[1] * x[k]) ** 2
    return err_power - err_coupon, err_coupon


def rectangle_rows(delta, sentence, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the rectangle question: :math:`\\log_{10}(|\\Delta| / \\text{floor})` of each rectangle
    (:math:`|\\Delta|` at least :data:`TINY`), and the sentence each was drawn from (the unit)."""
    d = np.maximum(np.abs(np.asarray(delta, dtype=np.float64)), TINY)
    return np.log10(d / floor), np.asarray(sentence)
