r"""Does inconsistency follow a pair-level quantity, and does an incompatibility budget predict a
gain?

Chapter 3 reads its MLMs' inconsistency against two quantities that other chapters compute — the
truth's conditional mutual information of a pair (chapter 1's
:func:`mlmbook.dependencies.truth_cmi`) and the distance of a pair's conditionals from the nearest
compatible joint (chapter 2's :func:`mlmbook.joints.ag`); the chapter combines them, this module
only turns the numbers into intervals of :mod:`mlmbook.stats`:

* :func:`rank_interval` — Spearman's :math:`\rho` between two per-pair quantities, bootstrapped over
  pairs, and :func:`rank_gap_interval` — how much better one quantity ranks a third than another
  does;
* :func:`budget_tracking` — Spearman's :math:`\rho` across models between their mean
  *incompatibility budget* and their mean ensemble gain, bootstrapped over the targets all
  models share.
"""
from __future__ import annotations

import numpy as np
from scipy.stats import rankdata

from .. import stats

__all__ = ["spearman", "pearson", "rank_interval", "rank_gap_interval", "budget_tracking", "target_budget"]


def spearman(x, y) -> np.ndarray:
    """Spearman's rank correlation along the last axis (ties get average ranks); NaN for a constant
    row."""
    rx, ry = rankdata(x, axis=-1), rankdata(y, axis=-1)
    rx = rx - rx.mean(axis=-1, keepdims=True)
    ry = ry - ry.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (rx * ry).sum(-1) / np.sqrt((rx ** 2).sum(-1) * (ry ** 2).sum(-1))


def pearson(x, y) -> np.ndarray:
    """Pearson's correlation along the last axis; NaN for a constant row."""
    x = x - x.mean(axis=-1, keepdims=True)
    y = y - y.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (x * y).sum(-1) / np.sqrt((x ** 2).sum(-1) * (y ** 2).sum(-1))


def rank_interval(x, y, level: float = stats.LEVEL, seed: int = 0, what: str = "pairs") -> stats.Interval:
    """Spearman's ρ between ``x`` and ``y`` with a percentile bootstrap interval over their rows.

    The estimate is Spearman's ρ of the sample; each replicate is the Pearson correlation of the
    resampled rows' sample ranks (ranked once, not again per replicate: the same statistic at the
    sample, tens of times faster at the 60,000 replicates a family's level needs)."""
    return stats.bootstrap(pearson, rankdata(x), rankdata(y), level=level, seed=seed, what=what)


def rank_gap_interval(x1, x2, y, level: float = stats.LEVEL, seed: int = 0, what: str = "pairs") -> stats.Interval:
    """How much better ``x2`` ranks ``y`` than ``x1`` does: ρ(x2, y) − ρ(x1, y) (Spearman), paired
    over rows, bootstrapped like :func:`rank_interval`."""
    r1, r2, ry = rankdata(x1), rankdata(x2), rankdata(y)
    return stats.bootstrap(lambda a, b, c: pearson(b, c) - pearson(a, c), r1, r2, ry, level=level,
                           seed=seed, what=what)


def budget_tracking(budget, gain, level: float = stats.LEVEL, seed: int = 0) -> stats.Interval:
    r"""Does the incompatibility budget predict the ensemble's gain across models?

    ``budget`` and ``gain`` are (N, R) arrays: one row per target (the same targets for every
    model), one column per model. The statistic is Spearman's ρ across the R models between the
    column means; the interval resamples targets (rows), the same draw for every model, so it
    carries the sampling noise of each model's two means (not the choice of models).
    """
    b, g = np.asarray(budget, dtype=float), np.asarray(gain, dtype=float)
    if b.shape != g.shape or b.ndim != 2 or b.shape[1] < 3:
        raise ValueError("budget_tracking needs two (targets, models) arrays of one shape with 3 or more models")
    return stats.bootstrap(lambda x, y: spearman(x.mean(-2), y.mean(-2)), b, g, level=level,
                           seed=seed, what="targets")


def target_budget(distance, sentences, targets, aux) -> np.ndarray:
    """Per target, the mean ``distance(sentences, pairs)`` of the pairs (target, auxiliary word):
    its **incompatibility budget** when ``distance`` is a pair's distance from the nearest
    compatible joint (the chapter's ``incompatibility``: chapter 2's AG objective at its minimum,
    per conditional).

    ``distance`` takes the sentences and a ``(P, 3)`` array of ``(sentence, i, j)`` rows and returns
    P values.
    """
    pairs = np.array([(n, t, a) for n, (t, ks) in enumerate(zip(targets, aux)) for a in ks], dtype=np.int64)
    d = np.asarray(distance(sentences, pairs), dtype=float)
    return np.array([d[pairs[:, 0] == n].mean() for n in range(len(targets))])
