"""Where tasks run: a Dask client of a local cluster on 127.0.0.1, or of any existing Dask cluster
(``--scheduler``, ``$MLMBOOK_SCHEDULER``; never stopped here); work split into blocks over its
workers; Jupyter kernels that die with the build, even when it is killed with SIGKILL."""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import sys
from typing import Callable

from ..errors import UsageError
from ..paths import env_str

__all__ = ["LOCAL_HOST", "ALLOWED_FAILURES", "BLOCK", "address", "reach", "client_for",
           "map_blocks", "kernel_argv", "set_parent_death_signal"]

LOCAL_HOST = "127.0.0.1"
"""The only address the local cluster listens on."""

ALLOWED_FAILURES = 1
"""Worker deaths a task survives on the local cluster (it is run once more, then fails)."""

BLOCK = 64
"""Items (sentences, pairs) per block of :func:`map_blocks`."""


def address(explicit: str | None = None) -> str | None:
    """The scheduler: ``explicit``, else ``$MLMBOOK_SCHEDULER``, else None (a local cluster)."""
    return explicit or env_str("MLMBOOK_SCHEDULER")


async def _identity(where: str, seconds: float) -> dict:
    from distributed.comm import connect

    comm = await connect(where, timeout=seconds)
    try:
        await comm.write({"op": "identity", "reply": True})
        return await comm.read()
    finally:
        comm.abort()


def reach(where: str) -> str:
    """The address of the Dask scheduler answering at ``where``, else a one-line UsageError."""
    import dask
    from dask.utils import parse_timedelta
    from distributed.comm.addressing import normalize_address, parse_address, parse_host_port

    fix = "start one (dask scheduler) or leave out --scheduler and MLMBOOK_SCHEDULER"
    try:
        full = normalize_address(where)
        scheme, location = parse_address(full)
        if scheme in ("tcp", "tls"):
            parse_host_port(location)
    except ValueError as err:
        raise UsageError(f"--scheduler {where!r} is not a Dask address ({err}); give one like "
                         f"tcp://HOST:8786") from None
    seconds = parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"),
                              default="seconds")
    # its own thread and event loop: the caller may be inside one (a notebook)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        job = pool.submit(asyncio.run, asyncio.wait_for(_identity(full, seconds), seconds))
        try:
            answer = job.result()
        except (OSError, TimeoutError, asyncio.TimeoutError) as err:
            why = "no answer" if isinstance(err, (TimeoutError, asyncio.TimeoutError)) else type(err).__name__
            raise UsageError(f"cannot reach the Dask scheduler at {where} ({why} within {seconds:g} s); "
                             f"{fix}") from None
        except Exception as err:                    # something answered, in another protocol
            raise UsageError(f"{where} answers, but not as a Dask scheduler ({type(err).__name__}); {fix}") from None
    if not isinstance(answer, dict) or answer.get("type") != "Scheduler":
        raise UsageError(f"{where} answers, but not as a Dask scheduler; {fix}")
    return full


@contextlib.contextmanager
def client_for(workers: int, scheduler=None):
    """A ``distributed.Client``: of ``scheduler`` (an address, or a client returned as it is), else
    of a new local cluster of ``workers`` processes (one: a thread here) stopped after the block."""
    import dask
    import distributed

    for name in ("distributed", "distributed.client", "distributed.scheduler", "distributed.worker",
                 "distributed.nanny", "distributed.core", "distributed.deploy"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    if scheduler is not None and not isinstance(scheduler, str):
        yield scheduler
        return
    cluster, saved = None, dict(os.environ)
    if scheduler:
        client = distributed.Client(reach(scheduler), set_as_default=False)
    else:
        # the workers get this process's environment, as a pool's would: no thread or malloc
        # settings of Dask's (which its nannies would also write into this process's environment)
        with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
                              "distributed.nanny.pre-spawn-environ": {}}):
            processes = workers > 1  # one worker: a thread of this process, no network
            cluster = distributed.LocalCluster(
                n_workers=max(1, workers), threads_per_worker=1, processes=processes,
                host=LOCAL_HOST if processes else None, dashboard_address=None, scheduler_port=0,
                worker_dashboard_address=None, memory_limit=0, silence_logs=logging.CRITICAL,
                scheduler_kwargs={"dashboard_address": f"{LOCAL_HOST}:0"})
            client = distributed.Client(cluster, set_as_default=False)
    try:
        yield client
    finally:
        with contextlib.suppress(Exception):
            client.close(timeout=5)
        if cluster is not None:
            with contextlib.suppress(Exception):
                cluster.close(timeout=10)
            os.environ.clear()
            os.environ.update(saved)


def map_blocks(fn: Callable, items: list, *args, scheduler=None, size: int = BLOCK) -> list:
    """``fn(block, *args)`` (one result per item) over ``items`` cut into blocks of ``size``, here
    or on the cluster of ``scheduler``; the blocks, so the results to the last bit, are the same."""
    chunks = [items[i:i + size] for i in range(0, len(items), size)]
    if scheduler is None:
        return [x for c in chunks for x in fn(c, *args)]
    with client_for(1, scheduler) as client:
        shared = client.scatter(list(args), hash=False) if args else []
        futures = [client.submit(fn, c, *shared, pure=False) for c in chunks]
        return [x for f in futures for x in f.result()]


def set_parent_death_signal() -> bool:
    """Ask Linux to SIGKILL this process when its starting thread ends; False where unsupported."""
    import ctypes
    import signal
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL)) == 0  # PDEATHSIG
    except (OSError, AttributeError):
        return False


_GUARD = """import ctypes, os, signal, sys
try:
    ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))
except (OSError, AttributeError):
    pass
parent = os.environ.get("JPY_PARENT_PID", "")
if parent.isdigit() and os.getppid() != int(parent):
    sys.exit(1)
os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *sys.argv[1:]])
"""


def kernel_argv(python: str | None = None) -> list[str]:
    """A kernelspec's ``argv`` for a kernel that dies with the process that started it (SIGKILL
    included: the parent-death signal), run by ``python`` (default: this one)."""
    return [python or sys.executable, "-c", _GUARD, "-f", "{connection_file}",
            # CRITICAL: not the TCP-without-encryption warning, nor the "KeyboardInterrupt caught in
            # kernel" that jupyter_client's interrupt-before-shutdown can cause
            "--IPKernelApp.log_level=CRITICAL"]
