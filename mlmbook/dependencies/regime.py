"""Chapter 1's regime map: the statistical trees of every model of a ladder against the truth's.

For each rung (one model, or several training seeds of one size) :func:`compare_to_truth` takes
the per-sentence gold-edge counts of its MLM-CMI and CPMI trees (:func:`rung_counts`) and those of
the truth-CMI trees on the same sentences, and states with the chapter's verdict family whether
the rung's trees are above, below or indistinguishable from the truth's — the interval
hierarchical over the rung's seeds when it has several (:func:`mlmbook.dependencies.evaluate.compare`).
:func:`record_map` records every point and writes the paragraph the chapter shows, which says
only what the verdicts say.

The ladder itself (which models, their KL to the truth) is :mod:`mlmbook.models.ladder`'s
business; this module takes counts.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from .. import stats
from .evaluate import CMI, CPMI, compare, counts, model_scores, uuas

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["METHODS", "SHORT", "RungPoint", "rung_counts", "compare_to_truth", "summarize", "record_map", "key"]

METHODS = (CMI, CPMI)
"""The two scores of an MLM that the regime map follows across the ladder."""

SHORT = {CMI: "mlm", CPMI: "cpmi"}


def rung_counts(lm: "MaskedLM", words, keep, gold_edges, window: int | None) -> dict:
    """``{method: (correct, gold)}``: per sentence, the gold edges the MLM-CMI (exact grid) and CPMI
    spanning trees of ``lm`` find, and the gold edges."""
    return {m: counts(mats, gold_edges) for m, mats in model_scores(lm, words, keep, window).items()}


@dataclass(frozen=True)
class RungPoint:
    """One method on one rung: its UUAS and its verdict against the truth's trees.

    Attributes
    ----------
    rung : str                name (``"h32"``, ``"h128@10%"``)
    method : str              one of :data:`METHODS`
    kl : float                the rung's mean single-site KL to the truth (nats)
    uuas : Interval           UUAS, 95 % (hierarchical over the rung's seeds when several)
    versus_truth : Verdict    UUAS minus the truth's, at the chapter's family level
    n_seeds : int             training seeds pooled
    """

    rung: str
    method: str
    kl: float
    uuas: stats.Interval
    versus_truth: stats.Verdict
    n_seeds: int = 1


def compare_to_truth(rung: str, kl: float, per_seed: Sequence[dict], truth: tuple, family: stats.Family,
                     seed: int = 0) -> list[RungPoint]:
    """Each method's UUAS on the rung and its verdict against the truth-CMI trees.

    ``per_seed`` holds one :func:`rung_counts` result per training seed of the rung (same
    sentences); ``truth`` is ``(correct, gold)`` of the truth-CMI trees on (at least) them.
    """
    out = []
    for method in per_seed[0]:
        rows = [s[method] for s in per_seed]
        tc = [(truth[0][: len(c)], truth[1][: len(c)]) for c, _ in rows]
        pooled = (np.concatenate([c for c, _ in rows]), np.concatenate([g for _, g in rows]))
        groups = np.concatenate([np.full(len(c), k) for k, (c, _) in enumerate(rows)]) if len(rows) > 1 else None
        out.append(RungPoint(rung, method, float(kl), uuas(pooled, seed=seed, groups=groups),
                             compare(rows, tc, family, seed=seed), len(rows)))
    return out


def key(p: RungPoint) -> str:
    """The record-key stem of a point: ``regime_<rung>_<mlm|cpmi>`` (``@``, ``%`` dropped)."""
    return f"regime_{p.rung.replace('@', '_').replace('%', '')}_{SHORT[p.method]}"


def _names(points: Sequence[RungPoint], power: bool = False) -> str:
    parts = []
    for p in points:
        d = p.versus_truth.detectable
        extra = f"; a difference of {d:.3f} or more would have been detected, {100 * stats.POWER:.0f} % power" \
            if power else ""
        parts.append(f"{p.rung} (KL {p.kl:.2f}{extra})")
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def summarize(points: Sequence[RungPoint], method: str) -> dict:
    """Where on the ladder ``method``'s trees are below, indistinguishable from or above the truth's.

    Returns ``below``/``level``/``above`` (rung names, farthest from the truth first) and ``text``,
    the sentence that states it: each indistinguishable rung with the difference it could have
    detected. No trend is claimed: the verdicts are what the intervals support.
    """
    pts = sorted([p for p in points if p.method == method], key=lambda p: -p.kl)
    groups = {s: [p for p in pts if p.versus_truth.side == s] for s in ("below", "indistinguishable", "above")}
    parts = []
    if groups["below"]:
        parts.append(f"below the truth's on {_names(groups['below'])}")
    if groups["indistinguishable"]:
        parts.append(f"statistically indistinguishable from the truth's on {_names(groups['indistinguishable'], True)}")
    if groups["above"]:
        parts.append(f"above the truth's on {_names(groups['above'])}")
    text = (f"{method} trees are " + "; ".join(parts) + ".") if parts else f"{method}: no rung gives a verdict."
    return {"below": [p.rung for p in groups["below"]], "level": [p.rung for p in groups["indistinguishable"]],
            "above": [p.rung for p in groups["above"]], "text": text}


def record_map(points: Sequence[RungPoint], truth_uuas: float, n_sentences: int, record) -> str:
    """Record the regime map with ``record(key, value)`` and return its paragraph.

    Keys: ``regime_n_sentences``, ``regime_truth_uuas``, ``regime_rungs`` (farthest first), and per
    point ``<key(p)>_kl``, ``_uuas`` (an Interval), ``_vs_truth`` (a Verdict), ``_n_seeds``; per
    method ``regime_<m>_{below,level,above}``; ``regime_text``.
    """
    record("regime_n_sentences", int(n_sentences))
    record("regime_truth_uuas", float(truth_uuas))
    for p in points:
        record(f"{key(p)}_kl", p.kl)
        record(f"{key(p)}_uuas", p.uuas)
        record(f"{key(p)}_vs_truth", p.versus_truth)
        record(f"{key(p)}_n_seeds", p.n_seeds)
    main = sorted([p for p in points if p.method == METHODS[0]], key=lambda p: -p.kl)
    record("regime_rungs", [p.rung for p in main])
    paras = [f"On {n_sentences} sentences per rung the truth-CMI trees score {truth_uuas:.3f}."]
    for method in dict.fromkeys(p.method for p in points):
        s = summarize(points, method)
        for f in ("below", "level", "above"):
            record(f"regime_{SHORT[method]}_{f}", s[f])
        paras.append(s["text"])
    several = [f"{p.rung} ({p.n_seeds} seeds)" for p in main if p.n_seeds > 1]
    if several:
        listed = several[0] if len(several) == 1 else ", ".join(several[:-1]) + " and " + several[-1]
        paras.append(f"The intervals of {listed} resample training seeds as well as sentences"
                     + ("; the other rungs are one trained model each." if len(several) < len(main) else "."))
    text = " ".join(paras)
    record("regime_text", text)
    return text
