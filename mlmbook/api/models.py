"""What the research API accepts (:func:`as_model`, :func:`text_of`), the one cost check
(:func:`budget`) and how a call runs (:class:`Options`); every call's text passes
:func:`mlmbook.check_fit` first."""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import NamedTuple

from .. import queries
from ..corpus import Sentence, check_fit
from ..dependencies.pieces import WINDOW
from ..dependencies.policy import BUDGET_ROWS
from ..errors import MLMBookError, notice
from ..models.base import MaskedLM
from ..models.load import load_mlm
from ..stats import LEVEL

__all__ = ["as_model", "tokens_of", "text_of", "on_text", "Work", "budget", "CostError",
           "PROGRESS_SECONDS", "Options", "options_of"]

PROGRESS_SECONDS = 30
"""An estimate longer than this is printed before the work, and the work shows its progress."""
SMALL_ROWS = 256
"""Work of at most this many forward passes is not estimated (measuring would cost more)."""


class CostError(MLMBookError, ValueError):
    """A run whose estimate is longer than the limit it was given; the message has the estimate."""


_loaded = lru_cache(maxsize=4)(load_mlm)


def as_model(model) -> MaskedLM:
    """``model`` itself when it is a masked LM, else ``load_mlm(model)`` (once per process)."""
    if isinstance(model, (str, os.PathLike)):
        return _loaded(os.fspath(model))
    if not isinstance(model, MaskedLM):
        raise TypeError(f"expected a masked LM, a model name or a path, got {type(model).__name__}; "
                        f"load one with mlmbook.load_mlm(...)")
    return model


def tokens_of(lm: MaskedLM, ids) -> list[str]:
    return [lm.vocab[int(t)] for t in ids]


def text_of(sentence):
    """A string or word list as given; a :class:`~mlmbook.corpus.Sentence` as its surface tokens."""
    return sentence.tokens if isinstance(sentence, Sentence) else sentence


def on_text(call: str, model, text, options: Options, reads=("allow_unknown", "max_minutes")):
    """``(lm, ids, Options)`` of a ``call`` on one text: the model, the text's token ids (after
    :func:`mlmbook.check_fit`: a DataFitError unless ``allow_unknown``) and the call's options."""
    lm = as_model(model)
    text = text_of(text)
    opts = options_of(call, options, reads)
    check_fit(lm, [text], allow=opts.allow_unknown)
    return lm, queries.encode_sentence(lm, text)[0], opts


def took(seconds: float) -> str:
    """``"42 s"``, ``"3.5 min"`` or ``"2.1 h"``."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min" if seconds < 7200 else \
        f"{seconds / 3600:.1f} h"


class Work(NamedTuple):
    """What a call will send: ``rows`` forward passes of ``tokens`` tokens in all (``what``)."""

    what: str
    rows: int
    tokens: int


def budget(lm: MaskedLM, work: Work, max_minutes: float | None, verb: str, smaller: str) -> float:
    """The one cost check: the estimated seconds of the :class:`Work` at the model's throughput
    measured now (0 for at most :data:`SMALL_ROWS` rows); printed when longer than
    :data:`PROGRESS_SECONDS`, a :class:`CostError` naming ``--max-minutes`` of ``verb`` and
    ``smaller`` (how to ask for less) when longer than ``max_minutes`` (None: no limit)."""
    if work.rows <= SMALL_ROWS:
        return 0.0
    seconds = work.tokens / queries.tokens_per_second(lm)
    text = f"{work.what}: about {work.rows:,} forward passes, estimated {took(seconds)} here"
    if max_minutes is not None and seconds > 60 * max_minutes:
        raise CostError(f"{text}, above the limit of {max_minutes:g} min; allow it with max_minutes "
                        f"(--max-minutes {math.ceil(seconds / 60)} for the {verb} verb), or {smaller}, or spread "
                        f"the work over a cluster (--scheduler)")
    if seconds > PROGRESS_SECONDS:
        notice(f"note: {text}")
    return seconds


@dataclass(frozen=True)
class Options:
    """How a research API call runs, given as its keyword-only ``options=`` (each call reads the
    fields that apply to it and refuses any other set away from its default): ``allow_unknown``,
    run even when the model does not fit the text (:func:`mlmbook.check_fit`: unknown pieces,
    predictions no better than chance or made worse by the context; the default stops with one
    line); ``max_words``, read sentences of at most this many scored words
    (:func:`mlmbook.read_for_model`); ``budget_rows``, forward passes each sentence's CMI grid may
    spend (:func:`mlmbook.dependencies.cmi_scores`; default chapter 1's full profile per sentence);
    ``window``, the largest distance, in pieces, between two positions whose CMI is computed;
    ``scheduler``, a Dask cluster (address or ``distributed.Client``) to spread the work over;
    ``max_minutes``, refuse, before any work, a call estimated longer (:func:`budget`; None: no
    limit); ``seed``, of the call's random draws (masked positions, chains); ``level``, of an
    interval the call returns."""

    allow_unknown: bool = False
    max_words: int | None = None
    budget_rows: int = BUDGET_ROWS
    window: int | None = WINDOW
    scheduler: object = None
    max_minutes: float | None = None
    seed: int = 0
    level: float = LEVEL


def options_of(call: str, options: Options, reads: tuple = ("allow_unknown",)) -> Options:
    """``options`` when ``call`` reads every field set away from its default; else a TypeError."""
    if not isinstance(options, Options):
        raise TypeError(f"{call}(options=...) takes an mlmbook.Options, not {type(options).__name__}")
    unread = [f.name for f in fields(Options) if f.name not in reads
              and getattr(options, f.name) != getattr(Options, f.name)]
    if unread:
        raise TypeError(f"{call}() does not read the option {unread[0]!r}; "
                        f"the options it reads are {', '.join(reads)}")
    return options
