r"""Dependency trees read off a masked LM's statistical dependencies, scored by UUAS with an interval."""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from .. import dependencies, stats
from ..corpus import PUNCT_TAGS, Sentence, load_treebank, remove_punct
from ..toy import Grammar
from .models import as_model

__all__ = ["TreeScores", "dependency_trees", "METHODS"]

METHODS = ("cpmi", "cmi")
"""``cpmi``: Hoover et al.'s contextual PMI; ``cmi``: Zhang & Hashimoto's CMI on a top-K grid."""


@dataclass(frozen=True)
class TreeScores:
    """Trees decoded from a model's pairwise scores and their agreement with the gold trees.

    Attributes
    ----------
    uuas : mlmbook.stats.Interval
        Unlabelled undirected attachment score over all sentences, with a bootstrap interval over
        sentences (``uuas.format(3)``; unpacks as ``estimate, low, high``).
    trees, gold : list of set of (int, int)
        Predicted and gold undirected edges per sentence, over the words kept (punctuation removed).
    scores : list of ndarray
        The score matrix of each sentence over its kept words.
    correct, total : ndarray
        Gold edges found, and gold edges, per sentence.
    """

    uuas: stats.Interval
    trees: list
    gold: list
    scores: list
    correct: np.ndarray
    total: np.ndarray


def _sentences(treebank, limit: int | None) -> list[Sentence]:
    if isinstance(treebank, str) and treebank == "toy":
        return Grammar.load("toy").sample(limit or 100, seed=0)
    if isinstance(treebank, (str, os.PathLike)):
        return load_treebank(treebank, drop_punct=False)[:limit]
    return list(treebank)[:limit]


def _kept(sentence: Sentence) -> list[int]:
    """The words scored: all but punctuation (every word when the sentence has no tags)."""
    return [i for i, u in enumerate(sentence.upos or [""] * len(sentence)) if u not in PUNCT_TAGS]


def dependency_trees(model, treebank, method: str = "cpmi", projective: bool = False, limit: int | None = None,
                     level: float = stats.LEVEL) -> TreeScores:
    r"""Read a tree off each sentence's pairwise dependence scores and compare it with the gold tree.

    Every pair of (non-punctuation) words is scored by the model (``method``), the score matrix is
    symmetrised and decoded into a maximum spanning tree (Zhang & Hashimoto 2021; Hoover et al. 2021)
    or, with ``projective``, Eisner's best non-crossing tree; UUAS counts the gold edges recovered:

    .. math:: \mathrm{UUAS} = \frac{\sum_k |P_k \cap G_k|}{\sum_k |G_k|}.

    Parameters
    ----------
    model : MaskedLM, model name or path
    treebank : CoNLL-U path or name, a list of :class:`mlmbook.Sentence`, or ``"toy"``
        ``"toy"`` samples sentences with gold trees from the toy language. The model sees the whole
        sentence; punctuation is scored by nobody and left out of the gold trees.
    method : ``"cpmi"`` or ``"cmi"``
        See :data:`METHODS`; ``"cmi"`` queries a grid of the model's 30 likeliest candidates per position.
    projective : bool
    limit : int, optional
        Use the first ``limit`` sentences.
    level : float
        Level of the interval (default :data:`mlmbook.stats.LEVEL`).

    Returns
    -------
    TreeScores

    Examples
    --------
    >>> import mlmbook
    >>> lm = mlmbook.load_mlm("toy")                                  # doctest: +SKIP
    >>> sents = mlmbook.Grammar.load("toy").sample(4, seed=1)
    >>> res = mlmbook.dependency_trees(lm, sents)
    >>> 0.0 <= res.uuas.estimate <= 1.0, res.uuas.low <= res.uuas.estimate <= res.uuas.high
    (True, True)
    >>> len(res.trees) == len(sents) and all(len(t) == len(g) for t, g in zip(res.trees, res.gold))
    True
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; use one of {', '.join(METHODS)}")
    lm = as_model(model)
    sents = [s for s in _sentences(treebank, limit) if len(_kept(s)) >= 2]
    words, keep = [s.words for s in sents], [_kept(s) for s in sents]
    if method == "cpmi":
        scores = dependencies.cpmi(lm, words, keep)
    else:
        scores = list(dependencies.cmi_grid(lm, words, keep, max_candidates=30))
    trees = [dependencies.decode(M, projective=projective) for M in scores]
    gold = [remove_punct(s).edges() if s.upos else s.edges() for s in sents]
    correct, total = dependencies.uuas_counts(trees, gold)
    return TreeScores(stats.ratio(correct, total, level=level), trees, gold, scores, correct, total)
