"""Recording a chapter's headline numbers: ``record("uuas", 0.61)`` keeps the value in memory
(:func:`recorded`), writes it to ``$MLMBOOK_RESULTS/<chapter>.json`` under the build (which sets
``MLMBOOK_RESULTS`` and ``MLMBOOK_CHAPTER``) and, in a kernel, glues it (:func:`myst_nb.glue`, not
displayed) for the prose: ``{glue:text}`uuas:.3f```. A quantity a run cannot measure is declared
with :func:`not_measured`: the page shows a sentence in its place, and the results file lists it
under :data:`NOT_MEASURED_KEY`, so tests tell "not measured" from "forgotten".
"""

from __future__ import annotations

import json
import math
import numbers
import os
from pathlib import Path

from ..paths import write_json_atomic

__all__ = ["record", "recorded", "load_results", "load_not_measured", "results_path",
           "not_measured", "NOT_MEASURED", "NOT_MEASURED_KEY"]

NOT_MEASURED = "not measured on this model"
"""The sentence :func:`not_measured` glues by default."""

NOT_MEASURED_KEY = "_not_measured"
"""Reserved key of a results file: ``{key: sentence}`` of the quantities a run did not measure."""

_RESULTS: dict[str, object] = {}
_NUMBER_PARTS = ("estimate", "low", "high")


def _plain(value):
    """numpy/torch scalars and arrays as plain JSON-compatible Python objects; an Interval, Answer
    or Study (:mod:`mlmbook.stats`) as its record (a dict with ``kind``)."""
    if hasattr(value, "to_record"):
        return value.to_record()
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
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
    """Return the results file of ``chapter`` (default ``$MLMBOOK_CHAPTER``), or None when the
    environment does not say where results go (not under the build)."""
    directory = os.environ.get("MLMBOOK_RESULTS")
    chapter = chapter or os.environ.get("MLMBOOK_CHAPTER")
    if not directory or not chapter:
        return None
    return Path(directory) / f"{chapter}.json"


def load_results(chapter: str | None = None, directory: str | os.PathLike | None = None) -> dict:
    """Read the recorded results of one chapter (a slug such as ``"01_dependencies"``, default
    ``$MLMBOOK_CHAPTER``) from ``directory`` (default ``$MLMBOOK_RESULTS``): key → value, empty when
    nothing was recorded, without the keys declared with :func:`not_measured`."""
    data = _read(chapter, directory)
    data.pop(NOT_MEASURED_KEY, None)
    return data


def load_not_measured(chapter: str | None = None, directory: str | os.PathLike | None = None) -> dict:
    """The quantities one chapter declared with :func:`not_measured`: key → the sentence shown."""
    return dict(_read(chapter, directory).get(NOT_MEASURED_KEY, {}))


def _read(chapter: str | None, directory: str | os.PathLike | None) -> dict:
    path = results_path(chapter) if directory is None else Path(directory) / f"{chapter}.json"
    if path is None or not path.is_file():
        return {}
    return json.loads(path.read_text())


def _glue(key: str, value) -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    if get_ipython() is not None:
        from myst_nb import glue

        glue(key, value, display=False)


def record(key: str, value, *, digits: int = 3, unit: str = "", percent: bool = False):
    """Record one headline number (or string, or list) of the running chapter.

    Parameters
    ----------
    key : str
        Name the prose and the tests use, e.g. ``"uuas"``; letters, digits, ``_``, ``-``, ``.``.
    value : number, str, bool, or list/dict of those; an Interval, Answer or Study
        numpy and torch scalars/arrays are converted to plain Python values. An
        :class:`~mlmbook.stats.Interval` or :class:`~mlmbook.stats.Answer` is stored whole and its
        parts are glued for the prose as ``key.estimate``, ``key.low``, ``key.high``, ``key.n``,
        ``key.text``, an answer's also ``key.verdict``, ... (``glue_fields``); a part that is not
        finite, as the words the page shows ("−∞", "undefined"), with :func:`not_measured`.
    digits, unit, percent
        How ``key.text`` reads (:meth:`~mlmbook.stats.Interval.format`); the glued numbers are the
        unrounded parts, a negative one that rounds to zero at ``digits`` glued as 0.

    Returns
    -------
    object
        The stored (plain) value, so ``x = record("x", compute())`` reads naturally (an
        Interval, Answer or Study is returned as itself).
    """
    _check_key(key)
    original = value
    value = _plain(value)
    _RESULTS[key] = value
    path = results_path()
    if path is not None:
        data = _read(path.stem, path.parent)
        data[key] = value
        data.get(NOT_MEASURED_KEY, {}).pop(key, None)
        write_json_atomic(path, data, indent=2, sort_keys=True)
    _glue(key, value)
    parts = original.glue_fields(digits, unit, percent) if hasattr(original, "glue_fields") else {}
    for name, field in parts.items():
        if name in _NUMBER_PARTS and isinstance(field, str):
            not_measured(f"{key}.{name}", sentence=field)
        else:
            _glue(f"{key}.{name}", field)      # {glue:text}`q_gain.estimate:.3f`
    return original if hasattr(original, "to_record") else value


def _check_key(key) -> None:
    if not isinstance(key, str) or not key or key.startswith("_") or any(c in key for c in " :/\\`"):
        raise ValueError(f"invalid result key {key!r}: no leading '_', no spaces, ':', '/', '\\' or '`'")


def recorded() -> dict:
    """Return a copy of everything recorded in this process."""
    return dict(_RESULTS)


def not_measured(*keys: str, sentence: str = NOT_MEASURED) -> None:
    """Declare quantities this run could not measure; the page shows ``sentence`` in their place.

    Their numbers are *not recorded*: each key is glued to ``sentence`` and the build drops the
    number format of its ``{glue:text}`key:.3f```, so the page reads "… gives not measured …".

    Parameters
    ----------
    *keys : str
        The names the prose cites.
    sentence : str
        What the page shows for each of them (a phrase that reads well in the prose's slot).
    """
    if not isinstance(sentence, str) or not sentence.strip():
        raise ValueError("not_measured needs a sentence to show, e.g. 'not measured on this model'")
    path = results_path()
    data = _read(path.stem, path.parent) if path is not None else {}
    for key in keys:
        _check_key(key)
        _RESULTS.pop(key, None)
        data.pop(key, None)
        data.setdefault(NOT_MEASURED_KEY, {})[key] = sentence
        _glue(key, sentence)
    if path is not None and keys:
        write_json_atomic(path, data, indent=2, sort_keys=True)
