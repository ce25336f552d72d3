r"""Dependency trees read off a masked LM's statistical dependencies, scored by UUAS with an interval."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import dependencies, stats
from ..corpus import ModelCorpus, Window, read_for_model
from ..toy import Grammar
from ..workers.cluster import map_blocks
from .models import as_model, options_of

__all__ = ["TreeScores", "dependency_trees", "METHODS"]

METHODS = ("cpmi", "cmi")
"""``cpmi``: Hoover et al.'s contextual PMI; ``cmi``: Zhang & Hashimoto's CMI (exact grid within the budget,
else a top-K grid with its bound: :func:`mlmbook.dependencies.cmi_scores`)."""

MIN_WORDS = 3
"""Sentences with fewer scored words are left out, as in chapter 1: every parser gets them right."""


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
    estimator : str
        ``"cpmi"``, ``"exact grid"`` or ``"top-K grid"`` (CMI).
    bound : float
        For a top-K CMI grid, the largest error bound on a pair's CMI (nats); 0 otherwise.
    corpus : mlmbook.corpus.ModelCorpus
        The sentences read and what was left out (``corpus.summary()``), with the fit check (``corpus.fit``).
    """

    uuas: stats.Interval
    trees: list
    gold: list
    scores: list
    correct: np.ndarray
    total: np.ndarray
    estimator: str = "cpmi"
    bound: float = 0.0
    corpus: ModelCorpus | None = None


def _pool(treebank, limit: int | None):
    if isinstance(treebank, str) and treebank == "toy":
        return Grammar.load("toy").sample(max(limit or 100, 1), seed=0)
    return treebank


def dependency_trees(model, treebank, method: str = "cpmi", projective: bool = False, limit: int | None = None,
                     level: float = stats.LEVEL, **options) -> TreeScores:
    r"""Read a tree off each sentence's pairwise dependence scores and compare it with the gold tree.

    Every pair of (non-punctuation) words is scored by the model (``method``), the score matrix is
    symmetrised and decoded into a maximum spanning tree (Zhang & Hashimoto 2021; Hoover et al. 2021)
    or, with ``projective``, Eisner's best non-crossing tree; UUAS counts the gold edges recovered:

    .. math:: \mathrm{UUAS} = \frac{\sum_k |P_k \cap G_k|}{\sum_k |G_k|}.

    The sentences go through the book's front door (:func:`mlmbook.corpus.read_for_model`): sentences of
    3..``max_words`` scored words that the model reads whole (its window) are kept, with counts of what was
    left out (``result.corpus.summary()``), and the model must fit them (:func:`mlmbook.check_fit`). The model
    reads the surface text: a multiword token (``don't`` = ``do n't``) is read once, its words share its
    pieces, and their pair is not scored.

    Parameters
    ----------
    model : MaskedLM, model name or path
    treebank : CoNLL-U path or name, a list of :class:`mlmbook.Sentence`, or ``"toy"``
        ``"toy"`` samples sentences with gold trees from the toy language. The model sees the whole
        sentence; punctuation is scored by nobody and left out of the gold trees.
    method : ``"cpmi"`` or ``"cmi"``
        See :data:`METHODS`.
    projective : bool
    limit : int, optional
        Use the first ``limit`` sentences that qualify.
    level : float
        Level of the interval (default :data:`mlmbook.stats.LEVEL`).
    options : keyword options
        ``max_words``: keep sentences of at most this many scored words (default: any the model reads
        whole); ``allow_unknown``: run even when the model does not fit the sentences (the result's
        ``corpus.fit`` says how badly); ``budget_rows``: forward passes the CMI grid may spend (chapter 1's
        rule: the exact grid if it fits, else top-K; default 140,000); ``window``: the largest distance, in
        pieces, between two positions whose CMI is computed (default 9; farther pairs score 0);
        ``scheduler``: a Dask cluster (its scheduler's address, or a client) to spread the sentences' scores
        over, in blocks of :data:`mlmbook.workers.cluster.BLOCK` (computed in the same blocks here; the CMI
        estimator chosen for all the sentences at once): the same numbers either way.

    Returns
    -------
    TreeScores

    Raises
    ------
    TreebankError
        No sentence left (the message names ``max_words``), or the file cannot be read.
    DataFitError
        The model does not fit the sentences, unless ``allow_unknown``.

    Examples
    --------
    >>> import mlmbook
    >>> lm = mlmbook.load_mlm("toy")                                  # doctest: +SKIP
    >>> sents = mlmbook.Grammar.load("toy").sample(4, seed=1)
    >>> res = mlmbook.dependency_trees(lm, sents)
    >>> 0.0 <= res.uuas.estimate <= 1.0, res.uuas.low <= res.uuas.estimate <= res.uuas.high
    (True, True)
    >>> len(res.trees) == len(res.corpus) and all(len(t) == len(g) for t, g in zip(res.trees, res.gold))
    True
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; use one of {', '.join(METHODS)}")
    scheduler = options.pop("scheduler", None)
    opts = options_of("dependency_trees", options, ("allow_unknown", "max_words", "budget_rows", "window"))
    lm = as_model(model)
    window = Window(MIN_WORDS, opts.max_words, knob="max_words (--max-words for the trees verb)")
    corpus = read_for_model(lm, _pool(treebank, limit), window, limit=limit,
                            allow_unknown=opts.allow_unknown)
    if isinstance(treebank, str) and treebank == "toy":
        corpus.name = "the toy language"
    scored = dependencies.sample.Scored.of(corpus.sentences)
    estimator, bound = "cpmi", 0.0
    k = None if method == "cpmi" else dependencies.cmi_candidates(lm, scored.words, scored.keep,
                                                                   budget_rows=opts.budget_rows, window=opts.window)
    blocks = map_blocks(_score_block, list(zip(scored.words, scored.keep)), lm, method, k, opts.window,
                        scheduler=scheduler)
    scores = [m for m, _ in blocks]
    if method != "cpmi":
        estimator = "exact grid" if k is None else "top-K grid"
        bound = 0.0 if k is None else float(max((b for _, b in blocks), default=0.0))
    trees = [dependencies.decode(M, projective=projective) for M in scores]
    correct, total = dependencies.uuas_counts(trees, scored.edges)
    return TreeScores(stats.ratio(correct, total, level=level), trees, scored.edges, scores, correct, total,
                      estimator, bound, corpus)


def _score_block(block, lm, method: str, k: int | None, window) -> list:
    """``(score matrix, CMI error bound)`` of each ``(words, keep)`` of one block (on a worker, or here),
    ``k`` the CMI candidates chosen for all the sentences (None: the exact grid)."""
    words, keep = [w for w, _ in block], [kept for _, kept in block]
    if method == "cpmi":
        return [(m, 0.0) for m in dependencies.cpmi(lm, words, keep)]
    grid = dependencies.cmi_grid(lm, words, keep, window=window, max_candidates=k)
    return [(m, float(grid.max_error_bound)) for m in grid]
