r"""Does a model fit some text? Unknown pieces and a language (tokenisation) check, before anything is estimated.

A masked LM maps a word it has no pieces for to its unknown token (``[UNK]``, ``<unk>``): every
estimate on such a position is an estimate about ``[UNK]``. And a model can know every piece of a
text yet not its language: an English WordPiece model reads French with 0.7 % unknown pieces, but
splits it into 1.8 pieces per word, and its numbers there are about fragments it was not trained on.
:func:`check_fit` measures, on the sentences a model will read (their surface tokens):

==========================  ==============================================================  ==========
rule                        measured                                                        refused if
==========================  ==============================================================  ==========
unknown pieces              share of the pieces that are the unknown token                  > 10 %
tokenisation                pieces per word (an English model on English: about 1.1–1.3;    > 1.5
                            on French: 1.8)
tokenisation and            pieces per word, and the model's own PLL per piece against a    > 1.25 and
prediction                  uniform guess (:math:`-\log V`) on a small sample                   < −0.5 log V
==========================  ==============================================================  ==========

The PLL per piece alone decides nothing: a language with much freedom per word sits where a model
on a foreign language does (the toy model on its own language scores about :math:`-0.4 \log V`,
a model that was never trained :math:`-\log V`), so it only confirms a doubtful tokenisation.
The language rules need a sample of at least :data:`MIN_WORDS_LANGUAGE` words (a single sentence
with a few rare names can split into many pieces). Above a threshold :func:`check_fit` stops with
one line (:class:`~mlmbook.errors.DataFitError`) naming the numbers, the thresholds and the knob;
with ``allow`` it runs anyway, prints the warning on the build's terminal and returns a :class:`Fit`
whose :meth:`Fit.admonition` shows the same warning as a box on the page.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field, replace
from typing import Iterable

from ..errors import DataFitError, notice
from .sentence import model_words

__all__ = ["Fit", "FitRules", "RULES", "Admonition", "unknown_share", "measure_fit", "check_fit", "MAX_UNKNOWN",
           "MAX_PIECES_PER_WORD",
           "DOUBTFUL_PIECES_PER_WORD", "MIN_PLL_SHARE", "MIN_WORDS_LANGUAGE", "PLL_SAMPLE_PIECES"]

MAX_UNKNOWN = 0.10
"""Largest accepted share of unknown pieces (real BERTs on UD English: < 0.01; the toy model on it: > 0.8)."""
MAX_PIECES_PER_WORD = 1.5
"""Largest accepted pieces per word (English WordPiece on English about 1.1–1.3, on French 1.8)."""
DOUBTFUL_PIECES_PER_WORD = 1.25
"""From here on a tokenisation is doubtful, and the model's PLL per piece decides (:data:`MIN_PLL_SHARE`)."""
MIN_PLL_SHARE = 0.5
r"""A doubtful tokenisation is refused when the model's PLL per piece is below ``-MIN_PLL_SHARE * log V``."""
MIN_WORDS_LANGUAGE = 30
"""The language rules apply to samples of at least this many words."""
PLL_SAMPLE_PIECES = 160
"""The PLL per piece is measured on the first sentences holding about this many pieces (one forward pass each)."""

_UNK_SPELLINGS = ("[UNK]", "<unk>", "<UNK>", "[unk]", "<|unk|>")


class Admonition:
    """A warning box for a page: HTML (``<div class="admonition warning">``, what the book renders) and
    MyST Markdown (a ``{warning}`` directive); ``str()`` is the plain text."""

    def __init__(self, text: str, kind: str = "warning", title: str | None = None):
        self.text, self.kind, self.title = text, kind, title or kind.capitalize()

    def _repr_html_(self) -> str:
        return (f'<div class="admonition {self.kind}"><p class="admonition-title">{html.escape(self.title)}</p>'
                f"<p>{html.escape(self.text)}</p></div>")

    def _repr_markdown_(self) -> str:
        body = self.text.replace("`", "'")
        return f"```{{{self.kind}}} {self.title}\n{body}\n```\n"

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Admonition({self.kind}: {self.text})"


