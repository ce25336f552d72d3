r"""Divergences and mutual information, written once for every chapter: each takes probabilities
(not logits) as array-likes and works in nats.
"""
from __future__ import annotations

import numpy as np

__all__ = ["kl", "jsd", "tv", "mutual_information", "ppl", "as_array"]


def as_array(x) -> np.ndarray:
    """A float64 numpy array from an array-like or a (possibly autograd-tracked) torch tensor."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=float)


def kl(p, q, axis=-1):
    r"""Kullback–Leibler divergence :math:`\mathrm{KL}(p\|q)=\sum_x p(x)\log\frac{p(x)}{q(x)}`,
    with :math:`0\log 0 = 0` and ``inf`` where ``q`` is 0 and ``p`` is not.

    Parameters
    ----------
    p, q : array_like
        Probabilities, summed over ``axis`` (``None``: over every axis).
    """
    p, q = as_array(p), as_array(q)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * (np.log(p) - np.log(q)), 0.0)
    out = terms.sum(axis=axis)
    return float(out) if np.ndim(out) == 0 else out


def jsd(p, q, axis=-1):
    r"""Jensen–Shannon divergence :math:`\tfrac12\mathrm{KL}(p\|m)+\tfrac12\mathrm{KL}(q\|m)`,
    :math:`m=(p+q)/2`; finite, symmetric, at most :math:`\log 2`."""
    p, q = as_array(p), as_array(q)
    m = (p + q) / 2
    return 0.5 * kl(p, m, axis) + 0.5 * kl(q, m, axis)


def tv(p, q, axis=None):
    r"""Total variation distance :math:`\tfrac12\sum_x |p(x)-q(x)|` (over every axis by default):
    the share of probability mass that must move to turn ``q`` into ``p``."""
    out = 0.5 * np.abs(as_array(p) - as_array(q)).sum(axis=axis)
    return float(out) if np.ndim(out) == 0 else out


def mutual_information(P) -> float | np.ndarray:
    r"""Mutual information (nats) of joints ``P[..., a, b]`` (normalised here).

    .. math:: I(A; B) = \sum_{a, b} P_{ab} \log \frac{P_{ab}}{P_{a\cdot} P_{\cdot b}} \;\ge 0,

    with :math:`0 \log 0 = 0`; rounding below zero is clipped to 0. Returns a float for one
    joint, an array for a stack.
    """
    P = as_array(P)
    P = P / P.sum(axis=(-2, -1), keepdims=True)
    pa, pb = P.sum(-1, keepdims=True), P.sum(-2, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(P > 0, P * (np.log(P) - np.log(pa) - np.log(pb)), 0.0)
    mi = np.maximum(terms.sum(axis=(-2, -1)), 0.0)
    return float(mi) if mi.ndim == 0 else mi


def ppl(log_probs, axis=-1):
    r"""Per-token perplexity of pairs: :math:`\exp(-\overline{\log p}/2)` (P-PPL, U-PPL)."""
    return np.exp(-np.mean(log_probs, axis=axis) / 2)
