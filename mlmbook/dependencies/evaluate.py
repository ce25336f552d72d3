r"""Judging dependency scores: trees and UUAS counts per sentence (the unit every interval
resamples), and the model's CMI against the truth's, pair by pair (Zhang & Hashimoto's premise,
measured directly)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import stats
from ..compare import kl_to_truth
from .cpmi import cpmi
from .policy import BUDGET_ROWS, CMIScores, cmi_scores
from .trees import decode, symmetrize, uuas_counts

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["CMI", "CPMI", "KEYS", "trees", "counts", "uuas", "CMIError",
           "cmi_error", "Report", "report", "report_of", "kl_to_world"]

CMI, CPMI = "MLM-CMI", "CPMI"
"""Names of an MLM's two score matrices."""

KEYS = {"truth-CMI": "truth", "MLM-CMI": "mlm", "MLM-CMI (Gibbs)": "gibbs", "CPMI": "cpmi",
        "DMV": "dmv", "adjacent": "adjacent", "random": "random"}
"""The record-key stem of each parser of chapter 1: ``uuas_<key>``."""

_MEMO: dict = {}


def trees(mats) -> list[set]:
    """The tree of each matrix: symmetrised by the larger direction, ties toward neighbours."""
    return [decode(M) for M in mats]


def counts(mats, gold_edges) -> tuple[np.ndarray, np.ndarray]:
    """Per sentence, gold edges found by the spanning tree of each matrix, and gold edges."""
    return uuas_counts(trees(mats), gold_edges[: len(mats)])


def uuas(c: tuple, level: float = stats.LEVEL, seed: int = 0) -> stats.Interval:
    """UUAS with its (descriptive) interval from per-sentence ``(correct, gold)`` counts: a
    bootstrap over sentences (:func:`mlmbook.stats.ratio`)."""
    return stats.ratio(c[0], c[1], level=level, seed=seed)


@dataclass(frozen=True)
class CMIError:
    """How far a model's CMI is from the truth's over ``n_pairs`` scored pairs: their Pearson
    ``corr`` and mean absolute difference ``mae`` (nats), each bootstrapped over sentences."""

    corr: stats.Interval
    mae: stats.Interval
    n_pairs: int


def cmi_error(model_mats, truth_mats, level: float = stats.LEVEL, seed: int = 0) -> CMIError:
    r"""The model's CMI against the truth's, pair by pair (both symmetrised by the larger one).

    With :math:`m_k, t_k` the two values of pair :math:`k` (every pair of scored words of every
    sentence; zero for both beyond the window), the correlation :math:`\operatorname{corr}(m, t)`
    and the mean absolute error :math:`\frac1K\sum_k |m_k - t_k|`; intervals resample sentences.
    """
    per = []
    for M, T in zip(model_mats, truth_mats):
        iu = np.triu_indices(len(M), 1)
        per.append((symmetrize(M)[iu], symmetrize(T)[iu]))
    # per-sentence sufficient statistics, so a bootstrap over sentences is a sum over rows
    S = np.array([[len(a), a.sum(), b.sum(), (a * a).sum(), (b * b).sum(), (a * b).sum(), np.abs(a - b).sum()]
                  for a, b in per])

    def corr(rows):
        tot = rows.sum(-2)
        k, sa, sb, saa, sbb, sab = (tot[..., i] for i in range(6))
        cov = sab / k - sa * sb / k ** 2
        var = (saa / k - (sa / k) ** 2) * (sbb / k - (sb / k) ** 2)
        with np.errstate(invalid="ignore", divide="ignore"):
            return cov / np.sqrt(var)

    def mae(rows):
        tot = rows.sum(-2)
        return tot[..., 6] / tot[..., 0]

    idx = np.arange(len(S))
    c = stats.bootstrap(lambda i: corr(S[i.astype(int)]), idx, level=level, seed=seed, what="sentences")
    e = stats.bootstrap(lambda i: mae(S[i.astype(int)]), idx, level=level, seed=seed, what="sentences")
    return CMIError(c, e, sum(len(a) for a, _ in per))


@dataclass
class Report:
    """What the chapter asks of one model on some sentences (:func:`report`): per method (``CMI``,
    ``CPMI``) the score ``mats``, per-sentence ``(correct, gold)`` ``counts`` and ``uuas`` (95 %);
    the CMI's ``error`` against the truth's (None without truth matrices); the CMI estimator
    ``scores``."""

    mats: dict
    counts: dict
    uuas: dict
    error: CMIError | None
    scores: CMIScores

    def trees(self) -> list[set]:
        return trees(self.mats[CMI])


def report(lm: "MaskedLM", scored, window: int | None, budget_rows: int = BUDGET_ROWS,
           truth_mats=None, with_cpmi: bool = True) -> Report:
    """Score ``lm`` on the sentences of ``scored`` (a :class:`~mlmbook.dependencies.sample.Scored`):
    CMI by :func:`~mlmbook.dependencies.cmi_scores` within ``budget_rows`` forward passes, CPMI
    optional; count each tree's gold edges, and set its CMI beside the truth's (``truth_mats``, one
    per sentence). The same model on the same sentences and settings is scored once per process."""
    words, keep = scored.words, scored.keep
    where = getattr(getattr(lm, "model", None), "name_or_path", None)    # its weights' folder
    key = (("path", str(where)) if where else ("object", id(lm)), window, budget_rows, with_cpmi,
           tuple(tuple(map(str, w)) for w in words), tuple(tuple(k) for k in keep))
    if key not in _MEMO:
        scores = cmi_scores(lm, words, keep, budget_rows=budget_rows, window=window)
        mats = {CMI: list(scores.scores)}
        if with_cpmi:
            mats[CPMI] = cpmi(lm, words, keep)
        while len(_MEMO) >= 8:
            _MEMO.pop(next(iter(_MEMO)))
        _MEMO[key] = mats, scores
    return report_of(*_MEMO[key], scored, truth_mats)


def report_of(mats: dict, scores: CMIScores, scored, truth_mats=None) -> Report:
    """The :class:`Report` of score matrices measured already (``mats[method]``: one per sentence of
    ``scored``, or more: the first ``len(scored)`` are used)."""
    n = len(scored)
    mats = {m: list(x[:n]) for m, x in mats.items()}
    c = {m: counts(M, scored.edges) for m, M in mats.items()}
    err = cmi_error(mats[CMI], truth_mats[:n]) if truth_mats is not None else None
    return Report(mats, c, {m: uuas(x) for m, x in c.items()}, err, scores)


def kl_to_world(world, lm: "MaskedLM", n_sentences: int, seed: int = 0) -> float:
    """The model's fit to its world: mean single-site KL(truth || model) in nats over the positions
    of ``n_sentences`` held-out sentences of ``world`` (:func:`mlmbook.compare.kl_to_truth`)."""
    held = [x.words for x in world.sample(n_sentences, seed=seed)]
    return float(np.mean(np.concatenate(kl_to_truth(world, lm, held))))
