"""The book's one decision rule (mlmbook.stats): intervals against brute force and known values,
the rule's sides, the detectable effect, and the check that tests run over recorded verdicts."""
import math

import numpy as np
import pytest
from scipy.stats import binomtest
from scipy.stats import t as student_t

from mlmbook import stats
from mlmbook.stats import Interval
from mlmbook.stats.decide import within
from mlmbook.stats.intervals import t_interval


@pytest.mark.parametrize("low, high, ref, want", [
    (0.1, 0.3, 0.0, "above"),
    (-0.3, -0.1, 0.0, "below"),
    (-0.1, 0.3, 0.0, "indistinguishable"),
    (1.3, 1.6, 1.25, "above"),
    (float("nan"), float("nan"), 0.0, "undefined"),
])
def test_the_rule(low, high, ref, want):
    assert stats.side(low, high, ref) == want


def test_equivalence_is_an_interval_strictly_inside_the_margin():
    assert within(-0.01, 0.02, 0.0, 0.05) and not within(-0.01, 0.06, 0.0, 0.05)
    assert not within(-0.05, 0.02, 0.0, 0.05)


def test_detectable_effect_is_z_plus_z_power_times_se():
    iv = Interval(0.01, -0.02, 0.04, level=0.95, se=0.015)
    assert stats.detectable_effect(iv) == pytest.approx((1.959964 + 0.841621) * 0.015, rel=1e-5)
    assert stats.side(iv.low, iv.high) == "indistinguishable"


def test_bootstrap_mean_matches_the_normal_interval_and_covers():
    rng = np.random.default_rng(1)
    x = rng.normal(0.3, 1.0, 400)
    iv = stats.bootstrap(lambda a: a.mean(-1), x, level=0.95, seed=3)
    half = 1.96 * x.std(ddof=1) / math.sqrt(len(x))
    assert iv.low == pytest.approx(x.mean() - half, abs=0.02) and iv.high == pytest.approx(x.mean() + half, abs=0.02)
    assert iv.se == pytest.approx(x.std() / math.sqrt(len(x)), rel=0.1)
    # coverage of the percentile bootstrap of a mean, checked by simulation
    hits = 0
    for k in range(200):
        y = np.random.default_rng(100 + k).exponential(1.0, 60)
        b = stats.bootstrap(lambda a: a.mean(-1), y, level=0.9, n_boot=1000, seed=k)
        hits += b.low <= 1.0 <= b.high
    assert 0.8 <= hits / 200 <= 0.97


def test_ratio_is_undefined_at_zero_over_zero_and_never_zero_width():
    assert not stats.ratio([0, 0], [0, 0]).defined
    zero = stats.ratio([0, 0], [0, 0])
    assert stats.side(zero.low, zero.high) == "undefined"
    perfect = stats.ratio([5, 6, 4], [5, 6, 4])
    assert perfect.estimate == 1.0 and perfect.low < 0.9 and perfect.high > perfect.low
    paired = stats.ratio([5, 6, 4], [5, 6, 4], minus=[5, 6, 4])
    assert paired.estimate == 0 and stats.side(paired.low, paired.high) == "indistinguishable"
    assert 0 < stats.detectable_effect(paired) < 0.5     # 15 identical edges still bound the difference


def test_proportion_matches_scipy():
    for k, n in ((0, 10), (3, 10), (10, 10), (37, 120)):
        cp = stats.proportion(k, n, level=0.95, exact=True)
        ref = binomtest(k, n).proportion_ci(0.95, method="exact")
        assert (cp.low, cp.high) == pytest.approx((ref.low, ref.high), abs=1e-9)
        w = stats.proportion(k, n, level=0.95)
        ref = binomtest(k, n).proportion_ci(0.95, method="wilson")
        assert (w.low, w.high) == pytest.approx((ref.low, ref.high), abs=1e-9)
        assert w.high > w.low


def test_t_interval_small_n_and_one_value():
    v = [0.1, 0.3, 0.2]
    iv = t_interval(v, level=0.95)
    half = student_t.ppf(0.975, 2) * np.std(v, ddof=1) / math.sqrt(3)
    assert (iv.low, iv.high) == pytest.approx((0.2 - half, 0.2 + half))
    assert not t_interval([0.2]).defined and iv.seeds == 3 and "3 seeds" in iv.method


def test_censored_median_is_kaplan_meier_and_a_lower_bound_beyond_the_cap():
    # no censoring: KM median = the empirical median (lower median at even n, by the KM step)
    t = np.array([5.0, 1.0, 3.0, 4.0, 2.0])
    assert stats.censored_median(t, np.zeros(5, bool)).estimate == 3.0
    # brute force: KM survival by hand with a censored run at 2.5
    t = np.array([1.0, 2.0, 2.5, 3.0, 4.0, 6.0])
    c = np.array([0, 0, 1, 0, 0, 0], bool)
    S, surv = 1.0, {}
    for u in (1.0, 2.0, 3.0, 4.0, 6.0):
        at_risk = (t >= u).sum()
        S *= 1 - 1 / at_risk
        surv[u] = S
    want = min(u for u, s in surv.items() if s <= 0.5)
    assert stats.censored_median(t, c).estimate == want
    beyond = stats.censored_median([3, 100, 100, 100], [False, True, True, True], cap=100)
    assert beyond.lower_bound and beyond.estimate == 100 and beyond.format() == "more than 100.000"
    assert math.isfinite(beyond.estimate)


def test_walk_verdicts_finds_old_style_records_anywhere():
    rec = {"kind": "verdict", "side": "above"}
    found = list(stats.walk_verdicts({"a": 1, "b": [rec, {"c": rec}]}))
    assert [k for k, _ in found] == ["b[0]", "b[1].c"]


def test_interval_records_round_trip_and_format():
    iv = Interval(0.5, 0.25, float("inf"), 0.99, "x", 10, float("nan"))
    back = Interval.from_record(iv.to_record())
    assert back.high == float("inf") and math.isnan(back.se) and back.low == 0.25
    assert Interval(0.123, 0.1, 0.15).format(percent=True) == "12.3 % [10.0, 15.0]"
    assert tuple(Interval(1.0, 0.5, 2.0)) == (1.0, 0.5, 2.0)


def test_record_stores_an_answer_whole_and_glues_its_parts(monkeypatch, tmp_path):
    from mlmbook.pipeline import record as rec_mod
    monkeypatch.setenv("MLMBOOK_RESULTS", str(tmp_path))
    monkeypatch.setenv("MLMBOOK_CHAPTER", "99_test")
    glued = {}
    monkeypatch.setattr(rec_mod, "_glue", lambda key, value: glued.__setitem__(key, value))
    study = stats.Study("c", [stats.Question("gap", "a gap", 0.05, "a scale")])
    a = study.answer("gap", np.random.default_rng(0).normal(0.3, 0.1, 40))
    assert rec_mod.record("q_gap", a) is a
    saved = rec_mod.load_results("99_test", tmp_path)["q_gap"]
    assert saved["kind"] == "answer" and saved["side"] == "above" and len(saved["values"]) == 40
    assert glued["q_gap.verdict"] == "above" and glued["q_gap.n"] == 40 and "q_gap.estimate" in glued
