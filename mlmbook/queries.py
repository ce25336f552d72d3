r"""The one batched engine for masked queries.

Every estimator in the book asks a masked LM the same kind of question: *for this row of
token ids (some of them* ``[MASK]`` *), what distribution does the model put at these
positions?* This module answers many such questions at once, and it is the only place that
decides how they are batched:

* **length groups** — rows of the same length (and the same number of queried positions) go
  through one :meth:`~mlmbook.models.base.MaskedLM.logits` call, so no padding is needed;
* **de-duplication** — identical (row, positions) queries inside a group are sent once;
* **one memory budget** — a call holds at most :func:`budget` output scores
  (rows × positions × V; ``$MLMBOOK_QUERY_BUDGET``, default :data:`DEFAULT_BUDGET`);
  the model itself further chunks rows by tokens for the encoder;
* **LM head only at queried positions** — done by the model wrappers.

On top of :func:`iter_log_probs` sit the usual queries: :func:`log_probs` (in order),
:func:`single_site` (every position masked in turn) and :func:`pll`, the pseudo-log-likelihood

.. math:: \mathrm{PLL}(x) = \sum_{t=1}^{n} \log q(x_t \mid x_{\setminus t})

of :cite:t:`salazar2020masked`, with the softmax over the whole vocabulary by default.
"""
from __future__ import annotations

import sys
from typing import Iterator, Sequence

import numpy as np
import torch

from .paths import env_int

__all__ = ["DEFAULT_BUDGET", "budget", "iter_log_probs", "log_probs", "single_site", "pll", "progress"]

DEFAULT_BUDGET = 1 << 24
"""Output scores (float32) per model call: 16M, i.e. 64 MB of logits."""


def budget() -> int:
    """Output scores one model call may hold: ``$MLMBOOK_QUERY_BUDGET`` or :data:`DEFAULT_BUDGET`."""
    return env_int("MLMBOOK_QUERY_BUDGET", DEFAULT_BUDGET, minimum=1)


def progress(iterable, total: int | None = None, desc: str = "", show: bool | None = True):
    """``iterable`` with a tqdm bar on the terminal when ``show`` (nothing otherwise).

    A text bar on stderr, never a notebook widget: a widget would be an extra display output
    of the cell (a figure cell would then carry two outputs), and the book's pages drop stderr.
    """
    if not show:
        return iterable
    from tqdm.std import tqdm
    return tqdm(iterable, total=total, desc=desc, mininterval=1, leave=False, file=sys.stderr)


def _groups(rows, positions) -> dict:
    groups: dict = {}
    for b, (r, p) in enumerate(zip(rows, positions)):
        groups.setdefault((len(r), len(p)), []).append(b)
    return groups


