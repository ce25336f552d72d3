"""Rows of masked queries and the thin reductions the probes use (private helpers).

Every probe of :mod:`mlmbook.consistency` builds copies of a sentence with some positions
masked or filled in (:func:`with_values`), sends all of them through the book's one batched
engine (:func:`mlmbook.queries.iter_log_probs`) and keeps only the few log-probabilities it
needs (:func:`each`, :func:`pick`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np
import torch

from .. import queries

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["as_rows", "with_values", "each", "pick"]


def as_rows(ids) -> list[np.ndarray]:
    """Sentences as int64 arrays (from a 2-D tensor/array or a list of 1-D sentences)."""
    if isinstance(ids, torch.Tensor):
        ids = ids.detach().cpu().numpy()
    return [np.asarray(r, dtype=np.int64).reshape(-1) for r in ids]


def with_values(row, *sets) -> list[int]:
    """``row`` as a list of ints with ``row[pos] = val`` for each ``(pos, val)`` in ``sets``."""
    out = [int(v) for v in row]
    for pos, val in sets:
        out[int(pos)] = int(val)
    return out


def each(lm: MaskedLM, rows, positions, fn: Callable, **kw) -> list:
    """``fn(b, logq_b)`` for every query ``b``: a reduction over
    :func:`mlmbook.queries.iter_log_probs`.

    ``logq_b`` (float64, ``(k, V)``) is the log-softmax at row ``b``'s queried positions; only
    what ``fn`` returns is kept.
    """
    out: list = [None] * len(rows)
    desc = kw.pop("desc", None)
    if desc and kw.get("progress"):
        kw["progress"] = desc                          # the engine's progress bar takes its label
    for idx, arr in queries.iter_log_probs(lm, rows, positions, **kw):
        for b, a in zip(idx, arr):
            out[b] = fn(b, a)
    return out


def pick(lm: MaskedLM, rows, positions, cols, tokens, **kw) -> np.ndarray:
    """``logq_b[cols[b], tokens[b]]`` for every query ``b`` (equal-length picks): array (R, m)."""
    got = each(lm, rows, positions, lambda b, a: a[cols[b], tokens[b]], **kw)
    return np.array(got, dtype=np.float64).reshape(len(rows), -1)
