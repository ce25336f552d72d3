r"""Chapter 3's noise knob: headroom that no training removes, and a language that is still a joint.

A model trained with ``TrainConfig(noise=η)`` learns the grammar knob ``toy[word_noise=η]``
(:mod:`mlmbook.toy.knobs`), whose exact conditionals :math:`p_\eta` the truth oracle computes. On
clean targets the **exact floor** of its headroom is

.. math:: \mathbb E\big[\log p(x_t \mid x_{\setminus t}) - \log p_\eta(x_t \mid x_{\setminus t})\big],

and since :math:`p_\eta` is a joint its ensemble gains exactly nothing.
"""
from __future__ import annotations

import numpy as np

from .. import queries

__all__ = ["conditionals", "exact_floor", "fit_kl"]


def conditionals(lm, rows, targets) -> list[np.ndarray]:
    r""":math:`q(x_t = \cdot \mid x_{\setminus t})` at each target (rows: the sentences with the
    target masked), indexed by token id; for the noisy language's exact oracle, :math:`p_\eta`."""
    return [np.exp(x[0]) for x in queries.log_probs(lm, rows, [[t] for t in targets])]


def exact_floor(truth_p, noisy_p, gold) -> np.ndarray:
    """Per target, :math:`\\log p(g) - \\log p_\\eta(g)` of the observed word :math:`g`."""
    return np.array([np.log(p[g] / pe[g]) for p, pe, g in zip(truth_p, noisy_p, gold)])


def fit_kl(lm, rows, targets, p_list) -> float:
    """Mean :math:`\\mathrm{KL}(p \\,\\|\\, q)` of the model's conditionals at the targets."""
    lq = queries.log_probs(lm, rows, [[t] for t in targets])
    out = []
    for p, x in zip(p_list, lq):
        ok = p > 0
        out.append(float(np.sum(p[ok] * (np.log(p[ok]) - x[0][ok]))))
    return float(np.mean(out))
