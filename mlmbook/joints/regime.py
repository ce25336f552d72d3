r"""Chapter 2's regime map: the derived joints on every rung of a model ladder (or knob setting),
measured per pair with known true joints (:func:`rung_pairs`) and summarised over sentences
(:func:`rung_point`). The **gap** is AG's conditional KL to the truth minus the MLM's own:
negative means AG's conditionals are closer to the truth."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..stats import Interval, describe
from .conditionals import gold_index, iter_pair_conditionals
from .derive import derive_all
from .metrics import block_error, evaluate_pair, stack

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["LADDER_METHODS", "rung_pairs", "rung_point"]

LADDER_METHODS = ("mrf", "mrf_local", "hcb", "ag", "ag_anchored")
"""The derived joints on the regime map (all but the independent product)."""


def rung_pairs(lm: "MaskedLM", queries: Sequence, truths: Sequence, blocks: Sequence | None = None,
               progress: bool = False) -> dict[str, np.ndarray]:
    """Per-pair metrics of one model: :func:`~mlmbook.joints.evaluate_pair` on every query, stacked,
    for the joints of :data:`LADDER_METHODS` and without the divergences to the MLM's conditionals.

    Parameters
    ----------
    lm : MaskedLM
        A toy-vocabulary model (the truth's grid is the full toy vocabulary).
    queries : sequence of ``(ids, A, B)``
        Token ids of a sentence and the two masked token positions.
    truths : sequence of arrays
        The true joint of each query over the full grid (:func:`~mlmbook.joints.truth_joints`).
    blocks : sequence of arrays, optional
        A block label per row of each query's grid (:func:`~mlmbook.joints.support_blocks`): then
        ``m.block_error`` (:func:`~mlmbook.joints.block_error`) is measured too.
    """
    rows = [None] * len(queries)
    for k, pc in iter_pair_conditionals(lm, queries, progress=progress):
        ids, a_pos, b_pos = queries[k]
        joints = {m: joint for m, joint in derive_all(pc).items() if m in LADDER_METHODS}
        rows[k] = evaluate_pair(pc, gold_index(pc, ids[a_pos], ids[b_pos]), truths[k],
                                joints=joints, to_mlm=False)
        if blocks is not None:
            rows[k].update({f"{m}.block_error": block_error(truths[k], joint, blocks[k])
                            for m, joint in joints.items()})
    return stack(rows)


def rung_point(per_pair: dict, sentence) -> dict[str, Interval]:
    """One rung's point of the regime map, 95 % intervals over sentences: ``{m}_kl_truth`` and
    ``{m}_tv_truth`` for ``m`` in :data:`LADDER_METHODS` (where present), ``mlm_cond_kl_truth``,
    ``ag_cond_kl_truth``, ``gap`` (paired), ``anchor`` (anchored AG's KL to the truth minus AG's,
    paired) and ``nearest_compatible``."""
    units = np.asarray(sentence)
    fields = {f"{m}_{metric}": per_pair[f"{m}.{metric}"] for m in LADDER_METHODS for metric in ("kl_truth", "tv_truth")
              if f"{m}.{metric}" in per_pair}
    fields.update(mlm_cond_kl_truth=per_pair["mlm.cond_kl_truth"], ag_cond_kl_truth=per_pair["ag.cond_kl_truth"],
                  gap=per_pair["ag.cond_kl_truth"] - per_pair["mlm.cond_kl_truth"],
                  anchor=per_pair["ag_anchored.kl_truth"] - per_pair["ag.kl_truth"],
                  nearest_compatible=per_pair["nearest_compatible"])
    return {key: describe(values, units=units) for key, values in fields.items()}
