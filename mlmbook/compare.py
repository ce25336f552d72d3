r"""Comparing a masked LM's single-site conditionals with the toy language's exact ones.

For a sentence :math:`x` and each position :math:`i`, mask :math:`i` alone and compare the
model's :math:`q(\cdot \mid x_{-i})` with the truth's :math:`p(\cdot \mid x_{-i})`:

.. math:: \mathrm{KL}_i = \sum_w p(w \mid x_{-i}) \log \frac{p(w \mid x_{-i})}{q(w \mid x_{-i})} .

Its mean over held-out positions is the gap between the model's single-site loss and the
Bayes-optimal loss: the book's headline measure of how well an MLM learned the language.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from . import queries
from .models import ladder
from .models.load import load_mlm
from .paths import cache_dir, write_json_atomic
from .stats import kl as _kl
from .toy import Grammar
from .toy.vocab import N_SPECIAL

__all__ = ["single_site_log_probs", "kl_to_truth", "rung_kl", "compare_with_truth",
           "TruthComparison"]


def single_site_log_probs(lm, sentences) -> list:
    """For each sentence (list of words), log q(. | x_-i) at every position: list of (n, V) arrays
    (:func:`mlmbook.queries.single_site`). Word-level: one piece per word (the toy tokenizer)."""
    for words in sentences:
        ids, _ = lm.encode_words(list(words))
        if len(ids) != len(words):
            raise ValueError(f"{lm.name} splits words into pieces; single-site word conditionals need a "
                             f"word-level model")
    return queries.single_site(lm, sentences)


def kl_to_truth(grammar, lm, sentences, offset: int = N_SPECIAL) -> list:
    """Per-position KL(truth || model) for each sentence: list of (n,) arrays (nats). ``offset``
    maps grammar word ids to the model's token ids (after the toy tokenizer's special tokens)."""
    out = []
    for words, lq in zip(sentences, single_site_log_probs(lm, sentences)):
        p = grammar.conditionals(words)                             # (n, Vw)
        out.append(kl_rows(p, lq[:, offset:offset + p.shape[1]]))
    return out


def kl_rows(p: np.ndarray, lq: np.ndarray) -> np.ndarray:
    """Per position, KL(p || q) in nats from the truth's ``p`` and the model's ``log q`` (n, V)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * (np.log(np.where(p > 0, p, 1.0)) - lq), 0.0)
    return terms.sum(1)


@dataclass(frozen=True)
class TruthComparison:
    """A model's single-site conditionals held against the truth on held-out sentences
    (:func:`compare_with_truth`), one array per sentence, one value per position: ``kl``,
    KL(truth || model) in nats; ``kl_unigram``, KL(truth || unigram baseline) (empty without a
    unigram); ``gap``, log p(x_i | rest) - log q(x_i | rest) at the word that is there (the model's
    loss minus the Bayes-optimal loss); ``ruled_out``, the model's probability on words the truth
    gives 0; ``log_q`` (n, V), the model's log conditionals over the grammar's words."""

    kl: list
    kl_unigram: list
    gap: list
    ruled_out: list
    log_q: list

    def mean(self, field: str) -> float:
        """Mean over every position of every sentence."""
        return float(np.mean(np.concatenate(getattr(self, field))))

    def sums(self, field: str) -> np.ndarray:
        """Per-sentence sums of ``field`` (with :meth:`lengths` as weights: a ratio of sums)."""
        return np.array([float(np.sum(v)) for v in getattr(self, field)])

    def lengths(self) -> np.ndarray:
        return np.array([len(v) for v in self.kl])


def compare_with_truth(grammar, lm, sentences, unigram=None, offset: int = N_SPECIAL) -> TruthComparison:
    """Hold ``lm``'s single-site conditionals against the truth at every position of ``sentences``
    (one exact pass per sentence length); ``offset`` maps grammar word ids to the model's ids."""
    log_q = single_site_log_probs(lm, sentences)
    truth: list = [None] * len(sentences)
    by_length: dict[int, list[int]] = {}
    for k, words in enumerate(sentences):
        by_length.setdefault(len(words), []).append(k)
    for ks in by_length.values():
        ids = np.stack([grammar.encode(sentences[k]).numpy() for k in ks])
        for k, p in zip(ks, grammar.pcfg.conditionals(ids).numpy()):
            truth[k] = p
    kl, kl_uni, gap, ruled, logs = [], [], [], [], []
    for words, p, lq in zip(sentences, truth, log_q):
        lq = lq[:, offset:offset + p.shape[1]]
        q = np.exp(lq)
        seen = np.arange(len(words)), [grammar.word_id[w] for w in words]
        kl.append(_kl(p, q))
        if unigram is not None:
            kl_uni.append(_kl(p, unigram))
        gap.append(np.log(p[seen]) - lq[seen])
        ruled.append(np.where(p == 0, q, 0.0).sum(1))
        logs.append(lq)
    return TruthComparison(kl, kl_uni, gap, ruled, logs)


def rung_kl(rung: ladder.Rung, n_sentences: int = ladder.KL_SENTENCES) -> float:
    """Mean single-site KL(truth ‖ rung) in nats on held-out toy sentences: the label of a rung
    of the model ladder (:mod:`mlmbook.models.ladder`); computed once, cached beside the models."""
    path = ladder.snapshot_path(rung)
    key = f"{path.parent.parent.name}-{path.name}" if rung.fraction != 1.0 else path.name
    memo = cache_dir() / "ladder" / f"{key}-kl{n_sentences}.json"
    if memo.exists():
        try:
            return float(json.loads(memo.read_text())["kl"])
        except (OSError, ValueError, KeyError):
            memo.unlink(missing_ok=True)                 # unreadable: measure again
    grammar = Grammar.load("toy")
    sentences = [s.words for s in grammar.sample(n_sentences, seed=424_242)]
    kl = float(np.mean(np.concatenate(kl_to_truth(grammar, load_mlm(rung), sentences))))
    write_json_atomic(memo, {"kl": kl, "rung": rung.name, "sentences": n_sentences})
    return kl
