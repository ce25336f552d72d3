r"""The rows that answer chapter 5's primary questions, one per sentence. Sana et al. (2026) claim
that an MLM's conditionals need not come from any joint (the rectangle test) and that its tempered
Glauber chain mixes in :math:`O(n \log n)` steps at high temperature. The least-squares slope of
:math:`\log t_k` on :math:`\log m_k` over sentences :math:`k` is a ratio of per-sentence sums
(:func:`slope_rows`), so the study layer's tests apply, with the heteroskedasticity-robust
(sandwich) standard error. The growth questions test :math:`\beta` against the exponent
:math:`\beta_\star` of the coupon collector's :math:`t \propto m H_m` over the design's lengths
(:func:`mlogm_exponent`, about 1.39 for :math:`n = 4 \dots 11`) with a margin of 0.1;
:func:`shape_rows` compares the two shapes, with 10 % the effect of interest.
"""
from __future__ import annotations

import numpy as np

__all__ = ["TINY", "mlogm_exponent", "coupon", "slope_rows", "shape_rows", "rectangle_rows"]

TINY = 1e-16
r"""A :math:`|\Delta|` below this (float64 rounding) counts as this, so that its logarithm is
finite."""


def coupon(m) -> np.ndarray:
    """:math:`m H_m` for ``m`` free sites: the coupon collector's expected steps to touch every
    site."""
    m = np.atleast_1d(np.asarray(m, dtype=np.int64))
    return np.array([k * sum(1.0 / j for j in range(1, k + 1)) for k in m])


def mlogm_exponent(lengths) -> float:
    r""":math:`\beta_\star`: the least-squares slope of :math:`\log(m H_m)` on :math:`\log m` over
    the units' sentence lengths (:math:`m = n - 1` free sites), the exponent against :math:`m` that
    :math:`t \propto m H_m` shows on exactly this design."""
    m = np.asarray(lengths, dtype=np.float64) - 1
    d, g = slope_rows(np.log(m), np.log(coupon(m.astype(np.int64))))
    return float(d.sum() / g.sum())


def slope_rows(x, y) -> tuple[np.ndarray, np.ndarray]:
    r"""Per-unit contributions whose ratio of sums is the least-squares slope of ``y`` on ``x``:
    :math:`d_k = \tilde x_k \tilde y_k`, :math:`g_k = \tilde x_k^2` (values centred on their
    means)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    xc = x - x.mean()
    return xc * (y - y.mean()), xc ** 2


def shape_rows(lengths, times) -> tuple[np.ndarray, np.ndarray]:
    r"""Leave-one-out comparison of :math:`\log t = c + \beta \log m` (power law) with
    :math:`\log t = c + \log(m H_m)` (the coupon collector's :math:`m \log m`), one row per unit.

    Each unit is left out in turn, both models are fitted by least squares on the others and predict
    its :math:`\log t`. Returns ``(values, weights)``: the power law's squared error minus :math:`m
    H_m`'s, and :math:`m H_m`'s; their ratio of sums is the power law's relative excess error (> 0:
    :math:`m \log m` predicts better).
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
    """Rows of the rectangle question: :math:`\\log_{10}(|\\Delta| / \\text{floor})` of each
    rectangle (:math:`|\\Delta|` at least :data:`TINY`), and the sentence each was drawn from (the
    unit)."""
    d = np.maximum(np.abs(np.asarray(delta, dtype=np.float64)), TINY)
    return np.log10(d / floor), np.asarray(sentence)
