r"""Comparing a masked LM's single-site conditionals with the toy language's exact ones.

For a sentence :math:`x` and each position :math:`i`, mask :math:`i` alone and compare the
model's :math:`q(\cdot \mid x_{-i})` with the truth's :math:`p(\cdot \mid x_{-i})`:

.. math:: \mathrm{KL}_i = \sum_w p(w \mid x_{-i}) \log \frac{p(w \mid x_{-i})}{q(w \mid x_{-i})} .

The mean of :math:`\mathrm{KL}_i` over held-out positions is the gap between the model's
single-site loss and the Bayes-optimal loss; it is the book's headline measure of how well
the default MLM learned the language, and the label of every rung of the model ladder
(:func:`rung_kl`).
"""
from __future__ import annotations

import json

import numpy as np

from . import queries
from .models import ladder
from .paths import cache_dir, write_json_atomic
from .toy import Grammar
from .toy.vocab import N_SPECIAL

__all__ = ["single_site_log_probs", "kl_to_truth", "kl_unigram_to_truth", "rung_kl"]


def single_site_log_probs(lm, sentences) -> list:
    """For each sentence (list of words), log q(. | x_-i) at every position: list of (n, V) arrays.

    One call of the query engine (:func:`mlmbook.queries.single_site`). Word-level: requires
    one piece per word (the toy tokenizer).
    """
    for words in sentences:
        ids, _ = lm.encode_words(list(words))
        if len(ids) != len(words):
            raise ValueError(f"{lm.name} splits words into pieces; single-site word conditionals need a "
                             f"word-level model")
    return queries.single_site(lm, sentences)


def kl_to_truth(grammar, lm, sentences, offset: int = N_SPECIAL) -> list:
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


def kl_unigram_to_truth(grammar, sentences, unigram) -> list:
    """Per-position KL(truth || unigram) for each sentence: the baseline of a model that ignores context.

    Parameters
    ----------
    grammar : mlmbook.toy.Grammar
    sentences : list of list of str
    unigram : (Vw,) array
        Word frequencies over the grammar's vocabulary (``grammar.unigram(n)``).

    Returns
    -------
    list of (n,) arrays, nats
    """
    out = []
    for words in sentences:
        p = grammar.conditionals(words)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0) / unigram), 0.0)
        out.append(terms.sum(1))
    return out


def rung_kl(rung: ladder.Rung, n_sentences: int = ladder.KL_SENTENCES) -> float:
    """Mean single-site KL(truth ‖ rung) in nats on held-out toy sentences: the label of a rung of the
    model ladder (:mod:`mlmbook.models.ladder`); computed once, then cached beside the models."""
    path = ladder.snapshot_path(rung)
    key = f"{path.parent.parent.name}-{path.name}" if rung.fraction != 1.0 else path.name   # entry-step_N
    memo = cache_dir() / "ladder" / f"{key}-kl{n_sentences}.json"
    if memo.exists():
        try:
            return float(json.loads(memo.read_text())["kl"])
        except (OSError, ValueError, KeyError):
            memo.unlink(missing_ok=True)                 # unreadable: measure again
    grammar = Grammar.load("toy")
    sentences = [s.words for s in grammar.sample(n_sentences, seed=424_242)]
    kl = float(np.mean(np.concatenate(kl_to_truth(grammar, ladder.load(rung), sentences))))
    write_json_atomic(memo, {"kl": kl, "rung": rung.name, "sentences": n_sentences})
    return kl