@dataclass(frozen=True)
class Fit:
    """How well a model fits some sentences: its vocabulary, its tokenisation, its predictions.

    Attributes
    ----------
    share : float
        Unknown pieces / all pieces.
    n_unknown, n_pieces : int
    n_words_unknown, n_words : int
        Words (surface tokens) with at least one unknown piece / all words.
    examples : tuple of str
        A few words the model does not know, for the message.
    pll_per_piece : float or None
        The model's mean :math:`\\log q(x_t \\mid x_{\\setminus t})` over the pieces of a small sample
        (nats, full softmax); None when not measured.
    log_v : float
        :math:`\\log V`: minus the PLL per piece of a uniform guess.
    n_sentences : int
    problems : tuple of str
        Each broken rule, in words (empty: the model fits).
    model, treebank : str or None
        How messages name them.
    allowed : bool
        The reader asked to run anyway (``allow_unknown``).
    """

    share: float
    n_unknown: int
    n_pieces: int
    n_words_unknown: int
    n_words: int
    examples: tuple[str, ...]
    pll_per_piece: float | None = None
    log_v: float = float("nan")
    n_sentences: int = 0
    problems: tuple[str, ...] = field(default=())
    model: str | None = None
    treebank: str | None = None
    allowed: bool = False

    @property
    def pieces_per_word(self) -> float:
        """Pieces per word (surface token)."""
        return self.n_pieces / self.n_words if self.n_words else float("nan")

    @property
    def ok(self) -> bool:
        """No rule broken."""
        return not self.problems

    def summary(self) -> str:
        """One line for a page: the measured numbers."""
        text = (f"{self.share:.1%} unknown pieces, {self.pieces_per_word:.2f} pieces per word "
                f"({self.n_words} words of {self.n_sentences} sentences)")
        if self.pll_per_piece is not None:
            text += (f", PLL {self.pll_per_piece:.2f} nats per piece (a uniform guess: "
                     f"{-self.log_v:.2f})")
        return text

    def message(self) -> str:
        """The one-line finding: who does not fit what, and why (empty when the model fits)."""
        if self.ok:
            return ""
        return (f"model {self.model or 'the model'!r} does not fit "
                f"{'treebank ' + repr(self.treebank) if self.treebank else 'these sentences'}: "
                f"{'; '.join(self.problems)}")

    def admonition(self, always: bool = False) -> Admonition | None:
        """The fit as a box for the page: a warning when a rule is broken and the run was allowed anyway
        (``display(fit.admonition())``), else None (or, with ``always``, a note with the numbers)."""
        if self.problems:
            return Admonition(f"{self.message()}. This page ran anyway because allow_unknown is set: its numbers "
                              f"are about a model reading text it does not know, and mean little.")
        if always:
            return Admonition(f"Model {self.model or ''} on {self.treebank or 'these sentences'}: {self.summary()}.",
                              kind="note", title="Model and text")
        return None


def _unk_id(lm) -> int | None:
    tokenizer = getattr(lm, "tokenizer", None)
    unk = getattr(tokenizer, "unk_token_id", None)
    if isinstance(unk, int):
        return unk
    vocab = list(getattr(lm, "vocab", []) or [])
    return next((vocab.index(t) for t in _UNK_SPELLINGS if t in vocab), None)


def _token_ids(lm, sentence) -> tuple[list[str], list[list[int | None]]]:
    """The surface tokens of a sentence (a Sentence, a word list or a plain string) and each one's ids."""
    if isinstance(sentence, str):
        encode_text = getattr(lm, "encode_text", None)
        if encode_text is not None:
            ids, pieces, words = encode_text(sentence)
            return list(words), [[ids[p] for p in ps] for ps in pieces]
        sentence = sentence.split()
    words = model_words(sentence)
    tokens = list(getattr(words, "tokens", words))
    try:
        ids, pieces = lm.encode_words(tokens)
        return tokens, [[ids[p] for p in ps] for ps in pieces]
    except (KeyError, ValueError):      # a closed vocabulary (the exact oracle): token by token
        per = []
        for w in tokens:
            try:
                per.append(list(lm.encode_words([w])[0]))
            except (KeyError, ValueError):
                per.append([None])
        return tokens, per


