r"""Chapter 3's regime map: inconsistency and the Ensemble of Conditionals across models.

For one model (a rung of :mod:`mlmbook.models.ladder`, or a knob setting of the zoo)
:func:`rung_measures` keeps the probes' per-pair and the ensemble's per-target values (the
truth's conditional gives every target its **Bayes value**); :func:`rung_intervals` gives:

==================  ========================================================================
``delta``           median :math:`|\Delta|` of the top-2 rectangles
``order``           mean order inconsistency of the pairs (relative difference of the two orders)
``flips``           share of pairs whose two orders prefer different bigrams
``paper``           mean order inconsistency of one random pair per sentence (the paper's sample)
``loss_gain``       the ensemble's mean gain in log-loss, :math:`\ell^{\text{single}} - \ell^{\text{EoC}}`
``loss_headroom``   the single conditional's mean excess over the Bayes value
``loss_frac``       the gain as a fraction of the headroom (below), with Fieller's interval:
                    *undefined* when the headroom's interval contains 0 (:func:`headroom_fraction`)
``alone_frac``      the same fraction for the routes' versions on their own
``acc_frac``        the same fraction in accuracy
==================  ========================================================================

.. math:: f = \frac{\sum_n \big(\ell^{\text{single}}_n - \ell^{\text{EoC}}_n\big)}
                   {\sum_n \big(\ell^{\text{single}}_n - \ell^{\text{Bayes}}_n\big)}

is 1 when the ensemble reaches the Bayes value, 0 when it changes nothing. Pair quantities
resample sentences (``pair_units``); predictors are scored leak-free over the whole vocabulary.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Sequence

import numpy as np

from .. import stats
from .ensemble import Versions, ensemble_curve, ensemble_versions_many, harsh
from .order import PairProbes, order_inconsistency, probe_pairs

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["QUANTITIES", "RungMaterial", "rung_measures", "ensemble_scores", "rung_intervals",
           "headroom_fraction", "cluster_median", "rung_table"]

QUANTITIES = ("delta", "order", "flips", "paper", "loss_gain", "loss_headroom", "loss_frac",
              "alone_frac", "acc_frac")


def ensemble_scores(versions: Sequence[Versions], gold, truth_p: Sequence[np.ndarray]) -> dict:
    """Per-target log-losses and hits of the single conditional, the ensemble of all versions, the
    routes' versions on their own and the truth (Bayes, ``truth_p``: the truth's conditional per
    target, indexed by token id), leak-free over the whole vocabulary."""
    cur = ensemble_curve(versions, gold, vocabulary=True)
    last = np.array([np.flatnonzero(np.isfinite(r))[-1] for r in cur.log_loss])
    rows = np.arange(len(last))
    alone, bayes, hit_bayes = [], [], []
    for v, g, p in zip(versions, gold, truth_p):
        v = harsh(v)
        hit = np.flatnonzero(v.candidates == g)
        own = v.mass * v.probs[1:, hit[0]] if len(hit) else np.full(len(v.probs) - 1, v.outside)
        alone.append(float(np.mean(-np.log(own))))
        bayes.append(float(-np.log(p[g])))
        hit_bayes.append(float(np.argmax(p) == g))
    return dict(single=cur.log_loss[:, 0], ens=cur.log_loss[rows, last], hit_single=cur.correct[:, 0],
                hit_ens=cur.correct[rows, last], alone=np.array(alone), bayes=np.array(bayes),
                hit_bayes=np.array(hit_bayes))


@dataclass(frozen=True)
class RungMaterial:
    r"""The pairs and targets every rung is measured on.

    ``ids``, ``pairs``: sentences (token ids) and ``(sentence, i, j)`` rows for the probes;
    ``eoc_ids``, ``targets``, ``aux``: the ensemble's sentences, target positions and auxiliary
    positions; ``truth_p``: one array per target, the exact conditional
    :math:`p(x_t = v \mid x_{\setminus t})` indexed by token id; ``candidates``: size of each
    version's candidate set (the direct conditional's top K); ``index``: the pairs' rows in the list
    they were drawn from (the flips alter the same sides); ``paper_ids``, ``paper_pairs``: sentences
    and one ``(sentence, i, j)`` pair each (the paper's sample).
    """

    ids: Sequence
    pairs: np.ndarray
    eoc_ids: Sequence
    targets: Sequence[int]
    aux: Sequence[Sequence[int]]
    truth_p: Sequence[np.ndarray]
    candidates: int = 20
    index: np.ndarray | None = None
    paper_ids: Sequence | None = None
    paper_pairs: np.ndarray | None = None


def rung_measures(lm: MaskedLM, material: RungMaterial, probes: PairProbes | None = None,
                  versions: Sequence[Versions] | None = None, paper=None) -> dict:
    """Per-pair and per-target measurements of one model, a dict of 1-d arrays: ``abs_delta``,
    ``order``, ``flip`` (per pair); ``paper`` (per paper pair, if given); ``single``, ``ens``,
    ``alone``, ``bayes`` (log-loss per target) and ``hit_single``, ``hit_ens``, ``hit_bayes`` (0/1).

    Parameters
    ----------
    probes, versions, paper : optional, this model's :func:`~.order.probe_pairs` of the pairs,
        :func:`~.ensemble.ensemble_versions_many` of the targets and order inconsistency
        (``.rel``) of the paper's pairs when the caller has them already
    """
    m = material
    if probes is None:
        probes = probe_pairs(lm, m.ids, m.pairs, index=m.index)
    if versions is None:
        versions = ensemble_versions_many(lm, m.eoc_ids, m.targets, m.aux, candidates=m.candidates)
    gold = np.array([int(r[t]) for r, t in zip(m.eoc_ids, m.targets)])
    out = dict(abs_delta=np.abs(probes.rect.delta), order=probes.order.rel,
               flip=probes.flips.flip.astype(float) if probes.flips is not None else np.zeros(0))
    if paper is not None:
        out["paper"] = paper
    elif m.paper_pairs is not None and len(m.paper_pairs):
        s, i, j = np.asarray(m.paper_pairs).T
        out["paper"] = order_inconsistency(lm, [m.paper_ids[k] for k in s], i, j).rel
    out.update(ensemble_scores(versions, gold, m.truth_p))
    return out


def headroom_fraction(single, other, bayes, level: float = stats.LEVEL) -> stats.Interval:
    r"""The share of the headroom ``other`` closes, :math:`\sum (s - o) / \sum (s - b)` (Fieller).

    ``single``, ``other`` and ``bayes`` are per-target scores (log-losses; for accuracy the hits
    with their signs flipped). The fraction is **undefined** when the headroom's own interval
    contains 0 (:func:`mlmbook.stats.fieller`).
    """
    s, o, b = (np.asarray(x, dtype=float).ravel() for x in (single, other, bayes))
    a, h = s - o, s - b
    n = len(a)
    if n < 2 or not np.any(h != 0):
        return stats.undefined("no headroom: the single conditional is the truth's on every target",
                               n=n, level=level)
    cov = np.cov(a, h, ddof=1)
    iv = stats.fieller((a.mean(), math.sqrt(cov[0, 0] / n)), (h.mean(), math.sqrt(cov[1, 1] / n)),
                       cov[0, 1] / n, level=level, df=n - 1)
    return replace(iv, n=n, method=f"{iv.method} over {n} targets") if iv.defined else replace(iv, n=n)


def cluster_median(values, units, level: float = stats.LEVEL, seed: int = 0) -> stats.Interval:
    """The median of ``values``, its percentile interval resampling whole units (sentences)."""
    x = np.asarray(values, dtype=float)
    _, inverse = np.unique(np.asarray(units), return_inverse=True)
    groups = [x[inverse == k] for k in range(inverse.max() + 1)]
    rng = np.random.default_rng(seed)
    reps = np.array([np.median(np.concatenate([groups[k] for k in rng.integers(0, len(groups), len(groups))]))
                     for _ in range(stats.replicates_for(level))])
    lo, hi = np.quantile(reps, [(1 - level) / 2, (1 + level) / 2])
    est = float(np.median(x))
    return stats.Interval(est, float(min(lo, est)), float(max(hi, est)), level,
                          f"percentile bootstrap over {len(groups)} sentences", len(groups), float(np.std(reps)))


def rung_intervals(m: dict, level: float = stats.LEVEL, seed: int = 0, pair_units=None) -> dict:
    """The map's points of one rung: a :class:`~mlmbook.stats.Interval` per quantity of
    :data:`QUANTITIES` (see the module). ``pair_units``: the sentence of each pair."""
    pg = pair_units
    out = {}
    for q in QUANTITIES:
        if q == "delta":
            out[q] = (stats.bootstrap(lambda x: np.median(x, -1), m["abs_delta"], level=level, seed=seed, what="pairs")
                      if pg is None else cluster_median(m["abs_delta"], pg, level=level, seed=seed))
        elif q in ("order", "flips"):
            out[q] = stats.describe(m["flip" if q == "flips" else "order"], units=pg, level=level,
                                    seed=seed, what="sentences")
        elif q == "paper":
            if "paper" in m:
                out[q] = stats.describe(m["paper"], level=level, seed=seed, what="sentences")
        elif q in ("loss_gain", "loss_headroom"):
            other = m["ens" if q == "loss_gain" else "bayes"]
            out[q] = stats.describe(m["single"] - other, level=level, seed=seed, what="targets")
        elif q in ("loss_frac", "alone_frac"):
            other = m["ens" if q == "loss_frac" else "alone"]
            out[q] = headroom_fraction(m["single"], other, m["bayes"], level=level)
        else:                                                   # "acc_frac"
            out[q] = headroom_fraction(-m["hit_single"], -m["hit_ens"], -m["hit_bayes"], level=level)
    return out


def rung_table(names, kl, points: Sequence[dict]):
    """Every rung's values with 95 % intervals (the regime map's points), as an HTML table."""
    from ..tables import table as html_table

    def show(iv, digits=3):
        return iv.format(digits) if iv.defined else "undefined"

    rows = [[n, f"{k:.2f}", show(p["flips"]), show(p["paper"]), show(p["loss_headroom"]), show(p["loss_frac"])]
            for n, k, p in zip(names, kl, points)]
    return html_table(rows, header=["rung", "KL to truth", "flip share", "paper's measure",
                                    "headroom (nats)", "gain / headroom"],
                      caption="Each rung's values, 95 % intervals (the fraction by Fieller)")
