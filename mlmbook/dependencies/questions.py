r"""The rows of chapter 1's primary questions: a corpus-UUAS difference between two parsers, with
the sentence as the unit (resampling keeps its edges together). Zhang & Hashimoto's 58.74 % against
55.91 % is a gap of 2.83 points."""
from __future__ import annotations

import numpy as np

from ..stats import Interval, describe

__all__ = ["uuas_rows", "descriptive_difference"]


def uuas_rows(first: tuple, second: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Per sentence, the values (gold edges found by ``first`` minus by ``second``) and weights
    (gold edges) of a corpus-UUAS difference.

    Parameters
    ----------
    first, second : tuple of arrays
        ``(correct, gold)`` per sentence of two parsers on the same sentences (``second`` may cover
        more sentences; the first ``len(first[0])`` are used).
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
