"""Judging dependency scores: counts, the CMI error against the truth, paired verdicts."""
import numpy as np
import pytest

from mlmbook import stats
from mlmbook.dependencies import evaluate

FAMILY = stats.Family("test", size=5)


def test_counts_read_the_spanning_tree():
    M = np.array([[0, 1.0, 0.1], [1.0, 0, 0.9], [0.1, 0.9, 0]])
    c, g = evaluate.counts([M, M], [{(0, 1), (1, 2)}, {(0, 2), (1, 2)}])
    assert c.tolist() == [2, 1] and g.tolist() == [2, 2]


def test_cmi_error_against_a_direct_computation():
    rng = np.random.default_rng(0)
    truth = [np.abs(rng.normal(size=(n, n))) for n in (4, 5, 6)]
    model = [T + rng.normal(scale=0.1, size=T.shape) for T in truth]
    err = evaluate.cmi_error(model, truth)
    m = np.concatenate([np.maximum(M, M.T)[np.triu_indices(len(M), 1)] for M in model])
    t = np.concatenate([np.maximum(T, T.T)[np.triu_indices(len(T), 1)] for T in truth])
    assert err.n_pairs == len(m) == 6 + 10 + 15
    assert err.corr.estimate == pytest.approx(np.corrcoef(m, t)[0, 1])
    assert err.mae.estimate == pytest.approx(np.abs(m - t).mean())
    assert err.corr.low <= err.corr.estimate <= err.corr.high
    same = evaluate.cmi_error(truth, truth)
    assert same.mae.estimate == 0 and same.corr.estimate == pytest.approx(1)


def test_compare_is_paired_and_hierarchical_over_seeds():
    rng = np.random.default_rng(1)
    g = np.full(30, 6)
    base = rng.binomial(6, 0.5, 30)
    better = [(np.minimum(base + 1, 6), g), (np.minimum(base + 2, 6), g)]
    fixed = [(base, g), (base, g)]
    v = evaluate.compare(better, fixed, FAMILY)
    assert v.side == "above" and v.interval.seeds == 2 and v.interval.level == FAMILY.level
    assert v.phrase == "above" and not stats.check_record(v.to_record())
    tie = evaluate.compare([(base, g)], [(base, g)], FAMILY)
    assert tie.side == "indistinguishable" and "would have been detected" in tie.text()
    with pytest.raises(ValueError, match="same training seeds"):
        evaluate.compare(better, fixed[:1], FAMILY)
