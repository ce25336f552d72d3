r"""Dependency trees read off a masked LM's dependence scores, rated by UUAS with an interval."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import dependencies, queries, stats
from ..corpus import ModelCorpus, Window, read_for_model
from ..toy import Grammar
from ..workers.cluster import map_blocks
from .models import PROGRESS_SECONDS, CostError, Options, Work, as_model, budget, options_of

__all__ = ["TreeScores", "dependency_trees", "estimate", "CostError", "METHODS", "PROGRESS_SECONDS"]

METHODS = ("cpmi", "cmi")
"""``cpmi``: Hoover et al.'s contextual PMI; ``cmi``: Zhang & Hashimoto's CMI (exact grid within the
budget, else a top-K grid with its bound: :func:`mlmbook.dependencies.cmi_scores`)."""

MIN_WORDS = 3
"""Sentences with fewer scored words are left out, as in chapter 1: every parser gets them right."""


@dataclass(frozen=True)
class TreeScores:
    """Trees decoded from a model's pairwise scores and their agreement with the gold trees:
    ``uuas`` (:class:`mlmbook.stats.Interval`): the unlabelled undirected attachment score, with a
    bootstrap interval over sentences. Per sentence, over the words kept (punctuation removed):
    ``trees`` and ``gold``, the predicted and gold undirected edges (sets of ``(int, int)``);
    ``scores``, the score matrix; ``correct`` and ``total``, the gold edges found and all. The
    ``estimator``: ``"cpmi"``, ``"exact grid"`` or ``"top-K grid"`` (CMI); ``bound``, for a top-K
    grid, the largest error bound on a pair's CMI (nats; else 0); ``undetermined``, CMI's per
    sentence: whether the pairs' bounds exceed the differences that decide its tree
    (:func:`mlmbook.dependencies.undetermined`; empty for CPMI). ``corpus``: the sentences read,
    what was left out and the fit check (``corpus.fit``)."""

    uuas: stats.Interval
    trees: list
    gold: list
    scores: list
    correct: np.ndarray
    total: np.ndarray
    estimator: str = "cpmi"
    bound: float = 0.0
    corpus: ModelCorpus | None = None
    undetermined: tuple = ()


def dependency_trees(model, treebank, method: str = "cpmi", projective: bool = False,
                     limit: int | None = None, *, options: Options = Options()) -> TreeScores:
    r"""Read a tree off each sentence's pairwise dependence scores and compare it with the gold
    tree.

    Every pair of (non-punctuation) words is scored by the model (``method``), the score matrix is
    symmetrised and decoded into a maximum spanning tree (Zhang & Hashimoto 2021; Hoover et
    al. 2021) or, with ``projective``, Eisner's best non-crossing tree; UUAS counts the gold edges
    recovered:

    .. math:: \mathrm{UUAS} = \frac{\sum_k |P_k \cap G_k|}{\sum_k |G_k|}.

    Sentences of 3..``max_words`` scored words that the model reads whole are kept
    (:func:`mlmbook.corpus.read_for_model`; ``result.corpus.summary()`` counts the rest). A
    multiword token (``don't`` = ``do n't``) is read once and the pair of its words is not scored.

    Parameters
    ----------
    model : MaskedLM, model name or path
    treebank : CoNLL-U path or name, a list of :class:`mlmbook.Sentence`, or ``"toy"``
        ``"toy"`` samples sentences from the toy language. Punctuation is left out of the trees.
    method : ``"cpmi"`` or ``"cmi"`` (:data:`METHODS`)
    projective : bool
    limit : int, optional
        Use the first ``limit`` sentences that qualify.
    options : Options
        Reads ``max_words``, ``allow_unknown``, ``budget_rows`` (per sentence: the exact CMI grid if
        it fits, else top-K), ``window`` (farther pairs score 0), ``max_minutes`` (checked against
        :func:`estimate`), ``scheduler`` and ``level`` (of the UUAS interval).

    Returns
    -------
    TreeScores

    Raises
    ------
    TreebankError
        No sentence left (the message names ``max_words``), or the file cannot be read.
    DataFitError
        The model does not fit the sentences, unless ``allow_unknown``.
    CostError
        The estimate is longer than ``max_minutes``.

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
    opts = options_of("dependency_trees", options, ("allow_unknown", "max_words", "budget_rows",
                                                    "window", "max_minutes", "scheduler", "level"))
    lm = as_model(model)
    window = Window(MIN_WORDS, opts.max_words, knob="max_words (--max-words for the trees verb)")
    toy = isinstance(treebank, str) and treebank == "toy"
    pool = Grammar.load("toy").sample(max(limit or 100, 1), seed=0) if toy else treebank
    corpus = read_for_model(lm, pool, window, limit=limit, allow_unknown=opts.allow_unknown)
    if toy:
        corpus.name = "the toy language"
    scored = dependencies.sample.Scored.of(corpus.sentences)
    estimator, bound, undetermined = "cpmi", 0.0, ()
    ks = [None] * len(scored.words)
    if method != "cpmi":
        full = len(dependencies.pieces.non_special(lm))
        ks = [dependencies.policy.sentence_candidates(len(e.piece_pairs(opts.window)), full, opts.budget_rows)
              for e in dependencies.pieces.encode_all(lm, scored.words, scored.keep)]
    rows, tokens = estimate(lm, scored, method, ks, opts.window)
    work = Work(f"{method.upper()} of {len(scored.words)} sentences", rows, tokens)
    seconds = budget(lm, work, opts.max_minutes, "trees", "read fewer or shorter sentences (--limit, --max-words)")
    blocks = map_blocks(_score_block, list(zip(scored.words, scored.keep, ks)), lm, method,
                        opts.window, seconds > PROGRESS_SECONDS, scheduler=opts.scheduler)
    scores = [m for m, _ in blocks]
    if method != "cpmi":
        estimator = "exact grid" if all(k is None for k in ks) else "top-K grid"
        bound = float(max((b.max() if b.size else 0.0 for _, b in blocks), default=0.0))
        undetermined = tuple(dependencies.undetermined(scores, [b for _, b in blocks]))
    trees = [dependencies.decode(M, projective=projective) for M in scores]
    correct, total = dependencies.uuas_counts(trees, scored.edges)
    return TreeScores(stats.ratio(correct, total, level=opts.level), trees, scored.edges, scores,
                      correct, total, estimator, bound, corpus, undetermined)


