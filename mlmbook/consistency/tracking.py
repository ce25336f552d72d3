r"""Does an incompatibility budget predict the ensemble's gain? :func:`budget_tracking`: Spearman's
:math:`\rho` across models between their mean *incompatibility budget* (:func:`target_budget`) and
their mean ensemble gain, with a bootstrap interval of :mod:`mlmbook.stats`.
"""
from __future__ import annotations

import numpy as np
from scipy.stats import rankdata

from .. import stats

__all__ = ["spearman", "budget_tracking", "target_budget"]


def spearman(x, y) -> np.ndarray:
    """Spearman's rank correlation along the last axis (ties get average ranks); NaN if constant."""
    rx, ry = rankdata(x, axis=-1), rankdata(y, axis=-1)
    rx = rx - rx.mean(axis=-1, keepdims=True)
    ry = ry - ry.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (rx * ry).sum(-1) / np.sqrt((rx ** 2).sum(-1) * (ry ** 2).sum(-1))


def budget_tracking(budget, gain) -> stats.Interval:
    r"""Does the incompatibility budget predict the ensemble's gain across models?

    ``budget`` and ``gain`` are (N, R) arrays: one row per target (the same for every model), one
    column per model. The statistic is Spearman's ρ across the R models between the column means;
    the 95 % interval resamples targets (rows), the same draw for every model.
    """
    b, g = np.asarray(budget, dtype=float), np.asarray(gain, dtype=float)
    if b.shape != g.shape or b.ndim != 2 or b.shape[1] < 3:
        raise ValueError("budget_tracking needs two (targets, models) arrays of one shape with 3 or more models")
    return stats.bootstrap(lambda x, y: spearman(x.mean(-2), y.mean(-2)), b, g, what="targets")


def target_budget(distance, sentences, targets, aux) -> np.ndarray:
    """Per target, the mean ``distance(sentences, pairs)`` of the pairs (target, auxiliary word),
    ``pairs`` a ``(P, 3)`` array of ``(sentence, i, j)``: its **incompatibility budget** when
    ``distance`` is a pair's distance from the nearest compatible joint."""
    pairs = np.array([(n, t, a) for n, (t, ks) in enumerate(zip(targets, aux)) for a in ks], dtype=np.int64)
    d = np.asarray(distance(sentences, pairs), dtype=float)
    return np.array([d[pairs[:, 0] == n].mean() for n in range(len(targets))])
