"""The front door from a treebank to a model: :func:`read_for_model`, the one guarded path from a
CoNLL-U file (or a list of sentences) to a masked LM, for the research API and the chapters alike:
the length policy (:class:`Window`; punctuation is read by the model, not counted), then
:func:`~mlmbook.corpus.fit.check_fit` on the file's first sentences the model reads whole, whatever
the window of words.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import TreebankError
from .conllu import find_treebank, read_conllu
from .fit import Admonition, Fit, check_fit
from .sentence import PUNCT_TAGS, Sentence, Surface, encode, remove_punct

__all__ = ["ModelCorpus", "Window", "read_for_model"]

FIT_SAMPLE = 200
"""The fit check reads the file's first this many sentences that the model reads whole."""


@dataclass(frozen=True)
class Window:
    """Which sentences an analysis reads, by length.

    Attributes
    ----------
    min_words, max_words : int
        Scored (non-punctuation) words of a sentence; ``max_words=None``: no bound but the model's
        window.
    max_pieces : int, optional
        At most this many pieces (the model's ``max_length`` is always a bound).
    drop_punct : bool
        Remove punctuation (:func:`~mlmbook.corpus.remove_punct`) before anything else.
    knob : str or None
        How a message names the option that sets ``max_words`` (``"max_words"``, ``"--max-words"``;
        None when the reader cannot change it).
    """

    min_words: int = 2
    max_words: int | None = None
    max_pieces: int | None = None
    drop_punct: bool = False
    knob: str | None = "max_words"

    def describe(self) -> str:
        """``3–10`` or ``at least 2``."""
        return f"{self.min_words}–{self.max_words}" if self.max_words is not None else f"at least {self.min_words}"


def _length(lm, sentence: Sentence) -> int | None:
    """Pieces of the sentence's surface tokens (None: the model cannot encode it)."""
    try:
        return len(encode(lm, sentence)[0])
    except (KeyError, ValueError):
        return None


@dataclass
class ModelCorpus:
    """The sentences a model reads from a treebank, and everything left out on the way.

    ``sentences`` are kept in the order used (punctuation kept unless ``drop_punct``); ``name`` is
    the file name (``en_ewt-ud-test.conllu``) or ``"the given sentences"``; ``n_read`` sentences
    were read, ``n_outside_words`` left out for their number of words, ``n_outside_window`` for
    more pieces than ``max_pieces`` (the model's window) or not encodable, ``n_cut`` beyond
    ``limit``; ``fit`` is the fit check (None when not checked).
    """

    sentences: list
    name: str
    n_read: int
    n_outside_words: int
    n_outside_window: int
    n_cut: int
    min_words: int
    max_words: int | None
    max_pieces: int
    fit: Fit | None = None
    path: Path | None = field(default=None)

    def __len__(self) -> int:
        return len(self.sentences)

    @property
    def words(self) -> list[Surface]:
        """Each sentence's words as the estimators take them (remembering the surface tokens)."""
        return [s.surface() for s in self.sentences]

    @property
    def tokens(self) -> list[list[str]]:
        """Each sentence's surface tokens (what the model reads, as a plain word list)."""
        return [s.tokens for s in self.sentences]

    def summary(self) -> str:
        """One line for the page: ``kept 16 of 2077 sentences of FILE (1900 outside 3–10 words, 40
        longer than 15 pieces, 121 beyond the first 16)``."""
        window = Window(self.min_words, self.max_words).describe()
        parts = [f"{self.n_outside_words} outside {window} words"]
        if self.n_outside_window:
            parts.append(f"{self.n_outside_window} longer than the model's {self.max_pieces} pieces")
        if self.n_cut:
            parts.append(f"{self.n_cut} beyond the first {len(self.sentences)}")
        return f"kept {len(self.sentences)} of {self.n_read} sentences of {self.name} ({'; '.join(parts)})"

    def admonition(self) -> Admonition | None:
        """The fit warning as a box for the page, or None when the model fits."""
        return self.fit.admonition() if self.fit is not None else None


