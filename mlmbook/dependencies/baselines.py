"""Baseline trees: the adjacent chain and uniformly random trees."""
from __future__ import annotations

import heapq
from typing import Sequence

import numpy as np

from ..corpus.sentence import Edge
from .trees import _edge, uuas_counts

__all__ = ["adjacent_edges", "prufer_to_edges", "random_tree_edges", "random_counts"]


def adjacent_edges(n: int) -> set[Edge]:
    """The chain ``0-1-2-...-(n-1)``: every word attached to its neighbour."""
    return {(i, i + 1) for i in range(n - 1)}


def prufer_to_edges(seq: Sequence[int], n: int) -> set[Edge]:
    """Decode a Prüfer sequence (length ``n-2``, entries in ``0..n-1``) into tree edges: a bijection
    between the :math:`n^{n-2}` sequences and the labelled trees on ``n`` nodes (Cayley)."""
    if n < 2:
        return set()
    degree = [1] * n
    for x in seq:
        degree[x] += 1
    leaves = [i for i in range(n) if degree[i] == 1]
    heapq.heapify(leaves)
    edges = set()
    for x in seq:
        leaf = heapq.heappop(leaves)
        edges.add(_edge(leaf, x))
        degree[x] -= 1
        if degree[x] == 1:
            heapq.heappush(leaves, x)
    edges.add(_edge(heapq.heappop(leaves), heapq.heappop(leaves)))
    return edges


def random_tree_edges(n: int, rng=None) -> set[Edge]:
    """A uniformly random labelled spanning tree on ``n`` words (a uniform Prüfer sequence decoded:
    each tree has probability :math:`n^{-(n-2)}`); ``rng``: a ``numpy.random.Generator`` or seed."""
    rng = np.random.default_rng(rng)
    return prufer_to_edges(rng.integers(0, n, size=max(n - 2, 0)).tolist(), n)


def random_counts(n_words: Sequence[int], gold_edges: Sequence[set], seed: int = 0,
                  draws: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """The random baseline's ``(correct, gold)`` per sentence of ``n_words`` words: gold edges found
    by a uniformly random spanning tree, the mean of ``draws`` trees (``correct`` is fractional)."""
    rng = np.random.default_rng(seed)
    found = [uuas_counts([random_tree_edges(int(n), rng) for n in n_words], gold_edges)[0] for _ in range(draws)]
    return np.mean(found, axis=0), np.array([len(g) for g in gold_edges])