def estimate(lm, scored, method: str, ks, window) -> tuple[int, int]:
    """Forward passes the scores will send (CPMI: ``m_a x n_keep`` per word; CMI: ``1 + 2K`` per
    piece pair, ``K`` the sentence's candidates or every non-special token) and their tokens in
    all."""
    full = len(dependencies.pieces.non_special(lm))
    rows = tokens = 0
    for e, k in zip(dependencies.pieces.encode_all(lm, scored.words, scored.keep), ks):
        per_pair = 1 + 2 * (full if k is None else k)
        n = dependencies.cpmi_rows(lm, e) if method == "cpmi" else len(e.piece_pairs(window)) * per_pair
        rows, tokens = rows + n, tokens + n * (len(e.ids) + queries.SPECIALS)
    return rows, tokens


def _score_block(block, lm, method: str, window, progress: bool = False) -> list:
    """``(score matrix, its pairs' CMI error bounds)`` of each ``(words, keep, K)`` of one block (on
    a worker, or here), ``K`` the sentence's CMI candidates (None: its exact grid)."""
    words, keep = [w for w, _, _ in block], [kept for _, kept, _ in block]
    if method == "cpmi":
        return [(m, np.zeros_like(m)) for m in dependencies.cpmi(lm, words, keep, progress=progress)]
    out = [None] * len(block)
    for k in {k for _, _, k in block}:
        idx = [s for s, (_, _, ks) in enumerate(block) if ks == k]
        w, kp = [words[s] for s in idx], [keep[s] for s in idx]
        grid = dependencies.cmi_grid(lm, w, kp, window=window, max_candidates=k,
                                     settings=dependencies.GridSettings(progress=progress))
        enc = dependencies.pieces.encode_all(lm, w, kp)
        for s, m, b in zip(idx, grid, dependencies.policy.word_bounds(enc, grid)):
            out[s] = (m, b)
    return out
