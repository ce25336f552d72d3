"""The regime map's bookkeeping: verdicts, summaries and recorded keys on synthetic counts."""
import numpy as np
import pytest

from mlmbook.dependencies import regime


def _counts(rate, n=20, gold=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.binomial(gold, rate, size=n), np.full(n, gold)


def test_verdict_rule():
    assert regime.verdict(0.01, 0.2, 10) == "above"
    assert regime.verdict(-0.2, -0.01, 10) == "below"
    assert regime.verdict(-0.1, 0.1, 10) == regime.LEVEL
    assert regime.verdict(0.01, 0.2, 4) == regime.LEVEL          # too few sentences


def test_compare_to_truth_pairs_the_sentences():
    truth = _counts(0.9)
    far = {m: _counts(0.2, seed=1) for m in regime.METHODS}
    pts = regime.compare_to_truth("h16", 2.0, far, truth)
    for p in pts:
        assert p.lo <= p.uuas <= p.hi
        assert p.diff == pytest.approx(p.uuas - truth[0].sum() / truth[1].sum())
        assert p.verdict == "below"
    same = {m: truth for m in regime.METHODS}
    assert all(p.verdict == regime.LEVEL and p.diff == 0 for p in regime.compare_to_truth("h", 0.1, same, truth))


def test_record_map_states_what_the_numbers_say():
    truth = _counts(0.8)
    pts = []
    for name, kl, rate, s in [("h16", 2.0, 0.2, 0), ("h16", 1.9, 0.25, 1), ("h16", 1.95, 0.2, 2),
                              ("h64@30%", 1.0, 0.5, 0), ("h64", 0.3, 0.8, 0)]:
        c = {m: (_counts(rate, seed=3 + s) if rate != 0.8 else truth) for m in regime.METHODS}
        pts += regime.compare_to_truth(name, kl, c, truth, rung_seed=s)
    rec = {}
    out = regime.record_map(pts, 0.8, 20, rec.__setitem__)
    assert rec["regime_lowest"] == "h16" and rec["regime_highest"] == "h64"
    assert rec["regime_n_seeds"] == 3 and len(rec["regime_seed_mlm_uuas"]) == 3
    assert rec["regime_mlm_level"] == ["h64"] and "h16" in rec["regime_mlm_below"]
    assert rec["regime_mlm_trend"] == "rises"
    assert "statistically indistinguishable" in out["text"] and rec["regime_text"] == out["text"]
    assert rec["regime_h64_30_mlm_verdict"] == "below"
