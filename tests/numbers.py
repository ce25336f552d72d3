"""Numbers that agree (issue 36): checks a chapter's test runs on its recorded results and its prose.

Issue 36 found sentences whose numbers do not agree: "0.884 against the truth's 0.789 (difference
0.063)" does not subtract, and the truth's 0.970 a few sections later came from another sample.
The helpers here make each such sentence a test:

* :func:`assert_difference` — a difference quoted with its two operands is their difference, as a
  reader would compute it from the numbers shown (within one unit of the last digit shown), and
  as recorded (the same sample: to rounding error);
* :func:`assert_glued_difference` — the same, found in the chapter's MyST source: the sentence that
  cites the three glue keys, the digits each is shown with read from its ``{glue:text}`` format;
* :func:`assert_same_sample` — numbers set side by side come from one sample: the same number of
  units, and the same unit labels where the records keep them (an :class:`~mlmbook.stats.Answer`
  record keeps ``units``).

>>> assert_difference(0.063, 0.884, 0.789, digits=3)      # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
AssertionError: ...
"""
from __future__ import annotations

import math
import re

__all__ = ["assert_difference", "assert_glued_difference", "assert_same_sample", "sentence_citing",
           "glue_digits", "glued"]


def _shown(x: float, digits: int) -> float:
    return float(f"{x:.{digits}f}")


def assert_difference(difference: float, a: float, b: float, digits: int | tuple = 3, *,
                      exact: bool = True, what: str = "") -> None:
    """``difference`` is ``a - b`` as the page shows all three.

    Parameters
    ----------
    difference, a, b : float
        The recorded values.
    digits : int or (int, int, int)
        Decimals each is shown with (one for all, or for difference, a, b).
    exact : bool
        Also require the recorded ``difference == a - b`` to 1e-9 (relative): the three come from
        one computation on one sample. False only where the page says the difference is taken
        another way (a mean of per-unit differences over a different set of units, say).
    """
    dd, da, db = (digits,) * 3 if isinstance(digits, int) else digits
    ulp = 10.0 ** -min(dd, da, db)
    read = _shown(a, da) - _shown(b, db)                    # what a reader gets from the page
    said = _shown(difference, dd)
    label = f"{what}: " if what else ""
    assert abs(said - read) <= ulp * (1 + 1e-9), (
        f"{label}the page shows {said:.{dd}f} as the difference of {_shown(a, da):.{da}f} and "
        f"{_shown(b, db):.{db}f}, which is {read:.{max(da, db)}f}")
    if exact:
        assert math.isclose(difference, a - b, rel_tol=1e-9, abs_tol=1e-12), (
            f"{label}the recorded difference {difference!r} is not {a!r} - {b!r} = {a - b!r}: "
            f"are the three from one sample?")


_ROLE = re.compile(r"\{glue:text\}`([^`:]+)(?::([^`]*))?`")


def glue_digits(fmt: str | None) -> int | None:
    """Decimals of a ``{glue:text}`` format (``.3f`` -> 3, ``.1%`` -> 3); None when not fixed-point."""
    m = re.fullmatch(r"[^.]*\.(\d+)([f%])", fmt or "")
    if not m:
        return None
    return int(m.group(1)) + (2 if m.group(2) == "%" else 0)


def sentence_citing(source: str, *keys: str) -> str:
    """The one sentence (or list item) of a MyST source that cites every glue key in ``keys``."""
    prose = re.sub(r"```.*?```", " ", source, flags=re.S)
    units = [u for block in re.split(r"\n\s*\n|\n\s*[-*] ", prose)
             for u in re.split(r"(?<=[.!?])\s+(?=[A-Z(*“])", " ".join(block.split()))]
    found = [u for u in units if all(re.search(r"\{glue:text\}`" + re.escape(k) + r"(?::[^`]*)?`", u) for k in keys)]
    assert len(found) == 1, f"{len(found)} sentences cite all of {keys}: {found}"
    return found[0]


def assert_glued_difference(source: str, results: dict, difference: str, a: str, b: str, *,
                            exact: bool = True) -> str:
    """The sentence of ``source`` that cites ``difference``, ``a`` and ``b`` shows a true difference
    (:func:`assert_difference`, with the digits of each key's format there); returns the sentence."""
    sentence = sentence_citing(source, difference, a, b)
    formats = {k: f for k, f in _ROLE.findall(sentence)}
    digits = tuple(glue_digits(formats.get(k)) for k in (difference, a, b))
    assert None not in digits, f"give each number a fixed-point format in: {sentence!r}"
    scale = [100.0 if (formats.get(k) or "").endswith("%") else 1.0 for k in (difference, a, b)]
    assert_difference(*(glued(results, k) * f for k, f in zip((difference, a, b), scale)),
                      digits, exact=exact, what=sentence[:80])
    return sentence


def glued(results: dict, key: str):
    """The recorded value a glue key shows: ``results[key]``, or for ``key.part`` the part of a recorded
    interval (``results[key]["part"]``) or answer (its ``interval_part``)."""
    if key in results or "." not in key:
        return results[key]
    name, part = key.split(".", 1)
    record = results[name]
    return record[part] if record.get("kind") == "interval" else record[f"interval_{part}"]


def _units(record) -> tuple[int | None, list | None]:
    if isinstance(record, dict):
        units = record.get("units")
        n = record.get("n", record.get("interval_n"))
        return n, (sorted(set(map(str, units))) if units else None)
    return getattr(record, "n", None), None


def assert_same_sample(*records, what: str = "") -> None:
    """Records quoted together (intervals, answers, or plain ``{"n": ...}``) come from one sample."""
    seen = [_units(r) for r in records]
    ns = {n for n, _ in seen if n is not None}
    label = f"{what}: " if what else ""
    assert len(ns) <= 1, f"{label}numbers set side by side come from samples of sizes {sorted(ns)}"
    labels = [u for _, u in seen if u is not None]
    assert all(u == labels[0] for u in labels), f"{label}numbers set side by side come from different units"
