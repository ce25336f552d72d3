"""The build's scheduler on Dask against the process pool it replaced (issue 37), side by side in one run.

The same task graphs run twice, on two cores: on the pool of ``spawn``ed processes the build used
until now (kept here, for this measurement only: :func:`pool_run`, the list scheduling of the old
``mlmbook.workers``) and on :func:`mlmbook.workers.run`, a local Dask cluster of one process per
core. Three workloads:

* **start-up** — one trivial task: starting the workers, one round trip, stopping them;
* **overhead** — 60 tasks of 50 ms in chains of three (sleeps: no core is busy), so the wall time
  minus the graph's own makespan and the start-up is the scheduler's cost per task;
* **training** — the real training step of a build on small models: units of
  :func:`mlmbook.pipeline.prepare.plan` over a ladder-like set of toy models, each engine into a
  temporary cache of its own, trained from scratch (the larger part of a cold build);
* **chapters** — a chapter-like task: papermill executing a small notebook that imports mlmbook and
  torch, four of them on two workers (each in a kernel of its own, as a chapter).

``python -m benchmarks.scheduler`` prints the table.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from multiprocessing import get_context

from mlmbook import workers as w


def pool_run(tasks: list, n: int) -> float:
    """The old engine: list scheduling by upward rank on ``n`` spawned processes; returns wall seconds."""
    rank = w.ranks(tasks)
    pending = sorted(tasks, key=lambda t: -rank[t.key])
    done, running = set(), {}
    t0 = time.perf_counter()
    with ProcessPoolExecutor(n, mp_context=get_context("spawn")) as pool:
        while pending or running:
            for t in list(pending):
                if done.issuperset(t.needs) and len(running) < n:
                    pending.remove(t)
                    running[pool.submit(t.fn, *t.args)] = t
            ended, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in ended:
                fut.result()
                done.add(running.pop(fut).key)
    return time.perf_counter() - t0


def dask_run(tasks: list, n: int) -> float:
    """The new engine (:func:`mlmbook.workers.run`, a local cluster started inside); wall seconds."""
    t0 = time.perf_counter()
    for _, _, error, _ in w.run(tasks, workers=n, progress=w.Progress(lambda line: None)):
        if error is not None:
            raise error
    return time.perf_counter() - t0


def _overhead_graph() -> list:
    tasks = []
    for c in range(20):
        for k in range(3):
            needs = (f"c{c}-{k - 1}",) if k else ()
            tasks.append(w.Task(f"c{c}-{k}", time.sleep, (0.05,), needs=needs, seconds=0.05))
    return tasks


def _training_graph(n: int) -> list:
    from dataclasses import replace

    from mlmbook.models.train import PRESETS
    from mlmbook.pipeline import prepare
    base = replace(PRESETS["quick"], steps=100, eval_every=50, checkpoints=())
    jobs = [prepare.Job("toy", None, replace(base, hidden=h, heads=max(1, h // 16), intermediate=4 * h), s)
            for h in (16, 32) for s in range(4)] + [prepare.Job("toy", None, base, s) for s in range(2)]
    units = prepare.plan(jobs, n)
    return [w.Task(f"train {i}", prepare._run, (u,), seconds=prepare.estimated_seconds(u)) for i, u in enumerate(units)]


CELL = "import mlmbook, torch\nx = torch.randn(200, 200)\nfor _ in range(200):\n    x = torch.tanh(x @ x.T / 200)"
NOTEBOOK = json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "id": "a", "metadata": {},
                                  "outputs": [], "source": CELL}],
                       "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                                   "name": "python3"}},
                       "nbformat": 4, "nbformat_minor": 5})


def execute_notebook(path: str) -> None:
    """A chapter-like task: papermill runs a notebook in a kernel of its own, one thread."""
    import papermill
    os.environ.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    papermill.execute_notebook(path, path + ".out.ipynb", progress_bar=False, kernel_name="python3")


def _chapter_graph(tmp: str) -> list:
    path = os.path.join(tmp, "nb.ipynb")
    with open(path, "w") as fh:
        fh.write(NOTEBOOK)
    return [w.Task(f"chapter {i}", execute_notebook, (path,), seconds=5.0) for i in range(4)]


def _best(workload, n: int, rounds: int) -> dict:
    """The least-disturbed wall time of each engine: ``rounds`` rounds, the engines' order alternating."""
    times = {"pool": [], "dask": []}
    for r in range(rounds):
        for engine in (("pool", "dask") if r % 2 == 0 else ("dask", "pool")):
            times[engine].append(workload(pool_run if engine == "pool" else dask_run))
    return {engine: min(ts) for engine, ts in times.items()}


