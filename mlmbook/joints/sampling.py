r"""Chapter 2's sample of pairs: one adjacent and one random pair of positions per sentence, with
their linear and (where the sentence has a gold tree) syntactic distance."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["choose_pairs", "tree_distance"]


def tree_distance(heads: Sequence[int], i: int, j: int) -> int:
    """Number of edges between words ``i`` and ``j`` in a dependency tree (``heads[k]`` is the
    0-based head of word ``k``, ``-1`` for the root): 1 for a head and its dependent, 2 for two
    dependents of one head or a grandparent, and so on.

    Raises ``ValueError`` if the heads do not form a tree that links the two words.
    """
    def path_up(k):
        seen = [k]
        while heads[seen[-1]] >= 0:
            seen.append(int(heads[seen[-1]]))
            if len(seen) > len(heads):
                raise ValueError("the heads have a cycle: not a tree")
        return seen

    up_i, up_j = path_up(i), path_up(j)
    depth_j = {node: d for d, node in enumerate(up_j)}
    for d, node in enumerate(up_i):
        if node in depth_j:
            return d + depth_j[node]
    raise ValueError(f"words {i} and {j} are not in one tree")


def _tree_distance_or_none(heads, i: int, j: int):
    """The tree distance, or ``None`` without heads or where they do not link the two words (a
    treebank sentence whose heads are not one tree)."""
    if heads is None:
        return None
    try:
        return tree_distance(heads, i, j)
    except (ValueError, IndexError):
        return None


def choose_pairs(lm: "MaskedLM", sentences: Sequence, n: int, rng: np.random.Generator) -> list[dict]:
    """One adjacent and one random pair of words per sentence, until ``n`` sentences have given theirs.

    Only words with a letter or digit whose pieces the model knows (no special token) qualify;
    a sentence needs three of them and two adjacent ones, and must fit the model.

    Parameters
    ----------
    lm : MaskedLM
    sentences : sequence of word lists or :class:`~mlmbook.corpus.Sentence` objects
        With a ``Sentence`` (it has ``heads``) each pair also gets its distance in the gold tree.
    n : int
        Sentences wanted (``2 n`` items: adjacent, random, adjacent, ...).
    rng : numpy Generator

    Returns
    -------
    list of dict with ``kind`` ("adjacent"/"random"), ``sentence`` (index of the sentence in the
    sample, 0, 0, 1, 1, ...), ``words``, word positions ``wa < wb``, ``ids`` (token ids), token
    positions ``A``, ``B`` (the first piece of each word), ``distance`` (``wb - wa``) and
    ``tree_distance`` (edges between the two words in the gold tree; ``None`` without one, or where
    the sentence's heads do not form a tree).
    """
    items = []
    for sentence in sentences:
        words = list(getattr(sentence, "words", sentence))
        heads = getattr(sentence, "heads", None)
        ids, pieces = lm.encode_words(words)
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
            items.append(dict(kind=kind, sentence=len(items) // 2, words=list(words), wa=wa, wb=wb, ids=ids,
                              A=pieces[wa][0], B=pieces[wb][0], distance=wb - wa,
                              tree_distance=_tree_distance_or_none(heads, wa, wb)))
        if len(items) == 2 * n:
            break
    return items
