r"""Chapter 6's primary questions and its sizes per profile.

==============  =========================================================================  ======  =========
key             measure (per token, nats; first minus second)                             unit    truth
==============  =========================================================================  ======  =========
``bound``       NELBO − (−log p_mix): what the disagreement of the orders costs the bound  sentence  yes
``order``       KL(p ‖ confident-first) − KL(p ‖ random order), from sentences of p       sentence  yes
``parallel``    KL(p ‖ two per step) − KL(p ‖ one per step), random order                 sentence  yes
``train_gen``   uniform-ratio − fixed-15 % models: KL(p ‖ random-order sampler)           seed      yes
``train_mlm``   uniform-ratio − fixed-15 % models: single-site KL to the truth            seed      yes
``parallel_mc`` NELBO with two per step − with one (Monte Carlo over orders)              sentence  no
==============  =========================================================================  ======  =========

A KL from the truth :math:`p` to a sampler's law :math:`P` is :math:`\mathbb{E}_{x\sim p}[\log p(x) - \log
P(x)]`, so a difference of two such KLs has the per-sentence value :math:`\log P_1(x) - \log P_2(x)` on
sentences drawn from the truth (the truth's own term cancels): an unbiased per-unit value the study layer
can test. Effects of interest: 10 % of the default model's mean single-site KL to the truth (its label on
the model ladder, known before the chapter measures anything) for the sentence questions, of the fixed-15 %
rung's label for the two training questions; for a model without a truth, a perplexity 1 % higher
(:math:`\log 1.01` nats per token). No planning standard deviation yet: the sample each question needs is
computed on the page from its own per-unit spread.
"""
from __future__ import annotations

import math

from ..stats import Question

__all__ = ["KL_SHARE", "diffusion_questions"]

KL_SHARE = 0.1
"""Effect of interest of the truth questions, as a share of a model's mean single-site KL to the truth."""


def diffusion_questions(truth: bool, default_kl: float | None = None, pair_kl: float | None = None) -> list[Question]:
    """The chapter's primary questions (module table); ``default_kl`` and ``pair_kl``: the single-site KL
    labels of the default model and of the training knob's fixed-15 % rung (needed with the truth)."""
    if not truth:
        return [Question("parallel_mc", "two tokens per step: NELBO minus one per step", math.log(1.01),
                         "a perplexity 1 % higher", measure="nats per token",
                         words={"above": "parallel costs", "below": "parallel gains"}, sample="SIZES.real.sentences")]
    if not (default_kl and pair_kl):
        raise ValueError("the truth questions need the models' single-site KL labels (default_kl, pair_kl)")
    share = f"{100 * KL_SHARE:.0f} % of the single-site KL"
    eff, pair = KL_SHARE * default_kl, KL_SHARE * pair_kl
    main = "SIZES.toy.sentences"
    return [Question("bound", "NELBO above −log p_mix (the orders disagree)", eff, f"{share}, {default_kl:.3f}",
                     measure="nats per token", words={"above": "gap", "below": "impossible"}, sample=main),
            Question("order", "confident-first vs random order: KL from the truth", eff,
                     f"{share}, {default_kl:.3f}", measure="nats per token",
                     words={"below": "confident closer", "above": "random closer"}, sample=main),
            Question("parallel", "two tokens per step vs one: KL from the truth", eff, f"{share}, {default_kl:.3f}",
                     measure="nats per token", words={"above": "parallel farther", "below": "parallel closer"},
                     sample=main),
            Question("train_gen", "uniform vs fixed 15 % masking: KL of the random-order sampler", pair,
                     f"{share}, {pair_kl:.3f}", unit="seed", measure="nats per token",
                     words={"below": "uniform closer", "above": "fixed closer"}, sample="zoo.CH6_SEEDS"),
            Question("train_mlm", "uniform vs fixed 15 % masking: single-site KL", pair, f"{share}, {pair_kl:.3f}",
                     unit="seed", measure="nats per token",
                     words={"below": "uniform closer", "above": "fixed closer"}, sample="zoo.CH6_SEEDS")]
