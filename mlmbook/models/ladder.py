r"""A ladder of toy MLMs (and MAE-LMs) from far from the truth to near it: **capacity** (hidden
size) and **training** (snapshots of the default model at 10 %, 30 % and 100 % of its steps), each
rung labelled with its distance from the truth, the mean single-site KL

.. math:: \overline{\mathrm{KL}} = \frac{1}{N}\sum_{s}\sum_{i} \mathrm{KL}\big(p(\cdot\mid x^{(s)}_{\setminus i})
          \,\big\|\, q(\cdot\mid x^{(s)}_{\setminus i})\big)

over the positions of held-out sentences (:func:`mlmbook.compare.rung_kl`). The top rung *is* the
profile's default model; the smallest size is also trained with :data:`SEEDS` seeds
(:func:`seed_rungs`), for an interval over training seeds where training is cheap.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..profiles import seed_offset, with_fallbacks
from .cache import load_or_train
from .train import PRESETS, TrainConfig

__all__ = ["Rung", "LADDERS", "SEEDS", "VERDICT_SEEDS", "MAELM_TOP", "rungs", "seed_rungs",
           "snapshot_path", "KL_SENTENCES"]

LADDERS = {
    "quick": dict(sizes=(16, 32), steps=400),
    "full": dict(sizes=(32, 64), steps=1500),
}
with_fallbacks(LADDERS)                                # the extended profile: the full ladder
"""Per profile: the hidden sizes trained besides the default model (the top rung), and their
training steps."""

SEEDS = (0, 1, 2)
"""Training seeds of the smallest rung (:func:`seed_rungs`)."""

VERDICT_SEEDS = with_fallbacks({"quick": 3, "full": 1})
"""Training seeds (0, 1, ...) of the default model that a chapter's verdicts must hold for (a full
model trains in five and a half minutes, so the full profile judges its one model)."""

MAELM_TOP = with_fallbacks({"quick": True, "full": False})
"""Per profile: whether the MAE-LM ladder has a rung at the default model's width (in the full
profile its seconds go to chapter 4's pair, :data:`mlmbook.pipeline.zoo.CH4_SEEDS`)."""

KL_SENTENCES = 60
"""Held-out sentences of a rung's KL to the truth (:func:`mlmbook.compare.rung_kl`)."""


@dataclass(frozen=True)
class Rung:
    """One model of the ladder: a short ``name`` (``"h32"``, ``"h128@10%"``), ``kind`` (``"mlm"``
    or ``"maelm"``), and ``fraction``, the share of its training steps (1.0 = the final model)."""

    name: str
    kind: str
    hidden: int
    fraction: float
    seed: int
    config: TrainConfig
    profile: str

    @property
    def label(self) -> str:
        """A reader-facing label, e.g. ``"MLM, hidden 32, 100 % of training"``."""
        what = "MAE-LM" if self.kind == "maelm" else "MLM"
        seed = f", seed {self.seed}" if self.seed else ""
        return f"{what}, hidden {self.hidden}, {self.fraction:.0%} of training{seed}".replace("%", " %")


def _small_config(profile: str, hidden: int) -> TrainConfig:
    top, spec = PRESETS[profile], LADDERS[profile]
    return replace(top, hidden=hidden, heads=max(1, hidden // 16), intermediate=4 * hidden,
                   steps=spec["steps"], eval_every=max(1, spec["steps"] // 4), checkpoints=())


def rungs(profile: str, kind: str = "mlm", seed: int | None = None) -> list[Rung]:
    """The ladder of a profile, smallest and least trained first (``seed``: the profile's
    :func:`~mlmbook.profiles.seed_offset`): each small size, then the default model at 10 %, 30 %
    and 100 % of its steps (MAE-LM: final models only, the default one where :data:`MAELM_TOP` says
    so)."""
    if profile not in LADDERS:
        raise ValueError(f"no ladder for profile {profile!r}; use one of {', '.join(LADDERS)}")
    top = PRESETS[profile]
    seed = seed_offset(profile) if seed is None else seed
    out = [Rung(f"h{h}", kind, h, 1.0, seed, _small_config(profile, h), profile) for h in LADDERS[profile]["sizes"]]
    fractions = (*top.checkpoints, 1.0) if kind == "mlm" else (1.0,) if MAELM_TOP[profile] else ()
    for f in fractions:
        name = f"h{top.hidden}" + ("" if f == 1.0 else f"@{f:.0%}")
        out.append(Rung(name, kind, top.hidden, float(f), seed, top, profile))
    return out


def seed_rungs(profile: str, kind: str = "mlm") -> list[Rung]:
    """The smallest rung trained with every seed of :data:`SEEDS` (plus the profile's offset)."""
    h, offset = LADDERS[profile]["sizes"][0], seed_offset(profile)
    return [Rung(f"h{h}", kind, h, 1.0, s + offset, _small_config(profile, h), profile) for s in SEEDS]


def _entry(rung: Rung):
    return load_or_train("toy", preset=rung.config, seed=rung.seed, kind=rung.kind)


def snapshot_path(rung: Rung):
    """The directory of the rung's weights (a snapshot of a cache entry, or the entry itself)."""
    entry = _entry(rung)
    if rung.fraction == 1.0:
        return entry.path
    step = max(1, int(rung.fraction * rung.config.steps))
    path = entry.path / "checkpoints" / f"step_{step:06d}"
    if path not in entry.checkpoints():
        raise FileNotFoundError(f"{rung.name}: the cached model has no snapshot {path.name}")
    return path
