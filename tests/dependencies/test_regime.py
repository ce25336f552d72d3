"""The regime map's bookkeeping on synthetic counts: verdicts by the book's rule, and the text."""
import numpy as np
import pytest

from mlmbook import stats
from mlmbook.dependencies import regime

FAMILY = stats.Family("test", size=10)


def _counts(rate, n=40, gold=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.binomial(gold, rate, size=n), np.full(n, gold)


def test_compare_to_truth_pairs_the_sentences_and_uses_the_family():
    truth = _counts(0.9)
    far = [{m: _counts(0.2, seed=1) for m in regime.METHODS}]
    for p in regime.compare_to_truth("h16", 2.0, far, truth, FAMILY):
        v = p.versus_truth
        assert v.side == "below" and v.interval.level == FAMILY.level and v.family == "test"
        assert v.interval.estimate == pytest.approx(p.uuas.estimate - truth[0].sum() / truth[1].sum())
        assert p.uuas.low <= p.uuas.estimate <= p.uuas.high and p.n_seeds == 1
        assert not stats.check_record(v.to_record())
    same = [{m: truth for m in regime.METHODS}]
    for p in regime.compare_to_truth("h", 0.1, same, truth, FAMILY):
        assert p.versus_truth.side == "indistinguishable" and p.versus_truth.interval.estimate == 0
        assert np.isfinite(p.versus_truth.detectable) and p.versus_truth.detectable > 0


def test_several_seeds_give_a_hierarchical_interval():
    truth = _counts(0.6, seed=9)
    seeds = [{m: _counts(r, seed=s) for m in regime.METHODS} for s, r in ((1, 0.55), (2, 0.7), (3, 0.5))]
    (p, _) = regime.compare_to_truth("h16", 1.0, seeds, truth, FAMILY)
    assert p.n_seeds == 3 and p.uuas.seeds == 3 and p.versus_truth.interval.seeds == 3
    assert "hierarchical" in p.versus_truth.interval.method
    one = regime.compare_to_truth("h16", 1.0, seeds[:1], truth, FAMILY)[0]
    assert one.versus_truth.interval.seeds == 1


def test_record_map_states_what_the_verdicts_say():
    truth = _counts(0.8)
    pts = regime.compare_to_truth("h16", 2.0, [{m: _counts(0.2, seed=3 + s) for m in regime.METHODS}
                                               for s in range(3)], truth, FAMILY)
    pts += regime.compare_to_truth("h64@30%", 1.0, [{m: _counts(0.5, seed=7) for m in regime.METHODS}], truth, FAMILY)
    pts += regime.compare_to_truth("h64", 0.3, [{m: truth for m in regime.METHODS}], truth, FAMILY)
    rec = {}
    text = regime.record_map(pts, 0.8, 40, rec.__setitem__)
    assert rec["regime_rungs"] == ["h16", "h64@30%", "h64"]
    assert rec["regime_mlm_level"] == ["h64"] and rec["regime_mlm_below"] == ["h16", "h64@30%"]
    assert rec["regime_h64_30_mlm_vs_truth"].side == "below" and rec["regime_text"] == text
    assert rec["regime_h16_mlm_n_seeds"] == 3 and "h16 (3 seeds)" in text
    # every indistinguishable rung is followed by the difference it could have detected
    assert "h64 (KL 0.30; a difference of" in text
    # the old text said an interval "contains zero" when it did not: the text now only reads verdicts
    assert "contains zero" not in text and "rises" not in text


def test_the_old_contradiction_cannot_come_back():
    """Issue 25: the regime text called CPMI's 99 % interval [-0.370, -0.048] one that "contains zero".
    With the book's rule an interval below zero is a *below* verdict, and the text says so."""
    iv = stats.Interval(-0.2, -0.370, -0.048, FAMILY.level, "given", 16, 0.08)
    v = stats.decide(iv, family=FAMILY)
    p = regime.RungPoint("h128", regime.METHODS[1], 0.06, stats.Interval(0.6, 0.5, 0.7), v)
    s = regime.summarize([p], regime.METHODS[1])
    assert s["below"] == ["h128"] and "below the truth's on h128" in s["text"]
    assert "indistinguishable" not in s["text"]
