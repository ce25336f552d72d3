"""Intervals fit for their data — the first half of the book's one decision rule.

Every estimate a chapter turns into a verdict comes with an :class:`Interval` (it unpacks as
``estimate, low, high``), whose standard error gives the smallest effect the sample could detect.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
from scipy.stats import beta as beta_dist
from scipy.stats import norm
from scipy.stats import t as student_t

from .divergences import as_array

__all__ = ["Interval", "bootstrap", "ratio", "t_interval", "proportion", "censored_median",
           "undefined", "replicates_for", "unsigned_zero", "LEVEL"]

LEVEL = 0.95
"""The level of an interval that no chapter's verdict family has set (figures' error bars)."""

NAN = float("nan")


@dataclass(frozen=True)
class Interval:
    r"""An estimate with an interval.

    Attributes
    ----------
    estimate : float
        The point estimate (``nan`` when :attr:`defined` is False).
    low, high : float
        The interval's ends; ``high`` may be ``inf`` where the data do not bound it.
    level : float
        Its coverage, e.g. 0.95.
    method : str
        How it was computed, in words (``"percentile bootstrap over 40 sentences"``).
    n : int
        Units behind it (sentences, pairs, runs; seeds for :func:`t_interval`).
    se : float
        Standard error of the estimate (``nan`` if unknown), for the detectable effect.
    seeds : int
        Training seeds the units come from (1 when there is one model).
    lower_bound : bool
        The estimate is only a lower bound (a censored median beyond the cap: "more than").
    note : str
        Why it is undefined or censored, in words; empty otherwise.
    """

    estimate: float
    low: float
    high: float
    level: float = LEVEL
    method: str = ""
    n: int = 0
    se: float = NAN
    seeds: int = 1
    lower_bound: bool = False
    note: str = ""

    def __iter__(self):
        return iter((self.estimate, self.low, self.high))

    @property
    def defined(self) -> bool:
        """False for a quantity with no value (0/0): see :func:`undefined`."""
        return not (math.isnan(self.estimate) and not self.lower_bound)

    def format(self, digits: int = 3, unit: str = "", percent: bool = False) -> str:
        """``"0.123 [0.101, 0.146]"`` (or ``"12.3 % [10.1, 14.6]"``, ``"more than 400"``,
        ``"undefined"``, ``"0.123 [unbounded]"`` where the data bound neither end), never
        ``-0.000``."""
        if not self.defined:
            return "undefined" + (f" ({self.note})" if self.note else "")
        f = (lambda x: _num(100 * x, max(digits - 2, 0))) if percent else (lambda x: _num(x, digits))
        u = " %" if percent else (f" {unit}" if unit else "")
        if self.lower_bound:
            return f"more than {f(self.estimate)}{u}"
        if math.isinf(self.low) and math.isinf(self.high):
            return f"{f(self.estimate)}{u} [unbounded]"
        return f"{f(self.estimate)}{u} [{f(self.low)}, {f(self.high)}]"

    def glue_fields(self, digits: int = 3, unit: str = "", percent: bool = False) -> dict:
        """The parts the prose cites as ``{glue:text}`key.part```: ``text`` (:meth:`format`), ``n``,
        and ``estimate``, ``low``, ``high`` as numbers (:func:`unsigned_zero`) or, where not finite,
        as the words the page shows (``"−∞"``, ``"+∞"``, ``"undefined"``; :func:`mlmbook.record`
        declares those)."""
        words = {"estimate": "undefined", "low": "−∞", "high": "+∞"}
        parts = {name: unsigned_zero(getattr(self, name), digits) for name in words}
        return {"text": self.format(digits, unit, percent), "n": self.n,
                **{k: v if math.isfinite(v) else words[k] for k, v in parts.items()}}

    def to_record(self) -> dict:
        """A plain dict for a results file (``kind: "interval"``); infinite ends become strings."""
        return {"kind": "interval", **{k: finite_or_text(v) for k, v in asdict(self).items()}}

    @classmethod
    def from_record(cls, d: dict) -> "Interval":
        floats = ("estimate", "low", "high", "level", "se")
        return cls(**{k: float(v) if k in floats and isinstance(v, str) else v
                      for k, v in d.items() if k != "kind"})

    @classmethod
    def from_answer(cls, record: dict) -> "Interval":
        """The interval of a recorded answer (its ``interval_*`` fields)."""
        return cls.from_record({k[len("interval_"):]: v for k, v in record.items() if k.startswith("interval_")})


def _num(x: float, digits: int) -> str:
    """``x`` at ``digits`` decimals, never ``-0.000``; an exact zero is ``0``."""
    if not math.isfinite(x):
        return "∞" if x > 0 else "−∞" if x < 0 else "undefined"
    if x == 0:
        return "0"
    return f"{round(x, digits) + 0.0:.{digits}f}"          # + 0.0: never "-0.000"


def unsigned_zero(x: float, digits: int = 3) -> float:
    """``x``, or 0.0 where it is negative and rounds to zero at ``digits`` decimals: no page shows
    ``-0.000``."""
    x = float(x)
    return 0.0 if -0.5 * 10 ** -digits < x < 0 else x


def finite_or_text(v):
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def replicates_for(level: float) -> int:
    """Bootstrap replicates for a percentile interval at ``level``: enough that each tail holds
    at least 50 replicates (2,000 at 95 %; 40,000 at 99.75 %)."""
    return int(max(2000, math.ceil(50 / ((1 - level) / 2))))


def _percentile(reps: np.ndarray, level: float) -> tuple[float, float]:
    reps = reps[np.isfinite(reps)]
    lo, hi = np.quantile(reps, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def _replicates(n: int, level: float, n_boot: int | None, seed: int):
    """Index arrays ``(r, n)`` of replicates (rows drawn with replacement), a chunk at a time."""
    n_boot = n_boot or replicates_for(level)
    chunk = max(1, min(n_boot, 4_000_000 // n))
    rng = np.random.default_rng(seed)
    for start in range(0, n_boot, chunk):
        yield rng.integers(0, n, size=(min(chunk, n_boot - start), n))


def bootstrap(stat: Callable, *samples, level: float = LEVEL, n_boot: int | None = None,
              seed: int = 0, what: str = "rows") -> Interval:
    r"""Percentile bootstrap interval of ``stat(*samples)``, resampling rows of all samples jointly.

    ``stat`` reduces over the last axis (``lambda x: x.mean(-1)``, or a difference of two such
    for a *paired* comparison: the same draw for every sample, so what the samples share
    cancels). ``samples`` are arrays of equal length N.

    Parameters
    ----------
    n_boot : int, optional
        Replicates (default :func:`replicates_for` the level).
    what : str
        What a row is, for :attr:`Interval.method` ("sentences", "pairs").
    """
    xs = [as_array(x) for x in samples]
    n = len(xs[0])
    if n == 0 or any(len(x) != n for x in xs):
        raise ValueError("bootstrap needs non-empty samples of equal length")
    reps = np.concatenate([np.asarray(stat(*[x[idx] for x in xs]), dtype=float).reshape(-1)
                           for idx in _replicates(n, level, n_boot, seed)])
    est = float(stat(*xs))
    if not math.isfinite(est):
        return undefined(f"the statistic has no value on these {n} {what}", n=n, level=level)
    lo, hi = _percentile(reps, level)
    se = float(np.nanstd(reps))
    how = f"percentile bootstrap over {what}"
    return Interval(est, min(lo, est), max(hi, est), level, how, n, se)


def ratio(correct, total, minus=None, level: float = LEVEL, n_boot: int | None = None,
          seed: int = 0) -> Interval:
    r"""A ratio of sums over units, with a (cluster) bootstrap over units.

    .. math:: r = \frac{\sum_k c_k}{\sum_k g_k}
       \qquad\text{or, paired,}\qquad
       \Delta = \frac{\sum_k (c_k - c'_k)}{\sum_k g_k}

    Each replicate draws the units with replacement — the same draw for ``correct`` and
    ``minus`` — so that what two parsers share (a sentence's difficulty) cancels. For an
    unpaired ratio of counts the interval is never narrower than the Wilson interval of the
    pooled counts, so a perfect score (UUAS 1.0) does not get a zero-width interval. Undefined
    (:func:`undefined`) when the denominator sums to zero (0/0: e.g. no headroom left).
    """
    c, g = as_array(correct), as_array(total)
    d = c if minus is None else c - as_array(minus)
    if d.shape != g.shape or d.ndim != 1 or len(g) == 0:
        raise ValueError("need equal-length, non-empty 1-d arrays")
    if g.sum() == 0:
        return undefined("the denominator is zero (0/0)", n=len(g), level=level)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = np.concatenate([d[idx].sum(axis=1) / g[idx].sum(axis=1)
                               for idx in _replicates(len(g), level, n_boot, seed)])
    reps[~np.isfinite(reps)] = np.nan
    est = float(d.sum() / g.sum())
    lo, hi = _percentile(reps, level)
    se = float(np.nanstd(reps))
    how = "percentile bootstrap over sentences"
    counts = (np.all(c == np.round(c)) and np.all(g == np.round(g))
              and np.all((0 <= c) & (c <= g)))
    if minus is None and counts:
        w = proportion(int(c.sum()), int(g.sum()), level=level)
        lo, hi = min(lo, w.low), max(hi, w.high)
        se = max(se, w.se)
        how += ", never narrower than the Wilson interval of the pooled counts"
    elif counts:
        # a floor on a paired difference's se when no unit differs: the Wilson upper end of 0
        # events in the units' trials, read as the effect detectable with 80 % power
        z = norm.ppf(0.5 + level / 2)
        se = max(se, proportion(0, int(g.sum()), level=level).high / (z + norm.ppf(0.8)))
    return Interval(est, min(lo, est), max(hi, est), level, how, len(g), se)


def t_interval(values, level: float = LEVEL) -> Interval:
    """Mean and Student-t interval of one value per training seed; undefined for one value."""
    v = as_array(values).ravel()
    if len(v) < 2:
        return undefined("one seed gives no spread", n=len(v), level=level)
    se = float(v.std(ddof=1) / math.sqrt(len(v)))
    half = float(student_t.ppf(0.5 + level / 2, len(v) - 1)) * se
    m = float(v.mean())
    return Interval(m, m - half, m + half, level, f"Student t over {len(v)} seeds", len(v), se,
                    len(v))


def proportion(k: int, n: int, level: float = LEVEL, exact: bool = False) -> Interval:
    """``k`` successes in ``n`` trials: the Wilson score interval, or Clopper–Pearson with
    ``exact``; neither has zero width at 0 % or 100 %."""
    if n <= 0:
        return undefined("no trials (0/0)", n=0, level=level)
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    p = k / n
    a = 1 - level
    if exact:
        lo = 0.0 if k == 0 else float(beta_dist.ppf(a / 2, k, n - k + 1))
        hi = 1.0 if k == n else float(beta_dist.ppf(1 - a / 2, k + 1, n - k))
        how = "Clopper–Pearson"
    else:
        z = float(norm.ppf(1 - a / 2))
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        lo, hi, how = max(0.0, centre - half), min(1.0, centre + half), "Wilson"
    se = max(math.sqrt(p * (1 - p) / n), (hi - lo) / (2 * float(norm.ppf(1 - a / 2))))
    return Interval(p, min(lo, p), max(hi, p), level, f"{how} interval of {k}/{n}", n, se)


def censored_median(times, censored, level: float = LEVEL, cap: float | None = None) -> Interval:
    r"""Median of right-censored waiting times (Kaplan–Meier), with the interval of the times at
    which the pointwise confidence band of the survival function :math:`S(t)` contains 1/2.

    A run that never finished counts through the time it was watched. When more than half the
    runs outlast the cap, the median is not observed: the result is a *lower bound*
    (``lower_bound=True``, estimate = the cap, :meth:`Interval.format` gives "more than …"),
    never :math:`+\infty`.

    Parameters
    ----------
    times : array_like
        Finish times; for a censored run, the time it was watched (the cap).
    cap : float, optional
        The horizon (default: the largest time).
    """
    t, c = as_array(times).ravel(), np.asarray(censored, dtype=bool).ravel()
    if len(t) == 0:
        return undefined("no runs", n=0, level=level)
    cap = float(t.max() if cap is None else cap)
    z = float(norm.ppf(0.5 + level / 2))
    order = np.argsort(t, kind="stable")
    t, c = t[order], c[order]
    uniq = np.unique(t[~c])
    S, var_sum, surv, low_band, high_band = 1.0, 0.0, [], [], []
    for u in uniq:
        at_risk = int((t >= u).sum())
        d = int(((t == u) & ~c).sum())
        S *= 1 - d / at_risk
        if at_risk > d:
            var_sum += d / (at_risk * (at_risk - d))
        surv.append(S)                                     # log-log band (Kalbfleisch–Prentice)
        sd = math.sqrt(var_sum) / abs(math.log(S)) if 0 < S < 1 else 0.0
        low_band.append(S ** math.exp(z * sd))
        high_band.append(S ** math.exp(-z * sd))
    surv, lo_b, hi_b = np.array(surv), np.array(low_band), np.array(high_band)
    n = len(t)
    method = f"Kaplan–Meier over {n} runs ({int(c.sum())} censored)"
    reached = np.flatnonzero(surv <= 0.5)
    # the times whose band contains 1/2: low end where the band's lower edge drops to 1/2,
    # high end where its upper edge does (not reached: unbounded)
    lo_idx = np.flatnonzero(lo_b <= 0.5)
    hi_idx = np.flatnonzero(hi_b <= 0.5)
    low = float(uniq[lo_idx[0]]) if len(lo_idx) else cap
    high = float(uniq[hi_idx[0]]) if len(hi_idx) else float("inf")
    if not len(reached):
        return Interval(cap, min(low, cap), float("inf"), level, method, n, NAN, lower_bound=True,
                        note=f"more than half of the {n} runs outlasted the cap of {cap:g}")
    est = float(uniq[reached[0]])
    return Interval(est, min(low, est), max(high, est), level, method, n,
                    (max(high, est) - min(low, est)) / (2 * z) if math.isfinite(high) else NAN)


def undefined(reason: str, n: int = 0, level: float = LEVEL) -> Interval:
    """A quantity with no value (0/0, one seed's spread): no estimate, no verdict, its reason."""
    return Interval(NAN, NAN, NAN, level, "undefined", n, NAN, note=reason)

