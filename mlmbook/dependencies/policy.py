r"""Which CMI estimator a budget affords: the exact full grid where it fits, else a top-K grid with
its bound.

The exact grid of :func:`~mlmbook.dependencies.cmi_grid` costs :math:`2V' + 1` forward passes per
pair of pieces (:math:`V'` the non-special tokens): a few hundred for the toy vocabulary, 61,000 for
BERT's. One rule, used by chapter 1 and by :func:`mlmbook.dependency_trees` alike, so that the two
cannot disagree:

* the budget is per sentence (``budget_rows`` shared equally by the sentences): a sentence's
  estimator depends on that sentence and the budget, never on the sentences scored with it;
* if the full grid of a sentence fits its budget, compute it (exact);
* otherwise enumerate at each position the model's own top :math:`K` candidates, :math:`K` the
  largest that fits the sentence's budget (at least :data:`MIN_CANDIDATES`), and report the bound on
  each pair's error that the mass left outside the candidates allows
  (:attr:`~mlmbook.dependencies.CMIGrid.max_error_bound`).

A tree read off bounded scores may not be the tree of the exact scores: :func:`undetermined` says
which trees the bounds cannot decide.

:func:`exact_prefix` is the chapter's other use of the budget: how many of the first sentences the
exact grid affords.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .cmi import CMIGrid, cmi_grid
from .pieces import WINDOW, encode_all, non_special

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["CMIScores", "cmi_scores", "cmi_candidates", "exact_prefix", "undetermined",
           "BUDGET_ROWS", "SENTENCE_ROWS", "MIN_CANDIDATES"]

SENTENCE_ROWS = 110_000 // 112
"""Forward passes a sentence's CMI grid may spend by default: chapter 1's full profile's budget per
sentence (110,000 passes on 112 sentences; a test holds the two together)."""
BUDGET_ROWS = SENTENCE_ROWS
"""The research API's default CMI budget, per sentence (:data:`SENTENCE_ROWS`)."""
MIN_CANDIDATES = 10
"""The smallest top-K grid: below it the bound says little; a budget that affords less is
exceeded."""


@dataclass
class CMIScores:
    """Word-level CMI scores, and which estimator gave them.

    Attributes
    ----------
    scores : CMIGrid
        One matrix per sentence over its kept words (a list), with the grid's diagnostics.
    estimator : str
        ``"exact grid"`` or ``"top-K grid"``.
    candidates : int
        Values enumerated per position (every non-special token for the exact grid, else ``K``; the
        mean over the piece pairs, rounded, when the sentences' budgets afford different ``K``).
    bound : float
        The largest error bound on a pair's CMI, in nats (0 for the exact grid).
    rows : int
        Forward passes spent.
    budget_rows : int
        Forward passes the sentences may spend in all.
    per_sentence : tuple of (int or None)
        Each sentence's ``K`` (None: its exact grid).
    bounds : tuple of ndarray
        Per sentence, the word-level matrix of the pairs' error bounds (nats; 0 for an exact grid).
    """

    scores: CMIGrid
    estimator: str
    candidates: int
    bound: float
    rows: int
    budget_rows: int
    per_sentence: tuple = ()
    bounds: tuple = ()

    @property
    def exact(self) -> bool:
        return self.estimator == "exact grid"

    def describe(self) -> str:
        """A label: the estimator, its cost and (top-K) its bound, e.g. ``"top-27 CMI grid, 109,230
        passes, bound 2.3 nats"``."""
        if self.exact:
            return f"exact CMI grid, {self.candidates} tokens, {self.rows:,} passes"
        return f"top-{self.candidates} CMI grid, {self.rows:,} passes, bound {self.bound:.3g} nats"

    def summary(self, small: float = 0.1) -> dict:
        """The numbers a page states about the estimator: ``estimator``, ``candidates``, ``rows``,
        ``pairs``, ``rows_per_pair``, the pairs' error bounds (``bound_max``, ``bound_median``,
        ``bound_share_small``: the share of pairs whose bound is below ``small`` nats), ``k_min``,
        the fewest candidates any sentence got (:data:`MIN_CANDIDATES` when a sentence's budget
        afforded fewer and was exceeded; every token for an exact grid), ``tv_median``, the median
        total variation between the chain's long-run law and the model's both-masked prediction, and
        ``undetermined``, the trees the bounds cannot decide (:func:`undetermined`)."""
        bounds = np.asarray(self.scores.error_bound, dtype=float)
        pairs = max(self.scores.pairs, 1)
        ks = [k for k in self.per_sentence if k is not None]
        return {"estimator": self.estimator, "candidates": int(self.candidates),
                "rows": int(self.rows), "k_min": int(min(ks)) if ks else int(self.candidates),
                "pairs": int(self.scores.pairs), "rows_per_pair": self.rows / pairs, "bound_max": float(self.bound),
                "bound_median": float(np.median(bounds)) if bounds.size else 0.0,
                "bound_share_small": float(np.mean(bounds < small)) if bounds.size else 1.0,
                "tv_median": float(np.median(self.scores.tv_to_marginal)) if self.scores.tv_to_marginal else 0.0,
                "undetermined": int(sum(undetermined(list(self.scores), list(self.bounds)))) if self.bounds else 0}


