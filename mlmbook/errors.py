"""Every error mlmbook raises on purpose — one base class, one line of cause and remedy each — and
:func:`notice`, the one way to print a one-line message the reader must see. A reader catches
:class:`MLMBookError` to tell "my input was wrong" from a bug (any other exception); an error about
a file carries ``path`` and ``lineno`` (1-based; None if not a line).
"""
from __future__ import annotations

import os
import sys

__all__ = ["notice", "MLMBookError", "ModelLoadError", "TreebankError", "TreebankNotFoundError", "GrammarError",
           "DataFitError", "InputTooLong", "BuildError", "UsageError", "ChapterFailed", "BrowserMissing"]


class MLMBookError(Exception):
    """Base of every deliberate mlmbook error; the message is one line with cause and remedy."""


class _Located(MLMBookError):
    """An error about a place in a file: the message starts with ``path:lineno:``."""

    def __init__(self, message: str, path: str | os.PathLike | None = None, lineno: int | None = None):
        self.path = None if path is None else str(path)
        self.lineno = lineno
        where = "" if path is None else (f"{path}:{lineno}: " if lineno else f"{path}: ")
        super().__init__(where + message)


class ModelLoadError(MLMBookError, RuntimeError):
    """A model or tokenizer could not be used; the message says why and what to do."""


class TreebankError(_Located, ValueError):
    """A CoNLL-U file is malformed or unusable, or a treebank cannot be found."""


class TreebankNotFoundError(TreebankError, FileNotFoundError):
    """A treebank file could not be found (also a :class:`FileNotFoundError`)."""


class GrammarError(_Located, ValueError):
    """A grammar file is malformed: unknown symbol, rules that do not sum to one, bad field."""


class DataFitError(MLMBookError, ValueError):
    """A model and a treebank do not fit: the model knows too few of the sentences' tokens."""


class InputTooLong(MLMBookError, ValueError):
    """A sentence longer than the model reads at once; ``index`` is its place (0, 1, ...)."""

    def __init__(self, message: str, index: int):
        super().__init__(message)
        self.index = index


class BuildError(MLMBookError):
    """A one-line, user-facing error of the build (bad chapter, bad parameter, rendering failed)."""


class UsageError(BuildError):
    """A bad command-line argument: unknown chapter or parameter, wrong type."""


class ChapterFailed(BuildError):
    """A chapter raised while executing; the message names the chapter and the cell."""


class BrowserMissing(MLMBookError, RuntimeError):
    """No Chromium to drive the site check; the message says how to install one."""


def notice(message: str) -> None:
    """Print a one-line notice on the page (the cell's stderr) *and* on the build's terminal (the
    kernel process's ``sys.__stderr__``); once where both are the same stream."""
    print(message, file=sys.stderr, flush=True)
    terminal = sys.__stderr__
    if terminal is not None and terminal is not sys.stderr:
        print(message, file=terminal, flush=True)
