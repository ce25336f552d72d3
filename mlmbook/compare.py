r"""Comparing a masked LM's single-site conditionals with the toy language's exact ones.

For a sentence :math:`x` and each position :math:`i`, mask :math:`i` alone and compare the
model's :math:`q(\cdot \mid x_{-i})` with the truth's :math:`p(\cdot \mid x_{-i})`:

.. math:: \mathrm{KL}_i = \sum_w p(w \mid x_{-i}) \log \frac{p(w \mid x_{-i})}{q(w \mid x_{-i})} .

The mean of :math:`\mathrm{KL}_i` over held-out positions is the gap between the model's
single-site loss and the Bayes-optimal loss; it is the book's headline measure of how well
the default MLM learned the language.
"""
from __future__ import annotations

import numpy as np
import torch

__all__ = ["single_site_log_probs", "kl_to_truth"]


def single_site_log_probs(lm, sentences) -> list:
    """For each sentence (list of words), log q(. | x_-i) at every position: list of (n, V) arrays.

    All masked variants of all sentences go through one length-bucketed batched call, with
    the output layer applied only at the masked position.  Word-level: requires one piece per
    word (the toy tokenizer); for subword models use :meth:`MaskedLM.pll`-style piece logic.
    """
    rows, pos, owner = [], [], []
    for s, words in enumerate(sentences):
        ids, pieces = lm.encode_words(words)
        if len(ids) != len(words):
            raise ValueError(f"{lm.name} splits words into pieces; single-site word conditionals need a word-level model")
        for i in range(len(ids)):
            r = list(ids)
            r[i] = lm.mask_id
            rows.append(r), pos.append([i]), owner.append(s)
    out = [[] for _ in sentences]
    for lp, s in zip(lm.logits_ragged(rows, pos), owner):
        out[s].append(torch.log_softmax(lp[0].double(), -1).numpy())
    return [np.stack(o) for o in out]


def kl_to_truth(grammar, lm, sentences, offset: int = 5) -> list:
    """Per-position KL(truth || model) for each sentence: list of (n,) arrays (nats).

    ``offset`` maps grammar word ids to the model's token ids (the toy tokenizer puts five
    special tokens first).
    """
    model = single_site_log_probs(lm, sentences)
    out = []
    for words, lq in zip(sentences, model):
        p = grammar.conditionals(words)                             # (n, Vw)
        lq = lq[:, offset:offset + p.shape[1]]
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(p > 0, p * (np.log(np.where(p > 0, p, 1.0)) - lq), 0.0)
        out.append(terms.sum(1))
    return out
