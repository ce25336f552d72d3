r"""Power first: the sample a question needs, and the smallest effect a sample can detect.

With :math:`n` units whose contributions have standard deviation :math:`\sigma` (in the
quantity's own scale), a two-sided test at level :math:`\alpha'` finds a true effect
:math:`\Delta` with power :math:`1-\beta` when

.. math:: \Delta \;\ge\; \big(z_{1-\alpha'/2} + z_{1-\beta}\big)\,\frac{\sigma}{\sqrt n}
   \qquad\Longleftrightarrow\qquad
   n \;\ge\; \Big(\frac{(z_{1-\alpha'/2} + z_{1-\beta})\,\sigma}{\Delta}\Big)^2 ,

with Student quantiles on :math:`n-1` degrees of freedom when the units are a few training seeds.
A sign-flip test needs at least :math:`\lceil \log_2(2/\alpha') \rceil` units that differ before any
direction is attainable (:func:`feasible_units`), whatever :math:`\sigma` is.
"""
from __future__ import annotations

import math

from scipy.stats import norm
from scipy.stats import t as student_t

__all__ = ["POWER", "detectable", "needed_units", "feasible_units", "unit_sd"]

POWER = 0.8
"""The power at which the book states a detectable effect and sizes a sample."""


def _quantiles(level: float, power: float, df: int | None) -> float:
    if df is not None and df >= 1:
        return float(student_t.ppf(0.5 + level / 2, df) + student_t.ppf(power, df))
    return float(norm.ppf(0.5 + level / 2) + norm.ppf(power))


def detectable(se: float, level: float, power: float = POWER, df: int | None = None) -> float:
    """The smallest true effect a test at ``level`` detects with ``power``, from a standard error."""
    if not (se >= 0) or not math.isfinite(se):
        return float("inf")
    return _quantiles(level, power, df) * se


def feasible_units(level: float) -> int:
    """The fewest non-zero units for which a two-sided sign-flip test can reach ``1 - level``."""
    alpha = 1 - level
    return max(1, math.ceil(math.log2(2 / alpha) - 1e-12))


def unit_sd(se: float, n: int) -> float:
    r"""The per-unit standard deviation behind a standard error, :math:`\sigma = \widehat{se}\,\sqrt n`."""
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
        ``"seed"`` uses Student quantiles (a t over seed means); otherwise normal quantiles, and at
        least :func:`feasible_units` units (a sign-flip test must be able to reach the level).
    """
    if not effect > 0:
        raise ValueError("the effect of interest must be positive")
    if not math.isfinite(sd):
        return 0
    if sd == 0:
        return 2 if unit == "seed" else feasible_units(level)
    if unit == "seed":
        n = 2
        while _quantiles(level, power, n - 1) * sd / math.sqrt(n) > effect and n < 100_000:
            n += 1
        return n
    n = math.ceil((_quantiles(level, power, None) * sd / effect) ** 2)
    return max(n, feasible_units(level))
