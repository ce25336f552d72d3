r"""The toy world's answer key for chapter 2: exact joints of two positions over candidate tokens."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import threads
from ..toy.vocab import N_SPECIAL

__all__ = ["truth_joints", "restrict_joint"]


def truth_joints(grammar, queries: Sequence, candidates=None, offset: int = N_SPECIAL) -> list[np.ndarray]:
    r"""Exact joints :math:`p(x_A=a, x_B=b \mid \text{rest})` of the toy language over candidate tokens.

    Parameters
    ----------
    grammar : mlmbook.toy.Grammar
    queries : sequence of ``(words, A, B)``
        A sentence (list of words) and two word positions.
    candidates : None or a list of ``(cand_a, cand_b)`` token ids, one per query
        Token ids of the toy tokenizer: grammar word ``w`` is token ``w + offset``
        (``offset = mlmbook.toy.vocab.N_SPECIAL``). ``None``: every word, in vocabulary order
        (the full grid, matching :func:`~mlmbook.joints.default_candidates` of a toy model).
    offset : int

    Returns
    -------
    list of arrays ``[a, b]``, renormalised over the candidates; one ``Grammar.pair_joints``
    pass per sentence, under the thread policy for small work (:mod:`mlmbook.threads`).
    """
    V = len(grammar.vocab)
    everything = np.arange(V) + offset
    cands = [(everything, everything)] * len(queries) if candidates is None else list(candidates)
    by_sentence: dict = {}
    for k, (words, A, B) in enumerate(queries):
        by_sentence.setdefault(tuple(words), []).append(k)
    out = [None] * len(queries)
    for words, ks in by_sentence.items():
        pairs = sorted({(int(queries[k][1]), int(queries[k][2])) for k in ks})
        with threads.using(threads.policy()):
            exact = dict(grammar.pair_joints(list(words), pairs))
        for k in ks:
            out[k] = restrict_joint(exact[(int(queries[k][1]), int(queries[k][2]))], *cands[k], offset=offset,
                                    what=f"query {k}")
    return out


def restrict_joint(P, cand_a, cand_b, offset: int = N_SPECIAL, what: str = "the query") -> np.ndarray:
    """A joint over the full grid of words restricted to candidate token ids and renormalised.

    ``P`` is a :func:`truth_joints` joint over the full grid (or ``Grammar.pair_joints``); tokens
    outside the words (special tokens) get 0. The top-K comparison of chapter 2 uses it to reuse
    full-grid truths instead of running inside-outside again.
    """
    P = np.asarray(P)
    V = P.shape[0]
    ia, ib = (np.asarray(c, dtype=np.int64) - offset for c in (cand_a, cand_b))
    ok_a, ok_b = (ia >= 0) & (ia < V), (ib >= 0) & (ib < P.shape[1])
    sub = np.zeros((len(ia), len(ib)))
    sub[np.ix_(ok_a, ok_b)] = P[np.ix_(ia[ok_a], ib[ok_b])]
    if sub.sum() <= 0:
        raise ValueError(f"the candidates of {what} have no probability under the truth")
    return sub / sub.sum()