def read_for_model(lm, treebank: str | os.PathLike | Sequence[Sentence], window: Window | None = None, *,
                   limit: int | None = None, seed: int | None = None, allow_unknown: bool = False) -> ModelCorpus:
    """The sentences of a treebank that ``lm`` will read, through the length policy and the fit
    check.

    Parameters
    ----------
    lm : MaskedLM
    treebank : CoNLL-U name or path, or a list of Sentence
        As for :func:`~mlmbook.corpus.find_treebank` (``"test"`` is UD English EWT test).
    window : Window, optional
        Words per sentence and the rest of the length policy (default ``Window()``: at least 2
        words, any number the model reads whole).
    limit : int, optional
        Keep the first ``limit`` of the sentences that qualify.
    seed : int, optional
        Shuffle the sentences within the window of words (before the model's window and ``limit``)
        with this seed; None keeps the file order.
    allow_unknown : bool
        Passed to :func:`~mlmbook.corpus.fit.check_fit` as ``allow`` (which reads the file's first
        :data:`FIT_SAMPLE` sentences the model reads whole).

    Returns
    -------
    ModelCorpus

    Raises
    ------
    TreebankError
        The file cannot be found or read, or no sentence is left (one line, with the counts and the
        knob).
    DataFitError
        The model does not fit the sentences (:func:`~mlmbook.corpus.fit.check_fit`).

    Examples
    --------
    >>> import mlmbook
    >>> from mlmbook.corpus import Window
    >>> lm = mlmbook.load_mlm("toy")                                  # doctest: +SKIP
    >>> corpus = mlmbook.read_for_model(lm, "test", Window(3, 10), limit=16, seed=0)   # doctest: +SKIP
    >>> corpus.summary()                                              # doctest: +SKIP
    'kept 16 of 2077 sentences of en_ewt-ud-test.conllu (...)'
    """
    window = window or Window()
    if isinstance(treebank, (str, os.PathLike)):
        path = find_treebank(treebank)
        read, name = read_conllu(path), path.name
    else:
        read, name, path = list(treebank), "the given sentences", None
    if read and not all(isinstance(s, Sentence) for s in read):
        raise TypeError("give a CoNLL-U file (a name or a path) or a list of mlmbook.Sentence objects")
    sents = [remove_punct(s) for s in read] if window.drop_punct else list(read)
    upper = window.max_words if window.max_words is not None else 10 ** 9
    scored = [sum(u not in PUNCT_TAGS for u in s.upos) if s.upos else len(s) for s in sents]
    in_words = [s for s, k in zip(sents, scored) if window.min_words <= k <= upper]
    if seed is not None:
        in_words = [in_words[k] for k in np.random.default_rng(seed).permutation(len(in_words))]
    pieces = int(getattr(lm, "max_length", 10 ** 9))
    if window.max_pieces is not None:
        pieces = min(pieces, int(window.max_pieces))
    kept, outside_window, cut = [], 0, 0
    for s in in_words:
        if limit is not None and len(kept) >= limit:
            cut += 1
            continue
        n = _length(lm, s)
        if n is None or n > pieces:
            outside_window += 1
        else:
            kept.append(s)
    if not kept:
        where, words = (str(path) if path is not None else name), window.describe()
        what = ("no sentence at all" if not read else
                f"no sentence of {words} words that the model reads whole (at most {pieces} pieces)")
        knob = f", or change {window.knob} (the most words of a sentence)" if window.knob else ""
        raise TreebankError(f"{what} in {where} ({len(read)} read: {len(sents) - len(in_words)} outside {words} "
                            f"words, {outside_window} longer than {pieces} pieces); give a treebank with such "
                            f"sentences{knob}")
    corpus = ModelCorpus(kept, name, len(read), len(sents) - len(in_words), outside_window, cut,
                         window.min_words, window.max_words, pieces, path=path)
    # the same verdict for every window of words (the kept sentences when the file holds none)
    sample = [s for s in sents[:4 * FIT_SAMPLE] if (_length(lm, s) or pieces + 1) <= pieces][:FIT_SAMPLE]
    corpus.fit = check_fit(lm, sample or kept[:FIT_SAMPLE], treebank=name, allow=allow_unknown)
    return corpus
