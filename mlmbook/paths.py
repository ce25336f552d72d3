"""Where mlmbook keeps things: the repository, the model cache, data and build output.

Every location can be overridden by an environment variable, so that a chapter
executed by the build, a test and a reader's own notebook all agree.

=================  ==========================================  =========================
variable           meaning                                     default
=================  ==========================================  =========================
``MLMBOOK_ROOT``   the book's repository (``_toc.yml``, book/)  found from the cwd
``MLMBOOK_CACHE``  trained models and other derived files      ``~/.cache/mlmbook``
``MLMBOOK_DATA``   treebanks and other input data              ``<root>/data``
=================  ==========================================  =========================
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir", "data_dir", "repo_root", "find_root"]


def _is_book_root(path: Path) -> bool:
    return (path / "_toc.yml").is_file() and (path / "book").is_dir()


def find_root(start: str | os.PathLike | None = None) -> Path | None:
    """Return the nearest directory at or above ``start`` that holds a book.

    A book root is a directory with a ``_toc.yml`` file and a ``book/`` folder.

    Parameters
    ----------
    start : path-like, optional
        Where to start looking (default: the current working directory).

    Returns
    -------
    pathlib.Path or None
        The book root, or None when there is none above ``start``.
    """
    here = Path(start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if _is_book_root(candidate):
            return candidate
    return None


def repo_root() -> Path:
    """Return the repository root of the book.

    ``$MLMBOOK_ROOT`` if set (the build sets it for every chapter), else the book
    root above the current directory, else the checkout this package lives in.

    Returns
    -------
    pathlib.Path
        The root; it may lack a ``_toc.yml`` when mlmbook was installed from a wheel.
    """
    env = os.environ.get("MLMBOOK_ROOT")
    if env:
        return Path(env).expanduser().resolve()
    found = find_root() or find_root(Path(__file__).parent)
    return found if found is not None else Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
    """Return the model cache directory (``$MLMBOOK_CACHE``, default ``~/.cache/mlmbook``).

    The directory is not created here; writers create what they need.
    """
    env = os.environ.get("MLMBOOK_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "mlmbook"


def data_dir() -> Path:
    """Return the data directory (``$MLMBOOK_DATA``, default ``<repo root>/data``)."""
    env = os.environ.get("MLMBOOK_DATA")
    return Path(env).expanduser() if env else repo_root() / "data"
