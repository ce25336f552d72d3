r"""Every recorded answer re-derived a second way, from its own per-row values.

:func:`rederive` reads one answer record (:meth:`mlmbook.stats.study.Answer.to_record`), rebuilds
the per-unit contributions from its rows with code of its own, and re-decides it with SciPy
(independent of :mod:`mlmbook.stats.paired`), at :math:`\alpha' = \alpha/m`:

=========================  ======================================================================
the primary test           a direction re-derived with; an equivalence (TOST at :math:`\alpha'`) with
=========================  ======================================================================
sign-flip (< 30 units)     a Student t on the linearised unit contributions (``ttest_1samp``) and
bootstrap-t (≥ 30 units)   SciPy's sign-flip test (``permutation_test``: every sign pattern up to
                           16 units, else 30,000); the equivalence by the same two, one-sided at
                           :math:`r - \delta` and :math:`r + \delta`
seed t                     ``ttest_1samp`` over the seed values and each seed's own test on its
                           rows (or its recorded standard error); the equivalence by the t TOST
=========================  ======================================================================

and checks the rules of :mod:`mlmbook.stats.study` (the guard, the verdict's label, the
detectable effect by :func:`scipy.stats.nct` over seeds); a direction must be confirmed by every
re-derivation, an equivalence by every TOST. :func:`audit` walks a whole results file.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps
from scipy.optimize import brentq

from .decide import walk_records

__all__ = ["rederive", "audit", "walk_answers"]

SMALL, EXACT, DRAWS = 30, 16, 30_000
"""Below ``SMALL`` units the book's primary is a sign-flip; up to ``EXACT`` units SciPy enumerates
every sign pattern, else it draws ``DRAWS``."""


def walk_answers(results):
    """Yield ``(key, record)`` for every answer record in a results dict, nested ones included."""
    return walk_records(results, "answer")


def _units(rec) -> tuple[np.ndarray, np.ndarray]:
    v = np.asarray(rec["values"], float)
    w = np.ones_like(v) if rec.get("weights") is None else np.asarray(rec["weights"], float)
    labels = rec.get("units")
    if labels is None:
        return v, w
    sums: dict[str, np.ndarray] = {}
    for label, a, b in zip(labels, v, w):
        sums[str(label)] = sums.get(str(label), 0.0) + np.array([a, b])
    return tuple(np.reshape(list(sums.values()), (-1, 2)).T)


def _seed_rows(rec) -> dict[str, dict]:
    """Each seed's own rows, as a record of their own (values, weights, units)."""
    v = np.asarray(rec["values"], float)
    w = np.ones_like(v) if rec.get("weights") is None else np.asarray(rec["weights"], float)
    seeds = [str(s) for s in rec["seeds"]]
    out: dict[str, dict] = {}
    for k in dict.fromkeys(seeds):
        rows = np.array([s == k for s in seeds])
        out[k] = {"values": v[rows].tolist(), "weights": w[rows].tolist(),
                  "units": None if rec.get("units") is None else [u for u, r in zip(rec["units"], rows) if r]}
    return out


def _least_sign_flip_p(e: np.ndarray) -> float:
    """:math:`2^{1-k}` for the :math:`k` units that differ (1 when none)."""
    k = int(np.sum(np.abs(e) > 1e-15 * max(1.0, float(np.abs(e).max(initial=0.0)))))
    return 1.0 if k == 0 else min(1.0, 2.0 ** (1 - k))


def _direction(diff: float, p: float, alpha: float) -> str:
    if not (p <= alpha) or diff == 0:
        return "none"
    return "above" if diff > 0 else "below"


def _t_p(e: np.ndarray, alternative: str = "two-sided") -> float:
    """SciPy's one-sample t of mean 0 (a sample with no spread: 0 or 1 by its sign)."""
    if len(e) < 2:
        return 1.0
    if np.allclose(e, e[0]):
        hit = {"two-sided": e[0] != 0, "greater": e[0] > 0, "less": e[0] < 0}[alternative]
        return 0.0 if hit else 1.0
    return float(sps.ttest_1samp(e, 0.0, alternative=alternative).pvalue)


