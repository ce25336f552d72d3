r"""Run tasks that wait on one another on Dask: the graph, its order and its retries are Dask's.

:func:`run` submits every :class:`Task` at once on the futures of the tasks it ``needs``, with its
upward rank as priority (the HEFT heuristic's rule): its own estimated seconds plus the longest
chain of tasks that wait on it,

.. math:: \operatorname{rank}(t) = s_t + \max_{u \,:\, t \in \operatorname{needs}(u)} \operatorname{rank}(u),

so a short training that unblocks a long chapter starts first; :func:`makespan` plays it out.
"""
from __future__ import annotations

import contextlib
import functools
import graphlib
import heapq
import os
import queue
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from ..errors import BuildError

__all__ = ["Task", "NotRun", "WorkerLost", "ranks", "makespan", "run", "tell", "Progress"]

QUIET_SECONDS = 60.0
"""Longest silence of a run: after it, :class:`Progress` says what is running."""


@dataclass(frozen=True)
class Task:
    """One piece of work: ``fn(*args)`` on a worker after the tasks (or :func:`run`'s ``data``)
    whose keys it ``needs``; ``seconds`` (estimated) sets the priority; ``resources``: Dask's, e.g.
    ``(("GPU", 1),)``; with ``pass_needs``, ``fn(*args, values)``, the needs' values by key."""

    key: str
    fn: Callable
    args: tuple = ()
    needs: tuple = ()
    seconds: float = 1.0
    resources: tuple = ()
    pass_needs: bool = False


class NotRun(RuntimeError):
    """The error reported for a task whose needs failed or that a ``stop`` left unstarted."""


class WorkerLost(BuildError):
    """A task whose worker process died while running it, more often than the cluster allows."""


def ranks(tasks: list[Task]) -> dict[str, float]:
    """Each task's upward rank: its seconds plus the largest rank among the tasks that need it."""
    seconds = {t.key: t.seconds for t in tasks}
    waiting = {key: [t.key for t in tasks if key in t.needs] for key in seconds}

    @functools.cache
    def rank(key):
        return seconds[key] + max((rank(k) for k in waiting[key]), default=0.0)

    return {key: rank(key) for key in seconds}


def makespan(tasks: list[Task], workers: int) -> float:
    """The wall seconds of ``tasks`` on ``workers`` if every task takes its ``seconds``, whenever a
    worker frees the highest-ranked ready task starting (needs outside ``tasks`` count as done)."""
    keys, rank = {t.key for t in tasks}, ranks(tasks)
    pending = sorted(tasks, key=lambda t: -rank[t.key])
    done: set[str] = set()
    ends: list = []                              # (end time, tasks started before it, task)
    now = 0.0
    while pending or ends:
        for t in list(pending):
            if len(ends) < max(1, workers) and done.issuperset(n for n in t.needs if n in keys):
                pending.remove(t)
                heapq.heappush(ends, (now + t.seconds, len(done) + len(ends), t))
        if not ends:
            break                                # unreachable needs: nothing more can start
        now, _, t = heapq.heappop(ends)
        done.add(t.key)
    return now


_context = threading.local()


def tell(text: str, show: bool = True) -> None:
    """Report progress from inside a task (its status, and a line on the terminal if ``show``)."""
    sink = getattr(_context, "sink", None)
    if sink is not None:
        sink({"key": _context.key, "text": text, "show": bool(show)})
    elif show:
        print(text, file=sys.stderr, flush=True)


