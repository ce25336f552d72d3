r"""Chapter 1's primary questions: the papers' claims, declared once, answered by the study layer.

Six questions, one Bonferroni family (:class:`mlmbook.stats.Study`), each a difference of corpus UUAS
between two parsers on the same sentences. The sentence is the unit: its contribution to the numerator is
the difference of the gold edges the two trees find, to the denominator its gold edges
(:func:`uuas_rows`), so the estimate is the corpus-UUAS difference and resampling keeps a sentence's edges
together. Every answer is conditional on the one trained model of each kind (the full profile trains one).

The effect of interest is :data:`EFFECT`, 5 UUAS points, a twentieth of the UUAS scale. It is not the
papers' own gap: Zhang & Hashimoto's 58.74 % against 55.91 % for "a classic method" is 2.83 points, so a
true gap of the papers' size may pass undetected (the basis says so; an earlier basis called 5 points
"the papers' gaps", which they are not). The planning standard deviations (:data:`PLANNING_SD`) are the
committed plan's (:mod:`mlmbook.plans`, ``results/plans/01_dependencies.json``): the per-sentence standard
deviations of the same differences in the ``pilot`` profile, on sentences and models of its own; the
sample sizes in chapter 1's ``SIZES`` come from them.
"""
from __future__ import annotations

import numpy as np

from ..plans import fill, planning_sds
from ..stats import Interval, Question, Study, describe

__all__ = ["EFFECT", "BASIS", "CHAPTER", "PLANNING_SD", "QUESTIONS", "study", "uuas_rows", "descriptive_difference",
           "MAIN", "MODELS", "CPMI"]

EFFECT = 0.05
"""The effect of interest: a UUAS difference of five points."""

BASIS = "a twentieth of UUAS; papers' gap 2.83 pts (58.74 vs 55.91 %)"

CHAPTER = "01_dependencies"
PLANNING_SD = planning_sds(CHAPTER)
"""Per-sentence SD of each question's UUAS difference in the pilot, in UUAS: the committed plan's
(:func:`mlmbook.plans.planning_sds`; empty without a plan)."""

MAIN, MODELS, CPMI = ("mlm_adjacent", "mlm_dmv", "mlm_truth"), ("knob_mlm", "control"), ("cpmi_adjacent",)
"""Which sample each question is measured on (:class:`~mlmbook.dependencies.design.Sizes`: ``main``,
``models``, ``cpmi``)."""


def _q(key, claim, words):
    sample = "SIZES.main" if key in MAIN else "SIZES.models" if key in MODELS else "SIZES.corpus"
    return Question(key, claim, EFFECT, BASIS, unit="sentence", measure="UUAS", words=words, sample=sample)


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
    """A fresh :class:`~mlmbook.stats.Study` of :data:`QUESTIONS` (family ``"chapter 1"``), their planning
    SDs from the committed plan (:func:`mlmbook.plans.fill`)."""
    return Study("chapter 1", fill(CHAPTER, QUESTIONS))


def uuas_rows(first: tuple, second: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Per sentence, the values and weights of a corpus-UUAS difference ``first - second``.

    Parameters
    ----------
    first, second : tuple of arrays
        ``(correct, gold)`` per sentence of two parsers on the same sentences (``second`` may cover
        more sentences; the first ``len(first[0])`` are used).

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
