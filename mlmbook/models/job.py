r"""A toy model to train, as the build and the chapters name it: a :class:`Job` (which jobs the
book trains is the build's plan, :mod:`mlmbook.pipeline.zoo`; :func:`mlmbook.models.load_mlm` loads
one)."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from .cache import is_cached, load_or_train
from .train import TrainConfig

__all__ = ["Job", "estimated_seconds"]


@dataclass(frozen=True)
class Job:
    """One model to train: the world (a grammar name, knob settings included,
    :mod:`mlmbook.toy.knobs`; a topic variant), configuration, seed and kind (MLM or MAE-LM), and
    the ``name`` a chapter finds it by."""

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
        """The job's world (loaded once per process)."""
        return _world(self.grammar, self.topic)

    def run(self) -> str:
        """Train (or find) the model; returns :meth:`describe`."""
        load_or_train(self.grammar_object(), preset=self.config, seed=self.seed, kind=self.kind, progress=False)
        return self.describe()

    def cached(self) -> bool:
        return is_cached(self.grammar_object(), self.config, self.seed, self.kind)

    def entry(self):
        """The cache entry (trains on first use when the build's training step did not)."""
        return load_or_train(self.grammar_object(), preset=self.config, seed=self.seed, kind=self.kind)


@lru_cache(maxsize=32)
def _world(grammar: str, topic: str | None):
    from ..toy.grammar import Grammar
    from ..toy.treemrf import TreeMRF, is_treemrf
    if is_treemrf(grammar):                      # chapter 1's positive control (a Grammar too)
        return TreeMRF.load(grammar)
    return Grammar.load(grammar, topic=topic) if topic else Grammar.load(grammar)


def estimated_seconds(unit: list) -> float:
    r"""A rough training time of a unit on one quiet core, to start the longest units first.

    Per step (``benchmarks/training.py``): a batch of 64 sentences costs about 6 ms per distinct
    stream; a model of width :math:`h` adds about :math:`2 + 0.3h` ms; an MAE-LM a quarter more.
    """
    if not hasattr(unit[0], "config"):                # a job of another kind: its own estimate
        return float(unit[0].cost)
    c = unit[0].config
    factor = c.steps * c.batch / 64 / 1000 * (1.25 if unit[0].kind == "maelm" else 1.0)
    streams = len({(j.grammar, j.topic, j.seed, j.config.mask_only) for j in unit})
    return factor * (6 * streams + len(unit) * (2 + 0.3 * c.hidden))
