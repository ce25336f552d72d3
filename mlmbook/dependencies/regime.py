"""Chapter 1's regime map: the statistical trees of every model of a ladder beside the truth's,
described (no verdict) rung by rung."""
from __future__ import annotations

from dataclasses import dataclass

from .. import stats
from .evaluate import CMI, CPMI, KEYS, uuas
from .questions import uuas_rows

__all__ = ["METHODS", "RungPoint", "rung_points", "record_map", "key"]

METHODS = (CMI, CPMI)
"""The two scores of an MLM that the regime map follows across the ladder."""


@dataclass(frozen=True)
class RungPoint:
    """One method on one rung (``"h32"``, ``"h128@10%"``): the rung's ``kl`` to the truth (nats),
    its ``uuas`` and ``minus_truth`` (minus the truth-CMI trees'), ``n`` sentences."""

    rung: str
    method: str
    kl: float
    uuas: stats.Interval
    minus_truth: stats.Interval
    n: int


def rung_points(rung: str, kl: float, counts: dict, truth: tuple, seed: int = 0) -> list[RungPoint]:
    """Each method's UUAS on the rung and its difference from the truth-CMI trees on the same
    sentences; ``counts[method]`` and ``truth`` are ``(correct, gold)`` per sentence."""
    out = []
    for method, c in counts.items():
        values, weights = uuas_rows(c, truth)
        out.append(RungPoint(rung, method, float(kl), uuas(c, seed=seed),
                             stats.describe(values, weights, seed=seed), len(values)))
    return out


def key(p: RungPoint) -> str:
    """The record-key stem of a point: ``regime_<rung>_<mlm|cpmi>`` (``@``, ``%`` dropped)."""
    return f"regime_{p.rung.replace('@', '_').replace('%', '')}_{KEYS[p.method]}"


def record_map(points, record) -> None:
    """Record the regime map with ``record(key, value)``: per point ``<key(p)>_kl``, ``_uuas`` and
    ``_minus_truth`` (Intervals); ``regime_rungs`` (farthest from the truth first)."""
    for p in points:
        record(f"{key(p)}_kl", p.kl)
        record(f"{key(p)}_uuas", p.uuas)
        record(f"{key(p)}_minus_truth", p.minus_truth)
    main = sorted([p for p in points if p.method == METHODS[0]], key=lambda p: -p.kl)
    record("regime_rungs", [p.rung for p in main])
