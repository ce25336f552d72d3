r"""The zoo: every toy model a chapter loads, named once, trained up front by the build.

A chapter never trains by hand. Each model it needs is a :class:`Job` — a grammar (with its
knob settings, :mod:`mlmbook.toy.knobs`), a training configuration
(:class:`~mlmbook.models.train.TrainConfig`), a seed and a kind — listed by that chapter's
function in :data:`CHAPTER_MODELS`. The build's training step
(:mod:`mlmbook.models.prepare`) trains whatever the chosen chapters list and the cache lacks,
and starts a chapter only once its own models are trained; the chapter then calls
:meth:`Job.load`, which finds the model cached.

>>> from mlmbook.models import zoo
>>> jobs = zoo.needed("quick", chapters=[1])           # doctest: +SKIP
>>> lm = jobs[0].load()                                # doctest: +SKIP

Add a chapter's models in its own function below (one function per chapter, each edited by
that chapter alone) and keep its names stable: a name is how the chapter finds its model.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
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
        """The job's world (loaded once per process: a build lists some sixty jobs on a few worlds)."""
        return _world(self.grammar, self.topic)

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
        if self.kind == "maelm":
            return maelm.load(entry.path, name=label)
        return HFMaskedLM.from_pretrained(entry.path, name=label)


@lru_cache(maxsize=32)
def _world(grammar: str, topic: str | None):
    from ..toy.grammar import Grammar
    from ..toy.treemrf import TreeMRF, is_treemrf
    if is_treemrf(grammar):                      # chapter 1's positive control (a Grammar too)
        return TreeMRF.load(grammar)
    return Grammar.load(grammar, topic=topic) if topic else Grammar.load(grammar)


def default_models(profile: str, seeds=(0,)) -> list[Job]:
    """The profile's default MLM at ``seeds`` (named ``"default seed <s>"``)."""
    return [Job("toy", None, PRESETS[profile], s, name=f"default seed {s}") for s in seeds]


# ------------------------------------------------------------------------------ per chapter
# Each returns the chapter's models *besides* the default MLM, the ladder and the topic worlds
# that mlmbook.models.prepare already lists (see prepare.NEEDS). One function per chapter.

def chapter0(profile: str) -> list[Job]:
    return []


def chapter1(profile: str) -> list[Job]:
    """Chapter 1's knob and control models, all of the ladder's largest small size (hidden 64, 1,500
    steps in the full profile; hidden 32, 400 steps in the quick one), seed 0:

    * ``"selection <s>"`` for s in 0, 0.5, 1: the toy language with the ``selection`` knob
      (:mod:`mlmbook.toy.knobs`); ``"selection 1"`` *is* that ladder rung, and the random-mask
      baseline of the cloze model;
    * ``"control"``: the tree-structured MRF world (:mod:`mlmbook.toy.treemrf`);
    * ``"cloze nsubj"``: the toy language with cloze-like masks, only subjects masked
      (``mask_only=("nsubj",)``), for as many steps as the baseline.

    Measured (stacked training, one thread each): full profile four new models of about 30 s
    each (~120 core-s; hidden 64, because at hidden 32 the ladder's rung is still 0.9 nats of
    single-site KL from the truth, too far for its CMI to say whether a model learned the
    statistics); quick profile four of 5–6 s (~21 core-s).
    """
    from dataclasses import replace

    from .ladder import LADDERS, rungs
    base = next(r for r in rungs(profile) if r.hidden == max(LADDERS[profile]["sizes"])).config
    jobs = [Job("toy" if s == 1 else f"toy[selection={s:g}]", None, base, 0, name=f"selection {s:g}")
            for s in (0, 0.5, 1)]
    jobs.append(Job("treemrf", None, base, 0, name="control"))
    jobs.append(Job("toy", None, replace(base, mask_only=("nsubj",)), 0, name="cloze nsubj"))
    return jobs


SMOOTHING = {"quick": (0.1,), "full": (0.01, 0.1)}
"""Chapter 2's settings of the ``smoothing`` knob (:mod:`mlmbook.toy.knobs`) with a trained MLM;
the setting 0 is the ladder's rung of the same size (:func:`chapter2`)."""


