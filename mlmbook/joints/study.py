r"""Chapter 2's primary questions: their effects of interest and the rows that answer them, one
value per *pair* (the study sums them into sentences, ``units=``).

Torroba Hennigen & Kim (2023) claim that the Arnold–Gokhale joint (AG) "outperforms existing Markov
random field-based approaches" and that its conditionals "can even occasionally outperform the
original MLM's conditionals"."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..stats import Interval

__all__ = ["PPL_EFFECT", "KNOB_EFFECT", "KL_SHARE", "Plan", "ppl_rows",
           "gap_rows", "exp_interval"]

PPL_EFFECT = math.log(1.1)
"""A perplexity 10 % higher or lower, in the rows' scale (nats per token)."""

KNOB_EFFECT = 0.05
"""The knob's effect of interest: the share of the mass HCB puts in the wrong block."""

KL_SHARE = 0.1
"""The truth questions' effect of interest, as a share of the model's mean single-site KL to the
truth."""


@dataclass(frozen=True)
class Plan:
    """How much the chapter measures in a profile (the chapter's ``SIZES``): ``sentences`` of the
    experiment (an adjacent and a random pair each), the first ``ladder`` of them on every rung of
    the ladder, ``knob`` sentences with a pair whose true table splits into blocks (for the
    soft-zeros models), ``triples`` three-word joints with ``k3`` candidates per word, and ``whole``
    four-word sentences with ``k4``. Unit counts are best at 12 or less, or 30 or more: from 13 to
    29 a sign-flip interval costs 0.1–2.5 s."""

    sentences: int
    ladder: int = 0
    knob: int = 0
    triples: int = 0
    k3: int = 0
    whole: int = 0
    k4: int = 0


def ppl_rows(per_pair: dict, first: str, second: str, field: str = "logp_pair") -> np.ndarray:
    r"""Per-pair contributions to :math:`\log \mathrm{PPL}_{\text{first}} - \log
    \mathrm{PPL}_{\text{second}}`, :math:`-\tfrac12(\log q_{\text{first}} - \log
    q_{\text{second}})` at the observed pair (two tokens). ``field``: ``"logp_pair"`` (P-PPL) or
    ``"logp_unary"`` (U-PPL; ``second="mlm"`` is the MLM's own conditionals)."""
    out = -0.5 * (np.asarray(per_pair[f"{first}.{field}"]) - np.asarray(per_pair[f"{second}.{field}"]))
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{first} or {second} gives an observed pair no mass: its perplexity is infinite")
    return out


def gap_rows(per_pair: dict) -> np.ndarray:
    """Per pair: AG's conditional KL to the truth minus the MLM's own."""
    return np.asarray(per_pair["ag.cond_kl_truth"]) - np.asarray(per_pair["mlm.cond_kl_truth"])


def exp_interval(iv: Interval) -> Interval:
    """An interval for a log perplexity, turned into one for the perplexity (a monotone map)."""
    return Interval(math.exp(iv.estimate), math.exp(iv.low), math.exp(iv.high), iv.level, iv.method,
                    iv.n, math.exp(iv.estimate) * iv.se, iv.seeds)
