r"""Chapter 2's regime map: the derived joints on every rung of a model ladder.

One model cannot say *where* deriving a joint helps. :func:`rung_point` measures, for one
model and a fixed sample of pairs with known true joints, what the chapter plots against the
model's distance from the truth:

- KL(truth ‖ joint) and total variation to the true joint for MRF, MRF-local, HCB and AG
  (:data:`LADDER_METHODS`);
- the **gap** between AG's conditionals and the MLM's own, both measured by their conditional
  KL to the truth (:func:`~mlmbook.joints.truth_conditional_kl`): negative means AG's derived
  conditionals are closer to the truth than the MLM's;
- the mean incompatibility of the MLM's conditionals (:func:`~mlmbook.joints.compatibility`).

Every figure comes with a percentile bootstrap interval over pairs (:func:`mlmbook.stats.bootstrap`;
the gap is a *paired* difference). :func:`verdict` turns an interval into words, and
:func:`gain_trend` compares AG's gain on two rungs on the same pairs.

The caller loads the models (``mlmbook.models.ladder``); this module only takes a
:class:`~mlmbook.models.base.MaskedLM`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..stats import bootstrap, side_of_zero
from .ag import ag
from .conditionals import gold_index, iter_pair_conditionals
from .derive import hcb, mrf, mrf_local
from .metrics import evaluate_pair, stack

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["LADDER_METHODS", "rung_pairs", "rung_point", "verdict", "gain_trend"]

LADDER_METHODS = ("mrf", "mrf_local", "hcb", "ag")
"""The derived joints on the regime map (the independent product is left out: it ignores the
conditionals, which are what the ladder varies)."""


def _mean(x):
    return x.mean(-1)


def _diff(x, y):
    return x.mean(-1) - y.mean(-1)


def rung_pairs(lm: "MaskedLM", queries: Sequence, truths: Sequence) -> dict[str, np.ndarray]:
    """Per-pair metrics of one model: :func:`~mlmbook.joints.evaluate_pair` on every query, stacked,
    for the joints of :data:`LADDER_METHODS` and without the divergences to the MLM's conditionals
    (what :func:`rung_point` reads; a row of the chapter's full :func:`~mlmbook.joints.evaluate_pair`
    holds the same values under the same keys, so it can stand in for a rung measured already).

    Parameters
    ----------
    lm : MaskedLM
        A toy-vocabulary model (the truth's grid is the full toy vocabulary).
    queries : sequence of ``(ids, A, B)``
        Token ids of a sentence and the two masked token positions.
    truths : sequence of arrays
        The true joint of each query over the full grid (:func:`~mlmbook.joints.truth_joints`).

    Returns
    -------
    dict ``{"method.metric": array over pairs}`` (see :func:`~mlmbook.joints.stack`).
    """
    rows = [None] * len(queries)
    for k, pc in iter_pair_conditionals(lm, queries):
        ids, a_pos, b_pos = queries[k]
        joints = {"mrf": mrf(pc), "mrf_local": mrf_local(pc), "hcb": hcb(pc), "ag": ag(pc).joint}
        rows[k] = evaluate_pair(pc, gold_index(pc, ids[a_pos], ids[b_pos]), truths[k], joints=joints,
                                to_mlm=False)
    return stack(rows)


def rung_point(per_pair: dict, n_boot: int = 1000, seed: int = 0) -> dict[str, tuple]:
    """One rung's point of the regime map, each value ``(estimate, low, high)`` (95 % bootstrap over pairs).

    Keys: ``{m}_kl_truth`` and ``{m}_tv_truth`` for ``m`` in :data:`LADDER_METHODS`;
    ``mlm_cond_kl_truth`` and ``ag_cond_kl_truth``; ``gap`` (AG's conditional KL to the truth
    minus the MLM's, paired); ``compatibility`` (mean over pairs).
    """
    out = {}
    for m in LADDER_METHODS:
        for metric in ("kl_truth", "tv_truth"):
            out[f"{m}_{metric}"] = bootstrap(_mean, per_pair[f"{m}.{metric}"], n_boot=n_boot, seed=seed)
    for who in ("mlm", "ag"):
        out[f"{who}_cond_kl_truth"] = bootstrap(_mean, per_pair[f"{who}.cond_kl_truth"], n_boot=n_boot, seed=seed)
    out["gap"] = bootstrap(_diff, per_pair["ag.cond_kl_truth"], per_pair["mlm.cond_kl_truth"],
                           n_boot=n_boot, seed=seed)
    out["compatibility"] = bootstrap(_mean, per_pair["compatibility"], n_boot=n_boot, seed=seed)
    return out


def verdict(interval: Sequence[float], below: str = "lower", above: str = "higher",
            neither: str = "indistinguishable") -> str:
    """Words for an interval ``(estimate, low, high)`` of a difference: ``below`` when it lies
    entirely below 0, ``above`` when entirely above, else ``neither``."""
    _, lo, hi = interval
    return side_of_zero(lo, hi, above, below, neither)


def gain_trend(first: dict, second: dict, n_boot: int = 1000, seed: int = 0) -> tuple[float, float, float]:
    r"""AG's gain over the MLM's conditionals on rung ``first`` minus its gain on rung ``second``.

    The gain of a rung is :math:`\overline{\mathrm{KL}}_{\text{MLM}} - \overline{\mathrm{KL}}_{\text{AG}}`
    (conditional KL to the truth, positive when AG is closer). Both rungs must have been measured on
    the same pairs in the same order (:func:`rung_pairs`), so the bootstrap resamples pairs jointly.

    Returns
    -------
    (estimate, low, high)
    """
    def stat(m1, a1, m2, a2):
        return (m1.mean(-1) - a1.mean(-1)) - (m2.mean(-1) - a2.mean(-1))

    return bootstrap(stat, first["mlm.cond_kl_truth"], first["ag.cond_kl_truth"],
                     second["mlm.cond_kl_truth"], second["ag.cond_kl_truth"], n_boot=n_boot, seed=seed)
