r"""The zoo: every toy model a chapter loads, named once, trained up front by the build.

A chapter never trains by hand. Each model it needs is a :class:`Job` — a grammar (with its
knob settings, :mod:`mlmbook.toy.knobs`), a training configuration
(:class:`~mlmbook.models.train.TrainConfig`), a seed and a kind — listed by that chapter's
function in :data:`CHAPTER_MODELS`. The build's training step
(:func:`mlmbook.models.prepare.prepare`) trains whatever the chosen chapters list and the
cache lacks, before any chapter runs; the chapter then calls :meth:`Job.load`, which finds the
model cached.

>>> from mlmbook.models import zoo
>>> jobs = zoo.needed("quick", chapters=[1])           # doctest: +SKIP
>>> lm = jobs[0].load()                                # doctest: +SKIP

Add a chapter's models in its own function below (one function per chapter, each edited by
that chapter alone) and keep its names stable: a name is how the chapter finds its model.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .train import PRESETS, TrainConfig

__all__ = ["Job", "CHAPTER_MODELS", "needed", "find", "chapter_models", "default_models", "TrainConfig"]


@dataclass(frozen=True)
class Job:
    """One model to train: the grammar (a name, knob settings included), topic variant,
    configuration, seed and kind, and the ``name`` a chapter finds it by."""

    grammar: str
    topic: str | None
    config: TrainConfig
    seed: int
    kind: str = "mlm"
    name: str = field(default="", compare=False)

    @property
    def cost(self) -> float:
        """A rough relative cost (steps × batch × width), to start the longest trainings first."""
        c = self.config
        return c.steps * c.batch * c.hidden * (c.hidden + c.intermediate)

    def describe(self) -> str:
        """E.g. ``"MAE-LM, hidden 32, 1500 steps, seed 1"`` (with the world, if not the default)."""
        what = "MAE-LM" if self.kind == "maelm" else "MLM"
        world = f" on the {self.topic} topic world" if self.topic else (
            f" on {self.grammar}" if self.grammar != "toy" else "")
        return f"{what}{world}, hidden {self.config.hidden}, {self.config.steps} steps, seed {self.seed}"

    def grammar_object(self):
        from ..toy.grammar import Grammar
        return Grammar.load(self.grammar, topic=self.topic) if self.topic else Grammar.load(self.grammar)

    def run(self) -> str:
        """Train (or find) the model; returns :meth:`describe`."""
        from .cache import load_or_train
        load_or_train(self.grammar_object(), preset=self.config, seed=self.seed, kind=self.kind, progress=False)
        return self.describe()

    def cached(self) -> bool:
        from .cache import is_cached
        return is_cached(self.grammar_object(), self.config, self.seed, self.kind)

    def entry(self):
        """The cache entry (trains on first use when the build's training step did not)."""
        from .cache import load_or_train
        return load_or_train(self.grammar_object(), preset=self.config, seed=self.seed, kind=self.kind)

    def load(self):
        """The model behind the :class:`~mlmbook.models.base.MaskedLM` interface."""
        from . import maelm
        from .hf import HFMaskedLM
        entry = self.entry()
        label = self.name or self.describe()
        return maelm.load(entry.path, name=label) if self.kind == "maelm" else HFMaskedLM(entry.path, name=label)


def default_models(profile: str, seeds=(0,)) -> list[Job]:
    """The profile's default MLM at ``seeds`` (named ``"default seed <s>"``)."""
    return [Job("toy", None, PRESETS[profile], s, name=f"default seed {s}") for s in seeds]


# ------------------------------------------------------------------------------ per chapter
# Each returns the chapter's models *besides* the default MLM, the ladder and the topic worlds
# that mlmbook.models.prepare already lists (see prepare.NEEDS). One function per chapter.

def chapter0(profile: str) -> list[Job]:
    return []


def chapter1(profile: str) -> list[Job]:
    return []


def chapter2(profile: str) -> list[Job]:
    return []


def chapter3(profile: str) -> list[Job]:
    return []


def chapter4(profile: str) -> list[Job]:
    return []


def chapter5(profile: str) -> list[Job]:
    return []


CHAPTER_MODELS: dict[int, Callable[[str], list[Job]]] = {
    0: chapter0, 1: chapter1, 2: chapter2, 3: chapter3, 4: chapter4, 5: chapter5}
"""Chapter number -> its function listing the knob and control models it trains."""


def chapter_models(chapter: int, profile: str) -> list[Job]:
    """The knob/control models of one chapter in ``profile``."""
    return list(CHAPTER_MODELS.get(int(chapter), lambda p: [])(profile))


def find(chapter: int, profile: str, name: str) -> Job:
    """The job a chapter lists under ``name`` (a clear error naming the choices otherwise)."""
    jobs = {j.name: j for j in chapter_models(chapter, profile)}
    if name not in jobs:
        raise KeyError(f"chapter {chapter} lists no model named {name!r} in the {profile} profile; "
                       f"it has {', '.join(sorted(jobs)) or 'none'}")
    return jobs[name]


def needed(profile: str, chapters=tuple(CHAPTER_MODELS)) -> list[Job]:
    """Every knob/control model the given chapters list in ``profile`` (duplicates removed)."""
    out = [j for c in chapters for j in chapter_models(c, profile)]
    return list(dict.fromkeys(out))



