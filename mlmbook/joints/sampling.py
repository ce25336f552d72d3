r"""Chapter 2's sample of pairs: one adjacent and one random pair of positions per sentence."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["choose_pairs"]


def choose_pairs(lm: "MaskedLM", sentences: Sequence[Sequence[str]], n: int, rng: np.random.Generator) -> list[dict]:
    """One adjacent and one random pair of words per sentence, until ``n`` sentences have given theirs.

    Only words with a letter or digit whose pieces the model knows (no special token) qualify;
    a sentence needs three of them and two adjacent ones, and must fit the model.

    Parameters
    ----------
    lm : MaskedLM
    sentences : sequence of word lists
    n : int
        Sentences wanted (``2 n`` items: adjacent, random, adjacent, ...).
    rng : numpy Generator

    Returns
    -------
    list of dict with ``kind`` ("adjacent"/"random"), ``words``, word positions ``wa < wb``,
    ``ids`` (token ids), token positions ``A``, ``B`` (the first piece of each word) and
    ``distance`` (``wb - wa``).
    """
    items = []
    for words in sentences:
        ids, pieces = lm.encode_words(list(words))
        if len(ids) > lm.max_length:
            continue
        ok = [w for w, word in enumerate(words) if any(c.isalnum() for c in word)
              and all(ids[p] not in lm.special_ids for p in pieces[w])]
        adjacent = [(u, v) for u, v in zip(ok, ok[1:]) if v == u + 1]
        if len(ok) < 3 or not adjacent:
            continue
        u, v = adjacent[rng.integers(len(adjacent))]
        r1, r2 = sorted(rng.choice(ok, size=2, replace=False))
        for kind, (wa, wb) in (("adjacent", (u, v)), ("random", (int(r1), int(r2)))):
            items.append(dict(kind=kind, words=list(words), wa=wa, wb=wb, ids=ids,
                              A=pieces[wa][0], B=pieces[wb][0], distance=wb - wa))
        if len(items) == 2 * n:
            break
    return items
