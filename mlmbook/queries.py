r"""The one batched engine for masked queries: *for this row of token ids (some of them*
``[MASK]`` *), what distribution does the model put at these positions?*, many at once. It alone
decides the batching: rows of one length share a :meth:`~mlmbook.models.base.MaskedLM.logits` call
(on an accelerator, rows of all lengths are padded into one); identical queries are sent once; a
call holds at most :func:`budget` scores and runs under the thread policy (:mod:`mlmbook.threads`),
chunks side by side where that measured faster (:class:`_Pace`, ``benchmarks/threads.py``); the
model wrappers run the LM head only at the queried positions.
"""
from __future__ import annotations

import sys
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Iterator, Sequence

import numpy as np
import torch

from . import threads
from .paths import env_int

if TYPE_CHECKING:
    from .models.base import MaskedLM

__all__ = ["SPECIALS", "budget", "progress_bar", "iter_log_probs", "iter_logits",
           "log_probs", "single_site", "pll", "pll_tokens", "encode_sentence", "tokens_per_second"]

SPECIALS = 2
"""Tokens a model adds to every row ([CLS] and [SEP] for BERT)."""


def budget() -> int:
    """Output scores one model call may hold: ``$MLMBOOK_QUERY_BUDGET``, default 16M (64 MB of
    float32 logits)."""
    return env_int("MLMBOOK_QUERY_BUDGET", 1 << 24, minimum=1)


def progress_bar(iterable, total: int | None = None, desc: str = "", show: bool | None = True):
    """``iterable`` with a tqdm bar on the terminal when ``show``: a text bar on stderr, which the
    book's pages drop, never a notebook widget (an extra display output of the cell)."""
    if not show:
        return iterable
    from tqdm.std import tqdm
    return tqdm(iterable, total=total, desc=desc, mininterval=1, leave=False, file=sys.stderr)


def _workers(lm) -> int:
    """Threads the policy gives a call to ``lm`` if several threads may call it at once, else 1."""
    return threads.policy(threads.is_large(lm)) if getattr(lm, "thread_safe", False) else 1


def _padded_mode(lm) -> bool:
    """Whether rows of different lengths share a call: a model on an accelerator that pads them."""
    return getattr(lm, "supports_padding", False) and str(getattr(lm, "device", "cpu")) != "cpu"


class _Pace:
    """Chooses, wave by wave, between one thread and ``n`` worker threads (one forward pass each)
    for a model's chunks: the faster on the model's own chunks (tokens/s, a running mean) runs, and
    every :data:`PROBE_EVERY`-th wave tries the other."""

    PROBE_EVERY = 8

    def __init__(self, n: int):
        self.n, self.rate, self.waves = n, {}, 0

    def mode(self) -> int:
        self.waves += 1
        untried = [m for m in (1, self.n) if m not in self.rate]
        if untried:
            return untried[0]
        best = max(self.rate, key=self.rate.get)
        return (1 if best == self.n else self.n) if self.waves % self.PROBE_EVERY == 0 else best

    def record(self, mode: int, tokens: int, seconds: float) -> None:
        rate = tokens / max(seconds, 1e-9)
        self.rate[mode] = rate if mode not in self.rate else 0.5 * (self.rate[mode] + rate)


_PACES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _pace(lm, n: int) -> _Pace:
    """The model's :class:`_Pace` for ``n`` threads, kept across calls."""
    try:
        pace = _PACES.get(lm)
        if pace is None or pace.n != n:
            pace = _PACES[lm] = _Pace(n)
        return pace
    except TypeError:                                       # a model that takes no weak reference
        return _Pace(n)


def _groups(rows, positions, padded: bool) -> list[list[int]]:
    """Row indices grouped by (length, queried positions); with ``padded``, by queried positions
    only, each group sorted by length so that a chunk's rows pad to similar widths."""
    groups: dict = {}
    for b, (r, p) in enumerate(zip(rows, positions)):
        groups.setdefault(len(p) if padded else (len(r), len(p)), []).append(b)
    if padded:
        return [sorted(idx, key=lambda b: len(rows[b])) for idx in groups.values()]
    return list(groups.values())


def _unique(rows, positions, idx):
    """The distinct queries of a group as (ids, lengths, positions) tensors, and each's members."""
    width = max(len(rows[b]) for b in idx)
    q = torch.tensor([[*rows[b], *[-1] * (width - len(rows[b])), *positions[b], len(rows[b])] for b in idx],
                     dtype=torch.long)
    if len(idx) > 1:
        unique, inverse = torch.unique(q, dim=0, return_inverse=True)
        order = torch.argsort(unique[:, -1], stable=True)  # keep the length order of padded groups
        unique, inverse = unique[order], torch.argsort(order)[inverse]
    else:
        unique, inverse = q, torch.arange(len(idx))
    members = [[] for _ in range(len(unique))]
    for pos in torch.argsort(inverse, stable=True).tolist():
        members[int(inverse[pos])].append(idx[pos])
    return unique[:, :width], unique[:, -1], unique[:, width:-1], members


