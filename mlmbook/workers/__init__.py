r"""Run tasks that wait on one another, the longest path first: here, on a local Dask cluster, or on any Dask cluster.

A build has two kinds of work: training the toy models (:mod:`mlmbook.models.prepare`) and
executing chapters (:mod:`mlmbook.pipeline.execute`). A chapter can start as soon as the models
*it* loads are trained, so the two are scheduled together. Each :class:`Task` names the tasks it
``needs``; :func:`run` keeps the workers busy with tasks whose needs are done.

Which ready task goes first is *list scheduling* by upward rank (the rule of the HEFT
heuristic): a task's priority is its own estimated seconds plus the longest chain of tasks
that wait on it,

.. math:: \operatorname{rank}(t) = s_t + \max_{u \,:\, t \in \operatorname{needs}(u)} \operatorname{rank}(u),

so a short training that unblocks a long chapter starts before a longer one nothing waits on.
:func:`makespan` plays that rule out on ``N`` workers with the estimated seconds (the estimate of
``python -m mlmbook cost --workers N``).

Where the tasks run (:mod:`mlmbook.workers.cluster`): with one worker and no scheduler, one by one
in this process; otherwise on Dask distributed, a local cluster of one process per core (one
thread each, bound to 127.0.0.1) or an existing cluster given by its scheduler's address. A task
is released to Dask when its needs are done and a slot is free, with its rank as Dask's
``priority``; a task may take several ``slots`` of the local cluster (a chapter on a large model
runs alone) or ask for a Dask resource (``resources=(("GPU", 1),)`` lands it on a GPU worker).
A worker lost while running a task: Dask runs it again once, then :class:`WorkerLost`. The
order never changes a result: every task is deterministic on its own.

Tasks report progress with :func:`tell`; the lines reach the caller's terminal from any worker.

>>> from mlmbook import workers
>>> tasks = [workers.Task("a", divmod, (7, 2)), workers.Task("b", pow, (2, 5), needs=("a",))]
>>> [(t.key, value) for t, value, error, _ in workers.run(tasks, workers=1)]
[('a', (3, 1)), ('b', 32)]
"""
from __future__ import annotations

import heapq
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
"""Longest silence of a run: after this long without a line, :class:`Progress` says what is running."""


@dataclass(frozen=True)
class Task:
    """One piece of work: ``fn(*args)`` on a worker (``fn(*args, values)`` with ``pass_needs``).

    Attributes
    ----------
    key : str
        Its name; other tasks list it in their ``needs``.
    fn : callable
        A module-level function (it is pickled to the worker process).
    args : tuple
    needs : tuple of str
        Keys of the tasks (or of :func:`run`'s ``data``) that must finish without error first.
    seconds : float
        Its estimated duration, for the priority.
    slots : int
        Workers of the local cluster it occupies (at most their number).
    resources : tuple of (str, float)
        Dask resources it asks for (e.g. ``(("GPU", 1),)``); such a task takes no slot.
    pass_needs : bool
        Call ``fn`` with one more argument: a dict from each need's key to its value.
    """

    key: str
    fn: Callable
    args: tuple = ()
    needs: tuple = ()
    seconds: float = 1.0
    slots: int = 1
    resources: tuple = ()
    pass_needs: bool = False


class NotRun(RuntimeError):
    """The error reported for a task whose needs failed or that a ``stop`` left unstarted."""


class WorkerLost(BuildError):
    """A task whose worker process died while running it, twice (killed, or out of memory)."""


def ranks(tasks: list[Task]) -> dict[str, float]:
    """Each task's upward rank: its seconds plus the largest rank among the tasks that need it."""
    waiting = {t.key: [] for t in tasks}
    for t in tasks:
        for need in t.needs:
            if need in waiting:
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


def makespan(tasks: list[Task], workers: int) -> float:
    """The wall seconds :func:`run` takes on ``workers`` slots if every task takes its ``seconds``.

    List scheduling by upward rank played out on the estimates: whenever a slot frees, the
    highest-ranked ready task that fits starts (a task of several slots waits for them, and the
    ready tasks of lower rank wait behind it). Needs outside ``tasks`` count as done.
    """
    keys = {t.key for t in tasks}
    rank = ranks(tasks)
    pending = sorted(tasks, key=lambda t: -rank[t.key])
    done: set[str] = set()
    ends: list = []                              # (end time, order, task)
    now, free, order = 0.0, max(1, workers), 0
    while pending or ends:
        for t in list(pending):
            if not done.issuperset(n for n in t.needs if n in keys):
                continue
            if min(t.slots, workers) > free:
                break
            pending.remove(t)
            free -= min(t.slots, workers)
            heapq.heappush(ends, (now + t.seconds, order, t))
            order += 1
        if not ends:
            break                                # unreachable needs: nothing more can start
        now, _, t = heapq.heappop(ends)
        free += min(t.slots, workers)
        done.add(t.key)
    return now


# ------------------------------------------------------------------------------ progress
_context = threading.local()


