"""The statistical fixes of issue 40 (item 5), each on constructed data where the earlier rule errs:

* an equivalence is a TOST at alpha/m: the (1 - 2 alpha/m) interval inside the margin, not the 1 - alpha/m one;
* the feasibility guard covers both methods: 7 differing units of 40 give no direction ("cannot decide");
* seed questions are powered by the noncentral t, not by quantile sums;
* "needs N" carries one meaning per column: the planned N and the N at observed SD are labelled apart;
* the audit re-derives all three from the rows, passes the new records and flags the earlier rule's.

Each check is independent of :mod:`mlmbook.stats.paired`: brute-force enumeration of sign patterns, SciPy's
t and noncentral t.
"""
import itertools
import json
import math

import numpy as np
import pytest
from scipy import stats as sps
from scipy.optimize import brentq

from mlmbook.stats import Question, Study, paired, power, rederive

ALPHA_M = 0.05 / 6


def _study(question: Question) -> Study:
    """A family of six questions, so every answer is at 1 - 0.05/6."""
    return Study("test", [question] + [Question(f"other{i}", "another claim", 1.0, "a scale") for i in range(5)])


def _record(answer) -> dict:
    return json.loads(json.dumps(answer.to_record()))


def _one_sided_p(e: np.ndarray, greater: bool) -> float:
    """Exact one-sided sign-flip p-value of a zero sum, by enumerating every sign pattern."""
    sums = np.array(list(itertools.product((1.0, -1.0), repeat=len(e)))) @ e
    obs = e.sum()
    return float(np.mean(sums >= obs - 1e-12) if greater else np.mean(sums <= obs + 1e-12))


# ------------------------------------------------------------------------------ 1. TOST at alpha/m
X16 = np.array([0.112, -0.118, 0.031, -0.018, -0.013, -0.001, -0.091, -0.002, -0.033, 0.176, 0.021, -0.008,
                -0.004, -0.023, -0.043, -0.01])
"""Sixteen units (an exact sign-flip) whose mean is near zero."""


def test_an_equivalence_that_only_the_tost_at_alpha_over_m_accepts():
    delta = 0.05
    study = _study(Question("same", "no gap", delta, "a stated scale"))
    a = study.answer("same", X16)
    assert a.side == "equivalent" and a.verdict == "equivalent"
    # the two one-sided sign-flip tests at alpha/m, by brute force, reject both |theta| >= delta ...
    p_low, p_high = _one_sided_p(X16 + delta, greater=True), _one_sided_p(X16 - delta, greater=False)
    assert max(p_low, p_high) <= ALPHA_M
    # ... while the 1 - alpha/m interval (the earlier rule, a TOST at alpha/2m) reaches beyond the margin
    assert not (-delta < a.interval.low and a.interval.high < delta)
    assert a.tested.tost.level == pytest.approx(1 - 2 * ALPHA_M)
    assert -delta < a.tested.tost.low and a.tested.tost.high < delta
    rec = _record(a)
    assert (rec["tost_low"], rec["tost_high"]) == (a.tested.tost.low, a.tested.tost.high)
    assert rederive(rec) == []
    # the earlier rule's record of the same rows: no TOST interval, "indistinguishable" -> flagged
    old = {k: v for k, v in rec.items() if not k.startswith("tost_")}
    old.update(side="indistinguishable", verdict="inconclusive")
    assert any("gives 'equivalent'" in p for p in rederive(old))


def test_each_test_inverts_itself_at_one_minus_two_alpha():
    level = 1 - ALPHA_M
    # sign-flip: every shift inside the TOST interval has two-sided p > 2 alpha/m, just outside <= 2 alpha/m
    t = paired.sign_flip(X16, level=level)
    lo, hi = t.tost.low, t.tost.high
    assert t.interval.low < lo < hi < t.interval.high
    for shift in np.linspace(lo + 1e-6, hi - 1e-6, 5):
        assert paired.sign_flip_p(X16, reference=shift)[0] > 2 * ALPHA_M
    for shift in (lo - 1e-4, hi + 1e-4):
        assert paired.sign_flip_p(X16, reference=shift)[0] <= 2 * ALPHA_M
    # t over seed means: SciPy's t interval at 1 - 2 alpha/m
    means = np.array([0.012, -0.004, 0.021, 0.007])
    s = paired.seed_t(means, level=level)
    ci = sps.ttest_1samp(means, 0.0).confidence_interval(1 - 2 * ALPHA_M)
    assert (s.tost.low, s.tost.high) == pytest.approx((ci.low, ci.high), rel=1e-12)
    # bootstrap-t: the same replicates read at 1 - 2 alpha/m as a run at that level
    y = np.random.default_rng(2).normal(0.02, 0.1, 50)
    b = paired.bootstrap_t(y, level=level, draws=paired.Draws(seed=5, n_boot=4000))
    again = paired.bootstrap_t(y, level=1 - 2 * ALPHA_M, draws=paired.Draws(seed=5, n_boot=4000)).interval
    assert (b.tost.low, b.tost.high) == pytest.approx((again.low, again.high), rel=1e-12)
    assert b.interval.low <= b.tost.low < b.tost.high <= b.interval.high


