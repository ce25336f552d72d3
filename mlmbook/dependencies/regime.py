"""Chapter 1's regime map: the statistical trees of every model of a ladder beside the truth's.

For each rung :func:`rung_points` takes the per-sentence gold-edge counts of its MLM-CMI and CPMI
trees and those of the truth-CMI trees on the same sentences, and describes each: the rung's UUAS
and its difference from the truth's, each with a 95 % interval over sentences
(:func:`mlmbook.stats.describe`). The map is descriptive — it shows where on the ladder the trees
come near the truth's, and claims no verdict. :func:`record_map` records every point for the page
and the tests. The ladder itself (which models, their KL) is :mod:`mlmbook.models.ladder`'s.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import stats
from .evaluate import CMI, CPMI, uuas
from .questions import uuas_rows

__all__ = ["METHODS", "SHORT", "RungPoint", "rung_points", "record_map", "key"]

METHODS = (CMI, CPMI)
"""The two scores of an MLM that the regime map follows across the ladder."""

SHORT = {CMI: "mlm", CPMI: "cpmi"}


@dataclass(frozen=True)
class RungPoint:
    """One method on one rung.

    ``rung`` (``"h32"``, ``"h128@10%"``), ``method`` (of :data:`METHODS`), the rung's ``kl`` to the
    truth (nats), its ``uuas`` and ``minus_truth`` (UUAS minus the truth-CMI trees' on the same
    sentences; both 95 % over sentences), ``n`` sentences.
    """

    rung: str
    method: str
    kl: float
    uuas: stats.Interval
    minus_truth: stats.Interval
    n: int


def rung_points(rung: str, kl: float, counts: dict, truth: tuple, seed: int = 0) -> list[RungPoint]:
    """Each method's UUAS on the rung and its difference from the truth-CMI trees on the same
    sentences.

    ``counts`` maps a method to ``(correct, gold)`` per sentence; ``truth`` is ``(correct, gold)``
    of the truth-CMI trees on (at least) those sentences.
    """
    out = []
    for method, c in counts.items():
        values, weights = uuas_rows(c, truth)
        out.append(RungPoint(rung, method, float(kl), uuas(c, seed=seed),
                             stats.describe(values, weights, seed=seed), len(values)))
    return out


def key(p: RungPoint) -> str:
    """The record-key stem of a point: ``regime_<rung>_<mlm|cpmi>`` (``@``, ``%`` dropped)."""
    return f"regime_{p.rung.replace('@', '_').replace('%', '')}_{SHORT[p.method]}"


def record_map(points, record) -> None:
    """Record the regime map with ``record(key, value)``: per point ``<key(p)>_kl``, ``_uuas`` and
    ``_minus_truth`` (Intervals); ``regime_rungs`` (farthest from the truth first)."""
    for p in points:
        record(f"{key(p)}_kl", p.kl)
        record(f"{key(p)}_uuas", p.uuas)
        record(f"{key(p)}_minus_truth", p.minus_truth)
    main = sorted([p for p in points if p.method == METHODS[0]], key=lambda p: -p.kl)
    record("regime_rungs", [p.rung for p in main])
