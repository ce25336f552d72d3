r"""Exercises graded by the truth: a check cell, ``mlmbook.exercises.check("ch1-cmi", my_cmi)``,
grades the reader's function (the chapter's central step) against the toy world's exact oracle and
shows one line (✓ / ✗ case 3: ... / ○ not attempted yet; never an error, so a student edition
executes end to end); ``python -m mlmbook.exercises check NOTEBOOK`` grades a whole notebook. Each
chapter registers its exercises in ``chN.py`` with :func:`exercise`: cases, exact answers, a
tolerance, a reference solution and deliberately wrong ones the grader must reject.
"""
from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

__all__ = ["Exercise", "Grade", "exercise", "check", "registry", "LEVELS"]

LEVELS = ("warm-up", "core", "stretch", "capstone")
"""Difficulty levels, shown beside each exercise."""


@dataclass(frozen=True)
class Exercise:
    """One graded exercise: its ``name`` (e.g. ``"ch1-cmi"``, the label of the ``{exercise}`` in
    the chapter), ``level`` (one of :data:`LEVELS`), ``cases`` (``() -> list of argument tuples``,
    built lazily: may use the oracle), ``expected`` (``(*args) -> the right answer`` for one case:
    the oracle, brute force), ``reference`` (a correct solution), ``wrong`` (deliberately wrong
    solutions the grader must reject), ``tol`` (absolute tolerance, elementwise) and ``what`` (what
    is being computed, for messages)."""
    name: str
    level: str
    cases: Callable[[], list]
    expected: Callable
    reference: Callable
    wrong: tuple = ()
    tol: float = 1e-6
    what: str = "the answer"


@dataclass(frozen=True)
class Grade:
    """The outcome of :func:`check`: passed, failed (at its first failing case) or not attempted."""
    name: str
    passed: bool
    attempted: bool
    n_cases: int
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        return self.message

    __repr__ = _repr_markdown_ = __str__


_REGISTRY: dict[str, Exercise] = {}


def exercise(ex: Exercise) -> Exercise:
    """Register a graded exercise; returns it."""
    if ex.level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, not {ex.level!r}")
    if ex.name in _REGISTRY:
        raise ValueError(f"exercise {ex.name!r} is registered twice")
    if not ex.wrong:
        raise ValueError(f"exercise {ex.name!r} needs at least one wrong solution the grader must reject")
    _REGISTRY[ex.name] = ex
    return ex


def registry() -> dict[str, Exercise]:
    """Every registered exercise, by name (imports every chapter's module first)."""
    for k in range(7):
        importlib.import_module(f".ch{k}", __name__)
    return dict(_REGISTRY)


def _close(got, want, tol) -> bool:
    try:
        g = np.asarray(got, dtype=float)
        w = np.asarray(want, dtype=float)
    except (TypeError, ValueError):
        return got == want
    return g.shape == w.shape and bool(np.all(np.abs(g - w) <= tol + 1e-9 * np.abs(w)))


def _show(x) -> str:
    if isinstance(x, str):
        return repr(x)
    a = np.asarray(x, dtype=float)
    if a.ndim == 0:
        return f"{float(a):.6g}"
    return f"an array of shape {a.shape} (first values {np.array2string(a.ravel()[:4], precision=4)})"


def check(name: str, candidate: Callable, cases: Sequence | None = None) -> Grade:
    """Grade ``candidate`` on exercise ``name``'s cases against the exact answers.

    Returns a :class:`Grade`; never raises for a wrong or unfinished answer (a function that raises
    ``NotImplementedError`` is not attempted: ○, how to grade it, what passing reads; any other
    exception is a failed case with its one-line message).
    """
    ex = registry().get(name)
    if ex is None:
        raise KeyError(f"no exercise named {name!r}; registered: {', '.join(sorted(_REGISTRY))}")
    cases = list(ex.cases() if cases is None else cases)
    for k, args in enumerate(cases, start=1):
        want = ex.expected(*args)
        try:
            got = candidate(*args)
        except NotImplementedError:
            return Grade(name, False, False, len(cases),
                         f"○ {name}: waiting for your function. Write it above and run this cell, or grade "
                         f"the notebook from a terminal: `python -m mlmbook.exercises check <notebook>`. "
                         f"Passing reads: ✓ {name}: {ex.what} matches the exact answer on all "
                         f"{len(cases)} cases.")
        except Exception as e:  # the reader's bug, reported in one line
            return Grade(name, False, True, len(cases),
                         f"✗ {name}: case {k} of {len(cases)} raised {type(e).__name__}: {e}")
        if not _close(got, want, ex.tol):
            diff = ""
            try:
                d = float(np.max(np.abs(np.asarray(got, float) - np.asarray(want, float))))
                diff = f" (largest difference {d:.3g}, tolerance {ex.tol:g})" if math.isfinite(d) else ""
            except (TypeError, ValueError):
                pass
            return Grade(name, False, True, len(cases),
                         f"✗ {name}: case {k} of {len(cases)}: {ex.what} should be {_show(want)}, "
                         f"got {_show(got)}{diff}.")
    return Grade(name, True, True, len(cases),
                 f"✓ {name}: {ex.what} matches the exact answer on all {len(cases)} cases.")
