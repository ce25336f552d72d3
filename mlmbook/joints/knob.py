r"""Chapter 2's knob of the world, soft zeros: pairs whose true table splits into blocks at
smoothing :math:`\varepsilon = 0` (:func:`blocked_sample`, chosen by the truth alone), and the
truth's own answer on them (:func:`exact_blocks`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .conditionals import PairConditionals
from .derive import hcb, support_blocks
from .metrics import block_error, tv_joint
from .sampling import choose_pairs
from .truth import truth_joints

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["blocked_sample", "exact_blocks", "word_pairs"]

_CHUNK = 32


def word_pairs(items) -> list[tuple]:
    """``(words, wa, wb)`` of each pair: what :func:`~mlmbook.joints.truth_joints` takes."""
    return [(it["words"], it["wa"], it["wb"]) for it in items]


def blocked_sample(lm: "MaskedLM", grammar, n: int, rng: np.random.Generator, seed: int = 0,
                   pool: int = 8) -> tuple[list[dict], list[np.ndarray], list[np.ndarray]]:
    """Pairs of ``n`` toy sentences whose true table has two blocks or more, from ``pool * n``
    sentences drawn with ``seed`` (two pairs each, :func:`~mlmbook.joints.choose_pairs`).

    Returns
    -------
    items : list of dict
        The kept pairs, ``sentence`` renumbered 0, 1, ... by kept sentence.
    truths : list of arrays
        Their true joints (full grid).
    labels : list of arrays
        The block label of each row of each table (:func:`~mlmbook.joints.support_blocks`).
    """
    pairs = choose_pairs(lm, grammar.sample(pool * n, seed=seed), pool * n, rng)
    items, truths, labels, renumber = [], [], [], {}
    for start in range(0, len(pairs), _CHUNK):
        chunk = pairs[start:start + _CHUNK]
        for it, P in zip(chunk, truth_joints(grammar, word_pairs(chunk))):
            n_blocks, la, _ = support_blocks(PairConditionals.from_joint(P))
            if n_blocks < 2:
                continue
            if it["sentence"] not in renumber:
                if len(renumber) == n:
                    return items, truths, labels
                renumber[it["sentence"]] = len(renumber)
            items.append({**it, "sentence": renumber[it["sentence"]]})
            truths.append(P)
            labels.append(la)
    if len(renumber) < n:
        raise ValueError(f"only {len(renumber)} of {pool * n} sentences have a pair with blocks; raise pool")
    return items, truths, labels


def exact_blocks(true_joints, labels) -> dict[str, np.ndarray]:
    """Per pair, what blocks cost the truth's own conditionals: ``blocks`` (how many), ``hcb_tv``
    (HCB's total variation to the truth) and ``hcb_block`` (HCB's mass in the wrong block)."""
    own = [PairConditionals.from_joint(P) for P in true_joints]
    joints = [hcb(pc) for pc in own]
    return {"blocks": np.array([support_blocks(pc)[0] for pc in own]),
            "hcb_tv": np.array([tv_joint(P, H) for P, H in zip(true_joints, joints)]),
            "hcb_block": np.array([block_error(P, H, lab) for P, H, lab in zip(true_joints, joints, labels)])}