def _perm_p(e: np.ndarray, alternative: str = "two-sided") -> tuple[float, float]:
    """SciPy's sign-flip test of a zero sum and its Monte Carlo slack (three standard errors; 0 when
    every sign pattern is enumerated)."""
    exact = len(e) <= EXACT
    draws = 2 ** len(e) if exact else DRAWS
    res = sps.permutation_test((e,), lambda x, axis=-1: np.sum(x, axis=axis), permutation_type="samples",
                               n_resamples=draws, alternative=alternative, batch=1000,
                               random_state=np.random.default_rng(12345))   # batched: same draws
    p = float(res.pvalue)
    return p, 0.0 if exact else 3 * math.sqrt(max(p * (1 - p), 1e-12) / draws)


def _nct_detectable(se: float, df: int, level: float, power: float = 0.8) -> float:
    """The effect a two-sided t at ``level`` on ``df`` degrees of freedom detects with ``power``."""
    crit = sps.t.ppf(0.5 + level / 2, df)

    def short(nc):
        return sps.nct.sf(crit, df, nc) + sps.nct.sf(crit, df, -nc) - power
    high = 2.0
    while short(high) < 0:
        high *= 2
    return float(brentq(short, 0.0, high, xtol=1e-12)) * se


def _tost(e_low: np.ndarray, e_high: np.ndarray, alpha: float, permutation: bool) -> dict:
    """Each TOST at ``alpha`` as ``name: (p, slack)``: the larger of the two one-sided p-values."""
    out = {"t TOST (scipy)": (max(_t_p(e_low, "greater"), _t_p(e_high, "less")), 0.0)}
    if permutation:
        (p1, s1), (p2, s2) = _perm_p(e_low, "greater"), _perm_p(e_high, "less")
        out["sign-flip TOST (scipy)"] = (max(p1, p2), max(s1, s2))
    return out


def _number(x) -> float:
    return float(x) if x is not None else float("nan")