def _pairs(lm: "MaskedLM", sentences, keep, window) -> int:
    return sum(len(e.piece_pairs(window)) for e in encode_all(lm, sentences, keep))


def sentence_candidates(pairs: int, full: int, rows: float) -> int | None:
    """A sentence's candidates: None (its exact grid fits ``rows``), else the largest ``K`` that
    fits."""
    if pairs == 0 or pairs * (2 * full + 1) <= rows:
        return None
    return max(MIN_CANDIDATES, min(int((rows / pairs - 1) // 2), full - 1))


def cmi_candidates(lm: "MaskedLM", sentences, keep=None, *, budget_rows: int = BUDGET_ROWS,
                   window: int | None = WINDOW) -> int | None:
    """The candidates per position ``budget_rows`` affords these sentences together: None for the
    full grid, else ``K`` of a top-K grid (at least :data:`MIN_CANDIDATES`). For one sentence and
    its budget, this is the rule :func:`cmi_scores` applies to each sentence."""
    return sentence_candidates(_pairs(lm, sentences, keep, window), len(non_special(lm)), budget_rows)


def exact_prefix(lm: "MaskedLM", sentences, keep=None, *, budget_rows: int, window: int | None = WINDOW) -> int:
    """How many of the first sentences the exact grid affords within ``budget_rows`` (chapter 1's
    ``n_grid``)."""
    keep = [None] * len(sentences) if keep is None else keep
    per = [len(e.piece_pairs(window)) * (2 * len(non_special(lm)) + 1)
           for e in encode_all(lm, sentences, keep)]
    return int(np.searchsorted(np.cumsum(per), budget_rows, side="right"))


def word_bounds(enc, grid: CMIGrid) -> list[np.ndarray]:
    """Per sentence, the largest error bound of a piece pair between each two kept words."""
    out = [np.zeros((len(e.keep), len(e.keep))) for e in enc]
    where = [{w: a for a, w in enumerate(e.keep)} for e in enc]
    for (s, p, q), b in zip(grid.jobs, grid.error_bound):
        a, c = where[s].get(int(enc[s].owner[p])), where[s].get(int(enc[s].owner[q]))
        if a is not None and c is not None:
            out[s][a, c] = out[s][c, a] = max(out[s][a, c], b)
    return out


def _merged(parts: list[tuple[list[int], CMIGrid]], n: int) -> CMIGrid:
    """One :class:`CMIGrid` over ``n`` sentences from grids of groups of them (their indices)."""
    out = CMIGrid()
    mats = [None] * n
    weighted = 0.0
    for idx, g in parts:
        for m, s in zip(g, idx):
            mats[s] = m
        out.rows += g.rows
        out.pairs += g.pairs
        out.jobs += [(idx[s], p, q) for s, p, q in g.jobs]
        out.left_out += g.left_out
        out.error_bound += g.error_bound
        out.tv_to_marginal += g.tv_to_marginal
        weighted += g.mean_candidates * g.pairs
    out.extend(mats)
    out.max_left_out = max(out.left_out, default=0.0)
    out.max_error_bound = max(out.error_bound, default=0.0)
    out.mean_candidates = weighted / out.pairs if out.pairs else 0.0
    return out


def cmi_scores(lm: "MaskedLM", sentences, keep=None, *, budget_rows: float | None = None,
               window: int | None = WINDOW, progress: bool = False) -> CMIScores:
    r"""Zhang & Hashimoto's CMI for every pair of kept words, by the estimator each sentence's
    budget affords.

    Parameters
    ----------
    lm : MaskedLM
    sentences : list of word lists (or :class:`~mlmbook.corpus.Surface`)
    keep : list of list of int, optional
        Per sentence, the words to score (default all).
    budget_rows : float, optional
        Forward passes the grid may spend in all, shared equally by the sentences (chapter 1 passes
        its profile's, for its profile's number of sentences; default :data:`SENTENCE_ROWS` per
        sentence). A sentence's ``K`` depends on it and its share alone: to give each sentence ``r``
        passes, pass ``r * len(sentences)``.
    window : int or None
        Largest distance between two scored pieces (:data:`~mlmbook.dependencies.WINDOW`).
    progress : bool
        Show progress bars.

    Returns
    -------
    CMIScores
        ``scores`` (one matrix per sentence), ``estimator``, ``candidates``, ``bound``, each
        sentence's ``K`` and its pairs' bounds (:func:`undetermined` reads them).
    """
    keep = [None] * len(sentences) if keep is None else keep
    n = len(sentences)
    sentence_rows = SENTENCE_ROWS if budget_rows is None else budget_rows / max(n, 1)
    enc = encode_all(lm, sentences, keep)
    full = len(non_special(lm))
    ks = [sentence_candidates(len(e.piece_pairs(window)), full, sentence_rows) for e in enc]
    parts = []
    for k in sorted(set(ks), key=lambda v: -1 if v is None else v):
        idx = [s for s in range(n) if ks[s] == k]
        parts.append((idx, cmi_grid(lm, [sentences[s] for s in idx], [keep[s] for s in idx],
                                    window=window, max_candidates=k, progress=progress)))
    grid = _merged(parts, n)
    total = int(round(sentence_rows * n))
    bounds = tuple(word_bounds(enc, grid))
    if all(k is None for k in ks):
        return CMIScores(grid, "exact grid", full, 0.0, grid.rows, total, tuple(ks), bounds)
    weights = [(full if k is None else k, len(e.piece_pairs(window))) for k, e in zip(ks, enc)]
    mean_k = sum(k * w for k, w in weights) / max(sum(w for _, w in weights), 1)
    return CMIScores(grid, "top-K grid", int(round(mean_k)), float(grid.max_error_bound), grid.rows,
                     total, tuple(ks), bounds)


def undetermined(scores, bounds) -> list[bool]:
    r"""Which trees the pairs' error bounds cannot decide.

    A maximum spanning tree is the tree of every score matrix within the bounds exactly when, for
    every pair :math:`e` outside the tree and every tree pair :math:`f` on the tree's path between
    its words, :math:`S_f - b_f > S_e + b_e` (the cycle property with the worst case of both bounds;
    :math:`S` the symmetrised scores, :math:`b` the pairs' bounds). A tree for which this fails
    somewhere is reported as undetermined: its pairs' bounds exceed the differences that decide it.

    Parameters
    ----------
    scores : list of ndarray
        Word-level score matrices (:attr:`CMIScores.scores`).
    bounds : list of ndarray
        The matching bound matrices (:attr:`CMIScores.bounds`).

    Returns
    -------
    list of bool
        True where the tree is undetermined.
    """
    from .trees import decode, symmetrize
    out = []
    for M, B in zip(scores, bounds):
        S, B = symmetrize(M, "max"), np.maximum(B, np.asarray(B).T)
        n = len(S)
        if n < 3 or not np.any(B):
            out.append(False)
            continue
        adj: dict[int, list[int]] = {i: [] for i in range(n)}
        for a, b in decode(M):
            adj[a].append(b)
            adj[b].append(a)
        tree = {(min(a, b), max(a, b)) for a in adj for b in adj[a]}
        bad = False
        for u in range(n):
            prev, stack = {u: None}, [u]
            while stack:                      # the tree's paths from u
                x = stack.pop()
                for y in adj[x]:
                    if y not in prev:
                        prev[y] = x
                        stack.append(y)
            for v in range(u + 1, n):
                if (u, v) in tree:
                    continue
                x, low = v, np.inf
                while prev[x] is not None:    # the weakest tree pair on the path, at its worst
                    low = min(low, S[x, prev[x]] - B[x, prev[x]])
                    x = prev[x]
                if low <= S[u, v] + B[u, v]:
                    bad = True
                    break
            if bad:
                break
        out.append(bad)
    return out
