r"""Chapter 2's knob of the world: soft zeros, the truth's answer beside the models'.

At smoothing :math:`\varepsilon = 0` a pair's true table can split into **blocks**
(:func:`~mlmbook.joints.support_blocks`); the knob is measured on such pairs
(:func:`blocked_sample`, chosen by the truth alone), by the mass a joint puts in the wrong block
(:func:`~mlmbook.joints.block_error`). :func:`exact_blocks` gives the truth's own answer.
"""
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
    """Pairs of ``n`` toy sentences whose true table splits into several blocks.

    ``pool * n`` sentences are drawn (seed ``seed``), each giving two pairs
    (:func:`~mlmbook.joints.choose_pairs`); a pair is kept when its true table has two blocks or
    more, until ``n`` sentences have a kept pair.

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
    """What the blocks cost the truth's own conditionals, per pair: ``blocks`` (how many),
    ``hcb_tv`` (HCB's total variation to the truth) and ``hcb_block`` (HCB's mass in the wrong
    block, blocks as ``labels``)."""
    own = [PairConditionals.from_joint(P) for P in true_joints]
    joints = [hcb(pc) for pc in own]
    return {"blocks": np.array([support_blocks(pc)[0] for pc in own]),
            "hcb_tv": np.array([tv_joint(P, H) for P, H in zip(true_joints, joints)]),
            "hcb_block": np.array([block_error(P, H, lab) for P, H, lab in zip(true_joints, joints, labels)])}
