r"""Chapter 1's primary questions: the papers' claims, declared once, answered by the study layer.

Six questions, one Bonferroni family (:class:`mlmbook.stats.Study`), each a difference of corpus UUAS
between two parsers on the same sentences. The sentence is the unit: its contribution to the numerator is
the difference of the gold edges the two trees find, to the denominator its gold edges
(:func:`uuas_rows`), so the estimate is the corpus-UUAS difference and resampling keeps a sentence's edges
together. Every answer is conditional on the one trained model of each kind (the full profile trains one).

The effect of interest is :data:`EFFECT`, 5 UUAS points: the size of the papers' own gaps (Zhang &
Hashimoto's 58.74 % against 55.91 % for "a classic method"). The planning standard deviations
(:data:`PLANNING_SD`) are the per-sentence standard deviations :math:`\widehat{se}\sqrt n` of the same
differences in the last committed full reference before this design (commit 5d78747); the sample sizes
in chapter 1's ``SIZES`` come from them.
"""
from __future__ import annotations

import numpy as np

from ..stats import Interval, Question, Study, describe

__all__ = ["EFFECT", "BASIS", "PLANNING_SD", "QUESTIONS", "study", "uuas_rows", "descriptive_difference",
           "MAIN", "MODELS", "CPMI"]

EFFECT = 0.05
"""The effect of interest: a UUAS difference of five points."""

BASIS = "5 UUAS points, the papers' gaps (58.74 vs 55.91 %)"

PLANNING_SD = {
    "mlm_adjacent": 0.1455,    # mlm_vs_adjacent: se 0.0310 on 22 sentences
    "mlm_dmv": 0.1509,         # mlm_vs_dmv: se 0.0322 on 22
    "mlm_truth": 0.1085,       # mlm_vs_truth: se 0.0231 on 22
    "knob_mlm": 0.1427,        # no MLM dose-response was measured; the truth's (s = 0 vs 1): se 0.0252 on 32
    "control": 0.2064,         # control_vs_truth: se 0.0653 on 10
    "cpmi_adjacent": 0.2038,   # cpmi_vs_adjacent: se 0.0186 on 120
}
"""Per-sentence SD of each question's UUAS difference in the last reference (commit 5d78747), in UUAS."""

MAIN, MODELS, CPMI = ("mlm_adjacent", "mlm_dmv", "mlm_truth"), ("knob_mlm", "control"), ("cpmi_adjacent",)
"""Which sample each question is measured on (:class:`~mlmbook.dependencies.design.Sizes`: ``main``,
``models``, ``cpmi``)."""


def _q(key, claim, words):
    sample = "SIZES.main" if key in MAIN else "SIZES.models" if key in MODELS else "SIZES.corpus"
    return Question(key, claim, EFFECT, BASIS, unit="sentence", measure="UUAS", planning_sd=PLANNING_SD[key],
                    words=words, sample=sample)


QUESTIONS = (
    _q("mlm_adjacent", "MLM-CMI trees minus the adjacent chain",
       {"above": "MLM ahead", "below": "chain ahead", "equivalent": "equivalent"}),
    _q("mlm_dmv", "MLM-CMI trees minus the DMV (the classic parser)",
       {"above": "MLM ahead", "below": "DMV ahead", "equivalent": "equivalent"}),
    _q("mlm_truth", "MLM-CMI trees minus the truth's CMI trees",
       {"above": "MLM ahead", "below": "truth ahead", "equivalent": "equivalent"}),
    _q("knob_mlm", "the MLM's dose–response: its trees at selection s = 1 minus s = 0",
       {"above": "selection helps", "below": "selection hurts", "equivalent": "no dose–response"}),
    _q("control", "positive control: the control MLM's trees minus the truth's (the gold tree)",
       {"above": "MLM ahead", "below": "MLM behind", "equivalent": "recovers the tree"}),
    _q("cpmi_adjacent", "CPMI trees minus the adjacent chain (Hoover et al.)",
       {"above": "CPMI ahead", "below": "chain ahead", "equivalent": "comparable"}),
)
"""The six questions, in the order of the page's tables."""


def study() -> Study:
    """A fresh :class:`~mlmbook.stats.Study` of :data:`QUESTIONS` (family ``"chapter 1"``)."""
    return Study("chapter 1", list(QUESTIONS))


def uuas_rows(first: tuple, second: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Per sentence, the values and weights of a corpus-UUAS difference ``first - second``.

    Parameters
    ----------
    first, second : tuple of arrays
        ``(correct, gold)`` per sentence of two parsers on the same sentences (``second`` may cover more
        sentences; the first ``len(first[0])`` are used).

    Returns
    -------
    values, weights : ndarray
        Gold edges found by ``first`` minus by ``second``, and gold edges.
    """
    c1, g1 = (np.asarray(x, dtype=float) for x in first)
    n = len(c1)
    c2, g2 = (np.asarray(x, dtype=float)[:n] for x in second)
    if len(c2) < n or not np.array_equal(g1, g2):
        raise ValueError("the two parsers were not scored on the same sentences and gold trees")
    return c1 - c2, g1


def descriptive_difference(first: tuple, second: tuple, seed: int = 0) -> Interval:
    """A descriptive corpus-UUAS difference ``first - second`` on the same sentences, 95 %
    (:func:`mlmbook.stats.describe` of :func:`uuas_rows`): for what is not a primary question."""
    return describe(*uuas_rows(first, second), seed=seed)
