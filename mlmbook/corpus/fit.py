r"""Does a model fit some text? Unknown pieces and the model's own predictions, before anything is
estimated: a model can know every piece of a text (no ``[UNK]``) yet not its language, so
:func:`check_fit` measures, on a sample of the sentences a model will read:

================  ==========================================================  =========================
rule              measured                                                    refused if
================  ==========================================================  =========================
unknown pieces    share of the pieces that are the unknown token              > 10 %
better than       the model's PLL per piece (each piece masked in turn)       above
chance            against a uniform guess over its vocabulary (:math:`-\log V`)  :math:`-0.95 \log V`
context helps     the PLL per piece minus the model's own prediction of the   < 0 nats
                  same pieces with the whole sentence masked
================  ==========================================================  =========================

An untrained model sits at the uniform guess (the second rule); a model on a language it does not
know predicts its pieces worse with their context than without (the third). The pieces per word are
shown, not judged. The prediction rules need a sample of at least ``FitRules.min_words`` words.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass, field, replace
from typing import Iterable

from ..errors import DataFitError, notice
from .sentence import model_words

__all__ = ["Fit", "FitRules", "RULES", "Admonition", "unknown_share", "measure_fit", "check_fit"]

PLL_SAMPLE_PIECES = 160

_UNK_SPELLINGS = ("[UNK]", "<unk>", "<UNK>", "[unk]", "<|unk|>")


class Admonition:
    """A warning box for a page: HTML (``<div class="admonition warning">``, what the book renders)
    and MyST Markdown (a ``{warning}`` directive); ``str()`` is the plain text."""

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

    ``share`` = ``n_unknown / n_pieces``; ``n_words_unknown``: words (surface tokens) with at least
    one unknown piece, ``examples`` a few of them. ``pll_per_piece``: the model's mean
    :math:`\\log q(x_t \\mid x_{\\setminus t})` over the pieces of a small sample (nats, full
    softmax), ``context_free`` the same pieces' mean :math:`\\log q(x_t)` with the whole sentence
    masked (None when not measured); ``log_v`` = :math:`\\log V`, minus the PLL per piece of a
    uniform guess. ``problems``: each broken rule, in words (empty: the model fits); ``allowed``:
    the reader asked to run anyway (``allow_unknown``).
    """

    share: float
    n_unknown: int
    n_pieces: int
    n_words_unknown: int
    n_words: int
    examples: tuple[str, ...]
    pll_per_piece: float | None = None
    context_free: float | None = None
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
                     f"{-self.log_v:.2f}" + ("" if self.context_free is None else
                                            f"; without the context: {self.context_free:.2f}") + ")")
        return text

    def message(self) -> str:
        """The one-line finding: who does not fit what, and why (empty when the model fits)."""
        if self.ok:
            return ""
        return (f"model {self.model or 'the model'!r} does not fit "
                f"{'treebank ' + repr(self.treebank) if self.treebank else 'these sentences'}: "
                f"{'; '.join(self.problems)}")

    def admonition(self, always: bool = False) -> Admonition | None:
        """The fit as a box for the page: a warning when a rule is broken and the run was allowed
        anyway (``display(fit.admonition())``), else None (or, with ``always``, a note with the
        numbers)."""
        if self.problems:
            return Admonition(f"{self.message()}. This page ran anyway because allow_unknown is set: its numbers "
                              f"are about a model reading text it does not know, and mean little.",
                              title="Model and text: no fit")
        if always:
            return Admonition(f"Model {self.model or ''} on {self.treebank or 'these sentences'}: {self.summary()}.",
                              kind="note", title="Model and text")
        return None


def _token_ids(lm, sentence) -> tuple[list[str], list[list[int | None]]]:
    """The surface tokens of a Sentence, a word list or a plain string, and each one's ids."""
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


def _pll_per_piece(lm, encoded: list[list[int]]) -> tuple[float, float] | tuple[None, None]:
    """Mean log q(x_t | rest) over the first sentences' pieces, and their log q(x_t) all masked."""
    total, free, count = 0.0, 0.0, 0

    def score(logits, ids):  # log-probabilities of ids; an impossible piece counts -50 nats
        logp = logits.double().log_softmax(-1)[list(range(len(ids))), list(ids)]
        return float(logp[logp.isfinite()].sum()) - 50.0 * int((~logp.isfinite()).sum())

    for ids in encoded:
        if count >= PLL_SAMPLE_PIECES:
            break
        n = len(ids)
        if n < 2 or n > getattr(lm, "max_length", n):
            continue
        rows = [list(ids) for _ in range(n)]
        for t in range(n):
            rows[t][t] = lm.mask_id
        total += score(lm.logits(rows, [[t] for t in range(n)], full_softmax=True)[:, 0], ids)
        free += score(lm.logits([[lm.mask_id] * n], [list(range(n))], full_softmax=True)[0], ids)
        count += n
    return (total / count, free / count) if count else (None, None)


