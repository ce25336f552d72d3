"""The one thread policy: how many threads torch may use for mlmbook's work.

Most of the book's tensors are small (a 2-layer BERT with hidden size 64–128, a PCFG with a
hundred nonterminals, a few sentences per call). For those, torch's intra-op parallelism
costs more in synchronisation than it saves, and when another process is busy on the same
cores each parallel region waits for a descheduled thread: on a busy 2-core machine the
default of 2 threads was measured 10–20× slower than 1 thread (``benchmarks/threads.py``
shows the ratio on the machine at hand). So:

* **small work** (the toy models, inside–outside, training the toy models): **1 thread**;
* **large work** (a real encoder such as ``bert-base-uncased``): torch's own default;
* ``$MLMBOOK_THREADS`` overrides both (``0`` = torch's default).

The same holds for NumPy's BLAS (OpenBLAS), which spins up its own threads for every
matrix product and solve: on the busy 2-core machine a 228×228 ``np.linalg.solve`` took
20 ms with its default 2 threads against 0.5 ms with one. :func:`apply` limits it too (with
``threadpoolctl``), to the same count as torch.

One thread also makes training reproducible on every machine: the same seed gives the same
weights bit for bit, whatever the number of cores (float reductions split across threads
add in a different order). The thread count used for training is part of a model's cache key.
"""
from __future__ import annotations

import os
from contextlib import contextmanager

import torch
from threadpoolctl import threadpool_limits

from .paths import env_int

__all__ = ["policy", "apply", "using", "LARGE_HIDDEN"]

LARGE_HIDDEN = 512
"""Hidden size from which an encoder counts as large work (bert-base has 768)."""

_DEFAULT = torch.get_num_threads()   # torch's own choice, read before anyone changes it


def policy(large: bool = False) -> int:
    """Threads for small (default) or large work, after ``$MLMBOOK_THREADS``."""
    override = env_int("MLMBOOK_THREADS", -1, minimum=-1)
    if override >= 0:
        return override or _DEFAULT
    return _DEFAULT if large else 1


def apply(large: bool = False) -> int:
    """Set torch's intra-op threads and NumPy's BLAS threads by :func:`policy` (and the variables
    child processes read); return the count."""
    n = policy(large)
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    threadpool_limits(n, user_api="blas")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(n))
    return n


@contextmanager
def using(n: int):
    """Run a block with ``n`` torch (and BLAS) threads, then restore the previous counts."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        with threadpool_limits(n, user_api="blas"):
            yield n
    finally:
        torch.set_num_threads(before)