class Progress:
    """The lines a run prints: each one at once, and after :data:`QUIET_SECONDS` of silence a line
    naming what is running; a task that starts a second time and a lost worker are lines too."""

    def __init__(self, say: Callable[[str], None], on_start: Callable[[Task], None] | None = None):
        self.say, self.on_start = say, on_start
        self.t0 = self.last = time.perf_counter()
        self.status: dict[str, str] = {}
        self.tasks: dict[str, Task] = {}
        self.started: dict[str, float] = {}
        self.where: dict[str, str] = {}
        self._lock = threading.Lock()

    def elapsed(self) -> str:
        """Wall time since the run began, ``m:ss``."""
        s = int(time.perf_counter() - self.t0)
        minutes = f"{s // 3600}:{s // 60 % 60:02d}" if s >= 3600 else f"{s // 60}"
        return f"{minutes}:{s % 60:02d}"

    def line(self, text: str) -> None:
        with self._lock:
            self.say(text)
            self.last = time.perf_counter()

    def __call__(self, event) -> None:
        """A task's message (:func:`tell`, its start): a dict, or Dask's ``(time, message)``."""
        msg = event[1] if isinstance(event, tuple) else event
        key = msg.get("key")
        if "started_on" in msg:                   # (Dask adds "worker" to every worker's event)
            self.begin(key, msg["started_on"])
            return
        if key in self.status:
            self.status[key] = msg["text"]
        if msg.get("show"):
            self.line(msg["text"])

    def begin(self, key: str, worker: str) -> None:
        """Task ``key`` starts on ``worker``; a second start (its worker was lost) is a line."""
        if key in self.where:
            self.line(f"  {key} runs again, on {worker} (the worker that ran it was lost)")
        elif key in self.started:                 # it ended before its start arrived
            return
        self.where[key] = worker
        self.started[key] = time.perf_counter()
        self.status[key] = key
        if self.on_start is not None and key in self.tasks:
            self.on_start(self.tasks[key])

    def end(self, key: str) -> float:
        """Task ``key`` ended; returns its wall seconds since it started (0 if that never came)."""
        self.status.pop(key, None)
        self.where.pop(key, None)
        return time.perf_counter() - self.started.setdefault(key, time.perf_counter())

    def cluster(self, event, names: dict[str, str]) -> None:
        """A Dask scheduler's event: a lost worker is a line naming its tasks (by ``names``)."""
        msg = event[1] if isinstance(event, tuple) else event
        if msg.get("action") != "remove-worker" or msg.get("expected"):
            return
        ran = sorted(names[k] for k in msg.get("processing-tasks", ()) if k in names)
        self.line(f"  lost the Dask worker {msg.get('worker')}" + (
            f" while it ran {', '.join(ran)}: Dask runs {'it' if len(ran) == 1 else 'them'} again on another "
            f"worker, up to the cluster's allowed failures" if ran else ""))

    def heartbeat(self) -> None:
        """Say what runs, when nothing was said for :data:`QUIET_SECONDS`."""
        if time.perf_counter() - self.last >= QUIET_SECONDS and self.status:
            self.line(f"  {self.elapsed()} elapsed; running: " + "; ".join(self.status.values()))


def _call(topic: str, key: str, fn: Callable, args: tuple, values: dict | None, *after):
    """On a worker: say where the task starts, then run it with :func:`tell` wired to ``topic``."""
    from distributed import get_worker

    worker = get_worker()
    send = lambda msg: worker.log_event(topic, msg)  # noqa: E731
    send({"key": key, "started_on": f"{worker.address} (pid {os.getpid()})"})
    _context.sink, _context.key = send, key
    try:
        return fn(*args, values) if values is not None else fn(*args)
    except Exception as err:                       # its dependents fail with it: name the origin
        with contextlib.suppress(AttributeError, TypeError):
            err.__dict__.setdefault("_mlmbook_task", key)
        raise
    finally:
        _context.sink = _context.key = None


def run(tasks: list[Task], workers: int = 1, stop: Callable[[], bool] = lambda: False,
        scheduler=None, data: dict | None = None, progress: Progress | None = None
        ) -> Iterator[tuple[Task, Any, BaseException | None, float]]:
    """Run ``tasks`` on Dask; yield ``(task, value, error, seconds)`` as each ends (a task whose
    needs failed gets a :class:`NotRun`, one whose worker died too often a :class:`WorkerLost`).
    ``workers``: the local cluster's processes (with 1, a Dask worker thread here); ``stop``,
    checked after each task: once True, the rest is cancelled; ``scheduler``: an existing cluster's
    address or client; ``data``: values tasks may ``need``. Close the iterator
    (``contextlib.closing``) to cancel the rest and stop the local cluster."""
    data = dict(data or {})
    by_key = {t.key: t for t in tasks}
    unknown = {n for t in tasks for n in t.needs} - set(by_key) - set(data)
    if len(by_key) != len(tasks) or unknown or set(by_key) & set(data):
        raise ValueError(f"tasks need unknown keys {sorted(unknown)} or repeat a key")
    try:
        graph = {t.key: [n for n in t.needs if n in by_key] for t in tasks}
        order = [by_key[k] for k in graphlib.TopologicalSorter(graph).static_order()]
    except graphlib.CycleError as err:
        raise ValueError(f"tasks need each other in a circle: {' -> '.join(err.args[1])}") from None
    if not order:
        return
    progress = progress or Progress(lambda text: print(text, file=sys.stderr, flush=True))
    from .cluster import client_for
    with client_for(workers, scheduler) as client:
        yield from _on_dask(client, order, data, stop, progress)