def measure_fit(lm, sentences: Iterable, *, pll: bool = True) -> Fit:
    """Measure, without judging, how ``lm`` fits ``sentences`` (a :class:`Fit` with no problems
    listed); with ``pll``, also the model's PLL per piece on the first sentences it can encode
    (about :data:`PLL_SAMPLE_PIECES` pieces, two forward passes a sentence)."""
    tokenizer = getattr(lm, "tokenizer", None)
    unk = getattr(tokenizer, "unk_token_id", None)
    if not isinstance(unk, int):
        vocab = list(getattr(lm, "vocab", []) or [])
        unk = next((vocab.index(t) for t in _UNK_SPELLINGS if t in vocab), None)
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
        if pll and None not in row and sum(len(r) for r in known_rows) < PLL_SAMPLE_PIECES:
            known_rows.append(row)
    share = n_unknown / n_pieces if n_pieces else 0.0
    try:
        per_piece, free = _pll_per_piece(lm, known_rows) if pll and known_rows else (None, None)
    except NotImplementedError:         # a tokenizer alone (a build's toy check): no predictions
        per_piece, free = None, None
    return Fit(share, n_unknown, n_pieces, n_wunk, n_words, tuple(examples), per_piece, free,
               math.log(max(getattr(lm, "V", 2), 2)), n_sent)


def unknown_share(lm, sentences: Iterable) -> Fit:
    """The share of unknown-token pieces ``lm`` gives on ``sentences`` (:func:`measure_fit` without
    the PLL); a word a model without an unknown token cannot encode counts as one unknown piece."""
    return measure_fit(lm, sentences, pll=False)


@dataclass(frozen=True)
class FitRules:
    """The thresholds of :func:`check_fit` (defaults: the module's table); ``pll``: measure the PLL
    per piece always (True), never (False: no prediction rule) or when those rules apply
    (``"auto"``)."""

    max_unknown: float = 0.10       # real BERTs on UD English: < 0.01; the toy model on it: > 0.8
    min_gain_share: float = 0.05
    min_context_gain: float = 0.0
    min_words: int = 30
    pll: bool | str = "auto"

    def judges_prediction(self, fit: Fit) -> bool:
        """Whether the prediction rules apply (enough words, not already refused for unknowns)."""
        return fit.n_words >= self.min_words and fit.share <= self.max_unknown

    def problems(self, fit: Fit) -> list[str]:
        """Each rule ``fit`` breaks, in words."""
        out = []
        if fit.share > self.max_unknown:
            seen = ", ".join(repr(w) for w in fit.examples)
            out.append(f"{fit.share:.0%} of its word pieces are unknown to it ({fit.n_words_unknown} of "
                       f"{fit.n_words} words, e.g. {seen}; the limit is {self.max_unknown:.0%})")
        if not self.judges_prediction(fit) or fit.pll_per_piece is None:
            return out
        floor = -(1 - self.min_gain_share) * fit.log_v
        if fit.pll_per_piece < floor:
            out.append(f"it predicts the text's pieces no better than chance: PLL {fit.pll_per_piece:.2f} nats "
                       f"per piece, below {floor:.2f} (a uniform guess over its {math.exp(fit.log_v):,.0f} "
                       f"pieces: {-fit.log_v:.2f}; an untrained or damaged model sits there)")
        elif fit.context_free is not None and fit.pll_per_piece - fit.context_free < self.min_context_gain:
            out.append(f"the context does not help it: PLL {fit.pll_per_piece:.2f} nats per piece with the "
                       f"context, {fit.context_free:.2f} with the whole sentence masked, so it does not read "
                       f"this language ({fit.pieces_per_word:.2f} pieces per word)")
        return out


RULES = FitRules()


def check_fit(lm, sentences: Iterable, *, model: str | None = None, treebank: str | None = None,
              allow: bool = False, rules: FitRules = RULES) -> Fit:
    """Stop (or warn) when ``lm`` does not fit the sentences it is about to read (the rules: the
    module's table).

    Parameters
    ----------
    lm : MaskedLM
    sentences : iterable
        The sentences the analysis will use (after its filters): :class:`~mlmbook.corpus.Sentence`
        objects (the model reads their surface tokens), word lists or plain strings.
    model, treebank : str, optional
        How the message names them (default: the model's name, "these sentences").
    allow : bool
        Run anyway (a chapter's ``allow_unknown``): print the warning on the build's terminal and
        return the :class:`Fit`, whose :meth:`~Fit.admonition` puts it on the page.
    rules : FitRules
        The thresholds (default :data:`RULES`, the module's table); ``FitRules(pll=True)`` measures
        the PLL per piece even on a sample too small to judge, to show it on a page.

    Returns
    -------
    Fit
        ``fit.problems`` lists what was broken (only with ``allow``).

    Raises
    ------
    DataFitError
        One line: the model, the treebank, the numbers against their thresholds, and what to do.
    """
    sentences = list(sentences)
    fit = measure_fit(lm, sentences, pll=rules.pll is True)
    if rules.pll == "auto" and rules.judges_prediction(fit):
        fit = measure_fit(lm, sentences, pll=True)
    fit = replace(fit, model=model or getattr(lm, "name", None), treebank=treebank, allowed=allow,
                  problems=tuple(rules.problems(fit)))
    if fit.ok:
        return fit
    if not allow:
        raise DataFitError(f"{fit.message()}: its numbers here would be about text it does not read; use a model "
                           f"trained on this text's language, or run anyway with allow_unknown (-p allow_unknown "
                           f"true in a build, --allow-unknown for a verb)")
    notice(f"warning: {fit.message()}; running anyway because allow_unknown is set")
    return fit
