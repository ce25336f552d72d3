r"""Run tasks that wait on one another on a pool of worker processes, the longest path first.

A build has two kinds of work, each on one core: training the toy models
(:mod:`mlmbook.models.prepare`) and executing chapters (:mod:`mlmbook.pipeline.execute`). A
chapter can start as soon as the models *it* loads are trained, so the two are scheduled
together: while one core still trains the long models of chapter 4, the other already executes
chapter 0. Each :class:`Task` names the tasks it ``needs``; :func:`run` keeps ``workers``
processes busy with tasks whose needs are done.

Which ready task goes first is *list scheduling* by upward rank (the rule of the HEFT
heuristic): a task's priority is its own estimated seconds plus the longest chain of tasks
that wait on it,

.. math:: \operatorname{rank}(t) = s_t + \max_{u \,:\, t \in \operatorname{needs}(u)} \operatorname{rank}(u),

so a short training that unblocks a long chapter starts before a longer one nothing waits on.
A task may take several ``slots`` (a chapter on a large model takes every core and runs alone).
The order never changes a result: every task is deterministic on its own, and a model's
weights do not depend on which process trains it.

>>> from mlmbook import workers
>>> tasks = [workers.Task("a", divmod, (7, 2)), workers.Task("b", pow, (2, 5), needs=("a",))]
>>> [(t.key, value) for t, value, error, _ in workers.run(tasks, workers=1)]
[('a', (3, 1)), ('b', 32)]
"""
from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Any, Callable, Iterator

__all__ = ["Task", "NotRun", "ranks", "run"]


@dataclass(frozen=True)
class Task:
    """One piece of work: ``fn(*args)`` in a worker process.

    Attributes
    ----------
    key : str
        Its name; other tasks list it in their ``needs``.
    fn : callable
        A module-level function (it is pickled to the worker process).
    args : tuple
    needs : tuple of str
        Keys of the tasks that must finish (without error) first.
    seconds : float
        Its estimated duration, for the priority.
    slots : int
        Workers it occupies (at most the pool's size).
    """

    key: str
    fn: Callable
    args: tuple = ()
    needs: tuple = ()
    seconds: float = 1.0
    slots: int = 1


class NotRun(RuntimeError):
    """The error reported for a task whose needs failed or that a ``stop`` left unstarted."""


def ranks(tasks: list[Task]) -> dict[str, float]:
    """Each task's upward rank: its seconds plus the largest rank among the tasks that need it."""
    waiting = {t.key: [] for t in tasks}
    for t in tasks:
        for need in t.needs:
            waiting[need].append(t.key)
    seconds = {t.key: t.seconds for t in tasks}
    out: dict[str, float] = {}

    def rank(key):
        if key not in out:
            out[key] = seconds[key] + max((rank(k) for k in waiting[key]), default=0.0)
        return out[key]

    for t in tasks:
        rank(t.key)
    return out


def run(tasks: list[Task], workers: int = 1, stop: Callable[[], bool] = lambda: False,
        started: Callable[[Task], None] = lambda task: None) -> Iterator[tuple[Task, Any, BaseException | None, float]]:
    """Run ``tasks`` on ``workers`` processes; yield ``(task, value, error, seconds)`` as each ends.

    Parameters
    ----------
    tasks : list of Task
        Keys unique; every need a key of the list.
    workers : int
        Processes (``spawn``ed). With 1, the tasks run one by one in this process, in order of rank.
    stop : callable
        Checked after each task ends: once it returns True no further task starts (the running
        ones finish) and the rest are reported with a :class:`NotRun` error.
    started : callable
        Called with each task as it starts.

    Yields
    ------
    tuple
        The task, its return value (None on error), its error (None on success), and its wall
        seconds. A task whose needs failed is not run and is reported with a :class:`NotRun`.
    """
    keys = {t.key for t in tasks}
    unknown = {n for t in tasks for n in t.needs} - keys
    if len(keys) != len(tasks) or unknown:
        raise ValueError(f"tasks need unknown keys {sorted(unknown)} or repeat a key")
    rank = ranks(tasks)
    pending = sorted(tasks, key=lambda t: -rank[t.key])
    done: set[str] = set()
    failed: set[str] = set()

    def skipped():
        """Pending tasks that can never run (a need failed, or stop), removed from ``pending``."""
        out = [t for t in pending if stop() or failed.intersection(t.needs)]
        for t in out:
            pending.remove(t)
        return out

    def not_run(t):
        why = "the build stopped" if stop() else f"it needs {', '.join(sorted(failed & set(t.needs)))}, which failed"
        return t, None, NotRun(f"{t.key} was not run: {why}"), 0.0

    if workers <= 1:
        while pending:
            t = next((t for t in pending if done.issuperset(t.needs)), None)
            if t is None:
                break
            pending.remove(t)
            started(t)
            start = time.perf_counter()
            try:
                value, error = t.fn(*t.args), None
            except Exception as err:          # reported; a KeyboardInterrupt stops everything
                value, error = None, err
            (failed if error else done).add(t.key)
            yield t, value, error, time.perf_counter() - start
            for s in skipped():
                failed.add(s.key)
                yield not_run(s)
        return

    running: dict = {}                        # future -> (task, start)
    free = workers
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        try:
            while pending or running:
                for t in list(pending):       # by rank; the first ready one that does not fit waits
                    if not done.issuperset(t.needs):
                        continue
                    if min(t.slots, workers) > free:
                        break
                    pending.remove(t)
                    free -= min(t.slots, workers)
                    started(t)
                    running[pool.submit(t.fn, *t.args)] = (t, time.perf_counter())
                if not running:
                    break
                ended, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in ended:
                    t, start = running.pop(fut)
                    free += min(t.slots, workers)
                    error = fut.exception()
                    (failed if error else done).add(t.key)
                    yield t, None if error else fut.result(), error, time.perf_counter() - start
                for s in skipped():
                    failed.add(s.key)
                    yield not_run(s)
        except BaseException:                 # an interrupt or a caller's error: start nothing more
            for fut in running:
                fut.cancel()
            raise
