"""Does a model know the words of a treebank? The share of unknown pieces, checked before a chapter runs.

A masked LM maps a word it has no pieces for to its unknown token (``[UNK]``, ``<unk>``).
Every estimate on such a position is an estimate about ``[UNK]``, so a model that does
not cover a treebank (the toy model on real English: most tokens unknown) gives numbers
that look fine and mean nothing. :func:`check_fit` measures the share and stops a chapter
with a one-line :class:`~mlmbook.errors.DataFitError` above a threshold, or, when the
reader explicitly allows it, prints a warning on the page and on the build's terminal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

from ..errors import DataFitError, notice

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["Fit", "unknown_share", "check_fit", "MAX_UNKNOWN"]

MAX_UNKNOWN = 0.10
"""Default largest share of unknown pieces a chapter accepts (real BERTs on UD English: < 0.01)."""

_UNK_SPELLINGS = ("[UNK]", "<unk>", "<UNK>", "[unk]", "<|unk|>")


@dataclass(frozen=True)
class Fit:
    """How well a model's vocabulary covers some sentences.

    Attributes
    ----------
    share : float
        Unknown pieces / all pieces.
    n_unknown, n_pieces : int
    n_words_unknown, n_words : int
        Words with at least one unknown piece / all words.
    examples : tuple of str
        A few words the model does not know, for the message.
    """

    share: float
    n_unknown: int
    n_pieces: int
    n_words_unknown: int
    n_words: int
    examples: tuple[str, ...]


def _unk_id(lm: "MaskedLM") -> int | None:
    tokenizer = getattr(lm, "tokenizer", None)
    unk = getattr(tokenizer, "unk_token_id", None)
    if isinstance(unk, int):
        return unk
    vocab = list(getattr(lm, "vocab", []) or [])
    return next((vocab.index(t) for t in _UNK_SPELLINGS if t in vocab), None)


def unknown_share(lm: "MaskedLM", sentences: Iterable[Sequence[str] | object]) -> Fit:
    """Measure the share of unknown-token pieces ``lm`` gives on ``sentences``.

    Parameters
    ----------
    lm : MaskedLM
        Any model of the package (its :meth:`encode_words`; the unknown id comes from its
        tokenizer or its vocabulary).
    sentences : iterable
        :class:`~mlmbook.corpus.Sentence` objects or word lists.

    Returns
    -------
    Fit
        A model without an unknown token (the exact oracle) reports words it cannot
        encode as unknown, one piece each.
    """
    unk = _unk_id(lm)
    n_unknown = n_pieces = n_wunk = n_words = 0
    examples: list[str] = []
    for sentence in sentences:
        words = list(getattr(sentence, "words", sentence))
        try:
            ids, pieces = lm.encode_words(words)
            per_word = [[ids[p] for p in ps] for ps in pieces]
        except (KeyError, ValueError):  # a closed vocabulary (the exact oracle): word by word
            per_word = []
            for w in words:
                try:
                    per_word.append(list(lm.encode_words([w])[0]))
                except (KeyError, ValueError):
                    per_word.append([None])
        for word, word_ids in zip(words, per_word):
            bad = sum(i is None or (unk is not None and i == unk) for i in word_ids)
            n_words += 1
            n_pieces += max(len(word_ids), 1)
            n_unknown += bad
            if bad:
                n_wunk += 1
                if len(examples) < 5 and word not in examples:
                    examples.append(word)
    share = n_unknown / n_pieces if n_pieces else 0.0
    return Fit(share, n_unknown, n_pieces, n_wunk, n_words, tuple(examples))


def check_fit(lm: "MaskedLM", sentences: Iterable, *, model: str, treebank: str,
              max_unknown: float = MAX_UNKNOWN, allow: bool = False) -> Fit:
    """Stop (or warn) when ``lm`` does not know the words of the chosen sentences.

    Parameters
    ----------
    lm : MaskedLM
    sentences : iterable
        The sentences the chapter will use (after its filters).
    model, treebank : str
        How the message names them (the chapter's ``model`` and ``treebank`` parameters).
    max_unknown : float
        Largest accepted share of unknown pieces.
    allow : bool
        Run anyway: print the warning on the page and on the build's terminal instead of
        raising (a chapter passes its ``allow_unknown`` parameter here).

    Returns
    -------
    Fit

    Raises
    ------
    DataFitError
        One line naming the model, the treebank, the share and what to do.
    """
    fit = unknown_share(lm, sentences)
    if fit.share <= max_unknown:
        return fit
    seen = ", ".join(repr(w) for w in fit.examples)
    what = (f"model {model!r} does not know {fit.share:.0%} of the word pieces of treebank {treebank!r} "
            f"({fit.n_words_unknown} of {fit.n_words} words, e.g. {seen}; the limit is {max_unknown:.0%}), "
            f"so its numbers on it would be about [UNK]")
    if not allow:
        raise DataFitError(f"{what}: use a model whose vocabulary covers the treebank "
                           f"(e.g. -p model bert-base-uncased), or -p allow_unknown true to run anyway")
    notice(f"warning: {what}; running anyway because allow_unknown is set")
    return fit
