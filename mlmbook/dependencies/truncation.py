r"""What the top-K candidate grid (by the very function it uses) does to a CMI whose exact value is
known: the truth's, from each pair's exact joint."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import queries
from ..stats import mutual_information
from .cmi import _grid_limit, _ranked, _share, left_out_bound
from .pieces import WINDOW
from .trees import decode, uuas_counts

__all__ = ["TruncationCheck", "truncated_pair", "truth_with_truncation"]


def _marginals(joint: np.ndarray):
    P = np.asarray(joint, dtype=float)
    P = P / P.sum()
    with np.errstate(divide="ignore"):
        return P, np.log(P.sum(1)), np.log(P.sum(0))


def truncated_pair(joint: np.ndarray, n_i: int, n_j: int) -> tuple[float, float, float]:
    r"""The candidate grid's CMI of one pair whose exact joint ``joint[a, b]`` is known.

    The grid's rows are the exact conditionals :math:`p(x_i \mid x_j = b)` for the ``n_j`` likeliest
    ``b`` and :math:`p(x_j \mid x_i = a)` for the ``n_i`` likeliest ``a`` (by the exact marginals);
    the chain starts at the marginal of :math:`x_j`. Returns ``(I_i, I_j, left_out)``.
    """
    P, la, lb = _marginals(joint)
    cp = _ranked(la, np.arange(len(la)), n_i)[0]
    cq = _ranked(lb, np.arange(len(lb)), n_j)[0]
    with np.errstate(divide="ignore"):
        a_rows = np.log(P[:, cq] / np.exp(lb[cq])).T  # row m: log p(x_i = . | x_j = cq[m])
        b_rows = np.log(P[cp, :] / np.exp(la[cp])[:, None])  # row m: log p(x_j = . | x_i = cp[m])
    I_i, I_j, _, esc_q, esc_p = _grid_limit(a_rows, b_rows, cp, cq, lb[cq])
    left = max(1 - np.exp(la[cp]).sum(), 1 - np.exp(lb[cq]).sum(), esc_q, esc_p, 0.0)
    return I_i, I_j, float(left if left > 1e-12 else 0.0)


@dataclass
class TruncationCheck:
    """The exact truth-CMI and its grid of ``k`` candidates per position on the same sentences: per
    sentence the ``exact`` and ``truncated`` (directional) word-level matrices; per pair the grid's
    error ``bounds`` (nats) and ``differences``, the larger direction's ``|truncated - exact|``, and
    their largest, ``max_bound`` and ``max_difference``."""

    k: int
    exact: list
    truncated: list
    bounds: np.ndarray
    differences: np.ndarray
    max_bound: float
    max_difference: float

    def trees(self):
        """``(exact trees, truncated trees)``, by :func:`decode`."""
        return [decode(M) for M in self.exact], [decode(M) for M in self.truncated]

    def same_trees(self) -> int:
        """Sentences whose truncated tree is the exact one."""
        a, b = self.trees()
        return sum(x == y for x, y in zip(a, b))

    def uuas_difference(self, gold_edges) -> tuple[np.ndarray, np.ndarray]:
        """Per sentence: gold edges found by the truncated tree minus by the exact one, and gold
        edges."""
        a, b = self.trees()
        ca, g = uuas_counts(a, gold_edges[: len(a)])
        cb, _ = uuas_counts(b, gold_edges[: len(b)])
        return cb - ca, g


def truth_with_truncation(grammar, sentences, keep=None, k: int = 20, window: int | None = WINDOW,
                          progress: bool = False) -> TruncationCheck:
    r"""The truth's CMI of every pair of kept words, exact and on the grid of ``k`` candidates per
    position, from one pass of exact joints.

    The candidates are shared out within each sentence as :func:`~mlmbook.dependencies.cmi_grid`
    shares them; ``exact`` is what :func:`~mlmbook.dependencies.truth_cmi` returns. ``grammar``: any
    world with ``pair_joints``.
    """
    keep = [None] * len(sentences) if keep is None else keep
    n_values = len(grammar.vocab)
    exact, trunc, bounds, diffs = [], [], [], []
    for words, kp in queries.progress_bar(zip(sentences, keep), len(sentences),
                                          "truth CMI, exact and top-K", progress):
        kp = list(range(len(words))) if kp is None else list(kp)
        where = {w: a for a, w in enumerate(kp)}
        pairs = [(kp[a], kp[b]) for a in range(len(kp)) for b in range(a + 1, len(kp))
                 if window is None or kp[b] - kp[a] <= window]
        E, T = np.zeros((len(kp), len(kp))), np.zeros((len(kp), len(kp)))
        joints = list(grammar.pair_joints(list(words), pairs)) if pairs else []
        ranked = []
        for _, joint in joints:
            _, la, lb = _marginals(joint)
            ranked += [_ranked(la, np.arange(len(la)), len(la)), _ranked(lb, np.arange(len(lb)), len(lb))]
        sizes = _share(ranked, 2 * k * len(joints))
        for ((i, j), joint), n_i, n_j in zip(joints, sizes[::2], sizes[1::2]):
            a, b = where[i], where[j]
            E[a, b] = E[b, a] = mutual_information(joint)
            T[a, b], T[b, a], left = truncated_pair(joint, n_i, n_j)
            bounds.append(left_out_bound(left, n_values))
            diffs.append(max(abs(T[a, b] - E[a, b]), abs(T[b, a] - E[a, b])))
        exact.append(E)
        trunc.append(T)
    bounds, diffs = np.asarray(bounds), np.asarray(diffs)
    return TruncationCheck(k, exact, trunc, bounds, diffs, float(bounds.max(initial=0.0)),
                           float(diffs.max(initial=0.0)))
