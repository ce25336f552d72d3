r"""Chapter 3's regime map: inconsistency and the Ensemble of Conditionals across a model ladder.

For one model (a rung of :mod:`mlmbook.models.ladder`) :func:`rung_measures` runs the
rectangle test and the order inconsistency on a set of pairs, and the Ensemble of
Conditionals (EoC) on a set of targets, and keeps the per-pair and per-target values; the
exact conditionals of the language give each target its **Bayes value** (the truth's log-loss
and accuracy over the same candidates). :func:`summarise` turns them into the map's points
with 95 % bootstrap intervals over pairs or targets:

* ``delta`` — median :math:`|\Delta|` of the top-2 rectangles;
* ``order`` — mean relative order inconsistency;
* ``loss_frac`` — the EoC's gain in log-loss as a fraction of the headroom,

  .. math:: f = \frac{\sum_n \big(\ell^{\text{single}}_n - \ell^{\text{EoC}}_n\big)}
                     {\sum_n \big(\ell^{\text{single}}_n - \ell^{\text{Bayes}}_n\big)} ,

  1 when the ensemble reaches the Bayes value, 0 when it changes nothing, negative when it
  widens the gap (the same with accuracy for ``acc_frac``, whose headroom can be zero: see
  ``acc_headroom``);
* ``alone_frac`` — the same fraction for the auxiliary versions on their own (the material
  the ensemble averages in).

:func:`tracking` asks whether the ensemble's gain follows the inconsistency across rungs
(Spearman correlation, resampling pairs and targets within each rung).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np
from scipy.stats import rankdata

from . import consistency as C
from . import stats

if TYPE_CHECKING:
    from .models.base import MaskedLM

__all__ = ["rung_measures", "summarise", "verdict", "tracking", "QUANTITIES"]

QUANTITIES = ("delta", "order", "loss_frac", "acc_frac", "alone_frac")
"""The map's quantities per rung, each recorded as ``(estimate, low, high)``."""


def rung_measures(lm: MaskedLM, ids: Sequence, pairs: np.ndarray, eoc_ids: Sequence, targets: Sequence[int],
                  aux: Sequence[Sequence[int]], truth_p: Sequence[np.ndarray], candidates: int = 20,
                  probes: C.PairProbes | None = None, versions: Sequence[C.Versions] | None = None) -> dict:
    """Per-pair and per-target measurements of one model.

    Parameters
    ----------
    lm : MaskedLM
    ids, pairs : sentences (token ids) and ``(sentence, i, j)`` rows for the two probes
    eoc_ids, targets, aux : the EoC's sentences, target positions and auxiliary positions
    truth_p : one array per target, the exact conditional ``p(x_t = v | x_{-t})`` indexed by token id
    candidates : size of each version's support
    probes, versions : optional, this model's :func:`~mlmbook.consistency.probe_pairs` of ``pairs`` and
        :func:`~mlmbook.consistency.ensemble_versions_many` of the targets, when the caller has them
        already (e.g. the chapter's own model): then they are used, not computed again

    Returns
    -------
    dict of 1-d arrays: ``abs_delta``, ``order`` (per pair); ``single``, ``ens``, ``alone``, ``bayes``
    (log-loss per target) and ``hit_single``, ``hit_ens``, ``hit_bayes`` (0/1 per target)
    """
    if probes is None:
        probes = C.probe_pairs(lm, ids, pairs)
    if versions is None:
        versions = C.ensemble_versions_many(lm, eoc_ids, targets, aux, candidates=candidates)
    gold = np.array([int(r[t]) for r, t in zip(eoc_ids, targets)])
    cur = C.ensemble_curve(versions, gold, "mean")
    out = {k: [] for k in ("alone", "bayes", "hit_bayes")}
    for v, g, p in zip(versions, gold, truth_p):
        hit = np.flatnonzero(v.candidates == g)[0]
        out["alone"].append(float(np.mean(-np.log(v.probs[1:, hit]))))
        q = p[v.candidates] / p[v.candidates].sum()          # the truth over the same candidates
        out["bayes"].append(float(-np.log(q[hit])))
        out["hit_bayes"].append(float(np.argmax(q) == hit))
    last = np.array([np.flatnonzero(np.isfinite(r))[-1] for r in cur.log_loss])   # all versions of each target
    rows = np.arange(len(last))
    return dict(abs_delta=np.abs(probes.rect.delta), order=probes.order.rel, single=cur.log_loss[:, 0],
                ens=cur.log_loss[rows, last], hit_single=cur.correct[:, 0], hit_ens=cur.correct[rows, last],
                **{k: np.array(v) for k, v in out.items()})


def summarise(m: dict, seed: int = 0) -> dict:
    """The map's points of one rung: ``(estimate, low, high)`` per quantity of :data:`QUANTITIES`,
    plus the headrooms ``loss_headroom`` and ``acc_headroom`` (Bayes minus single, same form)."""
    out = {
        "delta": stats.bootstrap(lambda x: np.median(x, -1), m["abs_delta"], seed=seed),
        "order": stats.bootstrap(lambda x: x.mean(-1), m["order"], seed=seed),
        "loss_headroom": stats.bootstrap(lambda s, b: (s - b).mean(-1), m["single"], m["bayes"], seed=seed),
        "acc_headroom": stats.bootstrap(lambda s, b: (b - s).mean(-1), m["hit_single"], m["hit_bayes"], seed=seed),
        "loss_frac": stats.ratio_bootstrap(m["single"], m["single"] - m["bayes"], minus=m["ens"], seed=seed),
        "alone_frac": stats.ratio_bootstrap(m["single"], m["single"] - m["bayes"], minus=m["alone"], seed=seed),
        "acc_frac": stats.ratio_bootstrap(m["hit_ens"], m["hit_bayes"] - m["hit_single"], minus=m["hit_single"],
                                          seed=seed),
    }
    return {k: [float(x) for x in v] for k, v in out.items()}


def verdict(interval: Sequence[float], up: str = "helps", down: str = "hurts") -> str:
    """``up`` when an ``(estimate, low, high)`` interval lies above zero, ``down`` below, else
    ``"indistinguishable"``."""
    _, lo, hi = interval
    return stats.side_of_zero(lo, hi, up, down)


def tracking(measures: Sequence[dict], x: str = "order", n_boot: int = 1000, seed: int = 0) -> tuple:
    """Spearman correlation across rungs between the mean of per-pair ``x`` and the EoC's
    log-loss fraction of the headroom, with a 95 % interval from resampling pairs and targets
    within every rung. Returns ``(rho, low, high)``."""
    rng = np.random.default_rng(seed)

    def point(m, ip=None, it=None):
        xs = m[x] if ip is None else m[x][ip]
        s, e, b = (m[k] if it is None else m[k][it] for k in ("single", "ens", "bayes"))
        return xs.mean(), (s - e).sum() / (s - b).sum()

    def rho(points):                    # Spearman = Pearson of the ranks, for (..., rungs, 2) points
        r = rankdata(np.asarray(points, dtype=float), axis=-2)
        r = r - r.mean(axis=-2, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (r[..., 0] * r[..., 1]).sum(-1) / np.sqrt((r ** 2).sum(-2).prod(-1))

    est = float(rho([point(m) for m in measures]))
    boots = rho([[point(m, rng.integers(0, len(m[x]), len(m[x])), rng.integers(0, len(m["single"]),
                                                                                  len(m["single"])))
                  for m in measures] for _ in range(n_boot)])
    lo, hi = np.nanquantile(boots, [0.025, 0.975])
    return est, float(lo), float(hi)