def _pll_per_piece(lm, encoded: list[list[int]], budget: int) -> float | None:
    """Mean log q(x_t | rest) over the pieces of the first sentences (about ``budget`` pieces)."""
    total, count = 0.0, 0
    for ids in encoded:
        if count >= budget:
            break
        n = len(ids)
        if n < 2 or n > getattr(lm, "max_length", n):
            continue
        rows = [list(ids) for _ in range(n)]
        for t in range(n):
            rows[t][t] = lm.mask_id
        scores = lm.logits(rows, [[t] for t in range(n)], full_softmax=True)[:, 0].double()
        logp = scores.log_softmax(-1)[list(range(n)), list(ids)]
        finite = logp[logp.isfinite()]
        total += float(finite.sum()) - 50.0 * int((~logp.isfinite()).sum())   # an impossible piece: -50 nats
        count += n
    return total / count if count else None


def measure_fit(lm, sentences: Iterable, *, pll: bool = True,
                pll_pieces: int = PLL_SAMPLE_PIECES) -> Fit:
    """Measure, without judging, how ``lm`` fits ``sentences`` (their surface tokens).

    Parameters
    ----------
    lm : MaskedLM
    sentences : iterable
        :class:`~mlmbook.corpus.Sentence` objects (their surface tokens are read), word lists or plain strings.
    pll : bool
        Also measure the model's own PLL per piece on the first sentences (about ``pll_pieces`` pieces, one
        forward pass each); sentences with an unknown piece are measured too.
    pll_pieces : int

    Returns
    -------
    Fit
        With no problems listed (:func:`check_fit` judges).
    """
    unk = _unk_id(lm)
    n_unknown = n_pieces = n_wunk = n_words = n_sent = 0
    examples: list[str] = []
    known_rows: list[list[int]] = []
    for sentence in sentences:
        n_sent += 1
        tokens, per_word = _token_ids(lm, sentence)
        row = []
        for word, word_ids in zip(tokens, per_word):
            bad = sum(i is None or (unk is not None and i == unk) for i in word_ids)
            n_words += 1
            n_pieces += max(len(word_ids), 1)
            n_unknown += bad
            row += word_ids
            if bad:
                n_wunk += 1
                if len(examples) < 5 and word not in examples:
                    examples.append(word)
        if pll and None not in row and sum(len(r) for r in known_rows) < pll_pieces:
            known_rows.append(row)
    share = n_unknown / n_pieces if n_pieces else 0.0
    per_piece = _pll_per_piece(lm, known_rows, pll_pieces) if pll and known_rows else None
    return Fit(share, n_unknown, n_pieces, n_wunk, n_words, tuple(examples), per_piece,
               math.log(max(getattr(lm, "V", 2), 2)), n_sent)


def unknown_share(lm, sentences: Iterable) -> Fit:
    """The share of unknown-token pieces ``lm`` gives on ``sentences`` (:func:`measure_fit` without the PLL).

    A model without an unknown token (the exact oracle) reports words it cannot encode as unknown,
    one piece each.
    """
    return measure_fit(lm, sentences, pll=False)


