r"""Judging dependency scores: trees and UUAS counts, the MLM's CMI against the truth's, verdicts.

Chapter 1 asks the same three questions of every model it reads (the default MLM, each rung of
the ladder, each knob setting, the positive control):

1. **How good are its trees?** :func:`model_scores` computes its CMI (the exact grid) and CPMI
   matrices, :func:`trees` reads a maximum spanning tree off each, and :func:`counts` counts the
   gold edges each tree finds, per sentence — the unit every interval resamples.
2. **Has it learned the statistics?** :func:`cmi_error` sets the model's CMI matrix beside the
   truth's, pair by pair: the correlation and the mean absolute error over the scored pairs.
   That is Zhang & Hashimoto's premise, measured directly, and it need not go with UUAS (an MLM
   can err *towards* syntax).
3. **Which of two parsers is ahead?** :func:`compare` turns two parsers' counts on the same
   sentences into a paired difference of UUAS with :func:`mlmbook.stats.ratio` — hierarchical
   over training seeds when the rows come from several seeds' models — and reads it with
   :func:`mlmbook.stats.decide` under the chapter's verdict family.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from .. import stats
from .cmi import cmi_grid
from .cpmi import cpmi
from .trees import decode, symmetrize, uuas_counts

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["CMI", "CPMI", "KEYS", "VERSUS", "model_scores", "trees", "counts", "uuas", "CMIError", "cmi_error",
           "compare", "Report", "report", "say", "stack_seeds", "WORDS", "power_note"]

CMI, CPMI = "MLM-CMI (exact)", "CPMI"
"""Names of an MLM's two score matrices."""

WORDS = {"above": "above", "below": "below", "indistinguishable": "statistically indistinguishable from",
         "undefined": "not comparable with"}
"""How a verdict between two parsers reads in a sentence: "the MLM's trees are <phrase> the DMV's"."""

KEYS = {"truth-CMI": "truth", "MLM-CMI": "mlm", "MLM-CMI (Gibbs)": "gibbs", "CPMI": "cpmi", "DMV": "dmv",
        "adjacent": "adjacent", "random": "random"}
"""The record-key stem of each parser of chapter 1: ``uuas_<key>``, ``<key>_vs_<key>``."""

VERSUS = (("MLM-CMI", "adjacent"), ("MLM-CMI", "DMV"), ("MLM-CMI", "CPMI"), ("MLM-CMI", "truth-CMI"),
          ("CPMI", "adjacent"), ("truth-CMI", "adjacent"), ("truth-CMI", "DMV"))
"""The pairs of parsers chapter 1 compares on its main sample (first minus second)."""


def model_scores(lm: "MaskedLM", words, keep, window: int | None, with_cpmi: bool = True,
                 progress: bool = False) -> dict:
    """``{CMI: [matrix per sentence], CPMI: [...]}`` of ``lm`` on the sentences (CPMI optional)."""
    out = {CMI: list(cmi_grid(lm, words, keep, window=window, progress=progress))}
    if with_cpmi:
        out[CPMI] = cpmi(lm, words, keep, progress=progress)
    return out


def trees(mats, projective: bool = False) -> list[set]:
    """The tree of each score matrix: symmetrised by the larger direction, ties toward neighbours."""
    return [decode(M, "max", projective=projective) for M in mats]


def counts(mats, gold_edges) -> tuple[np.ndarray, np.ndarray]:
    """Per sentence, gold edges found by the spanning tree of each matrix, and gold edges."""
    return uuas_counts(trees(mats), gold_edges[: len(mats)])


def uuas(c: tuple, level: float = stats.LEVEL, seed: int = 0, groups=None) -> stats.Interval:
    """UUAS with its interval from per-sentence ``(correct, gold)`` counts (bootstrap over sentences)."""
    return stats.ratio(c[0], c[1], level=level, seed=seed, groups=groups)


@dataclass(frozen=True)
class CMIError:
    """How far a model's CMI is from the truth's over the scored pairs of some sentences.

    Attributes
    ----------
    corr : Interval      Pearson correlation over pairs (bootstrap over sentences)
    mae : Interval       mean absolute difference over pairs, nats (bootstrap over sentences)
    n_pairs : int        pairs compared
    """

    corr: stats.Interval
    mae: stats.Interval
    n_pairs: int


def _pairs(M, T) -> tuple[np.ndarray, np.ndarray]:
    """Upper-triangle values of the symmetrised (max) model and truth matrices."""
    iu = np.triu_indices(len(M), 1)
    return symmetrize(M, "max")[iu], symmetrize(T, "max")[iu]


def cmi_error(model_mats, truth_mats, level: float = stats.LEVEL, seed: int = 0) -> CMIError:
    r"""The model's CMI against the truth's, pair by pair (both symmetrised by the larger direction).

    With :math:`m_k, t_k` the two values of pair :math:`k` (every pair of scored words of every
    sentence), the correlation :math:`\operatorname{corr}(m, t)` and the mean absolute error
    :math:`\frac1K\sum_k |m_k - t_k|`; intervals resample sentences (a sentence's pairs together).
    Pairs the truth leaves at zero by the window count as zero for both.
    """
    per = [_pairs(M, T) for M, T in zip(model_mats, truth_mats)]
    m = [p[0] for p in per]
    t = [p[1] for p in per]
    n = np.array([len(x) for x in m], dtype=float)
    # per-sentence sufficient statistics, so a bootstrap over sentences is a sum over rows
    S = np.array([[len(a), a.sum(), b.sum(), (a * a).sum(), (b * b).sum(), (a * b).sum(), np.abs(a - b).sum()]
                  for a, b in zip(m, t)])

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
    return CMIError(c, e, int(n.sum()))


