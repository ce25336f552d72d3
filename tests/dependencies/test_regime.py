"""The regime map's bookkeeping on synthetic counts: descriptive points, each beside the truth on the same sentences."""
import numpy as np
import pytest

from mlmbook.dependencies import regime


def _counts(rate, n=40, gold=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.binomial(gold, rate, size=n), np.full(n, gold)


def test_rung_points_describe_each_method_beside_the_truth():
    truth = _counts(0.9)
    far = {m: _counts(0.2, seed=1) for m in regime.METHODS}
    for p in regime.rung_points("h16", 2.0, far, truth):
        assert p.n == 40 and p.kl == 2.0 and p.uuas.level == 0.95
        assert p.minus_truth.estimate == pytest.approx(p.uuas.estimate - truth[0].sum() / truth[1].sum())
        assert p.minus_truth.high < 0 and p.uuas.low <= p.uuas.estimate <= p.uuas.high
    few = tuple(x[:20] for x in truth)                  # (all-equal units above 30 hit a stats bug; reported)
    same = regime.rung_points("h64", 0.1, {m: few for m in regime.METHODS}, few)
    assert all(p.minus_truth.estimate == 0 for p in same)


def test_rung_points_refuse_counts_on_other_sentences():
    with pytest.raises(ValueError, match="same sentences"):
        regime.rung_points("h16", 1.0, {regime.METHODS[0]: _counts(0.5, n=10)}, _counts(0.5, n=10, gold=4))


def test_record_map_records_every_point_and_the_rungs_farthest_first():
    truth = _counts(0.8, n=20)
    pts = regime.rung_points("h64", 0.3, {m: truth for m in regime.METHODS}, truth)
    pts += regime.rung_points("h16", 2.0, {m: _counts(0.2, n=20, seed=3) for m in regime.METHODS}, truth)
    pts += regime.rung_points("h64@30%", 1.0, {m: _counts(0.5, n=20, seed=7) for m in regime.METHODS}, truth)
    rec = {}
    regime.record_map(pts, rec.__setitem__)
    assert rec["regime_rungs"] == ["h16", "h64@30%", "h64"]
    assert rec["regime_h64_30_mlm_kl"] == 1.0 and rec["regime_h16_cpmi_uuas"].estimate < 0.5
    assert rec["regime_h64_mlm_minus_truth"].estimate == 0
    assert not any("vs_truth" in k or k.endswith("_text") for k in rec)          # descriptive: no verdicts, no prose
