r"""Tests that fit the data: an estimate, its p-value and the interval that inverts the test.

Every comparison in the book reduces to **per-unit contributions**: unit :math:`k` (a sentence, a
sentence cluster, a training seed) contributes :math:`d_k` to a numerator and :math:`g_k \ge 0`
to a denominator, and the quantity is the ratio of sums

.. math:: \hat\theta = \frac{\sum_k d_k}{\sum_k g_k}

— a plain mean when every :math:`g_k = 1`, a corpus UUAS difference when :math:`d_k` is the
difference of correct edges and :math:`g_k` the gold edges of sentence :math:`k`. Rows are summed
into their independent unit first (:func:`by_unit`).

Which test, by the data (:func:`estimate` chooses):

=========================  ===================================================================
data                       test and interval
=========================  ===================================================================
fewer than 30 units        exact paired **sign-flip** test (every sign pattern up to
                           :math:`2^{16}`, else Monte Carlo with its error stated); the
                           interval is the set of shifts :math:`\delta` it does not reject
30 units or more           **studentized bootstrap** (bootstrap-t) over units, linearised
                           standard error in every replicate
training seeds (a recipe)  Student **t over the seed means**
=========================  ===================================================================

Under :math:`H_0: \theta = \delta` the centred contributions :math:`e_k = d_k - \delta g_k` are
symmetric about zero, so flipping their signs leaves their distribution unchanged; the p-value is
the share of sign patterns whose :math:`|\sum_k s_k e_k|` reaches the observed :math:`|\sum_k e_k|`
(at least :func:`min_p`). Every test also inverts at :func:`tost_level` (:attr:`Tested.tost`).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t

from .intervals import Interval, replicates_for, t_interval, undefined

__all__ = ["Tested", "by_unit", "sign_flip", "Draws", "bootstrap_t", "seed_t", "estimate", "fieller",
           "min_p",
           "EXACT_UNITS", "SMALL_UNITS", "MC_DRAWS", "sign_flip_p", "tost_level"]

EXACT_UNITS = 16
"""Up to this many units the sign-flip test enumerates every sign pattern (2^16 = 65,536)."""
SMALL_UNITS = 30
"""Below this many units the sign-flip test is used; from it on, the studentized bootstrap."""
MC_DRAWS = 40_000
"""Sign patterns drawn when there are too many to enumerate."""


@dataclass(frozen=True)
class Tested:
    r"""An :class:`~mlmbook.stats.Interval` (``interval``: the estimate and the interval that
    inverts the test) with the test behind it: ``p`` (two-sided, against ``reference``), ``min_p``
    (the smallest p this test could give at this sample size; 1/B for a bootstrap), ``p_error`` (its
    Monte Carlo standard error, 0 when exact), ``test`` (``"sign-flip"``, ``"bootstrap-t"`` or
    ``"seed t"``) and ``tost``: the same test inverted at :func:`tost_level`, the interval a TOST at
    :math:`\alpha' = 1 -` ``interval.level`` reads."""

    interval: Interval
    p: float
    min_p: float
    p_error: float
    test: str
    reference: float = 0.0
    tost: Interval | None = None

    def to_record(self) -> dict:
        iv = self.interval.to_record()
        iv.pop("kind")
        tost = {} if self.tost is None else {f"tost_{k}": v for k, v in self.tost.to_record().items()
                                             if k in ("low", "high", "level")}
        return {"kind": "tested", "p": self.p, "min_p": self.min_p, "p_error": self.p_error,
                "test": self.test, "reference": self.reference, **iv, **tost}


def tost_level(level: float) -> float:
    r"""The level of the interval behind a TOST at :math:`\alpha' = 1 - \text{level}`: :math:`1 -
    2\alpha'`. Two one-sided tests at :math:`\alpha'` reject :math:`|\theta - r| \ge \delta` exactly
    when that interval lies inside :math:`(r - \delta,\ r + \delta)`."""
    return 2 * level - 1


def by_unit(values, weights=None, units=None) -> tuple[np.ndarray, np.ndarray]:
    """Sum rows into their independent units: the per-unit sums ``(d, g)``, in the order units
    first appear.

    Parameters
    ----------
    values : array_like (N,)
        Per-row numerators (a pair's difference, a sentence's correct-edge difference).
    weights : array_like (N,), optional
        Per-row denominators (default 1: a mean over rows).
    units : array_like (N,), optional
        The unit of each row (e.g. the sentence a pair was drawn from; default: the row itself).
    """
    v = np.asarray(values, dtype=float).ravel()
    g = np.ones_like(v) if weights is None else np.asarray(weights, dtype=float).ravel()
    if v.shape != g.shape:
        raise ValueError(f"{len(v)} values but {len(g)} weights")
    if units is None:
        return v, g
    u = np.asarray(units)
    if len(u) != len(v):
        raise ValueError(f"{len(u)} unit labels for {len(v)} rows")
    _, first, inverse = np.unique(u, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))          # unit index by first appearance
    k = len(first)
    d, w = np.zeros(k), np.zeros(k)
    np.add.at(d, order[inverse], v)
    np.add.at(w, order[inverse], g)
    return d, w


def _check(d, g):
    d, g = np.asarray(d, float).ravel(), np.asarray(g, float).ravel()
    if len(d) == 0 or d.shape != g.shape:
        raise ValueError("need non-empty per-unit values and weights of one length")
    if np.any(g < 0) or not np.all(np.isfinite(d)) or not np.all(np.isfinite(g)):
        raise ValueError("per-unit values must be finite and weights non-negative")
    return d, g


def min_p(n_nonzero: int) -> float:
    """The smallest two-sided p-value a sign-flip test can give with ``n_nonzero`` non-zero units:
    :math:`2^{1-n}` (0.0 past about 1,075 units)."""
    return 1.0 if n_nonzero <= 0 else min(1.0, math.ldexp(1.0, 1 - n_nonzero))


class _Signs:
    """Sign patterns for ``n`` units: all of them (exact) or ``MC_DRAWS`` random ones."""

    def __init__(self, n: int, seed: int = 0):
        self.exact = n <= EXACT_UNITS
        if self.exact:
            self.S = np.array(list(itertools.product((1.0, -1.0), repeat=n))) if n else np.ones((1, 0))
        else:
            rng = np.random.default_rng(seed)
            self.S = rng.choice((1.0, -1.0), size=(MC_DRAWS, n))

    def p(self, e: np.ndarray) -> float:
        obs = abs(e.sum())
        tol = 1e-12 * max(1.0, np.abs(e).sum())
        hits = int((np.abs(self.S @ e) >= obs - tol).sum())
        if self.exact:
            return hits / len(self.S)
        return (hits + 1) / (len(self.S) + 1)


@dataclass(frozen=True)
class Draws:
    r"""How a resampling test draws and labels: ``seed`` of its draws (sign patterns past
    :data:`EXACT_UNITS` units, bootstrap replicates), ``what`` a unit is (for the method's label),
    ``tost``: also invert at :math:`1 - 2(1 - \text{level})` (twice the work: a descriptive interval
    skips it), ``n_boot``: bootstrap replicates (default :func:`~.intervals.replicates_for`)."""

    seed: int = 0
    what: str = "sentences"
    tost: bool = True
    n_boot: int | None = None


def sign_flip(d, g=None, level: float = 0.95, reference: float = 0.0, *,
              draws: Draws = Draws()) -> Tested:
    r"""Paired sign-flip (permutation) test of :math:`\theta = \sum d / \sum g` and its interval.

    ``d, g`` are the per-unit contributions (``g`` default ones: a mean); the p-value tests
    ``reference``. The interval is every :math:`\delta` with :math:`p(\delta) > 1 - \text{level}`,
    unbounded on a side where no shift can be rejected (too few units for the level); ``tost`` is
    the same inversion at :math:`p(\delta) > 2(1 - \text{level})`.
    """
    d, g = _check(d, np.ones(len(np.ravel(d))) if g is None else g)
    n, G = len(d), g.sum()
    if G <= 0:
        return _undefined("the denominator is zero (0/0)", n, level, "sign-flip", reference)
    theta = float(d.sum() / G)
    what = draws.what
    signs = _Signs(n, draws.seed)
    alpha = 1 - level
    p_at = lambda delta: signs.p(d - delta * g)                         # noqa: E731
    # the most extreme shifts: all centred contributions of one sign
    ratios = d[g > 0] / g[g > 0]
    span = float(np.ptp(ratios)) if len(ratios) > 1 else 1.0
    scale = max(span, abs(theta), 1e-12)
    lo, hi = (_end(p_at, theta, side, alpha, scale) for side in (-1, 1))
    how = (f"exact sign-flip over {n} {what} ({len(signs.S):,} sign patterns)" if signs.exact
           else f"sign-flip over {n} {what} (Monte Carlo, {len(signs.S):,} sign patterns)")
    p = p_at(reference)
    p_err = 0.0 if signs.exact else math.sqrt(max(p * (1 - p), 1e-12) / len(signs.S))
    se = _linearised_se(d, g, theta)
    iv = Interval(theta, lo, hi, level, how, n, se)
    at_2alpha = None
    if draws.tost:
        lo2, hi2 = (_end(p_at, theta, side, 2 * alpha, scale) for side in (-1, 1))
        at_2alpha = Interval(theta, lo2, hi2, tost_level(level), how, n, se)
    return Tested(iv, float(p), min_p(_nonzero(d - reference * g)), p_err, "sign-flip", reference, at_2alpha)


def sign_flip_p(d, g=None, reference: float = 0.0, seed: int = 0) -> tuple[float, float, float]:
    """Only the sign-flip test's ``(p, p_error, min_p)`` against ``reference`` (no interval)."""
    d, g = _check(d, np.ones(len(np.ravel(d))) if g is None else g)
    signs = _Signs(len(d), seed)
    e = d - reference * g
    p = signs.p(e)
    err = 0.0 if signs.exact else math.sqrt(max(p * (1 - p), 1e-12) / len(signs.S))
    return float(p), err, min_p(_nonzero(e))


def _nonzero(e: np.ndarray) -> int:
    return int(np.count_nonzero(np.abs(e) > 1e-15 * max(1.0, float(np.abs(e).max(initial=0.0)))))


def _end(p_at, theta: float, direction: int, alpha: float, scale: float) -> float:
    """The end of the inverted interval on one side: the last shift not rejected, by bisection."""
    inside = theta
    step = scale
    for _ in range(60):                                  # walk out until a shift is rejected
        outside = theta + direction * step
        if p_at(outside) <= alpha:
            break
        inside = outside
        step *= 2
        if step > 1e6 * scale:
            return direction * float("inf")
    else:
        return direction * float("inf")
    for _ in range(60):
        mid = (inside + outside) / 2
        if p_at(mid) <= alpha:
            outside = mid
        else:
            inside = mid
        if abs(outside - inside) <= 1e-10 * scale:
            break
    return float(inside)


def _linearised_se(d: np.ndarray, g: np.ndarray, theta: float) -> float:
    """Standard error of a ratio of sums by linearisation (a mean's s/√n when g = 1)."""
    n = len(d)
    if n < 2 or g.sum() <= 0:
        return float("nan")
    e = d - theta * g
    return float(math.sqrt((e ** 2).sum() * n / (n - 1)) / g.sum())


def bootstrap_t(d, g=None, level: float = 0.95, reference: float = 0.0, *,
                draws: Draws = Draws()) -> Tested:
    r"""Studentized bootstrap (bootstrap-t) of :math:`\theta = \sum d / \sum g` over units.

    Each replicate draws the units with replacement and studentizes its estimate by its own
    linearised standard error, :math:`t^* = (\theta^* - \hat\theta)/\widehat{se}^*`; the interval is
    :math:`[\hat\theta - t^*_{1-a/2}\,\widehat{se},\ \hat\theta - t^*_{a/2}\,\widehat{se}]`
    (``tost``: the same replicates' quantiles at :math:`a` and :math:`1 - a`) and the p-value the
    equal-tailed share of :math:`t^*` beyond :math:`(\hat\theta - \text{reference})/\widehat{se}`.
    """
    n_boot, what = draws.n_boot or replicates_for(level), draws.what
    d, g = _check(d, np.ones(len(np.ravel(d))) if g is None else g)
    n = len(d)
    if g.sum() <= 0:
        return _undefined("the denominator is zero (0/0)", n, level, "bootstrap-t", reference)
    theta = float(d.sum() / g.sum())
    se = _linearised_se(d, g, theta)
    rng = np.random.default_rng(draws.seed)
    ts = []
    chunk = max(1, 2_000_000 // n)
    for start in range(0, n_boot, chunk):
        idx = rng.integers(0, n, size=(min(chunk, n_boot - start), n))
        D, W = d[idx], g[idx]
        with np.errstate(invalid="ignore", divide="ignore"):
            th = D.sum(1) / W.sum(1)
            e = D - th[:, None] * W
            s = np.sqrt((e ** 2).sum(1) * n / (n - 1)) / W.sum(1)
            # a replicate whose units are all alike (many exact zeros) has no spread of its own:
            # it is studentized by the sample's standard error instead of dividing by zero
            s = np.where(s > 0, s, se)
            t = (th - theta) / s
        ts.append(t[np.isfinite(t)])
    t = np.concatenate(ts)
    a = 1 - level
    how = f"studentized bootstrap over {n} {what} ({len(t):,} replicates)"
    if not (se > 0) or not len(t):
        iv = Interval(theta, theta, theta, level, f"studentized bootstrap over {n} {what}; every unit equal", n, 0.0)
        return Tested(iv, 1.0 if theta == reference else 0.0, 1.0 / n_boot, 0.0, "bootstrap-t",
                      reference, replace(iv, level=tost_level(level)))

    def inverted(at: float, lev: float) -> Interval:
        q_lo, q_hi = np.quantile(t, [at / 2, 1 - at / 2])
        lo, hi = theta - q_hi * se, theta - q_lo * se
        return Interval(theta, float(min(lo, theta)), float(max(hi, theta)), lev, how, n, se)

    t_obs = (theta - reference) / se
    p = float(min(1.0, 2 * min((t >= t_obs).mean(), (t <= t_obs).mean())))
    p = max(p, 1.0 / len(t))
    return Tested(inverted(a, level), p, 1.0 / len(t), math.sqrt(max(p * (1 - p), 1e-12) / len(t)),
                  "bootstrap-t", reference, inverted(2 * a, tost_level(level)))


def seed_t(values, weights=None, *, seeds=None, level: float = 0.95,
           reference: float = 0.0) -> Tested:
    r"""Student t over one value per training seed: the claim is about the recipe, the seed is the
    unit.

    With :math:`k` seeds, :math:`\bar x \pm t_{1-a/2,\,k-1}\, s/\sqrt{k}` (``tost``:
    :math:`\bar x \pm t_{1-a,\,k-1}\, s/\sqrt{k}`); one seed gives no spread (*undefined*).
    ``values`` holds one value per seed or, with ``seeds`` (the training seed of each row), per-row
    contributions: each seed's value is then its rows' ratio :math:`\sum v / \sum w` (``weights``
    default 1), in the order the seeds first appear.
    """
    v = np.asarray(values, dtype=float).ravel()
    if seeds is not None:
        s = np.asarray(seeds)
        w = np.ones_like(v) if weights is None else np.asarray(weights, dtype=float).ravel()
        v = np.array([v[s == k].sum() / w[s == k].sum() for k in _ordered(s)])
    k = len(v)
    if k < 2:
        return _undefined("one trained model gives no spread between seeds", k, level, "seed t", reference)
    iv = t_interval(v, level)
    if iv.se == 0:
        p = 0.0 if iv.estimate != reference else 1.0
    else:
        p = float(2 * student_t.sf(abs(iv.estimate - reference) / iv.se, k - 1))
    return Tested(iv, p, 0.0, 0.0, "seed t", reference, t_interval(v, tost_level(level)))


def _undefined(why: str, n: int, level: float, test: str, reference: float) -> Tested:
    iv = undefined(why, n=n, level=level)
    return Tested(iv, float("nan"), 1.0, 0.0, test, reference, replace(iv, level=tost_level(level)))


def estimate(values, weights=None, *, units=None, level: float = 0.95, reference: float = 0.0,
             draws: Draws = Draws()) -> Tested:
    """The test that fits the data (see the module table; over training seeds it is :func:`seed_t`),
    on rows summed into their units (:func:`by_unit`)."""
    d, g = by_unit(values, weights, units)
    if len(d) < SMALL_UNITS:
        return sign_flip(d, g, level=level, reference=reference, draws=draws)
    return bootstrap_t(d, g, level=level, reference=reference, draws=draws)


def _ordered(labels: np.ndarray) -> list:
    _, first = np.unique(labels, return_index=True)
    return [labels[i] for i in sorted(first)]


def fieller(num: tuple[float, float], den: tuple[float, float], cov: float = 0.0,
            level: float = 0.95, df: int | None = None) -> Interval:
    r"""Fieller's interval for a ratio :math:`a/b` of two estimates.

    The interval is :math:`\{\rho : |a - \rho b| \le q\, \mathrm{sd}(a - \rho b)\}`. When the
    denominator is not significantly away from zero (:math:`b^2 \le q^2 s_b^2`, i.e. its own
    interval contains 0), that set is unbounded or the whole line: the ratio is **undefined**.
    ``num``, ``den``: each ``(estimate, standard error)``; ``cov``: their covariance; the quantile
    is Student's on ``df`` degrees of freedom (default: normal).
    """
    (a, se_num), (b, se_den) = (float(num[0]), num[1]), (float(den[0]), den[1])
    q = float(student_t.ppf(0.5 + level / 2, df) if df else norm.ppf(0.5 + level / 2))
    A = b * b - q * q * se_den ** 2
    if A <= 0:
        return undefined("the denominator's interval contains 0", level=level)
    B = -2 * (a * b - q * q * cov)
    C = a * a - q * q * se_num ** 2
    disc = max(B * B - 4 * A * C, 0.0)
    lo, hi = (-B - math.sqrt(disc)) / (2 * A), (-B + math.sqrt(disc)) / (2 * A)
    est = a / b
    se = abs(est) * math.sqrt((se_num / a) ** 2 + (se_den / b) ** 2 - 2 * cov / (a * b)) if a else se_num / abs(b)
    return Interval(est, min(lo, est), max(hi, est), level, "Fieller interval of a ratio", 0, se)
