r"""Reading an interval: which side of a reference it lies on, and the effect it could have
detected.

:func:`side` is the reading every answer of :mod:`mlmbook.stats.study` uses: *above* when the
interval's low end exceeds the reference, *below* when its high end is under it,
*indistinguishable* otherwise, *undefined* without a value; *equivalent* when its interval at
:math:`1 - 2\alpha'` (a TOST at :math:`\alpha'`) lies inside :math:`\pm\delta`, the effect of
interest (:func:`within`). :func:`detectable_effect` is the smallest true difference a test at the
interval's level finds with 80 % power,

.. math:: d_{\min} = \big(z_{1-\alpha'/2} + z_{\text{power}}\big)\, s .
"""
from __future__ import annotations

import math

from scipy.stats import norm

from .intervals import Interval
from .power import POWER

__all__ = ["side", "within", "detectable_effect", "walk_verdicts", "walk_records"]


def side(low: float, high: float, reference: float = 0.0) -> str:
    """The rule itself (see the module docstring): the side's name."""
    if any(isinstance(x, float) and math.isnan(x) for x in (low, high)):
        return "undefined"
    if low > reference:
        return "above"
    if high < reference:
        return "below"
    return "indistinguishable"


def within(low: float, high: float, reference: float, margin: float) -> bool:
    r"""The interval lies strictly inside :math:`(r - \delta,\ r + \delta)`."""
    return bool(reference - margin < low and high < reference + margin)


def detectable_effect(interval: Interval, power: float = POWER) -> float:
    r"""The smallest true difference a test at the interval's level detects with ``power`` (the
    module docstring); without a standard error, the half-width is read as
    :math:`z_{1-\alpha'/2}\,s`."""
    z = float(norm.ppf(0.5 + interval.level / 2))
    se = interval.se
    if not math.isfinite(se) or se <= 0:
        half = (interval.high - interval.low) / 2
        se = half / z if math.isfinite(half) else float("inf")
    return float((z + float(norm.ppf(power))) * se)


def walk_records(results, kind: str, path: str = ""):
    """Yield ``(key, record)`` for every record with ``"kind": kind`` in a results dict, nested ones
    included (``key`` the dotted path, list items as ``[i]``)."""
    if isinstance(results, dict):
        if results.get("kind") == kind:
            yield path, results
            return
        for k, v in results.items():
            yield from walk_records(v, kind, f"{path}.{k}" if path else str(k))
    elif isinstance(results, list):
        for i, v in enumerate(results):
            yield from walk_records(v, kind, f"{path}[{i}]")


def walk_verdicts(results: dict):
    """Yield ``(key, record)`` for every recorded old-style verdict."""
    return walk_records(results, "verdict")
