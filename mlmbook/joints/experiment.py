r"""Chapter 2's experiment: :func:`measure` scores every joint on every pair in one batched pass;
:func:`methods_table` and :func:`truth_table` give each cell with its 95 % interval over sentences
(perplexities described on the log scale and mapped back)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..stats import describe
from .conditionals import gold_index, iter_pair_conditionals
from .derive import METHODS
from .metrics import evaluate_pair, stack
from .study import exp_interval

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["queries_of", "measure", "methods_table", "truth_table", "cell", "ROWS"]

ROWS = {**METHODS, "mlm": "MLM's own conditionals", "truth": "truth p"}


def queries_of(items: Sequence[dict]) -> list[tuple]:
    """``(ids, A, B)`` of each pair of :func:`~mlmbook.joints.choose_pairs`."""
    return [(it["ids"], it["A"], it["B"]) for it in items]


def measure(lm: "MaskedLM", items: Sequence[dict], truths: Sequence | None = None, candidates=None,
            progress: bool = False) -> dict[str, np.ndarray]:
    """Every joint of every pair, scored: ``{"method.metric": array over pairs}``.

    Parameters
    ----------
    items : list of dict
        Pairs from :func:`~mlmbook.joints.choose_pairs`.
    truths : list of arrays, optional
        The true joint of each pair over the same candidates (the toy language only).
    candidates : optional
        As for :func:`~mlmbook.joints.iter_pair_conditionals` (None: every word).
    """
    queries = queries_of(items)
    rows = [None] * len(queries)
    for k, pc in iter_pair_conditionals(lm, queries, candidates, progress=progress):
        ids, a, b = queries[k]
        rows[k] = evaluate_pair(pc, gold_index(pc, ids[a], ids[b]), None if truths is None else truths[k])
    return stack(rows)


def cell(iv, digits: int = 3) -> str:
    """``"10.9 [9.26, 13.2]"``: an interval in ``digits`` significant digits; ``"0.104
    [unbounded]"`` when the sample is too small to bound it."""
    if not (np.isfinite(iv.low) and np.isfinite(iv.high)):
        return f"{iv.estimate:.{digits}g} [unbounded]"
    return f"{iv.estimate:.{digits}g} [{iv.low:.{digits}g}, {iv.high:.{digits}g}]"


def _mean(per_pair, key, units, keep):
    return describe(per_pair[key][keep], units=units[keep])


def _ppl(per_pair, key, units, keep):
    return exp_interval(describe(-0.5 * per_pair[key][keep], units=units[keep]))


def methods_table(per_pair: dict, kinds: Sequence[str], sentence: Sequence) -> tuple[list, dict]:
    """The joints by the paper's yardsticks: P-PPL on adjacent and on random pairs, U-PPL and the KL
    to the MLM's conditionals on all pairs (95 % intervals over sentences).

    Returns
    -------
    rows : list
        Table rows (``[label, cell, ...]``) for :func:`mlmbook.tables.table`.
    intervals : dict
        ``{(row, col): Interval}``, columns ``p_ppl_adjacent``, ``p_ppl_random``, ``u_ppl``, ``kl``.
    """
    kinds, units = np.asarray(kinds), np.asarray(sentence)
    every = np.ones(len(kinds), bool)
    columns = {"p_ppl_adjacent": ("logp_pair", _ppl, kinds == "adjacent"),
               "p_ppl_random": ("logp_pair", _ppl, kinds == "random"),
               "u_ppl": ("logp_unary", _ppl, every), "kl": ("kl", _mean, every)}
    intervals = {}
    for row in list(METHODS) + ["mlm"]:
        for col, (field, how, keep) in columns.items():
            key = f"{row}.{field}"
            if key in per_pair and keep.any():
                intervals[row, col] = how(per_pair, key, units, keep)
    return _rows(intervals, list(METHODS) + ["mlm"], list(columns)), intervals


def truth_table(per_pair: dict, sentence: Sequence) -> tuple[list, dict]:
    """The joints against the truth on all pairs (95 % intervals over sentences): ``(rows,
    intervals)`` as :func:`methods_table`, columns ``kl_truth``, ``tv_truth``, ``cond_kl_truth``."""
    units = np.asarray(sentence)
    every = np.ones(len(units), bool)
    columns = ("kl_truth", "tv_truth", "cond_kl_truth")
    intervals = {(row, col): _mean(per_pair, f"{row}.{col}", units, every)
                 for row in list(METHODS) + ["mlm"] for col in columns if f"{row}.{col}" in per_pair}
    return _rows(intervals, list(METHODS) + ["mlm"], list(columns)), intervals


def _rows(intervals: dict, rows: list, columns: list) -> list:
    return [[ROWS[r]] + [cell(intervals[r, c]) if (r, c) in intervals else None for c in columns]
            for r in rows if any((r, c) in intervals for c in columns)]
