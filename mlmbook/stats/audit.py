r"""Every recorded answer re-derived a second way, from its own per-row values.

:func:`rederive` reads one answer record (:meth:`mlmbook.stats.study.Answer.to_record`), rebuilds
the per-unit contributions from its rows with code of its own, and tests them with an
implementation independent of :mod:`mlmbook.stats.paired` (SciPy's):

=========================  ======================================================================
the primary test           re-derived with
=========================  ======================================================================
sign-flip (< 30 units)     a Student t on the linearised unit contributions (``scipy.stats.ttest_1samp``)
                           and SciPy's own permutation test (``scipy.stats.permutation_test``)
bootstrap-t (≥ 30 units)   SciPy's sign-flip permutation test and a Student t
seed t                     ``scipy.stats.ttest_1samp`` over the seed values, and each seed's own
                           test on its rows (or its recorded standard error)
=========================  ======================================================================

A directional answer (*above*/*below*) fails the audit when any re-derivation does not give the
same direction at the family's level, when the smallest attainable p-value of its test exceeds
:math:`\alpha/m`, or when its recorded interval, level or detectable effect does not follow from
its rows. :func:`audit` walks a whole results file.
"""
from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
from scipy import stats as sps

from .decide import walk_records

__all__ = ["rederive", "audit", "walk_answers"]


def walk_answers(results):
    """Yield ``(key, record)`` for every answer record in a results dict, nested ones included."""
    return walk_records(results, "answer")


def _units(rec) -> tuple[np.ndarray, np.ndarray]:
    v = np.asarray(rec["values"], float)
    w = np.ones_like(v) if rec.get("weights") is None else np.asarray(rec["weights"], float)
    labels = rec.get("units")
    if labels is None:
        return v, w
    sums: "OrderedDict[object, list[float]]" = OrderedDict()
    for label, a, b in zip(labels, v, w):
        s = sums.setdefault(str(label), [0.0, 0.0])
        s[0] += a
        s[1] += b
    return np.array([s[0] for s in sums.values()]), np.array([s[1] for s in sums.values()])


def _direction(diff: float, p: float, alpha: float) -> str:
    if not (p <= alpha) or diff == 0:
        return "none"
    return "above" if diff > 0 else "below"


def _t_side(e: np.ndarray, diff: float, alpha: float) -> str:
    if len(e) < 2:
        return "none"
    if np.allclose(e, e[0]):
        return _direction(diff, 0.0 if e[0] != 0 else 1.0, alpha)
    return _direction(diff, float(sps.ttest_1samp(e, 0.0).pvalue), alpha)


def _perm_side(e: np.ndarray, diff: float, alpha: float) -> str:
    """SciPy's sign-flip test: every sign pattern up to 2^16 units, else 30,000 random ones, read with
    three Monte Carlo standard errors of slack (a p that close to the level is not a disagreement)."""
    exact = len(e) <= 16
    draws = 2 ** len(e) if exact else 30_000
    res = sps.permutation_test((e,), lambda x, axis=-1: np.sum(x, axis=axis), permutation_type="samples",
                               n_resamples=draws, alternative="two-sided",
                               random_state=np.random.default_rng(12345))
    p = float(res.pvalue)
    slack = 0.0 if exact else 3 * np.sqrt(max(p * (1 - p), 1e-12) / draws)
    return _direction(diff, max(p - slack, 0.0), alpha)


def rederive(rec: dict) -> list[str]:
    """Problems of one answer record; empty when every check passes (see the module docstring)."""
    problems = []
    alpha = rec["alpha"] / rec["family_size"]
    level = float(rec["interval_level"])
    if not math.isclose(level, 1 - alpha, abs_tol=1e-9):
        problems.append(f"level {level} is not 1 - alpha/m = {1 - alpha}")
    side = rec["side"]
    ref = float(rec["reference"])
    if side not in ("above", "below"):
        return problems
    if rec["min_p"] > alpha:
        problems.append(f"direction {side!r} although the test cannot reach p <= {alpha:.4g} "
                        f"(smallest attainable p {rec['min_p']:.4g})")
    if rec["test"] == "seed t":
        v = np.asarray(rec["values"], float)
        w = np.ones_like(v) if rec.get("weights") is None else np.asarray(rec["weights"], float)
        seeds = [str(s) for s in rec["seeds"]]
        order = list(OrderedDict.fromkeys(seeds))
        per = np.array([v[[s == k for s in seeds]].sum() / w[[s == k for s in seeds]].sum() for k in order])
        got = {"seed t (scipy)": _t_side(per - ref, per.mean() - ref, alpha)}
        if rec.get("seed_se"):
            for k, (e, se) in enumerate(zip(per, rec["seed_se"])):
                p = float(2 * sps.norm.sf(abs(e - ref) / se)) if se > 0 else float(e == ref)
                got[f"seed {order[k]} own z"] = _direction(e - ref, p, alpha)
        else:
            for k in order:
                rows = np.array([s == k for s in seeds])
                sub = {"values": v[rows].tolist(), "weights": w[rows].tolist(),
                       "units": None if rec.get("units") is None else [u for u, r in zip(rec["units"], rows) if r]}
                d, g = _units(sub)
                theta = d.sum() / g.sum()
                e = d - ref * g
                got[f"seed {k} own t"] = _t_side(e, theta - ref, alpha)
    else:
        d, g = _units(rec)
        if g.sum() <= 0:
            return problems + ["a direction on a zero denominator"]
        theta = d.sum() / g.sum()
        if not math.isclose(theta, float(rec["interval_estimate"]), rel_tol=1e-9, abs_tol=1e-12):
            problems.append(f"the rows give {theta} but the recorded estimate is {rec['interval_estimate']}")
        e = d - ref * g
        got = {"t (scipy)": _t_side(e, theta - ref, alpha), "sign-flip (scipy)": _perm_side(e, theta - ref, alpha)}
        lo, hi = float(rec["interval_low"]), float(rec["interval_high"])
        if not ((side == "above" and lo > ref) or (side == "below" and hi < ref)):
            problems.append(f"side {side!r} but the recorded interval [{lo}, {hi}] does not exclude {ref}")
    for name, s in got.items():
        if s != side:
            problems.append(f"{side!r} is not confirmed by {name} (gives {s!r})")
    return problems


def audit(results: dict) -> dict[str, list[str]]:
    """Re-derive every answer in a results dict: ``{key: problems}`` for the answers that fail."""
    return {key: p for key, rec in walk_answers(results) if (p := rederive(rec))}