def _on_dask(client, order: list[Task], data: dict, stop, progress: Progress):
    topic, rank = f"mlmbook-{uuid.uuid4().hex[:12]}", ranks(order)
    names: dict[str, str] = {}                        # Dask's key -> the task's key
    progress.tasks.update((t.key, t) for t in order)
    client.subscribe_topic(topic, progress)
    client.subscribe_topic("all", lambda event: progress.cluster(event, names))
    futures = dict(zip(data, client.scatter(list(data.values()), hash=False))) if data else {}
    for t in order:
        needs = [futures[k] for k in t.needs]
        key = "".join(c if c.isalnum() else "_" for c in t.key) + f"-{uuid.uuid4().hex}"
        names[key] = t.key
        futures[t.key] = client.submit(_call, topic, t.key, t.fn, t.args,
                                       dict(zip(t.needs, needs)) if t.pass_needs else None,
                                       *([] if t.pass_needs else needs), key=key, priority=rank[t.key],
                                       pure=False, resources=dict(t.resources) or None)
    running = {futures[t.key]: t for t in order}
    futures.clear()                                   # Dask keeps a value while a task waits for it
    ends: queue.SimpleQueue = queue.SimpleQueue()  # futures as they end (called back from a thread)
    for fut in running:
        fut.add_done_callback(ends.put)
    needs_of = {t.key: t.needs for t in order}
    stopped = False
    try:
        while running:
            try:
                fut = ends.get(timeout=5.0)
            except queue.Empty:
                progress.heartbeat()
                continue
            t = running.pop(fut, None)
            if t is None:                              # called back twice
                continue
            value, error = _outcome(fut, t, needs_of, names)
            yield t, value, error, progress.end(t.key)
            if running and not stopped and stop():
                stopped = True
                client.cancel(list(running))
    finally:  # an interrupt or a caller's error: nothing more runs
        if running:
            client.cancel(list(running))
        for name in (topic, "all"):
            with contextlib.suppress(Exception):  # a closing client
                client.unsubscribe_topic(name)


def _outcome(fut, task: Task, needs_of: dict, names: dict) -> tuple[Any, BaseException | None]:
    """A finished future's value or error (its own, a :class:`WorkerLost` or a :class:`NotRun`)."""
    from distributed.scheduler import KilledWorker

    if fut.status == "finished":
        return fut.result(), None
    if fut.status == "cancelled":
        return None, NotRun(f"{task.key} was not run: the build stopped")
    error = fut.exception()
    origin = (names.get(error.task, task.key) if isinstance(error, KilledWorker)
              else getattr(error, "_mlmbook_task", task.key))
    if origin != task.key:
        failed = [n for n in task.needs if _reaches(n, origin, needs_of)]
        return None, NotRun(f"{task.key} was not run: it needs {', '.join(failed)}, which failed")
    if isinstance(error, KilledWorker):
        tries = error.allowed_failures + 1
        return None, WorkerLost(f"{task.key}: its worker process died while running it, "
                                f"{'twice' if tries == 2 else f'{tries} times'} (killed, or out of memory?); "
                                f"nothing of it was kept")
    return None, error


def _reaches(key: str, origin: str, needs_of: dict) -> bool:
    """Whether ``key`` is ``origin`` or needs it, through any chain of needs."""
    return key == origin or any(_reaches(n, origin, needs_of) for n in needs_of.get(key, ()))
