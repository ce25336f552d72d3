"""A real Dask cluster of separate processes on 127.0.0.1 for the tests: ``dask scheduler`` and
``dask worker`` started as a user would, each worker with its own empty model cache."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

DROPPED = ("MLMBOOK_ROOT", "MLMBOOK_CHAPTER", "MLMBOOK_RESULTS", "MLMBOOK_BUILD", "MLMBOOK_SCHEDULER")


def clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in DROPPED}
    env.update(extra)
    return env


@dataclass
class DaskCluster:
    address: str
    scheduler: subprocess.Popen
    workers: list
    caches: list


def _wait(condition, seconds: float, what: str):
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise TimeoutError(f"{what} within {seconds} s")


def executed(address: str) -> dict:
    """Tasks each worker of the cluster at ``address`` has run in its life (Dask's count, asked of
    the workers themselves): how a test knows that work reached them."""
    from distributed import Client
    with Client(address, timeout=30) as client:
        return client.run(lambda dask_worker: dask_worker.state.executed_count)


@contextlib.contextmanager
def dask_cluster(tmp: Path, n: int = 2):
    """``n`` workers of one thread each, every server on 127.0.0.1; stopped (process groups) at the end."""
    tmp.mkdir(parents=True, exist_ok=True)
    info = tmp / "scheduler.json"
    env = clean_env(DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES="1")
    procs = []
    logs = []

    def start(args, env_, name):
        log = open(tmp / f"{name}.log", "w")
        logs.append(log)
        p = subprocess.Popen([sys.executable, "-m", "dask", *args], env=env_, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)
        procs.append(p)
        return p

    try:
        sched = start(["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                       "--scheduler-file", str(info)], env, "scheduler")
        address = _wait(lambda: info.exists() and json.loads(info.read_text() or "{}").get("address"), 60,
                        "the scheduler did not start")
        workers, caches = [], []
        for i in range(n):
            cache = tmp / f"worker{i}-cache"
            caches.append(cache)
            workers.append(start(["worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--nworkers", "1",
                                  "--no-dashboard", "--name", f"w{i}", "--local-directory", str(tmp / f"w{i}")],
                                 clean_env(MLMBOOK_CACHE=str(cache)), f"worker{i}"))
        from distributed import Client
        with Client(address, timeout=30) as client:
            _wait(lambda: len(client.scheduler_info()["workers"]) >= n, 90, f"{n} workers did not join")
        yield DaskCluster(address, sched, workers, caches)
    finally:
        for p in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        for log in logs:
            log.close()
