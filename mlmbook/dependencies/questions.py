r"""The rows of chapter 1's primary questions (the chapter declares the six): a corpus-UUAS
difference.

Each question is a difference of corpus UUAS between two parsers on the same sentences. The sentence
is the unit: its contribution to the numerator is the difference of the gold edges the two trees
find, to the denominator its gold edges (:func:`uuas_rows`), so the estimate is the corpus-UUAS
difference and resampling keeps a sentence's edges together. Every answer is conditional on the one
trained model of each kind. The effect of interest, its basis (Zhang & Hashimoto's 58.74 % against
55.91 % is a gap of 2.83 points) and the planning standard deviations (:mod:`mlmbook.plans`) are
the chapter's.
"""
from __future__ import annotations

import numpy as np

from ..stats import Interval, describe

__all__ = ["uuas_rows", "descriptive_difference"]


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
