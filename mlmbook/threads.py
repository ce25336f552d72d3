"""The one thread policy: how many threads torch and NumPy's BLAS may use for mlmbook's work.

For small tensors (the toy models, inside–outside, small linear algebra) intra-op parallelism costs
more in synchronisation than it saves (``benchmarks/threads.py``): **1 thread**; large work (a real
encoder such as ``bert-base-uncased``) gets torch's own default; ``$MLMBOOK_THREADS`` overrides both
(``0`` = torch's default). The policy is applied **per call** (:func:`limited`, which restores the
caller's counts), never as a side effect of loading a model. Training always runs on one thread.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Iterator

import torch

from .paths import env_int

__all__ = ["LARGE_HIDDEN", "policy", "is_large", "using", "limited", "small_work", "pinned"]

LARGE_HIDDEN = 512
"""Hidden size from which an encoder counts as large work (bert-base has 768)."""

_DEFAULT = torch.get_num_threads()   # torch's own choice, read before mlmbook changes anything

_pinned = 0  # > 0 while a block holds the counts for worker threads (see pinned)
_controller = None                   # threadpoolctl's view of the loaded BLAS libraries (see _blas)
_seen_modules = -1


def policy(large: bool = False) -> int:
    """Threads for small (default) or large work, after ``$MLMBOOK_THREADS``."""
    override = env_int("MLMBOOK_THREADS", -1, minimum=-1)
    if override >= 0:
        return override or _DEFAULT
    return _DEFAULT if large else 1


def is_large(lm) -> bool:
    """Whether a model counts as large work: a ``hidden_size`` of :data:`LARGE_HIDDEN` or more."""
    return (getattr(lm, "hidden_size", 0) or 0) >= LARGE_HIDDEN


def _blas():
    """A cached ``ThreadpoolController`` (building one costs about a millisecond, using it 20 µs);
    rebuilt after imports, which may have loaded another BLAS (SciPy's)."""
    global _controller, _seen_modules
    if _controller is None or len(sys.modules) != _seen_modules:
        from threadpoolctl import ThreadpoolController
        _controller, _seen_modules = ThreadpoolController(), len(sys.modules)
    return _controller


@contextmanager
def using(n: int) -> Iterator[int]:
    """Run a block with ``n`` torch (and BLAS) threads, then restore the caller's counts."""
    before = torch.get_num_threads()
    if before != n:
        torch.set_num_threads(n)
    try:
        with _blas().limit(limits=n, user_api="blas"):
            yield n
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


@contextmanager
def limited(large: bool = False) -> Iterator[int]:
    """Run a block under the policy (:func:`policy`) for small or large work; restore afterwards
    (inside :func:`pinned`, nothing: the counts are held for the pinned block's workers)."""
    if _pinned:
        yield torch.get_num_threads()
        return
    with using(policy(large)) as n:
        yield n


def small_work(fn):
    """``fn`` run under :func:`limited` (small work): a numerical kernel, wherever it is called."""
    return limited()(fn)           # a fresh limited() on every call (contextlib.ContextDecorator)


@contextmanager
def pinned(n: int) -> Iterator[int]:
    """:func:`using` ``n`` threads for a block whose own worker threads run model calls side by
    side: the calls' :func:`limited` leave the counts alone until the block ends."""
    global _pinned
    with using(n):
        _pinned += 1
        try:
            yield n
        finally:
            _pinned -= 1
