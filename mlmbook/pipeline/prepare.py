"""Train the toy models a build needs, up front: small ones stacked, the rest one per core.

:func:`plan` cuts what :func:`needed` lists and the cache lacks into *units*: models of one shape
train as one stack, paying per-operation overhead once. A model's weights depend only on its job.
"""
from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from dataclasses import dataclass

from ..models import ladder, stacked
from ..models.job import Job, estimated_seconds
from ..models.train import PRESETS, TRAIN_THREADS
from ..paths import env_int
from ..profiles import seed_offset
from ..workers import Task
from ..workers import run as run_tasks
from . import zoo

__all__ = ["Job", "NEEDS", "Trained", "UnitDone", "needed", "missing", "plan", "split",
           "estimated_seconds", "workers_for", "tasks", "report", "prepare"]

NEEDS = {0: (), 1: ("mlm",), 2: ("mlm",), 3: ("mlm",), 4: ("mlm", "maelm"), 5: ()}
"""The ladders each chapter loads besides the default MLM (its other models: :mod:`.zoo`)."""


def needed(profile: str, chapters=tuple(NEEDS)) -> list[Job]:
    """The toy models ``chapters`` (numbers) load in ``profile``, longest training first: the
    default MLM, the ladders (with the smallest rung's seeds) and their own (``zoo.needed``)."""
    wants = {w for c in chapters for w in NEEDS.get(int(c), ())}
    jobs = [Job("toy", None, PRESETS[profile], seed_offset(profile))]
    jobs += [Job("toy", None, rung.config, rung.seed, kind) for kind in ("mlm", "maelm")
             if kind in wants and profile in ladder.LADDERS
             for rung in ladder.rungs(profile, kind) + ladder.seed_rungs(profile, kind)]
    jobs += zoo.needed(profile, [int(c) for c in chapters])
    return sorted(dict.fromkeys(jobs), key=lambda j: -j.cost)


def missing(jobs: list[Job]) -> list[Job]:
    """The jobs whose model is not in the cache yet."""
    return [j for j in jobs if not j.cached()]


@dataclass(frozen=True)
class Trained:
    """A model trained now: its description, its share of its unit's wall time, and how."""

    label: str
    seconds: float
    how: str


STACK_WIDTH = 256
"""Most models in one stack, times their hidden size (16 of width 16, 8 of width 32, 4 of 64): a
wider stack outgrows the core's cache and gets slower per model (``benchmarks/training.py``)."""

MIN_STACK = 4
"""Fewest models in a stack that :func:`plan` splits further to keep every core busy."""


def _stackable(job) -> bool:
    return hasattr(job, "config")                # a toy MLM or MAE-LM, not a job of another kind


def plan(jobs: list, workers: int = 1) -> list[list]:
    """Cut ``jobs`` into units, longest first: stacks of toy models of one shape (:func:`split`)."""
    units, groups = [], {}
    for job in jobs:
        if _stackable(job):
            groups.setdefault(stacked.shape_of(job.grammar_object(), job.config, job.kind), []).append(job)
        else:
            units.append([job])
    for group in groups.values():
        units += split(group, workers)
    return sorted(units, key=lambda u: -estimated_seconds(u))


def _stream(job) -> tuple:
    """What a stack's members share one sampled stream by (grammar, seed, batch, tags), sortable."""
    return (job.grammar, job.topic or "", job.seed, job.config.batch, tuple(job.config.mask_only))


