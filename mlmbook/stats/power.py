r"""Power first: the sample a question needs, and the smallest effect a sample can detect.

**Units** (many sentences or sentence clusters: a sign-flip or bootstrap test). With :math:`n`
units whose contributions have standard deviation :math:`\sigma`, a two-sided test at level
:math:`\alpha'` finds a true effect :math:`\Delta` with power :math:`1-\beta` when

.. math:: \Delta \;\ge\; \big(z_{1-\alpha'/2} + z_{1-\beta}\big)\,\frac{\sigma}{\sqrt n}
   \qquad\Longleftrightarrow\qquad
   n \;\ge\; \Big(\frac{(z_{1-\alpha'/2} + z_{1-\beta})\,\sigma}{\Delta}\Big)^2 .

A sign-flip test needs at least :math:`\lceil \log_2(2/\alpha') \rceil` units that differ before any
direction is attainable (:func:`feasible_units`), whatever :math:`\sigma` is.

**Seeds** (a t over :math:`n` seed means, :math:`\nu = n-1` degrees of freedom):
:math:`T = \bar x/(s/\sqrt n)` is *noncentral* t with :math:`\lambda = \Delta\sqrt n/\sigma`, so

.. math:: 1-\beta(\lambda) \;=\; P\big(T'_{\nu,\lambda} > t_{1-\alpha'/2,\nu}\big)
   + P\big(T'_{\nu,\lambda} < -t_{1-\alpha'/2,\nu}\big),

the detectable effect is :math:`\lambda^*\,\widehat{se}` with :math:`1-\beta(\lambda^*) = 0.8`
(:func:`t_noncentrality`), and a recipe needs the fewest :math:`n` with :math:`1-\beta \ge 0.8`.
"""
from __future__ import annotations

import math

from scipy.optimize import brentq
from scipy.stats import nct, norm
from scipy.stats import t as student_t

__all__ = ["POWER", "detectable", "needed_units", "feasible_units", "unit_sd", "t_power", "t_noncentrality"]

POWER = 0.8
"""The power at which the book states a detectable effect and sizes a sample."""


def _z_sum(level: float, power: float) -> float:
    return float(norm.ppf(0.5 + level / 2) + norm.ppf(power))


def t_power(noncentrality: float, df: int, level: float) -> float:
    r"""Power of a two-sided one-sample t test at ``level`` on ``df`` degrees of freedom when the
    statistic's noncentrality is :math:`\lambda` (see the module docstring)."""
    crit = float(student_t.ppf(0.5 + level / 2, df))
    # the lower tail as P(T'_{ν,-λ} > c): SciPy's cdf far in the tail is nan
    return float(nct.sf(crit, df, noncentrality) + nct.sf(crit, df, -noncentrality))


def t_noncentrality(df: int, level: float, power: float = POWER) -> float:
    r"""The noncentrality :math:`\lambda^*` at which a two-sided t test on ``df`` degrees of freedom
    at ``level`` has ``power``."""
    if df < 1:
        return float("inf")
    high = 1.0
    while t_power(high, df, level) < power:
        high *= 2
        if high > 1e6:
            return float("inf")
    return float(brentq(lambda nc: t_power(nc, df, level) - power, 0.0, high, xtol=1e-10))


def detectable(se: float, level: float, power: float = POWER, df: int | None = None) -> float:
    """The smallest true effect a test at ``level`` detects with ``power``, from a standard error:
    by the noncentral t with ``df`` (a t over ``df + 1`` seed means), else by normal quantiles."""
    if not (se >= 0) or not math.isfinite(se):
        return float("inf")
    if df is not None:
        return t_noncentrality(df, level, power) * se
    return _z_sum(level, power) * se


def feasible_units(level: float) -> int:
    """The fewest non-zero units for which a two-sided sign-flip test can reach ``1 - level``."""
    alpha = 1 - level
    return max(1, math.ceil(math.log2(2 / alpha) - 1e-12))


def unit_sd(se: float, n: int) -> float:
    r"""The per-unit SD behind a standard error, :math:`\sigma = \widehat{se}\sqrt n`."""
    return float(se * math.sqrt(n)) if n > 0 and math.isfinite(se) else float("nan")


def needed_units(sd: float, effect: float, level: float, power: float = POWER, unit: str = "sentence") -> int:
    """Units needed to detect ``effect`` with ``power`` at ``level``, given the per-unit SD ``sd``.

    Parameters
    ----------
    sd : float
        Per-unit standard deviation in the quantity's scale (:func:`unit_sd`).
    effect : float
        The effect of interest (> 0).
    unit : str
        ``"seed"``: a t over seed means, sized by the noncentral t (at least 2 seeds); otherwise
        normal quantiles, and at least :func:`feasible_units` units (a sign-flip test must be able
        to reach the level).
    """
    if not effect > 0:
        raise ValueError("the effect of interest must be positive")
    if not math.isfinite(sd):
        return 0
    if unit == "seed":
        if sd == 0:
            return 2
        n = max(2, math.ceil((_z_sum(level, power) * sd / effect) ** 2))    # a t never needs fewer
        while t_power(effect * math.sqrt(n) / sd, n - 1, level) < power and n < 100_000:
            n += 1
        return n
    n = math.ceil((_z_sum(level, power) * sd / effect) ** 2) if sd > 0 else 0
    return max(n, feasible_units(level))
