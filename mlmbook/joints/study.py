r"""Chapter 2's primary questions (the chapter declares them): their effects of interest and the
rows that answer them.

Torroba Hennigen & Kim (2023) claim that the Arnold–Gokhale joint (AG) "outperforms existing Markov
random field-based approaches" and that its conditionals "can even occasionally outperform the
original MLM's conditionals". The chapter tests those claims in at most six questions, one
Bonferroni family (:class:`mlmbook.stats.Study`):

==================  =====================================================================  ================
key                 measure (first minus second; lower is better for every one)             needs the truth
==================  =====================================================================  ================
``ag_vs_mlm``       conditional KL to the truth, AG's conditionals − the MLM's own          yes
``ag_vs_mlm_far``   the same on the least-trained rung of the model ladder                  yes
``ag_vs_mlm_uppl``  log U-PPL, AG's conditionals − the MLM's own (the paper's yardstick)    no
``ag_vs_mrf``       log P-PPL, AG − MRF                                                     no
``hcb_vs_mrf``      log P-PPL, HCB − MRF                                                    no
``knob_block``      the knob models' HCB mass in the wrong block, ε = 0.1 − ε = 0           yes
==================  =====================================================================  ================

A model without the toy language's truth answers the three perplexity questions only: its family
is those three (declared before any data, from the model alone).

Effects of interest. A perplexity ratio of 1.1 (:data:`PPL_EFFECT`, :math:`\log 1.1` nats per token
on the log scale the rows use) for the three perplexity questions; 10 % of the model's mean
single-site KL to the truth (its ladder label, known before this chapter measures anything) for the
two truth questions; 0.05 of the mass for the knob (:data:`KNOB_EFFECT`, about half the fall of the
truth's own HCB error in the last reference, 0.199 → 0.101). Planning standard deviations are the
committed plan's (:mod:`mlmbook.plans`): the per-sentence standard deviations of the rows in the
``pilot`` profile, on sentences and models of its own.

Every row function returns one value per *pair*; the study sums them into sentences
(``units=``), the independent unit, since the two pairs of a sentence share its context.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..stats import Interval

__all__ = ["PPL_EFFECT", "KNOB_EFFECT", "KL_SHARE", "Plan", "ppl_rows",
           "gap_rows", "exp_interval"]

PPL_EFFECT = math.log(1.1)
"""A perplexity 10 % higher or lower, in the rows' scale (nats per token of log perplexity)."""

KNOB_EFFECT = 0.05
"""The knob's effect of interest: a change of 0.05 in the share of the mass HCB puts in the wrong
block."""

KL_SHARE = 0.1
"""The truth questions' effect of interest, as a share of the model's mean single-site KL to the
truth."""

@dataclass(frozen=True)
class Plan:
    """How much the chapter measures in a profile (the chapter declares it in its ``SIZES``, which
    the build's plan and cost estimate read too). Unit counts are best at 12 or less, or 30 or more:
    from 13 to 29 units an interval of the sign-flip test costs 0.1–2.5 s (every sign pattern up to
    2^16, Monte Carlo above), and the ladder and the knob describe some hundred intervals; at 12
    units or with the bootstrap it takes milliseconds.

    Attributes
    ----------
    sentences : int
        Sentences of the experiment (an adjacent and a random pair each).
    ladder : int
        The first this many of them, on every rung of the ladder.
    knob : int
        Sentences with a pair whose true table splits into blocks, for the soft-zeros models.
    triples, k3 : int
        Three-word joints: how many, and candidates per word.
    whole, k4 : int
        Whole four-word sentences: how many, and candidates per word.
    """

    sentences: int
    ladder: int = 0
    knob: int = 0
    triples: int = 0
    k3: int = 0
    whole: int = 0
    k4: int = 0


def ppl_rows(per_pair: dict, first: str, second: str, field: str = "logp_pair") -> np.ndarray:
    r"""Per-pair contributions to :math:`\log \mathrm{PPL}_{\text{first}} - \log
    \mathrm{PPL}_{\text{second}}`.

    A pair scores two tokens, so its contribution is :math:`-\tfrac12(\log q_{\text{first}} - \log
    q_{\text{second}})` at the observed pair; their mean over pairs is the difference of the log
    perplexities (nats per token). ``field``: ``"logp_pair"`` (P-PPL) or ``"logp_unary"`` (U-PPL;
    ``second="mlm"`` is the MLM's own conditionals).
    """
    out = -0.5 * (np.asarray(per_pair[f"{first}.{field}"]) - np.asarray(per_pair[f"{second}.{field}"]))
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{first} or {second} gives an observed pair no mass: its perplexity is infinite")
    return out


def gap_rows(per_pair: dict) -> np.ndarray:
    """Per pair: the conditional KL to the truth of AG's conditionals minus that of the MLM's
    own."""
    return np.asarray(per_pair["ag.cond_kl_truth"]) - np.asarray(per_pair["mlm.cond_kl_truth"])


def exp_interval(iv: Interval) -> Interval:
    """An interval for a log perplexity, turned into one for the perplexity (a monotone map)."""
    return Interval(math.exp(iv.estimate), math.exp(iv.low), math.exp(iv.high), iv.level, iv.method,
                    iv.n, math.exp(iv.estimate) * iv.se, iv.seeds)
