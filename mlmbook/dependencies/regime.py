"""Chapter 1's regime map: the statistical trees of every model of a ladder against the truth's.

For one model, :func:`rung_counts` computes what the chapter computes for its main model — the
exact CMI grid (Zhang & Hashimoto's estimator in its infinite-sample limit) and CPMI — on a
sample of sentences, reads a maximum spanning tree off each score matrix and counts the gold
edges it finds. :func:`compare_to_truth` sets those counts beside the truth-CMI trees of the same
sentences: UUAS with a bootstrap interval over sentences, and the paired difference to the
truth with the chapter's verdict rule (the 99 % interval must exclude zero, on at least
``min_sentences`` sentences). :func:`summarize` turns a ladder of such comparisons into the
sentence the chapter prints: on which rungs the MLM's tree is below, level with or above the
truth's.

The ladder itself (which models, their KL to the truth) is the chapter's business:
:mod:`mlmbook.models.ladder`. This module only takes a :class:`~mlmbook.models.base.MaskedLM`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..stats import ratio_bootstrap, side_of_zero
from .cmi import cmi_grid
from .cpmi import cpmi
from .trees import decode, uuas_counts

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["METHODS", "RungPoint", "rung_counts", "compare_to_truth", "verdict", "summarize", "seeds_of",
           "record_map"]

METHODS = ("MLM-CMI (exact)", "CPMI")
"""The two scores of an MLM that the regime map follows across the ladder."""

ABOVE, BELOW, LEVEL = "above", "below", "statistically indistinguishable from"


def rung_counts(lm: "MaskedLM", words, keep, gold_edges, window: int | None) -> dict:
    """Per-sentence gold-edge counts of the MLM-CMI (exact grid) and CPMI spanning trees.

    Parameters
    ----------
    lm : MaskedLM
    words, keep : per sentence, its words and the indices of the words that are scored
    gold_edges : per sentence, the set of gold edges (over the kept words)
    window : int or None
        Largest piece distance whose CMI is computed (as in :func:`cmi_grid`).

    Returns
    -------
    dict
        ``{method: (correct, gold)}``, two integer arrays with one entry per sentence.
    """
    scores = {METHODS[0]: list(cmi_grid(lm, words, keep, window=window)),
              METHODS[1]: cpmi(lm, words, keep)}
    return {m: uuas_counts([decode(M, "max") for M in mats], gold_edges) for m, mats in scores.items()}


def verdict(lo99: float, hi99: float, n: int, min_sentences: int = 5) -> str:
    """``"above"``/``"below"`` when the 99 % interval of a difference excludes zero (on at
    least ``min_sentences`` sentences), else ``"statistically indistinguishable from"``."""
    if n < min_sentences:
        return LEVEL
    return side_of_zero(lo99, hi99, ABOVE, BELOW, LEVEL)


@dataclass
class RungPoint:
    """One method on one rung: its UUAS, interval, and difference to the truth's trees."""

    rung: str
    method: str
    kl: float
    uuas: float
    lo: float
    hi: float
    diff: float
    diff_lo: float
    diff_hi: float
    diff_lo99: float
    diff_hi99: float
    n: int
    verdict: str
    seed: int = 0
    extra: dict = field(default_factory=dict)


def compare_to_truth(rung: str, kl: float, counts: dict, truth: tuple, seed: int = 0,
                     rung_seed: int = 0, min_sentences: int = 5) -> list[RungPoint]:
    """UUAS of each method of ``counts`` (see :func:`rung_counts`) with a 95 % bootstrap interval
    over sentences, and its paired difference to the truth's counts on the same sentences.

    ``truth`` is ``(correct, gold)`` of the truth-CMI trees on (at least) those sentences.
    """
    out = []
    for method, (c, g) in counts.items():
        tc = np.asarray(truth[0])[: len(c)]
        u, lo, hi = ratio_bootstrap(c, g, seed=seed)
        d, dlo, dhi = ratio_bootstrap(c, g, minus=tc, n_boot=2000, seed=seed)
        _, lo99, hi99 = ratio_bootstrap(c, g, minus=tc, n_boot=2000, level=0.99, seed=seed)
        out.append(RungPoint(rung, method, float(kl), u, lo, hi, d, dlo, dhi, lo99, hi99, len(g),
                             verdict(lo99, hi99, len(g), min_sentences), rung_seed))
    return out


def _names(points: Sequence[RungPoint]) -> str:
    names = [f"{p.rung} (KL {p.kl:.2f})" for p in points]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def summarize(points: Sequence[RungPoint], method: str) -> dict:
    """Where on the ladder ``method``'s trees are below, level with or above the truth's.

    Returns a dict with ``below``/``level``/``above`` (rung names, closest to the truth last),
    ``trend`` (UUAS rises as KL falls: ``"rises"``, ``"falls"`` or ``"is not monotone"``) and
    ``text``, a sentence that states it.
    """
    pts = sorted([p for p in points if p.method == method], key=lambda p: -p.kl)
    groups = {v: [p for p in pts if p.verdict == v] for v in (BELOW, LEVEL, ABOVE)}
    u = [p.uuas for p in pts]
    trend = ("rises" if all(b >= a for a, b in zip(u, u[1:])) else
             "falls" if all(b <= a for a, b in zip(u, u[1:])) else "is not monotone")
    parts = []
    for v, word in ((BELOW, "below the truth's"), (LEVEL, "statistically indistinguishable from the truth's"),
                    (ABOVE, "above the truth's")):
        if groups[v]:
            parts.append(f"{word} on {_names(groups[v])}")
    text = (f"{method} trees are " + "; ".join(parts) + f". From the farthest rung to the closest its UUAS "
            f"{trend} ({u[0]:.3f} to {u[-1]:.3f}).") if pts else f"{method}: no rung measured."
    return {"below": [p.rung for p in groups[BELOW]], "level": [p.rung for p in groups[LEVEL]],
            "above": [p.rung for p in groups[ABOVE]], "trend": trend, "text": text}


