r"""Train every toy model a build needs, up front, one process per core.

The book's chapters train their models on first use (:func:`~mlmbook.models.cache.load_or_train`),
one after another inside the chapter that needs them. On a fresh machine that is the larger
part of a build: the full profile's ladder, MAE-LMs and topic-world models are a dozen
trainings. Each training runs on **one thread** (the thread policy, :mod:`mlmbook.threads`,
which also makes it bit-reproducible), so a machine with ``c`` cores can train ``c`` models at
once and get the *same weights*. :func:`prepare` does that before the chapters run: it lists
what the profile needs (:func:`needed`), skips what the cache already holds, and trains the
rest in a pool of worker processes, longest first. The chapters then find everything cached.

>>> from mlmbook.models import prepare                        # doctest: +SKIP
>>> prepare.prepare("quick")                                  # doctest: +SKIP
"""
from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context

from ..paths import env_int
from . import ladder, zoo
from .train import PRESETS, TRAIN_THREADS, preset_for
from .zoo import Job

__all__ = ["Job", "NEEDS", "needed", "missing", "prepare", "TOPIC_KNOBS"]

TOPIC_KNOBS = ("plateau", "wall")
"""Topic worlds of chapter 5 whose MLM is trained (the ``topic`` knob of the toy grammar)."""


NEEDS = {0: (), 1: ("mlm", "seeds"), 2: ("mlm",), 3: ("mlm",), 4: ("mlm", "maelm"), 5: ("topic",)}
"""What each chapter loads besides the default MLM: the MLM ladder, the MAE-LM ladder, further
seeds of the default model (chapter 1 takes its verdicts across them), the topic worlds."""


def needed(profile: str, chapters=tuple(NEEDS), extra_seeds: tuple[int, ...] = ()) -> list[Job]:
    """The toy models chapters ``chapters`` (numbers) load in ``profile``, longest training first.

    The default MLM; with ``"seeds"`` also its :data:`~mlmbook.models.ladder.VERDICT_SEEDS`
    and ``extra_seeds``; the MLM and MAE-LM ladders
    with the smallest rung's seeds (:mod:`mlmbook.models.ladder`); chapter 5's topic-world MLMs.
    """
    top = PRESETS[profile]
    wants = {w for c in chapters for w in NEEDS.get(int(c), ())}
    seeds = (*range(ladder.VERDICT_SEEDS.get(profile, 1)), *extra_seeds) if "seeds" in wants else ()
    jobs = [Job("toy", None, top, s) for s in sorted({0, *seeds})]
    for kind in ("mlm", "maelm"):
        if kind in wants and profile in ladder.LADDERS:
            for rung in ladder.rungs(profile, kind) + ladder.seed_rungs(profile, kind):
                jobs.append(Job("toy", None, rung.config, rung.seed, kind))
    if "topic" in wants:
        topic = PRESETS[preset_for("toy_topic", profile)]
        jobs += [Job("toy", knob, topic, 0) for knob in TOPIC_KNOBS]
    jobs += zoo.needed(profile, [int(c) for c in chapters])
    unique = list(dict.fromkeys(jobs))
    return sorted(unique, key=lambda j: -j.cost)


def missing(jobs: list[Job]) -> list[Job]:
    """The jobs whose model is not in the cache yet."""
    return [j for j in jobs if not j.cached()]


def _run(job: Job) -> tuple[str, float]:
    t = time.perf_counter()
    label = job.run()
    return label, time.perf_counter() - t


def prepare(profile: str, chapters=tuple(NEEDS), extra_seeds: tuple[int, ...] = (),
            workers: int | None = None, say=print) -> list[str]:
    """Train the models chapters ``chapters`` need in ``profile`` that are not cached, ``workers`` at a time.

    Parameters
    ----------
    profile : str
    chapters : iterable of int
        Chapter numbers (default: the whole book).
    extra_seeds : tuple of int
        Further seeds of the default model (a chapter that takes its verdicts across seeds).
    workers : int, optional
        Processes (default ``$MLMBOOK_TRAIN_WORKERS``, else the cores divided by the threads each
        training uses: with ``MLMBOOK_THREADS=2`` on two cores, one — more would oversubscribe
        the cores, the slowdown :mod:`mlmbook.threads` exists to avoid). Each training uses the
        thread policy's count, so the weights do not depend on the number of workers.

    Returns
    -------
    list of str
        Labels of the models trained now.
    """
    todo = missing(needed(profile, chapters, extra_seeds))
    if not todo:
        return []
    per = TRAIN_THREADS                            # threads each training uses
    n = workers or env_int("MLMBOOK_TRAIN_WORKERS", max(1, (os.cpu_count() or 1) // per), minimum=1)
    n = max(1, min(n, len(todo)))
    say(f"training {len(todo)} toy model(s) for the {profile} profile, {n} at a time")
    if n == 1:
        return [_run(j)[0] for j in todo]
    done = []
    with ProcessPoolExecutor(n, mp_context=get_context("spawn")) as pool:
        futures = {pool.submit(_run, j): j for j in todo}
        for fut in as_completed(futures):
            label, seconds = fut.result()
            done.append(label)
            say(f"  trained {label} in {seconds:.0f} s ({len(done)}/{len(todo)})")
            sys.stdout.flush()
    return done
