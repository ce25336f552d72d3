r"""A ladder of toy MLMs (and MAE-LMs) from far from the truth to near it.

One model cannot show *where* a paper's effect lives. The ladder varies the two things that
move a model towards the truth — **capacity** (hidden size) and **training** (snapshots of the
default model at 10 %, 30 % and 100 % of its steps) — and labels every rung with its distance
from the truth, the mean single-site KL

.. math:: \overline{\mathrm{KL}} = \frac{1}{N}\sum_{s}\sum_{i} \mathrm{KL}\big(p(\cdot\mid x^{(s)}_{\setminus i})
          \,\big\|\, q(\cdot\mid x^{(s)}_{\setminus i})\big)

over the positions of held-out sentences. Chapters plot their paper's headline quantity
against it. Every rung is trained once and cached like the default model
(:func:`~mlmbook.models.cache.load_or_train`); the top rung *is* the default model of the
profile, so its snapshots cost nothing extra.

>>> from mlmbook.models import ladder
>>> for rung in ladder.rungs("quick"):                              # doctest: +SKIP
...     lm, kl = ladder.load(rung), ladder.kl_to_truth(rung)

The smallest size is also trained with :data:`SEEDS` seeds (:func:`seed_rungs`), so a chapter
can show an interval over training seeds where training is cheap.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, replace

import numpy as np

from ..compare import kl_to_truth as _kl_to_truth
from ..paths import cache_dir
from ..toy.grammar import Grammar
from . import maelm
from .base import MaskedLM
from .cache import load_or_train
from .hf import HFMaskedLM
from .train import PRESETS, TrainConfig

__all__ = ["Rung", "LADDERS", "SEEDS", "VERDICT_SEEDS", "rungs", "seed_rungs", "load", "kl_to_truth", "KL_SENTENCES"]

LADDERS = {
    "quick": dict(sizes=(16, 32), steps=400),
    "full": dict(sizes=(32, 64), steps=1500),
}
"""Per profile: the hidden sizes trained besides the default model, and their training steps.
The default model of the profile (:data:`~mlmbook.models.train.PRESETS`) is the top rung."""

SEEDS = (0, 1, 2)
"""Training seeds of the smallest rung (:func:`seed_rungs`)."""

VERDICT_SEEDS = {"quick": 3, "full": 1}
"""Training seeds (0, 1, ...) of the default model that a chapter's verdicts must hold for. A
quick model trains in about a minute, a full one in five and a half, so the full profile judges
its one model (chapter 1 says so)."""

KL_SENTENCES = 60
"""Held-out sentences on which a rung's KL to the truth is measured."""


@dataclass(frozen=True)
class Rung:
    """One model of the ladder.

    Attributes
    ----------
    name : str          short name, e.g. ``"h32"`` or ``"h128@10%"``
    kind : str          ``"mlm"`` or ``"maelm"``
    hidden : int        hidden size
    fraction : float    share of its training steps (1.0 = the final model)
    seed : int
    config : TrainConfig
    profile : str
    """

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
    return replace(top, hidden=hidden, heads=max(1, hidden // 16), intermediate=4 * hidden, steps=spec["steps"],
                   eval_every=max(1, spec["steps"] // 4), checkpoints=())


def rungs(profile: str, kind: str = "mlm", seed: int = 0) -> list[Rung]:
    """The ladder of a profile, smallest and least trained first.

    MLM: each small size, then the default model at 10 %, 30 % and 100 % of its steps.
    MAE-LM (``kind="maelm"``): each size including the default one, final models only
    (MAE-LM keeps no snapshots).
    """
    if profile not in LADDERS:
        raise ValueError(f"no ladder for profile {profile!r}; use one of {', '.join(LADDERS)}")
    top = PRESETS[profile]
    out = [Rung(f"h{h}", kind, h, 1.0, seed, _small_config(profile, h), profile) for h in LADDERS[profile]["sizes"]]
    fractions = (*top.checkpoints, 1.0) if kind == "mlm" else (1.0,)
    for f in fractions:
        name = f"h{top.hidden}" + ("" if f == 1.0 else f"@{f:.0%}")
        out.append(Rung(name, kind, top.hidden, float(f), seed, top, profile))
    return out


def seed_rungs(profile: str, kind: str = "mlm") -> list[Rung]:
    """The smallest rung trained with every seed of :data:`SEEDS`."""
    h = LADDERS[profile]["sizes"][0]
    return [Rung(f"h{h}", kind, h, 1.0, s, _small_config(profile, h), profile) for s in SEEDS]


def _entry(rung: Rung):
    return load_or_train("toy", preset=rung.config, seed=rung.seed, kind=rung.kind)


def _snapshot_path(rung: Rung):
    entry = _entry(rung)
    if rung.fraction == 1.0:
        return entry.path
    step = max(1, int(rung.fraction * rung.config.steps))
    wanted = f"step_{step:06d}"
    for path in entry.checkpoints():
        if path.name == wanted:
            return path
    raise FileNotFoundError(f"{rung.name}: the cached model has no snapshot {wanted}")


def load(rung: Rung) -> MaskedLM:
    """The rung's model behind the :class:`MaskedLM` interface (trained on first use, then cached)."""
    path = _snapshot_path(rung)
    if rung.kind == "maelm":
        return maelm.load(path, name=rung.label)
    return HFMaskedLM(path, name=rung.label)


def kl_to_truth(rung: Rung, n_sentences: int = KL_SENTENCES) -> float:
    """Mean single-site KL(truth ‖ rung) in nats on held-out toy sentences (computed once, then cached)."""
    path = _snapshot_path(rung)
    key = f"{path.parent.parent.name}-{path.name}" if rung.fraction != 1.0 else path.name   # entry-step_N
    memo = cache_dir() / "ladder" / f"{key}-kl{n_sentences}.json"
    if memo.exists():
        try:
            return float(json.loads(memo.read_text())["kl"])
        except (OSError, ValueError, KeyError):
            memo.unlink(missing_ok=True)                 # unreadable: measure again
    grammar = Grammar.load("toy")
    sentences = [s.words for s in grammar.sample(n_sentences, seed=424_242)]
    kl = float(np.mean(np.concatenate(_kl_to_truth(grammar, load(rung), sentences))))
    memo.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=memo.parent, prefix=f".{memo.name}.")
    with os.fdopen(fd, "w") as fh:
        json.dump({"kl": kl, "rung": rung.name, "sentences": n_sentences}, fh)
    os.replace(tmp, memo)
    return kl
