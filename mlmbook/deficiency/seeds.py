r"""Training seeds as the unit: rows for the study layer, per-width panels, and how often MAE-LM
fails to train.

A claim about a training recipe is a claim about what a *run* of it gives, so its unit is the
training seed: each seed's per-block values are averaged, and the test is a t over those seed means.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import stats

__all__ = ["SeedRows", "seed_rows", "difference", "describe_seeds", "WidthRow", "width_panel", "SIGN_LABELS",
           "sign_change", "widths_text", "FAIL_MARGIN", "Stability", "training_failures"]


@dataclass(frozen=True)
class SeedRows:
    """Per-unit values of several trained models: the ``values`` seed after seed, their ``seeds``,
    and ``means``, ``{seed: mean of its values}``."""

    values: np.ndarray
    seeds: list
    means: dict

    @property
    def n_seeds(self) -> int:
        return len(self.means)


def seed_rows(by_seed: dict) -> SeedRows:
    """``{seed: array of unit values}`` -> :class:`SeedRows` (seeds in sorted order); ``ValueError``
    with no seed, or a seed with no value."""
    if not by_seed:
        raise ValueError("no trained model to take rows from")
    values, seeds, means = [], [], {}
    for s in sorted(by_seed):
        v = np.asarray(by_seed[s], dtype=float).ravel()
        if v.size == 0:
            raise ValueError(f"seed {s} has no values")
        values.append(v)
        seeds += [s] * v.size
        means[s] = float(v.mean())
    return SeedRows(np.concatenate(values), seeds, means)


def difference(a: dict, b: dict, scale: float = 1.0) -> dict:
    """``{seed: (b[seed] - a[seed]) / scale}``, unit by unit, for the seeds both have (the two
    models of a seed measured on the same units)."""
    out = {}
    for s in sorted(set(a) & set(b)):
        x, y = np.asarray(a[s], dtype=float), np.asarray(b[s], dtype=float)
        if x.shape != y.shape:
            raise ValueError(f"seed {s}: the two models were measured on different units ({x.shape} vs {y.shape})")
        out[s] = (y - x) / scale
    if not out:
        raise ValueError("the two sets of models share no seed")
    return out


def describe_seeds(by_seed: dict, level: float = stats.LEVEL) -> stats.Interval:
    """A descriptive interval (no verdict) of the mean: a t over seed means with two or more seeds;
    with one seed, the test that fits its blocks (an interval *conditional on that one model*)."""
    rows = seed_rows(by_seed)
    if rows.n_seeds >= 2:
        return stats.paired.seed_t(rows.values, seeds=rows.seeds, level=level).interval
    return stats.describe(rows.values, level=level, what="blocks of sentences")


@dataclass(frozen=True)
class WidthRow:
    """One width of a robustness panel: ``per_seed`` means over blocks, ``per_model`` 95 % intervals
    over each model's blocks (both ``{seed: ...}``), and the ``interval`` over seeds."""

    width: int
    per_seed: dict
    per_model: dict
    interval: stats.Interval

    @property
    def conditional(self) -> bool:
        """The interval rests on one trained model (it resamples that model's blocks)."""
        return len(self.per_seed) < 2

    @property
    def side(self) -> str:
        """``"below"`` / ``"above"`` when *each* trained model's own interval lies below / above
        zero, else ``"mixed"`` (a label, not a verdict on the recipe)."""
        sides = {"below" if iv.high < 0 else "above" if iv.low > 0 else "mixed" for iv in self.per_model.values()}
        return sides.pop() if len(sides) == 1 else "mixed"


def width_panel(by_width: dict, level: float = stats.LEVEL) -> list[WidthRow]:
    """``{width: {seed: unit values}}`` -> one :class:`WidthRow` per width, smallest first."""
    return [WidthRow(int(h), seed_rows(v).means, {s: describe_seeds({s: x}, level) for s, x in sorted(v.items())},
                     describe_seeds(v, level)) for h, v in sorted(by_width.items())]


SIGN_LABELS = ("changes sign", "keeps one sign", "has no sign that holds in every model")
"""The labels :func:`sign_change` returns."""


def sign_change(rows: list[WidthRow]) -> str:
    """How a comparison behaves across a panel's widths, from each trained model's own interval:
    ``"changes sign"`` when at some width every model is below zero and at another every model
    above; ``"keeps one sign"`` when every width's models are all on one side; else the third."""
    sides = [r.side for r in rows]
    if "below" in sides and "above" in sides:
        return SIGN_LABELS[0]
    if len(set(sides)) == 1 and sides[0] != "mixed":
        return SIGN_LABELS[1]
    return SIGN_LABELS[2]


def widths_text(rows: list[WidthRow], per_seed_only: bool = False) -> str:
    """A panel in words, width by width: ``"at width 32 -0.041 [-0.060, -0.022] of the width (seeds
    -0.040, ...)"``, one trained pair said to be conditional on that model; ``per_seed_only``: the
    seeds' values alone, ``"-0.040, -0.035 at width 32; ..."``."""
    def seeds(row):
        return ", ".join(f"{v:.3f}" for v in row.per_seed.values())

    if per_seed_only:
        return "; ".join(f"{seeds(row)} at width {row.width}" for row in rows)
    return "; ".join(f"at width {row.width} {row.interval.format()} of the width (seeds {seeds(row)}"
                     + (", one trained pair: an interval conditional on that model)" if row.conditional else ")")
                     for row in rows)


FAIL_MARGIN = 0.3
"""Nats: an MAE-LM run ending this far or more above its MLM twin's (same configuration and seed)
final held-out loss failed to train; MAE-LM normally ends 0.05–0.15 above, a failed run 0.82."""


@dataclass(frozen=True)
class Stability:
    """How often MAE-LM failed to train: the labels of the ``runs`` counted and of those ``failed``,
    ``excess``, ``{label: MAE-LM's final loss minus its twin's}`` (nats), and ``interval``, the
    failed share's Clopper–Pearson 95 %."""

    runs: list
    failed: list
    excess: dict
    margin: float
    interval: stats.Interval

    @property
    def n(self) -> int:
        return len(self.runs)


def training_failures(final_losses: dict, margin: float = FAIL_MARGIN) -> Stability:
    """Count the MAE-LM runs whose final held-out loss is ``margin`` nats or more above the twin's.

    Parameters
    ----------
    final_losses : dict
        ``{label: (MAE-LM's final loss, the MLM twin's final loss)}``, one entry per MAE-LM run.
    """
    if not final_losses:
        raise ValueError("no MAE-LM run to count")
    excess = {k: float(a - b) for k, (a, b) in final_losses.items()}
    failed = [k for k, e in excess.items() if e >= margin]
    iv = stats.proportion(len(failed), len(excess), exact=True)
    return Stability(list(excess), failed, excess, float(margin), iv)
