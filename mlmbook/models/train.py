r"""What a toy masked LM is (what :func:`mlmbook.models.stacked.train_stack` reads): its training
configuration, its initial weights (a small ``BertForMaskedLM``), and its *single-site* loss on
held-out sentences, which the truth bounds from below:

.. math:: \mathcal{L}_{\text{MLM}} = -\frac{1}{N}\sum_{s}\sum_i \log q(x_i \mid x_{-i}) \;\ge\;
          \mathcal{L}_{\text{Bayes}} = -\frac{1}{N}\sum_{s}\sum_i \log p(x_i \mid x_{-i}),

whose gap is the mean KL(truth ‖ MLM) over positions of the held-out sentences.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import torch

from ..paths import cache_dir, write_json_atomic
from ..profiles import with_fallbacks
from ..toy.grammar import Grammar
from ..toy.vocab import MASK, SPECIAL_TOKENS
from .base import MaskedLMBase
from .corrupt import batches, check_config, mask_tokens

TRAIN_THREADS = 1
"""Torch (and BLAS) threads every toy training uses, whatever ``MLMBOOK_THREADS`` says: small
models train fastest on one thread, and one thread makes the weights the same on every machine."""

__all__ = ["TRAIN_THREADS", "TrainConfig", "PRESETS", "preset_for", "make_model", "batches", "mask_tokens"]


@dataclass(frozen=True)
class TrainConfig:
    r"""Everything that shapes a toy model's training (all of it is in the cache key).

    Attributes
    ----------
    hidden, layers, heads, intermediate : int
        The BERT's width, depth, attention heads and feed-forward width.
    steps, batch : int
        Optimiser steps and sentences per step.
    lr, warmup, weight_decay : float
        AdamW's peak learning rate :math:`\eta`, reached linearly over the first ``warmup``
        share of the steps and then decayed linearly to 0; its decoupled weight decay.
        Gradients are clipped to norm 1.
    mask_rate, replace, span, mask_only, noise, mask_ratio
        The corruption, each step in :mod:`mlmbook.models.corrupt`: the share :math:`r` of
        (eligible) content tokens selected; the shares of them replaced by ``[MASK]``, by a random
        word, and kept; the mean span length :math:`\mu` (0: token masking); the UD relations or
        UPOS tags that may be selected (``("nsubj",)``; empty: all); the share of training tokens
        first replaced by a random word (the held-out loss stays clean); ``"fixed"`` rate or
        ``"uniform"`` (:math:`r \sim U(0, 1)` per sentence; ``mask_rate`` unused).
    """

    hidden: int = 128
    layers: int = 4
    heads: int = 4
    intermediate: int = 512
    steps: int = 3000
    batch: int = 128
    lr: float = 1e-3
    warmup: float = 0.06          # fraction of steps with linear warm-up, then linear decay
    weight_decay: float = 0.01
    mask_rate: float = 0.15
    n_eval: int = 200             # held-out sentences for the single-site loss
    eval_every: int = 250         # steps between two measurements of it
    checkpoints: tuple = (0.1, 0.3)   # extra snapshots (shares of training; MLMs only): chapter 3
    replace: tuple = (0.8, 0.1, 0.1)  # selected tokens -> [MASK] / random word / kept
    span: float = 0.0             # mean span length (0: independent token masking)
    mask_only: tuple = ()         # UD deprels or UPOS tags eligible for masking (empty: all)
    noise: float = 0.0            # share of training tokens replaced by a random word first
    decoder_layers: int = 1       # MAE-LM's decoder depth (mlmbook.models.maelm; unused by an MLM)
    mask_ratio: str = "fixed"     # "fixed" (mask_rate) or "uniform" (a rate ~ U(0, 1) per sentence)

    def __post_init__(self):
        # lists (e.g. from JSON) -> hashable tuples; (1, 0, 0) and (1.0, 0.0, 0.0): one cache key
        for name in ("checkpoints", "replace", "mask_only"):
            value = getattr(self, name)
            object.__setattr__(self, name, (value,) if isinstance(value, str) else tuple(value))
        object.__setattr__(self, "replace", tuple(float(a) for a in self.replace))
        for name in ("span", "noise"):
            object.__setattr__(self, name, float(getattr(self, name)))
        check_config(self)


PRESETS = {
    "quick": TrainConfig(hidden=64, layers=2, heads=2, intermediate=256, steps=1500, batch=64,
                         lr=3e-3, n_eval=100, eval_every=250),
    "full": TrainConfig(hidden=128, layers=2, heads=4, intermediate=512, steps=4000, batch=64,
                        lr=2e-3, n_eval=200, eval_every=400),
    # the topic variant of chapter 5 (the quick profile uses "quick")
    "topic_full": TrainConfig(hidden=128, layers=2, heads=4, intermediate=512, steps=2000, batch=64,
                              lr=2e-3, n_eval=100, eval_every=500),
}
with_fallbacks(PRESETS)
PRESETS["topic_extended"] = PRESETS["topic_full"]
"""Training configurations by name: one per profile of :data:`mlmbook.profiles.KNOWN_PROFILES`, plus
``topic_<profile>`` where the topic variant trains differently (see :func:`preset_for`). The
``extended`` profile's configurations are the full profile's (same objects, same cache entries)."""


def preset_for(grammar_name: str, profile: str) -> str:
    """The preset a toy model of ``grammar_name`` uses in ``profile``."""
    topic = f"topic_{profile}"
    return topic if grammar_name.endswith("topic") and topic in PRESETS else profile


def make_model(grammar: Grammar, config: TrainConfig, seed: int):
    """A freshly initialised ``BertForMaskedLM`` sized by ``config``."""
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=len(SPECIAL_TOKENS) + len(grammar.vocab), hidden_size=config.hidden,
                     num_hidden_layers=config.layers, num_attention_heads=config.heads,
                     intermediate_size=config.intermediate,
                     max_position_embeddings=grammar.max_length + 2, type_vocab_size=1,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, pad_token_id=0)
    return BertForMaskedLM(cfg)


class SingleSiteEval:
    """Held-out single-site loss of a model, against the truth's (Bayes) and a unigram's (some 20 s
    for 200 sentences, kept in the model cache, ``evaluator/``, for every model of one grammar and
    seed)."""

    def __init__(self, grammar: Grammar, n: int, seed: int):
        self.grammar = grammar
        self.sentences = grammar.sample(n, seed=seed + 1_000_003)
        offset = len(SPECIAL_TOKENS)
        self.gold = [offset + grammar.word_id[w] for s in self.sentences for w in s.words]
        memo = cache_dir() / "evaluator" / f"{grammar.fingerprint}-{n}-{seed}.json"
        try:
            known = json.loads(memo.read_text())
            self.bayes, self.unigram = float(known["bayes"]), float(known["unigram"])
            return
        except (OSError, ValueError, KeyError):
            pass
        truth = []
        for s in self.sentences:
            c = grammar.conditionals(s.words)
            truth += [-math.log(c[i, grammar.word_id[w]]) for i, w in enumerate(s.words)]
        self.bayes = float(np.mean(truth))
        uni = grammar.unigram(20000, seed=seed + 7)
        self.unigram = float(np.mean([-math.log(uni[g - offset]) for g in self.gold]))
        write_json_atomic(memo, dict(bayes=self.bayes, unigram=self.unigram, grammar=grammar.name, n=n, seed=seed))

    def loss(self, lm) -> float:
        """Mean -log q(x_i | x_-i) over every position of the held-out sentences."""
        by_length: dict = {}
        for s in self.sentences:
            by_length.setdefault(len(s.words), []).append(lm.encode_words(s.words)[0])
        total, count = 0.0, 0
        for n, rows in by_length.items():
            ids = torch.tensor(rows).repeat_interleave(n, 0)  # each sentence n times, site t masked
            every, site = torch.arange(len(ids)), torch.arange(n).repeat(len(rows))
            gold = ids[every, site].clone()
            ids[every, site] = lm.mask_id
            lp = torch.log_softmax(lm.logits(ids, site[:, None])[:, 0].double(), -1)
            total, count = total - lp[every, gold].sum().item(), count + len(ids)
        return total / count


class _Live(MaskedLMBase):
    """The BERT being trained, behind the :class:`MaskedLM` interface (for the held-out loss)."""

    def __init__(self, model, grammar):
        self.model, self.grammar = model, grammar
        self.name, self.vocab = "training", SPECIAL_TOKENS + list(grammar.vocab)
        self.mask_id, self.special_ids = MASK, list(range(len(SPECIAL_TOKENS)))
        self.max_length = grammar.max_length
        self._offset = len(SPECIAL_TOKENS)

    def _logits_chunk(self, ids, positions):
        B = ids.shape[0]
        full = torch.cat([torch.full((B, 1), 2), ids, torch.full((B, 1), 3)], 1)
        logits = self.model(input_ids=full).logits
        return logits.gather(1, (positions + 1)[..., None].expand(-1, -1, logits.shape[-1]))

    def encode_words(self, words):
        ids = [self._offset + self.grammar.word_id[w] for w in words]
        return ids, [[p] for p in range(len(ids))]