def chapter2(profile: str) -> list[Job]:
    """Chapter 2's soft-zeros models: one MLM per setting ε of :data:`SMOOTHING`, named
    ``"smoothing <ε>"``, with exactly the configuration of the ladder's smallest size (hidden 32
    and 1500 steps in the full profile, hidden 16 and 400 steps in the quick one), so that the
    ladder's rung of that size (seed 0) is the model at ε = 0 and the knob is the only
    difference. Estimated with :func:`mlmbook.models.prepare.estimated_seconds`: full about 53
    core-seconds (two models, stacked), quick about 6.
    """
    from .ladder import rungs

    config = rungs(profile)[0].config
    return [Job(f"toy[smoothing={eps:g}]", None, config, 0, name=f"smoothing {eps:g}") for eps in SMOOTHING[profile]]


CH3_NOISE = (0.0, 0.1, 0.3)
"""Chapter 3's noise knob: shares of training words replaced by a random word (``TrainConfig(noise=...)``)."""


def chapter3(profile: str) -> list[Job]:
    """Chapter 3's span model, its token-masked twin and its noise knob.

    ``"span"``: an MLM trained with span masking (``span=3.0``: geometric runs of mean length 3
    covering the same 15 % of tokens) — the infilling objective of the paper's T5/UL2 models —
    with exactly the configuration of ``"span twin"``, the token-masked model it is compared
    with: the ladder's middle rung (hidden 64 and 1,500 steps in the full profile, 32 and 400 in
    the quick one; the cache shares it), so that the masking is the only difference.
    ``"noise <η>"``: an MLM of the same configuration trained on a noisier language, each word replaced by
    a random one with probability η; ``"noise 0"`` *is* that ladder rung (and the span twin).
    New training, measured in a cold full build: about 35 s each (the span model and the two
    noise models, stacked with the ladder's hidden-64 models); quick about 20 s in all. (A
    hidden-128 span model beside the default model took 200 s and put the cold full build at the
    edge of its 20 minutes.)
    """
    from dataclasses import replace

    from . import ladder

    width = {"quick": 32, "full": 64}[profile]
    small = next(r.config for r in ladder.rungs(profile) if r.hidden == width)
    jobs = [Job("toy", None, replace(small, span=3.0, checkpoints=()), 0, name="span"),
            Job("toy", None, small, 0, name="span twin")]
    jobs += [Job("toy", None, replace(small, noise=eta), 0, name=f"noise {eta:g}") for eta in CH3_NOISE]
    return jobs


CH4_KNOB = {
    "quick": dict(hidden=16, steps=400, rates=(0.15, 0.45), split_rate=0.45, seeds=(0, 1, 2), longer=1.25,
                  pair="knob"),
    "full": dict(hidden=32, steps=800, rates=(0.15, 0.3, 0.45, 0.6), split_rate=0.45, seeds=(0, 1, 2), longer=1.1,
                 pair=64),
}
"""Chapter 4's knob, the share of ``[MASK]`` in pretraining inputs, per profile: the width and steps
of its small models, the selection rates trained with BERT's 80/10/10 split, the one rate also
trained with the 100/0/0 split, the seeds, how many times longer the fit-matched MAE-LM trains, and
what the chapter's MLM/MAE-LM pair is: the profile's default configuration (``"default"``), the
ladder's rung of a width (an ``int``: the full profile's pair is the hidden-64 rung, whose seed 0 the
ladders hold, so only seeds 1 and 2 are new — 128 core-seconds measured, stacked, where three seeds of the
hidden-128 default pair cost about 880 and put the cold full build over its 20 minutes), or the
knob's own at r = 0.15 (``"knob"``, the quick profile: no extra training)."""


