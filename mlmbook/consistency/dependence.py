r"""What an MLM's inconsistency follows: the language's dependence of a pair, compared within
sentences.

The truth's conditional mutual information of a pair, :math:`I(x_i; x_j \mid x_{\setminus\{i,j\}})`
(:func:`mlmbook.dependencies.truth_cmi`), is 0 for a pair independent given the rest. Two kinds of
pairs are compared **within each sentence** (the unit): :math:`d_s = \overline{y}_{s,\,A} -
\overline{y}_{s,\,B}`, the mean of a per-pair quantity :math:`y` over the sentence's pairs of kind
:math:`A` minus that over its pairs of kind :math:`B` (:func:`within_sentence`).
"""
from __future__ import annotations

import numpy as np

__all__ = ["within_sentence", "CMI_ZERO"]

CMI_ZERO = 1e-9
"""Nats: a smaller CMI is an exact zero up to float rounding."""


def within_sentence(values, kind_a, kind_b, units) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per sentence, the mean of ``values`` over its rows of kind A minus that over those of kind B:
    ``(d, sentences, counts)``, one difference per sentence that has pairs of both kinds (in the
    order sentences first appear), those sentences' labels and their pairs of each kind (S, 2).

    Parameters
    ----------
    values : array_like (N,)
        A per-pair quantity.
    kind_a, kind_b : array_like of bool (N,)
        The two kinds of pairs (disjoint).
    units : array_like (N,)
        The sentence of each pair.
    """
    y = np.asarray(values, dtype=float)
    a, b = np.asarray(kind_a, bool), np.asarray(kind_b, bool)
    u = np.asarray(units)
    if not (len(y) == len(a) == len(b) == len(u)):
        raise ValueError("values, kinds and units must have one entry per pair")
    if np.any(a & b):
        raise ValueError("a pair cannot be of both kinds")
    _, first = np.unique(u, return_index=True)
    d, labels, counts = [], [], []
    for s in u[np.sort(first)]:
        here = u == s
        na, nb = int((here & a).sum()), int((here & b).sum())
        if na and nb:
            d.append(y[here & a].mean() - y[here & b].mean())
            labels.append(s)
            counts.append((na, nb))
    return np.array(d), np.array(labels), np.array(counts, dtype=int).reshape(-1, 2)