def tell(text: str, show: bool = True) -> None:
    """Report progress from inside a task: a line on the caller's terminal (``show``), and the
    task's status in the line :class:`Progress` prints after a silence. Outside a task: stderr."""
    sink = getattr(_context, "sink", None)
    if sink is None:
        if show:
            print(text, file=sys.stderr, flush=True)
        return
    sink({"key": _context.key, "text": text, "show": bool(show)})


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class Progress:
    """The lines a run prints: each one at once, and after :data:`QUIET_SECONDS` of silence a line
    naming what is running, so a log never goes quiet for minutes (on a terminal or not)."""

    def __init__(self, say: Callable[[str], None], quiet: float = QUIET_SECONDS,
                 on_start: Callable[[Task], None] | None = None):
        self.say, self.quiet, self.on_start = say, quiet, on_start
        self.t0 = self.last = time.perf_counter()
        self.status: dict[str, str] = {}
        self._lock = threading.Lock()

    def elapsed(self) -> str:
        """Wall time since the run began, ``m:ss``."""
        return _clock(time.perf_counter() - self.t0)

    def line(self, text: str) -> None:
        with self._lock:
            self.say(text)
            self.last = time.perf_counter()

    def __call__(self, event) -> None:
        """A task's message (:func:`tell`), as a dict or as Dask's ``(time, message)`` event."""
        msg = event[1] if isinstance(event, tuple) else event
        if msg.get("key") in self.status:
            self.status[msg["key"]] = msg["text"]
        if msg.get("show"):
            self.line(msg["text"])

    def begin(self, task: Task) -> None:
        """A task starts: its status is its key (until it tells more), and ``on_start`` hears of it."""
        self.status[task.key] = task.key
        if self.on_start is not None:
            self.on_start(task)

    def end(self, key: str) -> None:
        self.status.pop(key, None)

    def heartbeat(self) -> None:
        """Say what runs, when nothing was said for :attr:`quiet` seconds."""
        if time.perf_counter() - self.last >= self.quiet and self.status:
            self.line(f"  {self.elapsed()} elapsed; running: " + "; ".join(self.status.values()))


# ------------------------------------------------------------------------------ running
def _call(sink, key: str, fn: Callable, args: tuple, values: dict | None):
    """Run one task with :func:`tell` wired to ``sink`` (a callable, or a Dask topic name)."""
    if isinstance(sink, str):
        from distributed import get_worker
        worker, topic = get_worker(), sink
        sink = lambda msg: worker.log_event(topic, msg)  # noqa: E731
    _context.sink, _context.key = sink, key
    try:
        return fn(*args, values) if values is not None else fn(*args)
    finally:
        _context.sink = _context.key = None


def run(tasks: list[Task], workers: int = 1, stop: Callable[[], bool] = lambda: False, scheduler=None,
        data: dict | None = None, progress: Progress | None = None) -> Iterator[tuple[Task, Any, BaseException | None,
                                                                                    float]]:
    """Run ``tasks``; yield ``(task, value, error, seconds)`` as each ends.

    Parameters
    ----------
    tasks : list of Task
        Keys unique; every need a key of the list or of ``data``.
    workers : int
        Processes of the local cluster. With 1 and no ``scheduler``, the tasks run one by one in
        this process, in order of rank.
    stop : callable
        Checked after each task ends: once it returns True no further task starts (the running
        ones finish) and the rest are reported with a :class:`NotRun` error.
    scheduler : str or distributed.Client, optional
        An existing Dask cluster (its scheduler's address, or a client of it) instead of a local one.
    data : dict, optional
        Values tasks may list in their ``needs`` (sent to the cluster once each).
    progress : Progress, optional
        Hears of each task as it starts (:meth:`Progress.begin`), receives the tasks' :func:`tell`
        messages and prints a line after a silence (default: on stderr).

    Yields
    ------
    tuple
        The task, its return value (None on error), its error (None on success), and its wall
        seconds. A task whose needs failed is not run and is reported with a :class:`NotRun`; a
        task whose worker died twice, with a :class:`WorkerLost`.

    Close the iterator (``contextlib.closing``) when leaving it early: that stops the local cluster.
    """
    data = dict(data or {})
    keys = {t.key for t in tasks}
    unknown = {n for t in tasks for n in t.needs} - keys - set(data)
    if len(keys) != len(tasks) or unknown or keys & set(data):
        raise ValueError(f"tasks need unknown keys {sorted(unknown)} or repeat a key")
    progress = progress or Progress(lambda text: print(text, file=sys.stderr, flush=True))
    state = _State(tasks, data, stop)
    if scheduler is None and workers <= 1:
        yield from _in_process(state, progress)
        return
    from .cluster import client_for
    with client_for(workers, scheduler) as client:
        yield from _on_dask(client, state, progress, local=scheduler is None, workers=workers)


