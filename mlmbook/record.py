"""Recording a chapter's headline numbers.

A chapter calls ``record("uuas", 0.61)``. The value is

* kept in memory (:func:`recorded`),
* written to ``$MLMBOOK_RESULTS/<chapter>.json`` when the build set ``MLMBOOK_RESULTS``
  and ``MLMBOOK_CHAPTER`` (tests and ``python -m mlmbook results`` read these files),
* glued with :func:`myst_nb.glue` (not displayed) when running inside a kernel, so the
  prose can cite it: ``{glue:text}`uuas:.3f```.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import tempfile
from pathlib import Path

__all__ = ["record", "recorded", "load_results", "results_path"]

_RESULTS: dict[str, object] = {}


def _plain(value):
    """Convert numpy/torch scalars and arrays to plain JSON-compatible Python objects."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()  # numpy scalar or array, torch tensor
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"cannot record a non-finite number ({value})")
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    raise TypeError(f"cannot record a value of type {type(value).__name__}; "
                    "use a number, a string or a list of them")


def results_path(chapter: str | None = None) -> Path | None:
    """Return the results file of ``chapter`` (default ``$MLMBOOK_CHAPTER``), or None.

    None means the environment does not say where results go (not under the build).
    """
    directory = os.environ.get("MLMBOOK_RESULTS")
    chapter = chapter or os.environ.get("MLMBOOK_CHAPTER")
    if not directory or not chapter:
        return None
    return Path(directory) / f"{chapter}.json"


def load_results(chapter: str | None = None, directory: str | os.PathLike | None = None) -> dict:
    """Read the recorded results of one chapter.

    Parameters
    ----------
    chapter : str, optional
        Chapter slug such as ``"01_dependencies"`` (default ``$MLMBOOK_CHAPTER``).
    directory : path-like, optional
        Results directory (default ``$MLMBOOK_RESULTS``).

    Returns
    -------
    dict
        Key → value; empty when nothing was recorded.
    """
    if directory is not None:
        path = Path(directory) / f"{chapter}.json"
    else:
        path = results_path(chapter)
    if path is None or not path.is_file():
        return {}
    return json.loads(path.read_text())


def _write_atomic(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _glue(key: str, value) -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    if get_ipython() is None:
        return
    from myst_nb import glue

    glue(key, value, display=False)


def record(key: str, value):
    """Record one headline number (or string, or list) of the running chapter.

    Parameters
    ----------
    key : str
        Name the prose and the tests use, e.g. ``"uuas"``; letters, digits, ``_``, ``-``, ``.``.
    value : number, str, bool, or list/dict of those
        numpy and torch scalars/arrays are converted to plain Python values.

    Returns
    -------
    object
        The stored (plain) value, so ``x = record("x", compute())`` reads naturally.
    """
    if not isinstance(key, str) or not key or any(c in key for c in " :/\\`"):
        raise ValueError(f"invalid result key {key!r}: no spaces, ':', '/', '\\' or '`'")
    value = _plain(value)
    _RESULTS[key] = value
    path = results_path()
    if path is not None:
        data = load_results(path.stem, path.parent)
        data[key] = value
        _write_atomic(path, data)
    _glue(key, value)
    return value


def recorded() -> dict:
    """Return a copy of everything recorded in this process."""
    return dict(_RESULTS)


def not_measured(*keys: str, value=float("nan")) -> None:
    """Glue placeholders (``nan`` or e.g. ``"n/a"``) for numbers this run could not measure.

    With a real model a chapter skips its truth comparisons; their numbers are *not recorded*
    (tests never see them), but the prose still cites them, so the page needs something under
    each name to render.
    """
    for key in keys:
        _glue(key, value)
