"""The book's model plan: every toy model a chapter loads, named once, trained up front by the build.

Each is a :class:`~mlmbook.models.job.Job` its chapter's function (:data:`CHAPTER_MODELS`) lists
beside the default MLM and the ladders (``prepare.NEEDS``); the chapter finds one by its stable
name, ``load_mlm(zoo.find(1, "quick", "selection 1"))``.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from ..models import ladder
from ..models.job import Job, estimated_seconds
from ..models.train import PRESETS, TrainConfig, preset_for
from ..profiles import FALLBACK, PILOT, seed_offset, with_fallbacks

__all__ = ["Job", "CHAPTER_MODELS", "needed", "find", "chapter_models", "ch4_arm_seeds",
           "ch4_budget"]


def _rung(profile: str, width: int) -> TrainConfig:
    """The configuration of the ladder's rung of ``width`` trained on all the data."""
    return next(r.config for r in ladder.rungs(profile) if r.hidden == width and r.fraction == 1.0)


CONTROL_FITTED_STEPS = with_fallbacks({"quick": 1000, "full": 4000})
"""Training steps of chapter 1's ``"control fitted"`` model (the knob models' width)."""


def chapter1(profile: str) -> list[Job]:
    """Chapter 1's knob and control models at the ladder's largest small rung, seed 0: ``"selection
    <s>"`` for s in 0, 0.5, 1 (``"selection 1"`` *is* the rung); ``"control"`` and ``"control
    fitted"`` (more steps), the tree-MRF world; ``"cloze nsubj"``, only subjects masked."""
    widest = max(ladder.LADDERS[profile]["sizes"])
    base = next(r for r in ladder.rungs(profile) if r.hidden == widest).config
    jobs = [Job("toy" if s == 1 else f"toy[selection={s:g}]", None, base, 0, name=f"selection {s:g}")
            for s in (0, 0.5, 1)]
    jobs.append(Job("treemrf", None, base, 0, name="control"))
    steps = CONTROL_FITTED_STEPS[profile]
    jobs.append(Job("treemrf", None, replace(base, steps=steps, eval_every=steps // 4), 0, name="control fitted"))
    jobs.append(Job("toy", None, replace(base, mask_only=("nsubj",)), 0, name="cloze nsubj"))
    return jobs


SMOOTHING = with_fallbacks({"quick": (0.1,), "full": (0.01, 0.1)})
"""Chapter 2's settings of the ``smoothing`` knob with a trained MLM (0 is the ladder's rung)."""


def chapter2(profile: str) -> list[Job]:
    """Chapter 2's soft-zeros models, ``"smoothing <ε>"`` for each ε of :data:`SMOOTHING`, with the
    configuration of the ladder's smallest rung (seed 0), which is the model at ε = 0."""
    config = ladder.rungs(profile)[0].config
    return [Job(f"toy[smoothing={eps:g}]", None, config, 0, name=f"smoothing {eps:g}") for eps in SMOOTHING[profile]]


CH3_NOISE = (0.0, 0.1, 0.3)
"""Chapter 3's noise knob: shares of training words replaced by a random word (``noise=``)."""

CH3_SPAN = with_fallbacks({"quick": 16, "full": 64})
"""Width of chapter 3's span models and their token-masked twins, per profile: a ladder rung the
book trains with several seeds anyway, so that the twins cost no training of their own."""

CH3_SEEDS = {"quick": (0, 1, 2), "full": tuple(range(6)), "extended": tuple(range(6))}
CH3_SEEDS[PILOT] = tuple(range(5))  # the pilot: five seeds for the planning SD
"""Training seeds of chapter 3's span models and twins, per profile."""


def chapter3(profile: str) -> list[Job]:
    """Chapter 3's models: for each seed of :data:`CH3_SEEDS`, ``"span s<k>"``, trained with span
    masking (``span=3.0``: geometric runs of mean length 3 covering the same 15 % of tokens), and
    its token-masked ``"twin s<k>"`` (the rung of width :data:`CH3_SPAN`); ``"noise <η>"``, the
    middle rung, each word replaced by a random one with probability η (``"noise 0"`` *is* it)."""
    pair = _rung(profile, CH3_SPAN[profile])
    jobs = []
    for seed in CH3_SEEDS[profile]:
        jobs += [Job("toy", None, replace(pair, span=3.0, checkpoints=()), seed, name=f"span s{seed}"),
                 Job("toy", None, pair, seed, name=f"twin s{seed}")]
    middle = _rung(profile, with_fallbacks({"quick": 32, "full": 64})[profile])
    jobs += [Job("toy", None, replace(middle, noise=eta), 0, name=f"noise {eta:g}") for eta in CH3_NOISE]
    return jobs


CH4_KNOB = with_fallbacks({
    "quick": dict(rate=0.45, fit_steps=330, deep_layers=3),
    "full": dict(rate=0.45, fit_steps=1250, deep_layers=3),
})
"""Chapter 4's knob and controls, per profile: the second selection rate of the ``[MASK]``-share
knob (the first, 0.15, *is* the pair), the steps of the fit-matched MLM (trained shorter, to
MAE-LM's fit) and the layers of the depth-matched MLM (MAE-LM's encoder and decoder together)."""

CH4_SEEDS = {"quick": 3, "full": 6, "extended": 37}
CH4_SEEDS[PILOT] = 5  # the pilot: five seeds for the planning SD
"""Pretraining seeds of chapter 4's pair, per profile; the extended profile's, what its questions
need at 80 % power (``results/plans/04_deficiency.json``)."""

CH4_ARMS = {"full": dict(fit=3, deep=3, knob=3)}
"""Seeds of chapter 4's controls and knob where a profile trains fewer than the pair's
(:data:`CH4_SEEDS`), to fit its budget (:func:`ch4_budget`); elsewhere, every seed of the pair."""


def chapter4(profile: str) -> list[Job]:
    """Chapter 4's models at the width of its MLM/MAE-LM pair, seeds :data:`CH4_SEEDS` (controls and
    knob: :func:`ch4_arm_seeds`), settings :data:`CH4_KNOB`: ``"default <kind> s<seed>"``, the pair
    (``mlm`` / ``maelm``, same initial weights), the ladder's rung of that width; ``"knob <kind>
    r<rate> s<seed>"``, the pair at the knob's rate (80/10/10 split: a ``[MASK]`` share of 0.8 r);
    ``"fit mlm s<seed>"`` and ``"deep mlm s<seed>"``, the fit- and depth-matched MLMs."""
    k = CH4_KNOB[profile]
    width = 64 if FALLBACK.get(profile, profile) == "full" else ladder.LADDERS[profile]["sizes"][0]
    pair = _rung(profile, width)
    fit = replace(pair, steps=k["fit_steps"], eval_every=max(1, k["fit_steps"] // 4))
    arms = ch4_arm_seeds(profile)
    jobs = []
    for seed in range(CH4_SEEDS[profile]):
        for kind in ("mlm", "maelm"):
            jobs.append(Job("toy", None, pair, seed, kind, name=f"default {kind} s{seed}"))
            if seed < arms["knob"]:
                jobs.append(Job("toy", None, replace(pair, mask_rate=k["rate"]), seed, kind,
                                name=f"knob {kind} r{k['rate']:.2f} s{seed}"))
        if seed < arms["fit"]:
            jobs.append(Job("toy", None, fit, seed, "mlm", name=f"fit mlm s{seed}"))
        if seed < arms["deep"]:
            jobs.append(Job("toy", None, replace(pair, layers=k["deep_layers"]), seed, "mlm",
                            name=f"deep mlm s{seed}"))
    return jobs


def ch4_arm_seeds(profile: str) -> dict:
    """Seeds of each of chapter 4's arms in ``profile``, ``{"fit": n, "deep": n, "knob": n}``."""
    n = CH4_SEEDS[profile]
    return {arm: min(n, CH4_ARMS.get(profile, {}).get(arm, n)) for arm in ("fit", "deep", "knob")}


def ch4_budget(profile: str = "full") -> dict:
    """What chapter 4 trains in ``profile`` and what one seed costs its build in core-seconds
    (:func:`estimated_seconds`): ``full_pair_seeds``, ``full_arm_seeds`` (the fewest arm's),
    ``full_pair_seed_cost`` (the pair) and ``full_controls_seed_cost`` (the controls and knob)."""
    jobs = {j.name.rsplit(" s", 1)[0]: j for j in chapter4(profile) if j.name.endswith(" s0")}
    cost = {name: estimated_seconds([job]) for name, job in jobs.items()}
    pair = cost["default mlm"] + cost["default maelm"]
    return {"full_pair_seeds": CH4_SEEDS[profile], "full_arm_seeds": min(ch4_arm_seeds(profile).values()),
            "full_pair_seed_cost": round(pair), "full_controls_seed_cost": round(sum(cost.values()) - pair)}


def chapter5(profile: str) -> list[Job]:
    """Chapter 5's topic-world MLMs, ``"plateau"`` and a ladder behind the wall, ``"wall h<hidden>
    s<steps>"``, derived from the topic preset by width and steps only."""
    base = PRESETS[preset_for("toy_topic", profile)]

    def cfg(hidden: int, steps: int) -> TrainConfig:
        if (hidden, steps) == (base.hidden, base.steps):
            return base
        return replace(base, hidden=hidden, heads=max(1, hidden // 32), intermediate=4 * hidden,
                       steps=steps, eval_every=max(100, steps // 4), checkpoints=())

    base_profile = FALLBACK.get(profile, profile)  # extended: the full profile's topic models
    default = {"quick": (32, 500), "full": (64, 2000)}[base_profile]
    rungs = {"quick": [(16, 300), default],
             "full": [(32, 600), (32, 2000), default, (64, 6000)]}[base_profile]
    jobs = [Job("toy", "plateau", cfg(*default), 0, name="plateau")]
    jobs += [Job("toy", "wall", cfg(h, s), 0, name=f"wall h{h} s{s}") for h, s in rungs]
    return jobs


CH6_SEEDS = {"quick": (0, 1, 2), "full": tuple(range(5)), "extended": tuple(range(42))}
CH6_SEEDS[PILOT] = tuple(range(5))  # the pilot: five seeds for the planning SD
"""Training seeds of chapter 6's recipes (BERT's fixed 15 %, a uniform mask ratio), per profile."""


def chapter6(profile: str) -> list[Job]:
    """Chapter 6's training knob, for each seed of :data:`CH6_SEEDS`: ``"bert s<k>"``, chapter 3's
    twin (BERT's fixed 15 %), and ``"diffusion s<k>"``, its mask ratio U(0, 1) per sentence."""
    pair = _rung(profile, CH3_SPAN[profile])
    diffusion = replace(pair, mask_ratio="uniform", checkpoints=())
    return [job for seed in CH6_SEEDS[profile]
            for job in (Job("toy", None, pair, seed, name=f"bert s{seed}"),
                        Job("toy", None, diffusion, seed, name=f"diffusion s{seed}"))]


SEED_TABLES = {3: ("CH3_SEEDS",), 4: ("CH4_SEEDS",), 6: ("CH6_SEEDS",)}
"""Per chapter, the tables of training seeds (per profile) its recipe questions are measured on."""

CHAPTER_MODELS: dict[int, Callable[[str], list[Job]]] = {
    1: chapter1, 2: chapter2, 3: chapter3, 4: chapter4, 5: chapter5, 6: chapter6}
"""Chapter number -> its function listing the knob and control models it trains."""


def chapter_models(chapter: int, profile: str) -> list[Job]:
    """The knob/control models of one chapter in ``profile``, each at its seed plus the profile's
    :func:`~mlmbook.profiles.seed_offset` (a model keeps its name, e.g. ``"span s0"``)."""
    offset = seed_offset(profile)
    return [replace(j, seed=j.seed + offset) for j in CHAPTER_MODELS.get(int(chapter), lambda p: [])(profile)]


def find(chapter: int, profile: str, name: str) -> Job:
    """The job a chapter lists under ``name`` (a clear error naming the choices otherwise)."""
    jobs = {j.name: j for j in chapter_models(chapter, profile)}
    if name not in jobs:
        raise KeyError(f"chapter {chapter} lists no model named {name!r} in the {profile} profile; "
                       f"it has {', '.join(sorted(jobs)) or 'none'}")
    return jobs[name]


def needed(profile: str, chapters=tuple(CHAPTER_MODELS)) -> list[Job]:
    """Every knob/control model the given chapters list in ``profile`` (duplicates removed)."""
    return list(dict.fromkeys(j for c in chapters for j in chapter_models(c, profile)))