class _State:
    """What :func:`run` knows: tasks by rank, which are done or failed, who still needs a value."""

    def __init__(self, tasks, data, stop):
        rank = ranks(tasks)
        self.rank, self.stop, self.data = rank, stop, data
        self.pending = sorted(tasks, key=lambda t: -rank[t.key])
        self.done, self.failed = set(data), set()
        self.users = {k: sum(k in t.needs and t.pass_needs for t in tasks) for k in [*data, *rank]}

    def ready(self, t: Task) -> bool:
        return self.done.issuperset(t.needs)

    def finish(self, t: Task, error) -> None:
        (self.failed if error is not None else self.done).add(t.key)

    def skipped(self):
        """Pending tasks that can never run (a need failed, even through others, or stop), removed and reported."""
        while True:
            out = [t for t in self.pending if self.stop() or self.failed.intersection(t.needs)]
            if not out:
                return
            for t in out:
                self.pending.remove(t)
                why = ("the build stopped" if self.stop() else
                       f"it needs {', '.join(sorted(self.failed & set(t.needs)))}, which failed")
                self.failed.add(t.key)
                yield t, None, NotRun(f"{t.key} was not run: {why}"), 0.0

    def release(self, t: Task, values: dict) -> None:
        """Forget the values no pending task will be passed any more."""
        if t.pass_needs:
            for k in t.needs:
                self.users[k] -= 1
                if self.users[k] <= 0:
                    values.pop(k, None)


def _in_process(state: _State, progress: Progress):
    values = dict(state.data)
    beat = threading.Event()

    def heartbeat():
        while not beat.wait(5.0):
            progress.heartbeat()

    threading.Thread(target=heartbeat, daemon=True, name="mlmbook-progress").start()
    try:
        while state.pending:
            t = next((t for t in state.pending if state.ready(t)), None)
            if t is None:
                break
            state.pending.remove(t)
            progress.begin(t)
            start = time.perf_counter()
            try:
                value = _call(progress, t.key, t.fn, t.args, {k: values[k] for k in t.needs} if t.pass_needs else None)
                error = None
            except Exception as err:          # reported; a KeyboardInterrupt stops everything
                value, error = None, err
            progress.end(t.key)
            state.finish(t, error)
            if error is None and state.users.get(t.key):
                values[t.key] = value
            state.release(t, values)
            yield t, value, error, time.perf_counter() - start
            yield from state.skipped()
    finally:
        beat.set()


def _capacity(client, local: bool, workers: int) -> int:
    if local:
        return workers
    return max(1, sum(client.nthreads().values()))


def _on_dask(client, state: _State, progress: Progress, local: bool, workers: int):
    from distributed.scheduler import KilledWorker

    topic = f"mlmbook-{uuid.uuid4().hex[:12]}"
    client.subscribe_topic(topic, progress)
    futures: dict[str, Any] = {}                      # values on the cluster that pending tasks are passed
    if state.data:
        names = list(state.data)
        futures.update(zip(names, client.scatter([state.data[k] for k in names], hash=False)))
    running: dict = {}                                # future -> (task, start)
    ends: queue.SimpleQueue = queue.SimpleQueue()      # futures as they end (Dask calls back from a thread)
    try:
        while state.pending or running:
            cap = _capacity(client, local, workers)
            free = cap - sum(min(t.slots, cap) for t, _ in running.values() if not t.resources)
            for t in list(state.pending):               # by rank; the first ready one that does not fit waits
                if not state.ready(t):
                    continue
                if not t.resources and min(t.slots, cap) > free:
                    break
                state.pending.remove(t)
                if not t.resources:
                    free -= min(t.slots, cap)
                progress.begin(t)
                values = {k: futures[k] for k in t.needs} if t.pass_needs else None
                fut = client.submit(_call, topic, t.key, t.fn, t.args, values, key=f"{_safe(t.key)}-{uuid.uuid4().hex}",
                                    priority=state.rank[t.key], pure=False, retries=0,
                                    resources=dict(t.resources) or None)
                running[fut] = (t, time.perf_counter())
                fut.add_done_callback(ends.put)
                state.release(t, futures)
            if not running:
                break
            try:
                ended = [ends.get(timeout=5.0)]
            except queue.Empty:
                progress.heartbeat()
                continue
            while not ends.empty():
                ended.append(ends.get())
            for fut in ended:
                if fut not in running:                  # called back twice
                    continue
                t, start = running.pop(fut)
                progress.end(t.key)
                error = (fut.exception() if fut.status == "error" else
                         NotRun(f"{t.key} was cancelled by the cluster") if fut.status == "cancelled" else None)
                if isinstance(error, KilledWorker):
                    error = WorkerLost(f"{t.key}: its worker process died while running it, twice "
                                       f"(killed, or out of memory?); nothing of it was kept")
                value = fut.result() if error is None else None
                state.finish(t, error)
                if error is None and state.users.get(t.key):
                    futures[t.key] = fut
                yield t, value, error, time.perf_counter() - start
            yield from state.skipped()
    finally:                                          # an interrupt or a caller's error: start nothing more
        for fut in running:
            fut.cancel()
        futures.clear()
        try:
            client.unsubscribe_topic(topic)
        except Exception:                               # a closing client
            pass


def _safe(key: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in key)
