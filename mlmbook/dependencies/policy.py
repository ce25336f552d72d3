r"""Which CMI estimator a budget affords: the exact full grid where it fits, else a top-K grid.

The exact grid costs :math:`2V' + 1` forward passes per pair of pieces (:math:`V'` the non-special
tokens: a few hundred for the toy vocabulary, 61,000 for BERT's); a sentence whose budget it
exceeds gets the top :math:`K` candidates that fit, with each pair's error bound.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .cmi import CMIGrid, GridSettings, cmi_grid
from .pieces import WINDOW, encode_all, non_special
from .trees import decode, symmetrize

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["CMIScores", "cmi_scores", "cmi_candidates", "exact_prefix", "undetermined",
           "BUDGET_ROWS", "SENTENCE_ROWS", "MIN_CANDIDATES"]

SENTENCE_ROWS = 110_000 // 112
"""Forward passes a sentence's CMI grid may spend by default: chapter 1's full profile's (110,000
passes on 112 sentences)."""
BUDGET_ROWS = SENTENCE_ROWS
"""The research API's default CMI budget, per sentence (:data:`SENTENCE_ROWS`)."""
MIN_CANDIDATES = 10
"""The smallest top-K grid (below it the bound says little); a smaller budget is exceeded."""


@dataclass
class CMIScores:
    """Word-level CMI ``scores`` (a :class:`CMIGrid`), and the ``estimator`` that gave them
    (``"exact grid"`` or ``"top-K grid"``): ``candidates`` per position (every non-special token,
    else ``K``, or the mean over piece pairs, rounded), the largest error ``bound`` (nats, 0 when
    exact), the ``rows`` spent, each sentence's ``K`` (``per_sentence``, None: exact grid) and
    word-level matrix of error ``bounds``."""

    scores: CMIGrid
    estimator: str
    candidates: int
    bound: float
    rows: int
    per_sentence: tuple = ()
    bounds: tuple = ()

    def summary(self, small: float = 0.1) -> dict:
        """The numbers a page states about the estimator: ``estimator``, ``candidates``, ``rows``,
        ``pairs``, ``rows_per_pair``, the pairs' error bounds (``bound_max``, ``bound_median``,
        ``bound_share_small``: the share of pairs whose bound is below ``small`` nats), ``k_min``,
        the fewest candidates any sentence got (every token for an exact grid), ``tv_median``, the
        median of :attr:`CMIGrid.tv_to_marginal`, and ``undetermined``, the trees the bounds cannot
        decide."""
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


def sentence_candidates(pairs: int, full: int, rows: float) -> int | None:
    """A sentence's candidates: None where its exact grid fits ``rows``, else the largest ``K``."""
    if pairs == 0 or pairs * (2 * full + 1) <= rows:
        return None
    return max(MIN_CANDIDATES, min(int((rows / pairs - 1) // 2), full - 1))


def cmi_candidates(lm: "MaskedLM", sentences, keep=None, *, budget_rows: int = BUDGET_ROWS,
                   window: int | None = WINDOW) -> int | None:
    """The candidates per position ``budget_rows`` affords these sentences together: None for the
    full grid, else ``K`` of a top-K grid (at least :data:`MIN_CANDIDATES`). For one sentence and
    its budget, this is the rule :func:`cmi_scores` applies to each sentence."""
    pairs = sum(len(e.piece_pairs(window)) for e in encode_all(lm, sentences, keep))
    return sentence_candidates(pairs, len(non_special(lm)), budget_rows)


def exact_prefix(lm: "MaskedLM", sentences, keep=None, *, budget_rows: int, window: int | None = WINDOW) -> int:
    """How many of the first sentences the exact grid affords within ``budget_rows``."""
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
        out.jobs += [(idx[s], p, q) for s, p, q in g.jobs]
        for name in ("rows", "pairs", "left_out", "error_bound", "tv_to_marginal"):
            setattr(out, name, getattr(out, name) + getattr(g, name))
        weighted += g.mean_candidates * g.pairs
    out.extend(mats)
    out.max_left_out = max(out.left_out, default=0.0)
    out.max_error_bound = max(out.error_bound, default=0.0)
    out.mean_candidates = weighted / out.pairs if out.pairs else 0.0
    return out


def cmi_scores(lm: "MaskedLM", sentences, keep=None, *, budget_rows: float | None = None,
               window: int | None = WINDOW, progress: bool = False) -> CMIScores:
    r"""Zhang & Hashimoto's CMI for every pair of kept words, by the estimator each sentence's
    budget affords: one matrix per sentence, each sentence's ``K`` and its pairs' bounds.

    Parameters
    ----------
    sentences, keep, window
        As for :func:`~mlmbook.dependencies.cmi_grid`.
    budget_rows : float, optional
        Forward passes the grid may spend in all, shared equally by the sentences (default
        :data:`SENTENCE_ROWS` per sentence): to give each sentence ``r`` passes, pass
        ``r * len(sentences)``.
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
                                    window=window, max_candidates=k,
                                    settings=GridSettings(progress=progress))))
    grid = _merged(parts, n)
    bounds = tuple(word_bounds(enc, grid))
    if all(k is None for k in ks):
        return CMIScores(grid, "exact grid", full, 0.0, grid.rows, tuple(ks), bounds)
    weights = [(full if k is None else k, len(e.piece_pairs(window))) for k, e in zip(ks, enc)]
    mean_k = sum(k * w for k, w in weights) / max(sum(w for _, w in weights), 1)
    return CMIScores(grid, "top-K grid", int(round(mean_k)), float(grid.max_error_bound), grid.rows,
                     tuple(ks), bounds)


def undetermined(scores, bounds) -> list[bool]:
    r"""Which trees the pairs' error bounds cannot decide.

    A maximum spanning tree is the tree of every score matrix within the bounds exactly when, for
    every pair :math:`e` outside the tree and every tree pair :math:`f` on the tree's path between
    its words, :math:`S_f - b_f > S_e + b_e` (the cycle property with the worst case of both bounds;
    :math:`S` the symmetrised scores, :math:`b` the pairs' bounds). Returns, per score matrix and
    its bounds (:class:`CMIScores`), whether this fails somewhere.
    """
    out = []
    for M, B in zip(scores, bounds):
        S, B = symmetrize(M), np.maximum(B, np.asarray(B).T)
        out.append(len(S) >= 3 and bool(np.any(B)) and _undecided(S, B, decode(M)))
    return out


def _undecided(S: np.ndarray, B: np.ndarray, tree: set) -> bool:
    """Whether a pair outside ``tree`` may, within the bounds, outscore a tree pair on its path."""
    adj: dict[int, list[int]] = {i: [] for i in range(len(S))}
    for a, b in tree:
        adj[a].append(b)
        adj[b].append(a)
    for u in range(len(S)):
        low, stack = {u: np.inf}, [u]
        while stack:                      # the weakest tree pair on each path from u, at its worst
            x = stack.pop()
            for y in adj[x]:
                if y not in low:
                    low[y] = min(low[x], S[x, y] - B[x, y])
                    stack.append(y)
        if any(low[v] <= S[u, v] + B[u, v] for v in range(u + 1, len(S)) if (u, v) not in tree):
            return True
    return False