@dataclass(frozen=True)
class FitRules:
    """The thresholds of :func:`check_fit` (defaults: the module's table).

    Attributes
    ----------
    max_unknown : float
        Largest share of unknown pieces.
    max_pieces_per_word : float
        Largest pieces per word.
    doubtful_pieces_per_word : float
        From here on the model's PLL per piece decides.
    min_pll_share : float
        A doubtful tokenisation is refused when the PLL per piece is below ``-min_pll_share * log V``.
    min_words : int
        The language rules apply to samples of at least this many words.
    pll : bool or ``"auto"``
        Measure the PLL per piece (about :data:`PLL_SAMPLE_PIECES` forward passes): always (True, e.g. to show
        it on a page), never (False: the third rule is not applied), or when the third rule needs it (``"auto"``).
    """

    max_unknown: float = MAX_UNKNOWN
    max_pieces_per_word: float = MAX_PIECES_PER_WORD
    doubtful_pieces_per_word: float = DOUBTFUL_PIECES_PER_WORD
    min_pll_share: float = MIN_PLL_SHARE
    min_words: int = MIN_WORDS_LANGUAGE
    pll: bool | str = "auto"

    def doubtful(self, fit: Fit) -> bool:
        """Whether the third rule needs the PLL per piece to judge ``fit``."""
        return (fit.n_words >= self.min_words and fit.share <= self.max_unknown
                and self.doubtful_pieces_per_word < fit.pieces_per_word <= self.max_pieces_per_word)

    def problems(self, fit: Fit) -> list[str]:
        """Each rule ``fit`` breaks, in words."""
        out = []
        if fit.share > self.max_unknown:
            seen = ", ".join(repr(w) for w in fit.examples)
            out.append(f"{fit.share:.0%} of its word pieces are unknown to it ({fit.n_words_unknown} of "
                       f"{fit.n_words} words, e.g. {seen}; the limit is {self.max_unknown:.0%})")
        if fit.n_words < self.min_words or fit.share > self.max_unknown:
            return out
        ppw, floor = fit.pieces_per_word, -self.min_pll_share * fit.log_v
        if ppw > self.max_pieces_per_word:
            out.append(f"it splits a word into {ppw:.2f} pieces on average (the limit is "
                       f"{self.max_pieces_per_word:.2f}; a model on its own language splits about 1.1-1.3), so it "
                       f"does not read this language whole")
        elif self.doubtful(fit) and fit.pll_per_piece is not None and fit.pll_per_piece < floor:
            out.append(f"it splits a word into {ppw:.2f} pieces (above {self.doubtful_pieces_per_word:.2f}) and "
                       f"predicts them poorly: PLL {fit.pll_per_piece:.2f} nats per piece, below {floor:.2f} "
                       f"({self.min_pll_share:g} of a uniform guess's {-fit.log_v:.2f})")
        return out


RULES = FitRules()
"""The book's rules."""


def check_fit(lm, sentences: Iterable, *, model: str | None = None, treebank: str | None = None,
              allow: bool = False, rules: FitRules = RULES) -> Fit:
    r"""Stop (or warn) when ``lm`` does not fit the sentences it is about to read.

    The rules and thresholds are in the module's table: more than 10 % unknown pieces; more than
    1.5 pieces per word; more than 1.25 pieces per word with a PLL per piece below
    :math:`-0.5 \log V` (the language rules on samples of at least 30 words).

    Parameters
    ----------
    lm : MaskedLM
    sentences : iterable
        The sentences the analysis will use (after its filters): :class:`~mlmbook.corpus.Sentence` objects
        (the model reads their surface tokens), word lists or plain strings.
    model, treebank : str, optional
        How the message names them (default: the model's name, "these sentences").
    allow : bool
        Run anyway (a chapter's ``allow_unknown``): print the warning on the build's terminal and return
        the :class:`Fit`, whose :meth:`~Fit.admonition` puts it on the page.
    rules : FitRules
        The thresholds (default :data:`RULES`, the module's table); ``FitRules(pll=True)`` always measures
        the PLL per piece, to show it on a page.

    Returns
    -------
    Fit
        ``fit.problems`` lists what was broken (only with ``allow``).

    Raises
    ------
    DataFitError
        One line: the model, the treebank, the numbers against their thresholds, and what to do.

    Examples
    --------
    >>> import mlmbook
    >>> lm = mlmbook.load_mlm("toy")                                  # doctest: +SKIP
    >>> mlmbook.check_fit(lm, ["the farmers feed the cows ."]).ok     # doctest: +SKIP
    True
    """
    sentences = list(sentences)
    fit = measure_fit(lm, sentences, pll=rules.pll is True)
    if rules.pll == "auto" and rules.doubtful(fit):
        fit = measure_fit(lm, sentences, pll=True)
    fit = replace(fit, model=model or getattr(lm, "name", None), treebank=treebank, allowed=allow,
                  problems=tuple(rules.problems(fit)))
    if fit.ok:
        return fit
    if not allow:
        raise DataFitError(f"{fit.message()}: its numbers here would be about text it does not read; use a model "
                           f"that knows this language and its words (e.g. bert-base-uncased for English), or run "
                           f"anyway with allow_unknown (-p allow_unknown true in a build, --allow-unknown for a verb)")
    notice(f"warning: {fit.message()}; running anyway because allow_unknown is set")
    return fit