def _trained(runner, n: int) -> float:
    old = os.environ.get("MLMBOOK_CACHE")
    try:
        with tempfile.TemporaryDirectory() as cache:
            os.environ["MLMBOOK_CACHE"] = cache               # from scratch, never the real cache
            return runner(_training_graph(n), n)
    finally:
        if old is None:
            os.environ.pop("MLMBOOK_CACHE", None)
        else:
            os.environ["MLMBOOK_CACHE"] = old


def run(n: int = 2, rounds: int = 2) -> dict:
    """Wall seconds of each workload on each engine (``n`` workers), the best of ``rounds`` alternating rounds."""
    out = {"start-up": _best(lambda runner: runner([w.Task("one", abs, (-1,))], n), n, rounds + 1)}
    overhead = _overhead_graph()
    out["overhead"] = dict(_best(lambda runner: runner(overhead, n), n, rounds + 1), ideal=w.makespan(overhead, n),
                           tasks=len(overhead))
    units = _training_graph(n)
    out["training"] = dict(_best(lambda runner: _trained(runner, n), n, rounds), units=len(units),
                           models=sum(len(t.args[0]) for t in units))
    with tempfile.TemporaryDirectory() as tmp:
        tasks = _chapter_graph(tmp)
        out["chapters"] = dict(_best(lambda runner: runner(tasks, n), n, rounds), tasks=len(tasks))
    for name, r in out.items():
        print(f"{name}: pool {r['pool']:.2f} s, dask {r['dask']:.2f} s ({r['dask'] / r['pool']:.2f}x)",
              file=sys.stderr, flush=True)
    return out


def table(result: dict, n: int = 2) -> list[str]:
    o, t, c, s = result["overhead"], result["training"], result["chapters"], result["start-up"]
    per_task = lambda e: (o[e] - s[e] - o["ideal"]) / o["tasks"] * 1000   # noqa: E731
    return ["## The build's scheduler: Dask against the old process pool", "",
            f"The same task graphs on {n} workers, in one run: the spawned process pool the build used before "
            "(list scheduling by upward rank) and `mlmbook.workers.run` on a local Dask cluster (one process "
            "per core, one thread each, 127.0.0.1). Start-up of the workers is included in every figure; each "
            "is the best of alternating rounds (a busy machine only ever adds time).", "",
            "| workload | old pool (s) | Dask (s) | Dask / pool |", "|---|---|---|---|",
            f"| start-up: one trivial task, workers started and stopped | {s['pool']:.2f} | {s['dask']:.2f} "
            f"| {s['dask'] / s['pool']:.2f} |",
            f"| {o['tasks']} sleeps of 50 ms in chains of 3 (makespan {o['ideal']:.1f} s): scheduling only "
            f"| {o['pool']:.2f} | {o['dask']:.2f} | {o['dask'] / o['pool']:.2f} |",
            f"| training {t['models']} small toy models from scratch in {t['units']} units "
            f"| {t['pool']:.1f} | {t['dask']:.1f} | {t['dask'] / t['pool']:.2f} |",
            f"| {c['tasks']} chapter-like notebooks (a kernel each, mlmbook and torch imported) "
            f"| {c['pool']:.1f} | {c['dask']:.1f} | {c['dask'] / c['pool']:.2f} |", "",
            f"Scheduling overhead per task, beyond the makespan and the start-up: old pool "
            f"{per_task('pool'):.0f} ms, Dask {per_task('dask'):.0f} ms. A build has some 30 tasks (full "
            f"profile: 21 training units and 6 chapters), so the difference that counts is the start-up."]


if __name__ == "__main__":
    print("\n".join(table(run())))
