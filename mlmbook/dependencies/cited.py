"""An interval the chapter's prose cites by its parts.

``mlmbook.record(key, Cited(interval))`` stores the interval's record (kind ``"interval"``, as
``record(key, interval)`` does) and glues its parts for the MyST prose:
``{glue:text}`key.estimate:.3f```, ``key.low``, ``key.high``, ``key.n`` — so a sentence states an estimate
and its interval from one recorded value, never from two samples.
"""
from __future__ import annotations

import math

__all__ = ["Cited", "unbounded", "clean"]


class Cited:
    """Wrap an :class:`~mlmbook.stats.Interval` or an :class:`~mlmbook.stats.Answer` for ``mlmbook.record``.

    The record is the wrapped object's own; the glued parts are its finite ``estimate``, ``low``, ``high`` (a
    value that rounds to zero at three decimals glued as exactly 0, so no page shows "-0.000") and ``n`` — and,
    for an answer, the rest of :meth:`~mlmbook.stats.Answer.glue_fields` (``verdict``, ``detectable``, ...).
    """

    def __init__(self, value):
        self.value = value

    def __getattr__(self, name):
        if name == "value":
            raise AttributeError(name)
        return getattr(self.value, name)

    def to_record(self) -> dict:
        return self.value.to_record()

    def glue_fields(self) -> dict:
        iv = getattr(self.value, "interval", self.value)
        out = dict(self.value.glue_fields()) if hasattr(self.value, "glue_fields") else {"n": iv.n}
        out.update(estimate=clean(iv.estimate), low=clean(iv.low), high=clean(iv.high))
        return {k: v for k, v in out.items()
                if isinstance(v, str) or (isinstance(v, (int, float)) and math.isfinite(v))}


def clean(x: float, digits: int = 3) -> float:
    """``x``, or exactly 0 when it rounds to zero at ``digits`` decimals (so a page never shows "-0.000")."""
    x = float(x)
    return 0.0 if math.isfinite(x) and abs(x) < 0.5 * 10 ** -digits else x


def unbounded(value) -> dict:
    """The parts of an interval (or of an :class:`~mlmbook.stats.Answer`'s interval) that are not finite, as
    the page shows them: ``{"low": "−∞"}``, ``{"high": "+∞"}``, ``{"estimate": "undefined"}`` (a sample too
    small to bound the difference). The chapter declares them with :func:`mlmbook.not_measured`."""
    iv = getattr(value, "interval", value)
    shown = {"estimate": "undefined", "low": "−∞", "high": "+∞"}
    return {part: text for part, text in shown.items() if not math.isfinite(float(getattr(iv, part)))}
