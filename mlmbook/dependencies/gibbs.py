r"""Zhang & Hashimoto's Monte Carlo estimate of the conditional mutual information.

Zhang & Hashimoto's released code runs it with ``bert-base-cased`` on pairs at most 9 word pieces
apart, one chain of 2,000 Gibbs steps per pair of which the first 400 are burn-in; the defaults here
are several short chains, the CPU-friendly equivalent.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from .. import queries
from .pieces import WINDOW, encode_all, to_words

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["GibbsSettings", "cmi_gibbs"]

_CHAIN_SCORES = 4e6
"""Running-marginal entries (chains x V) of the pairs that advance together (not a query batch)."""


@dataclass(frozen=True)
class GibbsSettings:
    """The chains of :func:`cmi_gibbs`: chains per pair, steps per chain, steps discarded, seed."""

    chains: int = 4
    steps: int = 50
    burn_in: int = 10
    seed: int = 0


def cmi_gibbs(lm: "MaskedLM", sentences, keep=None, window: int | None = WINDOW,
              progress: bool = False, *, settings: GibbsSettings = GibbsSettings()) -> list:
    r"""Zhang & Hashimoto's Monte Carlo estimate of the conditional mutual information.

    For each pair of pieces :math:`(p, q)` (as in :func:`mlmbook.dependencies.cmi_grid`),
    ``chains`` two-site Gibbs chains start with both positions masked and repeat ``steps``
    times: draw :math:`a_t \sim q(x_p \mid x_q = b_{t-1}, r)` (at ``t = 0`` with ``q`` still
    masked), then :math:`b_t \sim q(x_q \mid x_p = a_t, r)`. After ``burn_in`` steps, with
    :math:`T` kept steps over all chains,

    .. math::
        \hat I_p = \frac1T \sum_t \Big[\log q(a_t \mid b_{t-1}, r) - \log \hat q(a_t)\Big],
        \qquad \hat q(a) = \frac1T \sum_{t'} q(a \mid b_{t'-1}, r),

    the second term being the Rao–Blackwellised marginal (an average of whole conditional
    distributions, not of indicator counts), and symmetrically :math:`\hat I_q`. Its limit is
    :func:`mlmbook.dependencies.gibbs_limit`; the matrices are laid out as :func:`cmi_grid`'s.

    Parameters
    ----------
    sentences, keep, window
        As for :func:`mlmbook.dependencies.cmi_grid`.
    """
    chains, steps, burn_in = settings.chains, settings.steps, settings.burn_in
    if not 0 <= burn_in < steps:
        raise ValueError(f"need 0 <= burn_in < steps, got burn_in={burn_in}, steps={steps}")
    enc = encode_all(lm, sentences, keep)
    jobs = [(s, p, q) for s, e in enumerate(enc) for p, q in e.piece_pairs(window)]
    gen = torch.Generator().manual_seed(settings.seed)
    per_group = max(chains, int(_CHAIN_SCORES // lm.V)) // chains  # pairs whose chains run together
    by_length: dict = {}
    for job in jobs:
        by_length.setdefault(len(enc[job[0]].ids), []).append(job)
    groups = [g[k:k + per_group] for g in by_length.values() for k in range(0, len(g), per_group)]
    score = {}
    for batch in queries.progress_bar(groups, len(groups), "CMI Gibbs", progress):
        ids = torch.tensor([enc[s].ids for s, _, _ in batch])
        P, Q = torch.tensor([p for _, p, _ in batch]), torch.tensor([q for _, _, q in batch])
        I_p, I_q = _gibbs_chains(lm, ids, P, Q, chains, steps, burn_in, gen)
        score.update(zip(batch, zip(I_p, I_q)))
    return to_words(enc, jobs, score)


def _gibbs_chains(lm, ids, P, Q, chains, steps, burn_in, gen):
    """Run the chains of a batch of pairs; returns the two directional estimates per pair."""
    n_pairs = len(ids)
    x = ids.repeat_interleave(chains, 0)
    sites = (P.repeat_interleave(chains), Q.repeat_interleave(chains))
    rows = torch.arange(len(x))
    x[rows, sites[0]] = x[rows, sites[1]] = lm.mask_id
    kept = steps - burn_in
    marg = [torch.zeros(len(x), lm.V, dtype=torch.float64) for _ in range(2)]
    draws = [torch.zeros(len(x), kept, dtype=torch.long) for _ in range(2)]
    logq = [torch.zeros(len(x), kept, dtype=torch.float64) for _ in range(2)]
    for t in range(steps):
        for k, site in enumerate(sites):
            x[rows, site] = lm.mask_id
            lp = torch.from_numpy(np.stack(queries.log_probs(lm, x.tolist(), site[:, None].tolist()))[:, 0])
            probs = lp.exp()
            draw = torch.multinomial(probs, 1, generator=gen)[:, 0]
            x[rows, site] = draw
            if t >= burn_in:
                draws[k][:, t - burn_in] = draw
                logq[k][:, t - burn_in] = lp[rows, draw]
                marg[k] += probs
    estimates = []
    for k in range(2):
        pooled = marg[k].view(n_pairs, chains, -1).sum(1) / (chains * kept)       # (pairs, V)
        log_m = torch.log(pooled).repeat_interleave(chains, 0).gather(1, draws[k])  # (rows, kept)
        est = (logq[k] - log_m).view(n_pairs, chains * kept).mean(1)
        estimates.append(est.numpy())
    return estimates
