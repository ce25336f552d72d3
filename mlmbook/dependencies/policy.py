r"""Which CMI estimator a budget affords: the exact full grid where it fits, else a top-K grid with its bound.

The exact grid of :func:`~mlmbook.dependencies.cmi_grid` costs :math:`2V' + 1` forward passes per pair of
pieces (:math:`V'` the non-special tokens): a few hundred for the toy vocabulary, 61,000 for BERT's. One rule,
used by chapter 1 and by :func:`mlmbook.dependency_trees` alike, so that the two cannot disagree:

* if the full grid over all the sentences fits ``budget_rows`` forward passes, compute it (exact);
* otherwise enumerate at each position the model's own top :math:`K` candidates, :math:`K` the largest that
  fits the budget (at least :data:`MIN_CANDIDATES`), and report the bound on each pair's error that the
  mass left outside the candidates allows (:attr:`~mlmbook.dependencies.CMIGrid.max_error_bound`).

:func:`exact_prefix` is the chapter's other use of the budget: how many of the first sentences the exact
grid affords.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .cmi import CMIGrid, cmi_grid
from .pieces import WINDOW, encode_all, non_special

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["CMIScores", "cmi_scores", "cmi_candidates", "exact_prefix", "BUDGET_ROWS", "MIN_CANDIDATES"]

BUDGET_ROWS = 140_000
"""Forward passes the research API spends on a CMI grid by default (chapter 1's full-profile budget)."""
MIN_CANDIDATES = 10
"""The smallest top-K grid: below it the bound says little; a budget that affords less is exceeded."""


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
        Values enumerated per position (every non-special token for the exact grid, else ``K``).
    bound : float
        The largest error bound on a pair's CMI, in nats (0 for the exact grid).
    rows : int
        Forward passes spent.
    budget_rows : int
    """

    scores: CMIGrid
    estimator: str
    candidates: int
    bound: float
    rows: int
    budget_rows: int

    @property
    def exact(self) -> bool:
        return self.estimator == "exact grid"

    def describe(self) -> str:
        """A label: the estimator, its cost and (top-K) its bound, e.g. ``"top-27 CMI grid, 109,230 passes,
        bound 2.3 nats"``."""
        if self.exact:
            return f"exact CMI grid, {self.candidates} tokens, {self.rows:,} passes"
        return f"top-{self.candidates} CMI grid, {self.rows:,} passes, bound {self.bound:.3g} nats"

    def summary(self, small: float = 0.1) -> dict:
        """The numbers a page states about the estimator: ``estimator``, ``candidates``, ``rows``, ``pairs``,
        ``rows_per_pair``, the pairs' error bounds (``bound_max``, ``bound_median``, ``bound_share_small``: the
        share of pairs whose bound is below ``small`` nats) and ``tv_median``, the median total variation
        between the chain's long-run law and the model's both-masked prediction."""
        bounds = np.asarray(self.scores.error_bound, dtype=float)
        pairs = max(self.scores.pairs, 1)
        return {"estimator": self.estimator, "candidates": int(self.candidates), "rows": int(self.rows),
                "pairs": int(self.scores.pairs), "rows_per_pair": self.rows / pairs, "bound_max": float(self.bound),
                "bound_median": float(np.median(bounds)) if bounds.size else 0.0,
                "bound_share_small": float(np.mean(bounds < small)) if bounds.size else 1.0,
                "tv_median": float(np.median(self.scores.tv_to_marginal)) if self.scores.tv_to_marginal else 0.0}


def _pairs(lm: "MaskedLM", sentences, keep, window) -> int:
    return sum(len(e.piece_pairs(window)) for e in encode_all(lm, sentences, keep))


def cmi_candidates(lm: "MaskedLM", sentences, keep=None, *, budget_rows: int = BUDGET_ROWS,
                   window: int | None = WINDOW) -> int | None:
    """The candidates per position the budget affords: None for the full grid, else ``K`` of a top-K grid
    (at least :data:`MIN_CANDIDATES`)."""
    pairs = _pairs(lm, sentences, keep, window)
    full = len(non_special(lm))
    if pairs == 0 or pairs * (2 * full + 1) <= budget_rows:
        return None
    k = int((budget_rows / pairs - 1) // 2)
    return max(MIN_CANDIDATES, min(k, full - 1))


def exact_prefix(lm: "MaskedLM", sentences, keep=None, *, budget_rows: int, window: int | None = WINDOW) -> int:
    """How many of the first sentences the exact grid affords within ``budget_rows`` (chapter 1's ``n_grid``)."""
    keep = [None] * len(sentences) if keep is None else keep
    per = [len(e.piece_pairs(window)) * (2 * len(non_special(lm)) + 1)
           for e in encode_all(lm, sentences, keep)]
    return int(np.searchsorted(np.cumsum(per), budget_rows, side="right"))


def cmi_scores(lm: "MaskedLM", sentences, keep=None, *, budget_rows: int = BUDGET_ROWS,
               window: int | None = WINDOW, progress: bool = False) -> CMIScores:
    r"""Zhang & Hashimoto's CMI for every pair of kept words, by the estimator the budget affords.

    Parameters
    ----------
    lm : MaskedLM
    sentences : list of word lists (or :class:`~mlmbook.corpus.Surface`)
    keep : list of list of int, optional
        Per sentence, the words to score (default all).
    budget_rows : int
        Forward passes the grid may spend (chapter 1 passes its profile's; default :data:`BUDGET_ROWS`).
    window : int or None
        Largest distance between two scored pieces (:data:`~mlmbook.dependencies.WINDOW`).
    progress : bool
        Show progress bars.

    Returns
    -------
    CMIScores
        ``scores`` (one matrix per sentence), ``estimator``, ``candidates``, ``bound``.
    """
    k = cmi_candidates(lm, sentences, keep, budget_rows=budget_rows, window=window)
    grid = cmi_grid(lm, sentences, keep, window=window, max_candidates=k, progress=progress)
    if k is None:
        return CMIScores(grid, "exact grid", len(non_special(lm)), 0.0, grid.rows, budget_rows)
    return CMIScores(grid, "top-K grid", k, float(grid.max_error_bound), grid.rows, budget_rows)
