"""Descriptive numbers for the page: an interval recorded whole, its parts glued for the prose.

``mlmbook.record("gain", Shown(stats.describe(values)))`` stores the interval's record (the tests read
it) and glues ``gain.text`` ("0.022 [0.001, 0.046]"), ``gain.estimate``, ``gain.low`` and ``gain.high``
for the chapter's MyST prose: ``{glue:text}`gain.text``` or ``{glue:text}`gain.estimate:.3f```. A
descriptive interval carries no verdict and no power clause; an undefined one glues its reason.
"""
from __future__ import annotations

import math
import re

from ..stats import Interval

__all__ = ["Shown", "interval_label"]


class Shown:
    """An :class:`~mlmbook.stats.Interval` to record, with the parts the prose cites.

    Parameters
    ----------
    interval : Interval
    digits : int
        Decimals of ``.text``.
    percent : bool
        ``.text`` in percent (``"5.4 % [3.1, 7.9]"``); ``.estimate`` etc. stay fractions.
    unit : str
        Appended to the estimate in ``.text`` ("nats").
    """

    def __init__(self, interval: Interval, digits: int = 3, percent: bool = False, unit: str = ""):
        self.interval, self.digits, self.percent, self.unit = interval, digits, percent, unit

    def to_record(self) -> dict:
        return self.interval.to_record()

    def glue_fields(self) -> dict:
        iv = self.interval
        out = {"text": interval_label(iv, self.digits, unit=self.unit, percent=self.percent)}
        for name in ("estimate", "low", "high"):
            value = getattr(iv, name)
            if isinstance(value, float) and math.isfinite(value):
                out[name] = value
        return out


def interval_label(iv: Interval, digits: int = 3, unit: str = "", percent: bool = False) -> str:
    """``iv.format(...)`` without negative zeros ("-0.000" is 0 at this precision)."""
    return re.sub(r"-(0\.0+)(?![0-9])", r"\1", iv.format(digits, unit=unit, percent=percent))
