r"""Pseudo-log-likelihoods of plain strings or word lists, per sentence or per token."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import queries
from ..corpus import check_fit
from ..errors import InputTooLong
from ..workers.cluster import map_blocks
from .models import PROGRESS_SECONDS, Options, Work, as_model, budget, options_of, text_of, tokens_of

__all__ = ["TokenScores", "pll"]

REDUCTIONS = ("sum", "mean", "none")


@dataclass(frozen=True)
class TokenScores:
    r"""One sentence's PLL terms :math:`\log q(x_t \mid \cdot)` (nats), in token order: ``scores``
    (len(tokens),) for ``tokens``, the model's pieces; ``words``, the words as the tokenizer split
    the text, and ``pieces``, for each word the positions of its pieces in ``tokens``."""

    tokens: list
    scores: np.ndarray
    words: list
    pieces: list

    @property
    def total(self) -> float:
        """The PLL of the sentence: the sum of the terms."""
        return float(self.scores.sum())

    def by_word(self) -> np.ndarray:
        """The terms summed over each word's pieces: (len(words),)."""
        return np.array([self.scores[p].sum() for p in self.pieces])


def pll(model, sentences, variant: str = "token", reduction: str = "sum",
        full_softmax: bool = True, *, options: Options = Options()):
    r"""Pseudo-log-likelihood (Salazar et al. 2020) of each sentence under a masked LM.

    .. math:: \mathrm{PLL}(x) = \sum_{t=1}^{n} \log q(x_t \mid x_{\setminus t})

    Parameters
    ----------
    model : MaskedLM, model name or path
        e.g. ``mlmbook.load_mlm("toy")``, ``"bert-base-uncased"`` or a saved model's folder.
    sentences : sequence of str, of word lists or of :class:`mlmbook.Sentence`
        A Sentence is read by its surface tokens.
    variant : ``"token"`` or ``"word_l2r"``
        ``"word_l2r"`` (Kauf & Ivanova 2023) masks a piece together with the later pieces of its
        word.
    reduction : ``"sum"``, ``"mean"`` or ``"none"``
        One number per sentence: the PLL, or the mean term per token (minicons' ``reduction``); or
        ``"none"``: every sentence's terms (:class:`TokenScores`).
    full_softmax : bool
        Softmax over the whole vocabulary, special tokens included (the literature's, minicons'),
        or over words only.
    options : Options
        Reads ``allow_unknown``, ``max_minutes`` and ``scheduler`` (the same numbers either way).

    Returns
    -------
    ndarray (len(sentences),), or list of TokenScores with ``reduction="none"``

    Examples
    --------
    >>> import mlmbook
    >>> lm = mlmbook.load_mlm("toy")                                  # doctest: +SKIP
    >>> scores = mlmbook.pll(lm, ["the farmers near the river often feed the cows ."])
    >>> scores.shape, bool(scores[0] < 0)
    ((1,), True)
    >>> terms = mlmbook.pll(lm, ["the farmers feed the cows ."], reduction="none")[0]
    >>> len(terms.scores) == len(terms.tokens), bool(abs(terms.total - terms.scores.sum()) < 1e-9)
    (True, True)
    >>> mean = mlmbook.pll(lm, ["the farmers feed the cows ."], reduction="mean")[0]
    >>> bool(abs(mean - terms.total / len(terms.tokens)) < 1e-9)
    True
    """
    if reduction not in REDUCTIONS:
        raise ValueError(f"unknown reduction {reduction!r}; use one of {', '.join(REDUCTIONS)}")
    lm = as_model(model)
    sentences = [sentences] if isinstance(sentences, str) else [text_of(s) for s in sentences]
    opts = options_of("pll", options, ("allow_unknown", "max_minutes", "scheduler"))
    check_fit(lm, sentences, allow=opts.allow_unknown)
    lengths = [len(queries.encode_sentence(lm, s)[0]) for s in sentences]  # one pass per token
    for k, n in enumerate(lengths):
        if n > lm.max_length:
            raise InputTooLong(f"sentence {k + 1} has {n} tokens, more than {lm.name} reads at once "
                               f"({lm.max_length}); leave it out or shorten it", k)
    work = Work(f"PLL of {len(sentences)} sentences", sum(lengths),
                sum(n * (n + queries.SPECIALS) for n in lengths))
    long = budget(lm, work, opts.max_minutes, "pll", "score fewer sentences") > PROGRESS_SECONDS
    terms = map_blocks(_pll_block, sentences, lm, variant, full_softmax, long,
                       scheduler=opts.scheduler)
    if reduction == "none":
        encoded = [queries.encode_sentence(lm, s) for s in sentences]
        return [TokenScores(tokens_of(lm, ids), scores, words, pieces)
                for (ids, pieces, words), scores in zip(encoded, terms)]
    return np.array([t.sum() if reduction == "sum" else (t.mean() if len(t) else np.nan) for t in terms])


def _pll_block(sentences, lm, variant, full_softmax, progress=False) -> list:
    """The PLL terms of one block of sentences (on a worker, or here)."""
    return queries.pll_tokens(lm, sentences, variant=variant, full_softmax=full_softmax, progress=progress)