def seeds_of(points: Sequence[RungPoint]) -> list[int]:
    """The training seeds of the smallest rung (the first point's rung) among ``points``."""
    first = points[0].rung if points else None
    return sorted({p.seed for p in points if p.rung == first})


def _key(p: RungPoint) -> str:
    name = p.rung.replace("@", "_").replace("%", "")
    return f"{name}_seed{p.seed}" if p.seed else name


def _overall(pts: list[RungPoint], method: str) -> str:
    """approach / pass / fall short, from the rungs' verdicts (farthest rung first)."""
    far, near = pts[0], pts[-1]
    closer = abs(near.diff) < abs(far.diff)
    way = ("comes closer to the truth's as the model does" if closer
           else "does not come closer to the truth's as the model does")
    passed = [p for p in pts if p.verdict == ABOVE]
    if passed:
        end = f"and passes it on {_names(passed)}, beyond the 99 % interval"
    elif near.verdict == LEVEL:
        end = ("and on the rung closest to the truth it is statistically indistinguishable from it "
               "(the 99 % interval of the difference contains zero)")
    else:
        end = "but falls short of it on every rung (each 99 % interval of the difference excludes zero)"
    return f"The {method} tree {way} (a gap of {far.diff:+.3f} on {far.rung}, {near.diff:+.3f} on {near.rung}) {end}."


def record_map(points: Sequence[RungPoint], truth_uuas: float, n_sentences: int, record) -> dict:
    """Record the regime map's numbers and verdicts with ``record(key, value)``; return the text.

    Keys: ``regime_n_sentences``, ``regime_n_seeds``, ``regime_truth_uuas``, ``regime_rungs``
    (farthest first), ``regime_lowest``/``regime_highest`` (rung names), per point
    ``regime_<rung>[_seed<s>]_<m>_{kl,uuas,lo,hi,diff,diff_lo99,diff_hi99,verdict}`` with
    ``m`` = ``mlm``/``cpmi``, per method ``regime_<m>_{below,level,above,trend}``, and over the
    seeds of the smallest rung ``regime_seed_<m>_{uuas,verdicts,spread}``; ``regime_text`` is
    the paragraph the chapter prints. Returns ``{"text": ...}``.
    """
    short = {METHODS[0]: "mlm", METHODS[1]: "cpmi"}
    record("regime_n_sentences", int(n_sentences))
    seeds = seeds_of(points)
    record("regime_n_seeds", len(seeds))
    record("regime_truth_uuas", float(truth_uuas))
    for p in points:
        k = f"regime_{_key(p)}_{short[p.method]}"
        for f in ("kl", "uuas", "lo", "hi", "diff", "diff_lo99", "diff_hi99", "verdict"):
            record(f"{k}_{f}", getattr(p, f))
    main = sorted([p for p in points if p.seed == 0 and p.method == METHODS[0]], key=lambda p: -p.kl)
    record("regime_rungs", [p.rung for p in main])
    record("regime_lowest", main[0].rung)
    record("regime_highest", main[-1].rung)
    paras = [f"On {n_sentences} sentences per rung, the truth-CMI trees score {truth_uuas:.3f}."]
    for method in METHODS:
        m = short[method]
        pts = sorted([p for p in points if p.seed == 0 and p.method == method], key=lambda p: -p.kl)
        summary = summarize(pts, method)
        for f in ("below", "level", "above", "trend"):
            record(f"regime_{m}_{f}", summary[f])
        seed_pts = [p for p in points if p.method == method and p.rung == points[0].rung]
        seed_pts = [p for p in seed_pts if p.seed in seeds]
        uu = [p.uuas for p in seed_pts]
        record(f"regime_seed_{m}_uuas", uu)
        record(f"regime_seed_{m}_verdicts", [p.verdict for p in seed_pts])
        record(f"regime_seed_{m}_spread", float(max(uu) - min(uu)))
        agree = len({p.verdict for p in seed_pts}) == 1
        paras.append(
            f"{_overall(pts, method)} {summary['text']} Across the {len(seed_pts)} training seeds of "
            f"{points[0].rung} (the smallest rung) its UUAS spans {min(uu):.3f} to {max(uu):.3f} (a spread of {max(uu) - min(uu):.3f}), "
            + (f"and every seed gets the same verdict ({seed_pts[0].verdict} the truth's)." if agree else
               "and the seeds do not agree on the verdict: on this rung it is no better than the luck of training."))
    text = "\n\n".join(paras)
    record("regime_text", text)
    return {"text": text}