def chapter4(profile: str) -> list[Job]:
    """Chapter 4's knob and controls, all at one small width (:data:`CH4_KNOB`), for each seed:

    * ``"knob <kind> r<rate> <split> s<seed>"``: an MLM and an MAE-LM (``kind`` ``mlm`` / ``maelm``)
      at each selection rate ``r`` with the 80/10/10 split (``split`` ``80-10-10``), and at one rate
      with the 100/0/0 split (``100-0-0``): the ``[MASK]`` share of the input is 0.8 r or r;
    * ``"deep mlm s<seed>"``: an MLM with one more layer at the default setting (r = 0.15, 80/10/10),
      as deep as MAE-LM's encoder and decoder together;
    * ``"long maelm s<seed>"``: MAE-LM at the default setting trained ``longer`` times the steps (to
      the MLM's fit);
    * ``"default <kind> s<seed>"``: the chapter's MLM/MAE-LM pair at seeds 0, 1 and 2 — in the full
      profile the ladders' hidden-64 rung (seed 0 is that rung of the MLM and MAE-LM ladders), in
      the quick profile the knob's models at r = 0.15.

    Where the knob's width and steps are those of the ladder's smallest rung (the quick profile),
    the knob uses that rung's configuration, so its r = 0.15 models *are* the ladder's seed rungs
    and train once. Full profile: 36 models of width 32 (about 490 core-seconds stacked, by
    :func:`mlmbook.models.prepare.estimated_seconds`; 33 of them measured 419) plus the default
    MLM and MAE-LM of the hidden-64 rung at seeds 1 and 2 (128 core-seconds measured); quick: 18 new models of width 16
    (about 95 core-seconds estimated, 165 measured on a busy machine).
    """
    from dataclasses import replace

    from . import ladder

    k = CH4_KNOB[profile]
    h = k["hidden"]
    small = ladder.seed_rungs(profile)[0].config
    if (small.hidden, small.steps) == (h, k["steps"]):
        base = small                     # the ladder's seed rungs are the knob's r = 0.15 models
    else:
        base = TrainConfig(hidden=h, layers=2, heads=max(1, h // 16), intermediate=4 * h, steps=k["steps"],
                           batch=64, lr=3e-3, n_eval=60, eval_every=k["steps"], checkpoints=())
    settings = [(r, (0.8, 0.1, 0.1)) for r in k["rates"]] + [(k["split_rate"], (1.0, 0.0, 0.0))]
    jobs = []
    for seed in k["seeds"]:
        for kind in ("mlm", "maelm"):
            for rate, split in settings:
                tag = "-".join(f"{100 * a:.0f}" for a in split)
                jobs.append(Job("toy", None, replace(base, mask_rate=rate, replace=split), seed, kind,
                                name=f"knob {kind} r{rate:.2f} {tag} s{seed}"))
        jobs.append(Job("toy", None, replace(base, layers=3), seed, "mlm", name=f"deep mlm s{seed}"))
        long_steps = int(k["longer"] * k["steps"])
        jobs.append(Job("toy", None, replace(base, steps=long_steps, eval_every=long_steps), seed, "maelm",
                        name=f"long maelm s{seed}"))
    if k["pair"] == "default":
        pair = PRESETS[profile]
    elif k["pair"] == "knob":
        pair = base
    else:
        pair = next(r.config for r in ladder.rungs(profile) if r.hidden == k["pair"] and r.fraction == 1.0)
    for seed in (0, 1, 2):
        for kind in ("mlm", "maelm"):
            jobs.append(Job("toy", None, pair, seed, kind, name=f"default {kind} s{seed}"))
    return jobs


def chapter5(profile: str) -> list[Job]:
    """Chapter 5's topic-world MLMs: the plateau model, and a ladder of MLMs behind the wall
    (width × steps; the rung with the plateau's configuration is the chapter's default).

    Names: ``"plateau"`` and ``"wall h<hidden> s<steps>"``. Each rung's fit (KL to the truth)
    is reported by the chapter. The configurations derive from the topic preset by width and
    steps only, so that a rung keeps its cache entry when the ladder changes. Training cost on
    one core, measured: quick about 20 s in all (widths 16 and 32), full about 230 s (widths
    32 and 64; the best-fitting rung, width 64 for 6,000 steps, is half of it).
    """
    from dataclasses import replace

    from .train import preset_for
    base = PRESETS[preset_for("toy_topic", profile)]

    def cfg(hidden: int, steps: int) -> TrainConfig:
        if (hidden, steps) == (base.hidden, base.steps):
            return base
        return replace(base, hidden=hidden, heads=max(1, hidden // 32), intermediate=4 * hidden,
                       steps=steps, eval_every=max(100, steps // 4), checkpoints=())

    default = {"quick": (32, 500), "full": (64, 2000)}[profile]
    rungs = {"quick": [(16, 300), default],
             "full": [(32, 600), (32, 2000), default, (64, 6000)]}[profile]
    jobs = [Job("toy", "plateau", cfg(*default), 0, name="plateau")]
    jobs += [Job("toy", "wall", cfg(h, s), 0, name=f"wall h{h} s{s}") for h, s in rungs]
    return jobs


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