def _chunks(lm, rows, positions, padded: bool, tokens: int):
    """``(indices, None, 0)`` for groups with nothing to read, else ``(which, call, n_tokens)``:
    ``call(full_softmax=...)`` returns the chunk's scores; ``which`` pairs each row index with its
    answer. A chunk holds at most :func:`budget` scores and (unless 0) ``tokens`` tokens."""
    cap = budget()
    for idx in _groups(rows, positions, padded):
        k = len(positions[idx[0]])
        if k == 0:                                          # nothing to read in these rows
            yield idx, None, 0
            continue
        ids, lengths, pos, members = _unique(rows, positions, idx)
        step = max(1, cap // (k * lm.V))
        if tokens:
            step = min(step, max(1, tokens // (int(lengths.max()) + 2)))
        for s in range(0, len(ids), step):
            a, n, p = ids[s:s + step], lengths[s:s + step], pos[s:s + step]
            which = [(m, u) for u in range(len(a)) for m in members[s + u]]
            width = int(n.max())
            call = partial(lm.padded_logits, a[:, :width], n, p, max_tokens=tokens) if padded else \
                partial(lm.logits, a, p)
            yield which, call, len(a) * (width + 2)


def _answer(task, *, normalise: bool, full_softmax: bool, targets):
    """Run one chunk's call and keep what its members asked for."""
    which, call, _ = task
    out = call(full_softmax=full_softmax).double()
    if normalise:
        out = torch.log_softmax(out, -1)
    answer = out[[u for _, u in which]]
    if targets is not None:
        want = torch.tensor([list(targets[m]) for m, _ in which], dtype=torch.long)[..., None]
        answer = answer.gather(-1, want)[..., 0]
    return [m for m, _ in which], answer.numpy()


def _iter(lm, rows, positions, *, normalise: bool, full_softmax: bool, targets, progress: bool | str):
    """The engine behind :func:`iter_log_probs` and :func:`iter_logits`."""
    n, padded = _workers(lm), _padded_mode(lm)
    pace = _pace(lm, n) if n > 1 and not padded else None
    label = progress if isinstance(progress, str) else "masked queries"
    bar = progress_bar(None, total=len(rows), desc=label) if progress else None
    answer = partial(_answer, normalise=normalise, full_softmax=full_softmax, targets=targets)

    def run(wave):
        mode = pace.mode() if pace is not None else 1
        start = time.perf_counter()
        if mode == 1:
            with threads.limited(threads.is_large(lm)) if pace is None else threads.pinned(1):
                out = [answer(t) for t in wave]
        else:
            with threads.pinned(1), ThreadPoolExecutor(mode) as pool:
                out = list(pool.map(answer, wave))
        if pace is not None:
            pace.record(mode, sum(t[2] for t in wave), time.perf_counter() - start)
        return out

    wave = []
    # workers need several chunks
    tokens = getattr(lm, "max_tokens", 0) if pace is not None or padded else 0
    for task in [*_chunks(lm, rows, positions, padded, tokens), None]:
        if task is not None and task[1] is None:
            yield task[0], np.zeros((len(task[0]), 0) if targets is not None else (len(task[0]), 0, lm.V))
            continue
        if task is not None:
            wave.append(task)
        if wave and (task is None or len(wave) == n):
            for idx, arr in run(wave):
                yield idx, arr
                if bar is not None:
                    bar.update(len(idx))
            wave = []
    if bar is not None:
        bar.close()


def iter_log_probs(lm: MaskedLM, rows: Sequence, positions: Sequence, *, full_softmax: bool = False,
                   targets: Sequence | None = None,
                   progress: bool | str = False) -> Iterator[tuple[list[int], np.ndarray]]:
    r"""Log-probabilities at the queried positions of many rows, in batched chunks.

    Parameters
    ----------
    rows : sequence of int sequences
        Token ids without special tokens; masked positions hold ``lm.mask_id``. Lengths may differ.
    positions : sequence of int sequences
        Positions to read in each row (``k_b`` of them).
    full_softmax : bool
        Normalise over the whole vocabulary, special tokens included (the literature's PLL).
        By default the softmax is over words only (special tokens get probability 0).
    targets : sequence of int sequences, optional
        One token id per queried position: then only the log-probability of that token is
        returned, shape ``(k,)`` per row (what a PLL or a likelihood needs; no ``(k, V)`` copy).
    progress : bool or str
        A tqdm bar over rows (a string: the bar's label).

    Yields
    ------
    (indices, array)
        ``array[r]`` (float64, shape ``(k, V)``, or ``(k,)`` with ``targets``) answers row
        ``indices[r]``. Chunks come grouped by length, not in input order.
    """
    return _iter(lm, rows, positions, normalise=True, full_softmax=full_softmax, targets=targets, progress=progress)


def iter_logits(lm: MaskedLM, rows: Sequence, positions: Sequence, *, full_softmax: bool = False,
                progress: bool | str = False) -> Iterator[tuple[list[int], np.ndarray]]:
    """The model's raw scores (logits, float64) at the queried positions, batched exactly like
    :func:`iter_log_probs`; special tokens get ``-inf`` unless ``full_softmax``."""
    return _iter(lm, rows, positions, normalise=False, full_softmax=full_softmax, targets=None, progress=progress)


def log_probs(lm: MaskedLM, rows: Sequence, positions: Sequence, **kw) -> list[np.ndarray]:
    """:func:`iter_log_probs` collected in input order: a list of ``(k_b, V)`` arrays."""
    out: list = [None] * len(rows)
    for idx, arr in iter_log_probs(lm, rows, positions, **kw):
        for b, a in zip(idx, arr):
            out[b] = a
    return out


def single_site(lm: MaskedLM, sentences, **kw) -> list[np.ndarray]:
    r"""Each token of each word sequence masked in turn: one (n_tokens, V) array per sentence, row
    ``t`` holding :math:`\log q(x_t = \cdot \mid x_{\setminus t})`."""
    rows, pos, owner = [], [], []
    encoded = [lm.encode_words(list(w))[0] for w in sentences]
    for s, ids in enumerate(encoded):
        for t in range(len(ids)):
            r = list(ids)
            r[t] = lm.mask_id
            rows.append(r), pos.append([t]), owner.append((s, t))
    out = [np.empty((len(ids), lm.V)) for ids in encoded]
    for idx, arr in iter_log_probs(lm, rows, pos, **kw):
        for r, a in zip(idx, arr):
            s, t = owner[r]
            out[s][t] = a[0]
    return out


def encode_sentence(lm: MaskedLM, sentence) -> tuple[list[int], list[list[int]], list[str]]:
    """Token ids, pieces of each word and the words of a sentence given as a word list or a plain
    string (split as ``lm.encode_text`` splits it; at white space for a model without one)."""
    if isinstance(sentence, str) and hasattr(lm, "encode_text"):
        return lm.encode_text(sentence)
    words = sentence.split() if isinstance(sentence, str) else list(sentence)
    ids, pieces = lm.encode_words(words)
    return ids, pieces, words


def pll_tokens(lm: MaskedLM, sentences, *, variant: str = "token", full_softmax: bool = True,
               progress: bool = False) -> list[np.ndarray]:
    r"""Per-token terms :math:`\log q(x_t \mid \cdot)` of the PLL of each sentence (nats): one
    ``(n_tokens,)`` array per sentence, whose sum is :func:`pll` (the same arguments)."""
    if variant not in ("token", "word_l2r"):
        raise ValueError(f"unknown PLL variant {variant!r}; use 'token' or 'word_l2r'")
    rows, pos, gold, owner = [], [], [], []
    out = []
    for s, sentence in enumerate(sentences):
        ids, pieces, _ = encode_sentence(lm, sentence)
        out.append(np.zeros(len(ids)))
        for word in pieces:
            for a, t in enumerate(word):
                r = list(ids)
                for p in (word[a:] if variant == "word_l2r" else [t]):
                    r[p] = lm.mask_id
                rows.append(r), pos.append([t]), gold.append([ids[t]]), owner.append((s, t))
    for idx, arr in iter_log_probs(lm, rows, pos, full_softmax=full_softmax, targets=gold,
                                   progress=progress and "PLL"):
        for r, a in zip(idx, arr):
            s, t = owner[r]
            out[s][t] = a[0]
    return out


def pll(lm: MaskedLM, sentences, *, variant: str = "token", full_softmax: bool = True,
        progress: bool = False) -> np.ndarray:
    r"""Pseudo-log-likelihood of each sentence (nats): an array (len(sentences),).

    Parameters
    ----------
    sentences : sequence of word lists or plain strings
    variant : ``"token"`` or ``"word_l2r"``
        ``"token"`` (:cite:t:`salazar2020masked`): every token (piece) is masked alone,
        :math:`\sum_t \log q(x_t \mid x_{\setminus t})`. ``"word_l2r"`` (Kauf & Ivanova 2023,
        "PLL-word-l2r"): a piece is masked together with the pieces to its right *within the same
        word*, so a multi-piece word cannot be read off its own later pieces. The two agree on
        models whose words are single tokens.
    full_softmax : bool
        Softmax over the whole vocabulary (default, as in the literature and minicons). With
        ``False`` the special tokens are excluded and the words renormalised.
    progress : bool
        A tqdm bar over the masked rows.
    """
    terms = pll_tokens(lm, sentences, variant=variant, full_softmax=full_softmax, progress=progress)
    return np.array([t.sum() for t in terms], dtype=np.float64)


def tokens_per_second(lm: MaskedLM, rows: int = 16, length: int = 16, repeats: int = 2) -> float:
    """The model's throughput in tokens/s (:data:`SPECIALS` included), measured now: ``repeats``
    timed calls on ``rows`` random rows of ``length`` tokens, after one warm-up call."""
    words = np.setdiff1d(np.arange(lm.V), list(getattr(lm, "special_ids", [])) + [lm.mask_id])
    length = min(length, lm.max_length)
    ids = np.random.default_rng(0).choice(words, (rows, length))
    ids[:, 0] = lm.mask_id
    positions = np.zeros((rows, 1), dtype=np.int64)
    lm.logits(ids, positions)                                # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        lm.logits(ids, positions)
    return rows * (length + SPECIALS) * repeats / max(time.perf_counter() - start, 1e-9)