def iter_log_probs(lm, rows: Sequence, positions: Sequence, *, full_softmax: bool = False,
                   raw: bool = False, dedupe: bool = True, targets: Sequence | None = None,
                   show_progress: bool = False,
                   desc: str = "masked queries") -> Iterator[tuple[list[int], np.ndarray]]:
    r"""Log-probabilities at the queried positions of many rows, in batched chunks.

    Parameters
    ----------
    lm : MaskedLM
    rows : sequence of int sequences
        Token ids without special tokens; masked positions hold ``lm.mask_id``. Lengths may differ.
    positions : sequence of int sequences
        Positions to read in each row (``k_b`` of them; rows are grouped by ``(n_b, k_b)``).
    full_softmax : bool
        Normalise over the whole vocabulary, special tokens included (the literature's PLL).
        By default the softmax is over words only (special tokens get probability 0).
    raw : bool
        Return the model's scores (logits, float64) without the softmax — what an MRF built from
        the conditionals needs. Special tokens still get ``-inf`` unless ``full_softmax``.
    dedupe : bool
        Send identical (row, positions) queries of a group once.
    targets : sequence of int sequences, optional
        One token id per queried position: then only the log-probability of that token is
        returned, shape ``(k,)`` per row (what a PLL or a likelihood needs; no ``(k, V)`` copy).
    show_progress : bool
        A tqdm bar over rows.

    Yields
    ------
    (indices, array)
        ``array[r]`` (float64, shape ``(k, V)``, or ``(k,)`` with ``targets``) answers row
        ``indices[r]``. Chunks come grouped by length, not in input order; each holds at most
        :func:`budget` scores.
    """
    cap = budget()
    bar = progress(None, total=len(rows), desc=desc, show=show_progress) if show_progress else None
    for (n, k), idx in _groups(rows, positions).items():
        if k == 0:                                          # nothing to read in these rows
            yield idx, np.zeros((len(idx), 0) if targets is not None else (len(idx), 0, lm.V))
            continue
        if targets is not None:                             # one answer per row: nothing to share
            yield from _targeted(lm, rows, positions, targets, idx, k, cap, full_softmax, raw, bar)
            continue
        q = torch.tensor([list(rows[b]) + list(positions[b]) for b in idx], dtype=torch.long)
        if dedupe and len(idx) > 1:
            unique, inverse = torch.unique(q, dim=0, return_inverse=True)
        else:
            unique, inverse = q, torch.arange(len(idx))
        step = max(1, cap // (k * lm.V))
        order = torch.argsort(inverse, stable=True)        # rows answered by the same unique query stay together
        members = [[] for _ in range(len(unique))]
        for pos in order.tolist():
            members[int(inverse[pos])].append(idx[pos])
        for s in range(0, len(unique), step):
            chunk = unique[s:s + step]
            out = lm.logits(chunk[:, :n], chunk[:, n:], keep_special=full_softmax).double()
            out = (out if raw else torch.log_softmax(out, -1)).numpy()
            which = [(m, u) for u in range(len(chunk)) for m in members[s + u]]
            yield [m for m, _ in which], out[[u for _, u in which]]
            if bar is not None:
                bar.update(len(which))
    if bar is not None:
        bar.close()


def _targeted(lm, rows, positions, targets, idx, k, cap, full_softmax, raw, bar):
    """The chunks of one length group when only the targets' scores are wanted."""
    step = max(1, cap // (k * lm.V))
    for s in range(0, len(idx), step):
        chunk = idx[s:s + step]
        out = lm.logits(torch.tensor([list(rows[b]) for b in chunk], dtype=torch.long),
                        torch.tensor([list(positions[b]) for b in chunk], dtype=torch.long),
                        keep_special=full_softmax).double()
        if not raw:
            out = torch.log_softmax(out, -1)
        want = torch.tensor([list(targets[b]) for b in chunk], dtype=torch.long)[..., None]
        yield chunk, out.gather(-1, want)[..., 0].numpy()
        if bar is not None:
            bar.update(len(chunk))


def log_probs(lm, rows: Sequence, positions: Sequence, **kw) -> list[np.ndarray]:
    """:func:`iter_log_probs` collected in input order: a list of ``(k_b, V)`` arrays."""
    out: list = [None] * len(rows)
    for idx, arr in iter_log_probs(lm, rows, positions, **kw):
        for b, a in zip(idx, arr):
            out[b] = a
    return out


def single_site(lm, sentences, **kw) -> list[np.ndarray]:
    r"""Each token of each word sequence masked in turn: :math:`\log q(x_t = \cdot \mid x_{\setminus t})`.

    Returns
    -------
    list of ndarray (n_tokens, V)
        One array per sentence, row ``t`` the log-probabilities at token ``t``.
    """
    rows, pos, owner = [], [], []
    encoded = [lm.encode_words(list(w))[0] for w in sentences]
    for s, ids in enumerate(encoded):
        for t in range(len(ids)):
            r = list(ids)
            r[t] = lm.mask_id
            rows.append(r), pos.append([t]), owner.append(s)
    answers = log_probs(lm, rows, pos, **{"dedupe": False, **kw})    # every row differs
    out = [np.empty((len(ids), lm.V)) for ids in encoded]
    t_of = {}
    for r, s in enumerate(owner):
        t = t_of.get(s, 0)
        out[s][t] = answers[r][0]
        t_of[s] = t + 1
    return out


def pll(lm, sentences, *, variant: str = "token", full_softmax: bool = True, **kw) -> np.ndarray:
    r"""Pseudo-log-likelihood of each word sequence (nats).

    Parameters
    ----------
    lm : MaskedLM
    sentences : sequence of word lists
    variant : ``"token"`` or ``"word_l2r"``
        ``"token"`` (:cite:t:`salazar2020masked`): every token (piece) is masked alone,
        :math:`\sum_t \log q(x_t \mid x_{\setminus t})`. ``"word_l2r"`` (Kauf & Ivanova 2023,
        "PLL-word-l2r"): a piece is masked together with the pieces to its right *within the same
        word*, so a multi-piece word cannot be read off its own later pieces. The two agree on
        models whose words are single tokens.
    full_softmax : bool
        Softmax over the whole vocabulary (default, as in the literature and minicons). With
        ``False`` the special tokens are excluded and the words renormalised.

    Returns
    -------
    ndarray (len(sentences),)
    """
    if variant not in ("token", "word_l2r"):
        raise ValueError(f"unknown PLL variant {variant!r}; use 'token' or 'word_l2r'")
    rows, pos, gold, owner = [], [], [], []
    for s, words in enumerate(sentences):
        ids, pieces = lm.encode_words(list(words))
        for word in pieces:
            for a, t in enumerate(word):
                r = list(ids)
                for p in (word[a:] if variant == "word_l2r" else [t]):
                    r[p] = lm.mask_id
                rows.append(r), pos.append([t]), gold.append(ids[t]), owner.append(s)
    scores = np.zeros(len(sentences))
    owner = np.asarray(owner, dtype=int)
    for idx, arr in iter_log_probs(lm, rows, pos, full_softmax=full_softmax, targets=[[g] for g in gold], **kw):
        np.add.at(scores, owner[idx], arr[:, 0])
    return scores