def rederive(rec: dict) -> list[str]:
    """Problems of one answer record; empty when every check passes (see the module docstring)."""
    problems = []
    alpha = rec["alpha"] / rec["family_size"]
    level = float(rec["interval_level"])
    if not math.isclose(level, 1 - alpha, abs_tol=1e-9):
        problems.append(f"level {level} is not 1 - alpha/m = {1 - alpha}")
    if "tost_level" in rec and not math.isclose(float(rec["tost_level"]), 1 - 2 * alpha, abs_tol=1e-9):
        problems.append(f"TOST level {rec['tost_level']} is not 1 - 2 alpha/m = {1 - 2 * alpha}")
    side, ref, delta = rec["side"], float(rec["reference"]), float(rec["effect"])
    if side == "undefined":
        return problems
    lo, hi = float(rec["interval_low"]), float(rec["interval_high"])
    if rec["test"] == "seed t":
        per_seed = _seed_rows(rec)
        per = np.array([np.sum(r["values"]) / np.sum(r["weights"]) for r in per_seed.values()])
        theta, n, df = float(per.mean()), len(per), len(per) - 1
        se = float(per.std(ddof=1) / math.sqrt(n)) if n > 1 else float("nan")
        least_primary = 0.0 if n > 1 else 1.0
        own = {}                                            # each model's own (diff, p, least p)
        for k, sub in per_seed.items():
            d, g = _units(sub)
            e = d - ref * g
            least = _least_sign_flip_p(e) if len(d) < SMALL else 0.0
            own[k] = (d.sum() / g.sum() - ref, _t_p(e), least if len(d) > 1 else 1.0)
        least_second = max((x[2] for x in own.values()), default=1.0)

        def directions():
            return {"seed t (scipy)": _direction(theta - ref, _t_p(per - ref), alpha),
                    **{f"seed {k} own test": _direction(diff, p, alpha) for k, (diff, p, _) in own.items()}}

        def tosts():
            return _tost(per - (ref - delta), per - (ref + delta), alpha, permutation=False)
    else:
        d, g = _units(rec)
        if g.sum() <= 0:
            return problems + ["an answer on a zero denominator"]
        theta, n, df = float(d.sum() / g.sum()), len(d), None
        e = d - ref * g
        lin = d - theta * g
        se = float(math.sqrt((lin ** 2).sum() * n / (n - 1)) / g.sum()) if n > 1 else float("nan")
        small = rec["test"] == "sign-flip"
        least_primary = _least_sign_flip_p(e) if small else 0.0
        least_second = (0.0 if n > 1 else 1.0) if small else _least_sign_flip_p(e)

        def directions():
            p, slack = _perm_p(e)
            return {"t (scipy)": _direction(theta - ref, _t_p(e), alpha),
                    "sign-flip (scipy)": _direction(theta - ref, max(p - slack, 0.0), alpha)}

        def tosts():
            return _tost(d - (ref - delta) * g, d - (ref + delta) * g, alpha, permutation=True)
    if not math.isclose(theta, float(rec["interval_estimate"]), rel_tol=1e-9, abs_tol=1e-12):
        problems.append(f"the rows give {theta} but the recorded estimate is {rec['interval_estimate']}")

    # the guard, the power and the verdict's label
    feasible = max(least_primary, least_second) <= alpha
    if bool(rec.get("feasible")) != feasible:
        problems.append(f"recorded feasible={rec.get('feasible')}, but the smallest p-values the two methods "
                        f"can reach are {least_primary:.3g} and {least_second:.3g} against alpha/m {alpha:.4g}")
    if side in ("above", "below") and not feasible:
        problems.append(f"direction {side!r} although a method cannot reach p <= {alpha:.4g} "
                        f"(smallest attainable p {max(least_primary, least_second):.4g})")
    if not feasible:
        det = float("inf")
    elif df is not None:
        det = _nct_detectable(se, df, level)
    else:
        det = float((sps.norm.ppf(0.5 + level / 2) + sps.norm.ppf(0.8)) * se)
    recorded = _number(rec.get("detectable"))
    if not (math.isinf(det) and math.isinf(recorded)) and not math.isclose(det, recorded, rel_tol=1e-3):
        power = "noncentral t" if df is not None else "normal"
        problems.append(f"detectable effect {recorded:.4g} recorded, {det:.4g} by the {power} power from the rows")
    if side not in ("above", "below", "equivalent"):
        label = "inconclusive" if feasible and det <= delta else "cannot decide"
        if rec["verdict"] != label:
            problems.append(f"verdict {rec['verdict']!r} for no side, where the rules give {label!r}")

    # a direction: every re-derivation agrees, and the interval excludes the reference
    if side in ("above", "below"):
        if not ((side == "above" and lo > ref) or (side == "below" and hi < ref)):
            problems.append(f"side {side!r} but the recorded interval [{lo}, {hi}] does not exclude {ref}")
        for name, s in directions().items():
            if s != side:
                problems.append(f"{side!r} is not confirmed by {name} (gives {s!r})")
        return problems

    # an equivalence: the TOST at alpha/m
    has_tost = "tost_low" in rec
    inside = has_tost and ref - delta < _number(rec["tost_low"]) and _number(rec["tost_high"]) < ref + delta
    if side == "equivalent":
        if has_tost and not inside:
            problems.append(f"'equivalent' but the recorded TOST interval [{rec['tost_low']}, {rec['tost_high']}] "
                            f"is not inside {ref} ± {delta}")
        for name, (p, slack) in tosts().items():
            if p - slack > alpha:
                problems.append(f"'equivalent' is not confirmed by the {name} (p {p:.3g} > {alpha:.4g})")
    elif inside:
        problems.append(f"{side!r} although the recorded TOST interval [{rec['tost_low']}, {rec['tost_high']}] "
                        f"lies inside {ref} ± {delta}: equivalent")
    elif not has_tost:                                    # a record of the earlier rule
        found = tosts()
        if all(p + slack <= alpha for p, slack in found.values()):
            problems.append(f"{side!r} where the TOST at alpha/m = {alpha:.4g} gives 'equivalent' "
                            f"({', '.join(f'{k} p {p:.3g}' for k, (p, _) in found.items())})")
    return problems


def audit(results: dict) -> dict[str, list[str]]:
    """Re-derive every answer in a results dict: ``{key: problems}`` for the answers that fail."""
    return {key: p for key, rec in walk_answers(results) if (p := rederive(rec))}
