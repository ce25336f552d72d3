r"""Metropolis–Hastings-corrected Glauber dynamics on a :class:`~mlmbook.glauber.exact.Frame`.

:cite:t:`goyal2022exposing` read an MLM as an energy-based model and use its conditionals only as
*proposals*: pick a site :math:`i`, propose :math:`x'_i \sim q_{i,T}(\cdot \mid x_{\setminus i})`,
and accept with the Metropolis–Hastings probability for the target :math:`\pi \propto e^{-E/T}`,

.. math::
    A(x, x') = \min\Big(1,\; \frac{e^{-E(x')/T}\, q_{i,T}(x_i \mid x_{\setminus i})}
                                  {e^{-E(x)/T}\, q_{i,T}(x'_i \mid x_{\setminus i})}\Big),

hence a reversible chain with stationary law exactly :math:`e^{-E/T}/Z`, whatever the proposals.
Their energy is the negative pseudo-log-likelihood (:func:`pll_energy`); with the truth's
conditionals and :math:`E = -\log p`, the target is :math:`p^{1/T}` itself.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .exact import Frame, softmax_rows

__all__ = ["pll_energy", "mh_kernel"]


def pll_energy(frame: Frame, site_logits) -> np.ndarray:
    r"""Goyal et al.'s locally normalised energy on the frame, :math:`E(x) = -\sum_{i} \log q(x_i
    \mid x_{\setminus i})` over the free sites, from :meth:`Frame.conditional_logits` tables of
    log-probabilities (each conditional normalised over the whole vocabulary): (S,)."""
    energy = np.zeros(frame.size)
    for a, table in enumerate(site_logits):
        energy[frame.families(a).ravel()] -= np.asarray(table, dtype=np.float64).ravel()
    return energy


def mh_kernel(frame: Frame, site_logits, energy, T: float = 1.0) -> sp.csr_matrix:
    r"""Exact transition matrix of random-scan MH-corrected Glauber dynamics (see the module text):

    .. math::
        P(x, x') = \frac1L \sum_i [x'_{\setminus i} = x_{\setminus i}]\; q_{i,T}(x'_i \mid x_{\setminus i})\, A(x, x'),
        \quad x' \ne x, \qquad P(x, x) = 1 - \sum_{x' \ne x} P(x, x').

    ``energy`` is (S,) in frame order; states of infinite energy are never entered (a start there
    leaves at the first accepted move).
    """
    E = np.asarray(energy, dtype=np.float64)
    L, S = len(frame.sites), frame.size
    rows, cols, vals = [], [], []
    for a, table in enumerate(site_logits):
        q = softmax_rows(table, T)                                        # (F, m)
        fam = frame.families(a)
        m = fam.shape[1]
        x = np.repeat(fam, m, axis=1)                                   # from member u ...
        y = np.tile(fam, (1, m))                                        # ... to member v
        qx = np.repeat(q, m, axis=1)  # q(x_i | context) of the current word
        qy = np.tile(q, (1, m))  # q(x'_i | context) of the proposal
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            log_ratio = (E[x] - E[y]) / T + np.log(qx) - np.log(qy)
            acc = np.where(np.isfinite(E[y]), np.minimum(1.0, np.exp(np.minimum(log_ratio, 0.0))), 0.0)
        # leaving an impossible state
        acc = np.where(np.isnan(log_ratio) & np.isfinite(E[y]), 1.0, acc)
        move = (x != y) & (qy > 0)
        rows.append(x[move]), cols.append(y[move]), vals.append((qy * acc)[move] / L)
    r, c, v = (np.concatenate(z) for z in (rows, cols, vals))
    P = sp.coo_matrix((v, (r, c)), shape=(S, S)).tocsr()
    stay = 1.0 - np.asarray(P.sum(axis=1)).ravel()
    return (P + sp.diags(np.clip(stay, 0.0, 1.0))).tocsr()
