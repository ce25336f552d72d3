"""Rows of masked queries and the thin reductions over :func:`mlmbook.queries.iter_log_probs` the
probes use (private helpers)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np
import torch

from .. import queries

if TYPE_CHECKING:
    from ..models.base import MaskedLM


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
    """``fn(b, logq_b)`` for every query ``b``, ``logq_b`` (float64, ``(k, V)``) the log-softmax at
    row ``b``'s queried positions."""
    out: list = [None] * len(rows)
    for idx, arr in queries.iter_log_probs(lm, rows, positions, **kw):
        for b, a in zip(idx, arr):
            out[b] = fn(b, a)
    return out


def pick(lm: MaskedLM, rows, positions, cols, tokens, **kw) -> np.ndarray:
    """``logq_b[cols[b], tokens[b]]`` for every query ``b`` (equal-length picks): array (R, m)."""
    got = each(lm, rows, positions, lambda b, a: a[cols[b], tokens[b]], **kw)
    return np.array(got, dtype=np.float64).reshape(len(rows), -1)