def stack_seeds(per_seed: Sequence[tuple]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts of several seeds' models on the same sentences, stacked as rows: ``(correct, gold, seed)``
    with the seed's index as the group of each row (for a hierarchical interval)."""
    c = np.concatenate([np.asarray(x[0]) for x in per_seed])
    g = np.concatenate([np.asarray(x[1]) for x in per_seed])
    s = np.concatenate([np.full(len(x[0]), k) for k, x in enumerate(per_seed)])
    return c, g, s


def compare(a: Sequence[tuple], b: Sequence[tuple], family: stats.Family, seed: int = 0,
            words: dict | None = None) -> stats.Verdict:
    r"""Is parser ``a``'s UUAS above or below parser ``b``'s on the same sentences?

    ``a`` and ``b`` are lists with one ``(correct, gold)`` per training seed (a parser that does not
    depend on the model, such as the DMV, repeats its counts). The paired difference

    .. math:: \Delta = \frac{\sum_k (c^a_k - c^b_k)}{\sum_k g_k}

    over rows ``k`` = (seed, sentence) gets a bootstrap interval at the family's level — over
    sentences, and over seeds first when there are several (hierarchical) — and
    :func:`mlmbook.stats.decide` reads it. ``b`` may cover more sentences than ``a``; the first
    ``len(a)`` are used.
    """
    if len(a) != len(b):
        raise ValueError("give both parsers' counts for the same training seeds")
    b = [(np.asarray(cb)[: len(ca)], np.asarray(gb)[: len(ca)]) for (ca, _), (cb, gb) in zip(a, b)]
    ca, g, grp = stack_seeds(a)
    cb, gb, _ = stack_seeds(b)
    if not np.array_equal(g, gb):
        raise ValueError("the two parsers were scored on different gold trees")
    iv = stats.ratio(ca, g, minus=cb, level=family.level, seed=seed, groups=grp if len(a) > 1 else None)
    return stats.decide(iv, family=family, words=words or WORDS)


@dataclass
class Report:
    """What the chapter asks of one model on some sentences (see :func:`report`).

    Attributes
    ----------
    mats : dict          ``{CMI: [...], CPMI: [...]}`` score matrices
    counts : dict        ``{method: (correct, gold)}`` per sentence
    uuas : dict          ``{method: Interval}`` (95 %)
    error : CMIError or None   the CMI against the truth's (None without truth matrices)
    """

    mats: dict
    counts: dict
    uuas: dict
    error: CMIError | None


def report(lm: "MaskedLM", scored, window: int | None, truth_mats=None, with_cpmi: bool = True) -> Report:
    """Score ``lm`` on the sentences of ``scored`` (a :class:`~mlmbook.dependencies.sample.Scored`,
    :func:`model_scores`), count each tree's gold edges, and set its CMI beside the truth's when
    ``truth_mats`` (one per sentence, at least as many) are given."""
    mats = model_scores(lm, scored.words, scored.keep, window, with_cpmi=with_cpmi)
    c = {m: counts(M, scored.edges) for m, M in mats.items()}
    err = cmi_error(mats[CMI], truth_mats[: len(scored)]) if truth_mats is not None else None
    return Report(mats, c, {m: uuas(x) for m, x in c.items()}, err)


def say(verdict, other: str, digits: int = 2) -> str:
    """A verdict as a phrase about ``other``: ``"above the DMV's"``, or for an indistinguishable one
    ``"statistically indistinguishable from the DMV's (a difference of 0.12 or more would have been
    detected ...)"``. Takes a :class:`~mlmbook.stats.Verdict` or its record."""
    rec = verdict.to_record() if hasattr(verdict, "to_record") else verdict
    text = f"{WORDS.get(rec['side'], rec['side'])} {other}"
    if rec["side"] == "indistinguishable":
        d = float(rec["detectable"])
        text += (f" (a difference of {d:.{digits}f} or more would have been detected, {100 * stats.POWER:.0f} % power)"
                 if np.isfinite(d) else " (the sample bounds no difference)")
    return text


def power_note(verdicts: dict, effect: float) -> str:
    """One sentence on the comparisons that could not detect ``effect``: for each verdict (a
    :class:`~mlmbook.stats.Verdict` or its record, keyed by how the sentence names it) whose
    detectable effect exceeds ``effect``, that effect and how many times ``effect`` it is;
    ``""`` when every comparison could detect it."""
    weak = []
    for name, v in verdicts.items():
        rec = v.to_record() if hasattr(v, "to_record") else v
        d = float(rec["detectable"])
        if not d <= effect:
            weak.append(f"{name} ({d:.2f}, {d / effect:.1f} times)" if np.isfinite(d) else f"{name} (no bound)")
    if not weak:
        return ""
    listed = weak[0] if len(weak) == 1 else ", ".join(weak[:-1]) + " and " + weak[-1]
    one = len(weak) == 1
    return (f"The sample is smaller than the question for {'one comparison' if one else f'{len(weak)} comparisons'}: "
            f"the smallest difference of UUAS {'it' if one else 'each'} could detect exceeds the {effect:.2f} the "
            f"chapter looks for — {listed}; a smaller difference there would go unseen.")
