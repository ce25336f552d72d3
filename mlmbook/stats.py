r"""Divergences, mutual information and bootstrap intervals — written once, used by every chapter.

All functions take probabilities (not logits) as array-likes and work in nats.

============================  ==========================================================
function                      quantity
============================  ==========================================================
:func:`kl`                    :math:`\mathrm{KL}(p\|q)=\sum_x p(x)\log\frac{p(x)}{q(x)}`
:func:`jsd`                   Jensen–Shannon divergence, at most :math:`\log 2`
:func:`tv`                    total variation :math:`\tfrac12\sum_x|p(x)-q(x)|`
:func:`mutual_information`    :math:`I(A;B)` of a two-way joint (or a stack of them)
:func:`bootstrap`             percentile interval of a statistic, resampling rows jointly
:func:`ratio_bootstrap`       interval of :math:`\sum c_k/\sum g_k` (e.g. corpus UUAS), paired or not
============================  ==========================================================
"""
from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["kl", "jsd", "tv", "mutual_information", "bootstrap", "ratio_bootstrap", "ppl", "side_of_zero"]


def _np(x) -> np.ndarray:
    """A float64 numpy array from an array-like or a (possibly autograd-tracked) torch tensor."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=float)


def kl(p, q, axis=-1):
    r"""Kullback–Leibler divergence :math:`\mathrm{KL}(p\|q)=\sum_x p(x)\log\frac{p(x)}{q(x)}`.

    Parameters
    ----------
    p, q : array_like
        Probabilities, summed over ``axis`` (``None``: over every axis).
    axis : int, tuple or None

    Returns
    -------
    float or ndarray
        :math:`0\log 0 = 0`; ``inf`` where ``q`` is 0 and ``p`` is not.
    """
    p, q = _np(p), _np(q)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * (np.log(p) - np.log(q)), 0.0)
    out = terms.sum(axis=axis)
    return float(out) if np.ndim(out) == 0 else out


def jsd(p, q, axis=-1):
    r"""Jensen–Shannon divergence :math:`\tfrac12\mathrm{KL}(p\|m)+\tfrac12\mathrm{KL}(q\|m)`,
    :math:`m=(p+q)/2`; finite, symmetric, at most :math:`\log 2`."""
    p, q = _np(p), _np(q)
    m = (p + q) / 2
    return 0.5 * kl(p, m, axis) + 0.5 * kl(q, m, axis)


def tv(p, q, axis=None):
    r"""Total variation distance :math:`\tfrac12\sum_x |p(x)-q(x)|` (over every axis by default).

    The share of probability mass that must move to turn ``q`` into ``p``: unlike a maximum
    per-cell error it sees mass spread thinly over many wrong cells.
    """
    out = 0.5 * np.abs(_np(p) - _np(q)).sum(axis=axis)
    return float(out) if np.ndim(out) == 0 else out


def mutual_information(P) -> float | np.ndarray:
    r"""Mutual information (nats) of joints ``P[..., a, b]`` (normalised here).

    .. math:: I(A; B) = \sum_{a, b} P_{ab} \log \frac{P_{ab}}{P_{a\cdot} P_{\cdot b}} \;\ge 0,

    with :math:`0 \log 0 = 0`; rounding below zero is clipped to 0. Returns a float for one
    joint, an array for a stack.
    """
    P = _np(P)
    P = P / P.sum(axis=(-2, -1), keepdims=True)
    pa, pb = P.sum(-1, keepdims=True), P.sum(-2, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(P > 0, P * (np.log(P) - np.log(pa) - np.log(pb)), 0.0)
    mi = np.maximum(terms.sum(axis=(-2, -1)), 0.0)
    return float(mi) if mi.ndim == 0 else mi


def ppl(log_probs, axis=-1):
    r"""Per-token perplexity of pairs: :math:`\exp(-\overline{\log p}/2)` (P-PPL, U-PPL)."""
    return np.exp(-np.mean(log_probs, axis=axis) / 2)


def _interval(reps: np.ndarray, level: float) -> tuple[float, float]:
    lo, hi = np.nanquantile(reps, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def bootstrap(stat: Callable, *samples, n_boot: int = 1000, level: float = 0.95, seed=0) -> tuple:
    r"""Percentile bootstrap interval of ``stat(*samples)``, resampling rows of all samples jointly.

    ``stat`` reduces over the last axis (e.g. ``lambda x: x.mean(-1)``, :func:`ppl`, or a
    difference of two such for a *paired* comparison: the same draw for every sample, so what
    the samples share cancels); ``samples`` are arrays of equal length N.

    Returns
    -------
    (estimate, low, high)
    """
    xs = [_np(x) for x in samples]
    n = len(xs[0])
    if n == 0 or any(len(x) != n for x in xs):
        raise ValueError("bootstrap needs non-empty samples of equal length")
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    boots = np.asarray(stat(*[x[idx] for x in xs]), dtype=float)
    return (float(stat(*xs)), *_interval(boots, level))


def ratio_bootstrap(correct, total, minus=None, n_boot: int = 1000, level: float = 0.95,
                    seed=0) -> tuple[float, float, float]:
    r"""A ratio of sums over units (sentences), with a percentile bootstrap over units.

    .. math:: r = \frac{\sum_k c_k}{\sum_k g_k}
       \qquad\text{or, paired,}\qquad
       \Delta = \frac{\sum_k (c_k - c'_k)}{\sum_k g_k}

    Each replicate draws the units with replacement — the same draw for ``correct`` and
    ``minus`` — so that what two parsers share (a sentence's difficulty) cancels.

    Parameters
    ----------
    correct, total : array_like (m,)
        Per-unit counts, e.g. correct edges and gold edges of each sentence.
    minus : array_like (m,), optional
        The other method's per-unit counts, for a paired difference.

    Returns
    -------
    (estimate, low, high)
        Replicates whose denominator sums to zero are left out of the interval; an estimate
        whose own denominator is zero (nothing to divide, e.g. no headroom left) is reported
        as 0, with an interval of 0 where no replicate is defined either.
    """
    c, g = _np(correct), _np(total)
    d = c if minus is None else c - _np(minus)
    if not (d.shape == g.shape) or d.ndim != 1 or len(g) == 0:
        raise ValueError("need equal-length, non-empty 1-d arrays")
    idx = np.random.default_rng(seed).integers(0, len(g), size=(n_boot, len(g)))
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = d[idx].sum(axis=1) / g[idx].sum(axis=1)
    reps[~np.isfinite(reps)] = np.nan
    estimate = float(d.sum() / g.sum()) if g.sum() != 0 else 0.0
    if np.isnan(reps).all():
        return estimate, estimate, estimate
    return (estimate, *_interval(reps, level))


def side_of_zero(low: float, high: float, above: str = "above", below: str = "below",
                 neither: str = "indistinguishable") -> str:
    """The book's one rule for a verdict on a difference: ``above`` when its interval lies
    entirely above 0, ``below`` when entirely below, else ``neither`` — never a verdict from a
    point estimate alone."""
    return above if low > 0 else below if high < 0 else neither