# ------------------------------------------------------------------------------ 2. guard on both methods
def test_seven_differing_units_of_forty_give_no_direction():
    d = np.zeros(40)
    d[:7] = -1.0                                   # seven sentences lose one edge each; 33 are identical
    g = np.full(40, 5.0)                           # five gold edges per sentence
    a = _study(Question("control", "a control", 0.05, "a stated scale")).answer("control", d, g)
    assert a.tested.test == "bootstrap-t" and a.interval.high < 0          # the bootstrap excludes 0
    assert a.verdict == "cannot decide" and a.side not in ("above", "below")
    assert a.second["test"] == "sign-flip and t"
    assert a.second["min_p"] == pytest.approx(2 / 2 ** 7) and a.second["min_p"] > ALPHA_M
    assert not a.feasible and math.isinf(a.detectable)
    assert "cannot reach" in a.note
    # the N at observed SD holds enough differing units for the sign-flip at the observed share (7/40)
    assert a.needed >= math.ceil(power.feasible_units(1 - ALPHA_M) * 40 / 7)
    rec = _record(a)
    assert rederive(rec) == []
    old = dict(rec, feasible=True, verdict="inconclusive", detectable=0.0375)   # the earlier guard's record
    problems = rederive(old)
    assert any("feasible" in p for p in problems) and any("'cannot decide'" in p for p in problems)


# ------------------------------------------------------------------------------ 3. noncentral t over seeds
def _nct_effect(se: float, df: int, level: float) -> float:
    crit = sps.t.ppf(0.5 + level / 2, df)
    nc = brentq(lambda x: sps.nct.sf(crit, df, x) + sps.nct.sf(crit, df, -x) - 0.8, 0.0, 200.0)
    return nc * se


def test_a_seed_questions_detectable_effect_is_the_noncentral_t_value():
    means = [0.031, 0.052, 0.017]
    rows = np.repeat(means, 20) + np.tile(np.linspace(-0.01, 0.01, 20), 3)
    seeds = np.repeat([0, 1, 2], 20)
    a = _study(Question("gain", "a gain", 0.02, "a stated scale", unit="seed")).answer("gain", rows, seeds=seeds)
    assert a.tested.test == "seed t" and a.n == 3 and a.feasible
    se = np.std(means, ddof=1) / math.sqrt(3)
    want = _nct_effect(se, 2, 1 - ALPHA_M)
    assert a.detectable == pytest.approx(want, rel=0.01)
    assert rederive(_record(a)) == []
    shortcut = (sps.t.ppf(1 - ALPHA_M / 2, 2) + sps.t.ppf(0.8, 2)) * se       # the earlier rule
    assert any("noncentral t" in p for p in rederive(dict(_record(a), detectable=shortcut)))


def test_units_needed_over_seeds_are_the_fewest_the_noncentral_t_powers():
    sd, effect, level = 1.0, 0.356, 1 - ALPHA_M          # quantile sums would stop one seed short (99)
    n = power.needed_units(sd, effect, level, unit="seed")

    def powered(k):
        crit = sps.t.ppf(0.5 + level / 2, k - 1)
        nc = effect * math.sqrt(k) / sd
        return sps.nct.sf(crit, k - 1, nc) + sps.nct.sf(crit, k - 1, -nc) >= 0.8
    assert powered(n) and not powered(n - 1)
    assert Question("q", "c", effect, "b", unit="seed", planning_sd=sd).needed(level) == n


# ------------------------------------------------------------------------------ 4. one meaning of "needs N"
def test_planned_n_and_n_at_observed_sd_are_labelled_apart():
    q = Question("gap", "a gap", 0.05, "a stated scale", planning_sd=0.2)
    study = _study(q)
    declared = study.declaration()._repr_html_()
    assert "<th>planned N</th>" in declared and "need" not in declared
    a = study.answer("gap", np.random.default_rng(0).normal(0.02, 0.4, 60))
    shown = study.table()._repr_html_()
    for header in ("<th>n</th>", "<th>planned N</th>", "<th>N at observed SD</th>"):
        assert header in shown
    assert "need" not in shown
    assert a.row()[-3:] == [60, study.needed("gap"), a.needed] and a.needed != study.needed("gap")
    fields = a.glue_fields()
    assert fields["planned"] == study.needed("gap") and fields["needed"] == a.needed