def split(group: list, workers: int = 1) -> list[list]:
    """Cut jobs of one shape into stacks of at most :data:`STACK_WIDTH` / hidden models, up to
    ``workers`` stacks of at least :data:`MIN_STACK`, sizes within one; jobs reading the same
    sentences (:func:`_stream`) go side by side: a stack samples a stream once (``benchmarks/``)."""
    most = max(1, STACK_WIDTH // group[0].config.hidden)
    n = max(math.ceil(len(group) / most), min(workers, len(group) // MIN_STACK), 1)
    ordered, sizes = sorted(group, key=_stream), [len(group) // n + (i < len(group) % n) for i in range(n)]
    starts = [sum(sizes[:i]) for i in range(n)]
    return [ordered[a:a + k] for a, k in zip(starts, sizes)]


@dataclass(frozen=True)
class UnitDone:
    """What training a unit returns: ``(label, seconds, how)`` per model and the packed entries."""

    trained: list
    models: dict


def _run(unit: list, ship: bool = False) -> UnitDone:
    """Train one unit (on a worker); ``ship``: return the trained entries as bytes too."""
    from ..models import shipping
    from ..models.cache import train_together

    t = time.perf_counter()
    if len(unit) == 1 and not _stackable(unit[0]):
        trained = [(unit[0].run(), time.perf_counter() - t, "alone")]
    else:
        train_together([(j.grammar_object(), j.config, j.seed, j.kind) for j in unit])
        share = (time.perf_counter() - t) / len(unit)
        how = f"stacked with {len(unit) - 1} other{'s' if len(unit) > 2 else ''}" if len(unit) > 1 else "stacked alone"
        trained = [(j.describe(), share, how) for j in unit]
    return UnitDone(trained, shipping.pack_jobs(unit) if ship else {})


def workers_for(n: int | None = None) -> int:
    """Training processes: ``n``, else ``$MLMBOOK_TRAIN_WORKERS``, else CPUs / ``TRAIN_THREADS``."""
    return n or env_int("MLMBOOK_TRAIN_WORKERS", max(1, (os.cpu_count() or 1) // TRAIN_THREADS), minimum=1)


def tasks(profile: str, chapters=tuple(NEEDS), workers: int = 1, say=print,
          ship: bool = False) -> list[Task]:
    """The training step as tasks ``"train <i>"`` (a unit of :func:`plan` as first argument)."""
    todo = missing(needed(profile, chapters))
    if not todo:
        return []
    units = plan(todo, workers)
    stacks = sum(len(u) > 1 or _stackable(u[0]) for u in units)
    say(f"training {len(todo)} toy model(s) for the {profile} profile, {max(1, min(workers, len(units)))} at a time"
        + (f" ({stacks} stack(s) of small models)" if stacks else ""))
    return [Task(f"train {i}", _run, (unit, ship), seconds=estimated_seconds(unit)) for i, unit in enumerate(units)]


def report(done_unit, done: list[Trained], total: int, say=print, elapsed: str | None = None) -> None:
    """Append a :class:`UnitDone`'s models to ``done``, one line each (``trained 5/64 models``)."""
    for label, seconds, how in done_unit.trained:
        done.append(Trained(label, seconds, how))
        parts = [p.strip() for p in label.split(",")]      # "MLM, hidden 64, 1500 steps, seed 2"
        short = " ".join(p.replace("hidden ", "h") if p.startswith("hidden ") else p
                         for p in parts if not p.endswith(" steps"))           # "MLM h64 seed 2"
        stacked_with = "" if how == "alone" else f", {how}"
        say(f"  trained {len(done)}/{total} model{'s' if total != 1 else ''} ({short}, {seconds:.0f} s"
            f"{stacked_with})" + (f" {elapsed} elapsed" if elapsed else ""))
    sys.stdout.flush()


def prepare(profile: str, chapters=tuple(NEEDS), workers: int | None = None,
            say=print) -> list[Trained]:
    """Train the models ``chapters`` (numbers; default all) need in ``profile`` and the cache lacks,
    ``workers`` at a time; returns those trained now (:class:`Trained`) in the order they end."""
    n = workers_for(workers)
    todo = tasks(profile, chapters, n, say)
    total = sum(len(t.args[0]) for t in todo)
    done: list[Trained] = []
    with contextlib.closing(run_tasks(todo, max(1, min(n, len(todo))))) as results:
        for _, unit_done, error, _ in results:
            if error is not None:
                raise error
            report(unit_done, done, total, say)
    return done
