r"""Why a model's trees can beat the truth's: its CMI may err *towards* the gold edges the truth's
CMI leaves at exactly 0 more than towards other such pairs. :func:`head_error` measures that:

.. math:: d_k = \overline{\mathrm{CMI}}_{\text{model}}\{\text{gold edges of } k \text{ with truth-CMI } 0\}
          - \overline{\mathrm{CMI}}_{\text{model}}\{\text{other pairs of } k \text{ with truth-CMI } 0\}

over the sentences that have pairs of both kinds.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from .trees import ZERO, symmetrize

__all__ = ["HeadError", "head_error", "truth_zeros"]


@dataclass(frozen=True)
class HeadError:
    """The model's CMI on the pairs the truth leaves at zero, gold edges against the others:
    ``differences`` ``d_k`` per sentence with both kinds, the ``*_mean`` over all such gold edges /
    other pairs (nats), their numbers ``n_*``, and how many of those gold edges each parser's trees
    hold (``found_by_*``)."""

    differences: np.ndarray
    gold_mean: float
    other_mean: float
    n_gold: int
    n_other: int
    found_by_model: int
    found_by_truth: int


def head_error(model_mats, truth_mats, gold_edges, model_trees, truth_trees) -> HeadError:
    """:class:`HeadError` of a model's CMI matrices against the truth's, on the same sentences.

    Parameters
    ----------
    model_mats, truth_mats : list of ndarray
        Word-level CMI per sentence (symmetrised here by the larger direction).
    gold_edges : list of set
        Gold edges ``(a, b)``, ``a < b``, per sentence.
    model_trees, truth_trees : list of set
        The trees read off each (for the counts of gold edges found).
    """
    diffs, gold_all, other_all, by_model, by_truth = [], [], [], 0, 0
    for M, T, gold, tm, tt in zip(model_mats, truth_mats, gold_edges, model_trees, truth_trees):
        M, T = symmetrize(M), symmetrize(T)
        gold_z, other_z = [], []
        for e in combinations(range(len(T)), 2):
            if T[e] < ZERO:
                (gold_z if e in gold else other_z).append(M[e])
                if e in gold:
                    by_model += e in tm
                    by_truth += e in tt
        gold_all += gold_z
        other_all += other_z
        if gold_z and other_z:
            diffs.append(np.mean(gold_z) - np.mean(other_z))
    mean = (lambda x: float(np.mean(x)) if x else float("nan"))
    return HeadError(np.asarray(diffs), mean(gold_all), mean(other_all), len(gold_all),
                     len(other_all), int(by_model), int(by_truth))


def truth_zeros(truth_mats, gold_edges, relations, truth_trees, min_edges: int = 5) -> dict:
    """Where the truth's CMI is exactly zero, and which relations its trees find: a dict of
    ``truth_zero_on_gold`` / ``truth_zero_off_gold``, the share of gold edges / other pairs whose
    truth-CMI is 0; ``truth_pp_zero``, the share among the ``obl`` and ``nmod`` attachments (absent
    without any); ``truth_best_rel`` / ``truth_worst_rel``, the relations (with at least
    ``min_edges`` gold edges, or all when none has) the truth's trees find most / least often, with
    their ``_recall``, ``_found`` and ``_edges``."""
    on, off, pp = [], [], []
    found, total = {}, {}
    for T, gold, rels, tree in zip(truth_mats, gold_edges, relations, truth_trees):
        T = symmetrize(T)
        for e in combinations(range(len(T)), 2):
            (on if e in gold else off).append(T[e] < ZERO)
        for e, r in rels.items():
            total[r] = total.get(r, 0) + 1
            found[r] = found.get(r, 0) + (e in tree)
            if r in ("obl", "nmod"):
                pp.append(T[e] < ZERO)
    recall = {r: found[r] / n for r, n in total.items() if n >= min_edges} or \
        {r: found[r] / n for r, n in total.items()}
    out = {"truth_zero_on_gold": float(np.mean(on)) if on else 0.0,
           "truth_zero_off_gold": float(np.mean(off)) if off else 0.0}
    if pp:
        out["truth_pp_zero"] = float(np.mean(pp))
    if recall:
        best, worst = max(recall, key=recall.get), min(recall, key=recall.get)
        out.update(truth_best_rel=best, truth_best_rel_recall=recall[best], truth_worst_rel=worst,
                   truth_worst_rel_recall=recall[worst], truth_best_rel_found=found[best],
                   truth_best_rel_edges=total[best], truth_worst_rel_found=found[worst],
                   truth_worst_rel_edges=total[worst])
    return out
