"""Tests for mlmbook.joints.regime and mlmbook.joints.sampling (chapter 2's regime map)."""
import numpy as np
import pytest

from mlmbook import joints as J
from tests.fakes import JointOracle, PerturbedOracle, random_joint


def _queries(oracle, n_queries=4, seed=0):
    """Sentences of three words, positions 0 and 2 masked; the true joint by brute force."""
    rng = np.random.default_rng(seed)
    queries, truths = [], []
    for _ in range(n_queries):
        ids = rng.integers(0, oracle.Vw, size=3)
        P = np.exp(oracle.logp[:, ids[1], :])                  # p(x0, x2 | x1), enumerated
        queries.append((ids, 0, 2))
        truths.append(P / P.sum())
    return queries, truths


def test_rung_point_on_an_exact_oracle_has_no_gap():
    logp = random_joint(3, 4, seed=3)
    queries, truths = _queries(JointOracle(logp))
    per = J.rung_pairs(JointOracle(logp), queries, truths)
    point = J.rung_point(per, n_boot=200)
    for m in ("hcb", "ag"):                                    # compatible, positive: exact
        assert point[f"{m}_kl_truth"][0] < 1e-9 and point[f"{m}_tv_truth"][0] < 1e-6
    assert abs(point["gap"][0]) < 1e-9 and point["mlm_cond_kl_truth"][0] < 1e-9
    assert point["compatibility"][0] < 1e-12


def test_rung_point_matches_brute_force_on_a_perturbed_oracle():
    logp = random_joint(3, 4, seed=4)
    oracle = PerturbedOracle(logp, scale=0.8)
    queries, truths = _queries(oracle, n_queries=6, seed=1)
    per = J.rung_pairs(oracle, queries, truths)
    point = J.rung_point(per, n_boot=300, seed=2)
    # the gap is AG's conditional KL to the truth minus the MLM's, computed pair by pair
    gaps = []
    for (ids, A, B), P in zip(queries, truths):
        pc = J.pair_conditionals(oracle, ids, A, B)
        gaps.append(J.truth_conditional_kl(P, J.ag(pc).joint) - J.truth_conditional_kl(P, pc))
        assert np.isclose(per["ag.tv_truth"][len(gaps) - 1], 0.5 * np.abs(P - J.ag(pc).joint).sum())
    est, lo, hi = point["gap"]
    assert np.isclose(est, np.mean(gaps)) and lo <= est <= hi
    assert point["mrf_kl_truth"][0] > 0 and 0 < point["hcb_tv_truth"][0] <= 1
    # AG's gain on a rung against itself: exactly zero; swapping the rungs flips the sign
    exact = J.rung_pairs(JointOracle(logp), queries, truths)
    assert J.gain_trend(per, per, n_boot=100) == (0.0, 0.0, 0.0)
    d, lo, hi = J.gain_trend(per, exact, n_boot=100, seed=3)
    d2, lo2, hi2 = J.gain_trend(exact, per, n_boot=100, seed=3)
    assert np.isclose(d, -d2) and np.isclose(lo, -hi2) and np.isclose(hi, -lo2)
    assert np.isclose(d, -np.mean(gaps))                       # the exact rung gains nothing


@pytest.mark.parametrize("interval, expected", [((-1, -2, -0.1), "lower"), ((1, 0.1, 2), "higher"),
                                                ((0, -1, 1), "indistinguishable"), ((0, 0, 1), "indistinguishable")])
def test_verdict_needs_an_interval_that_excludes_zero(interval, expected):
    assert J.verdict(interval) == expected


def test_choose_pairs(toy_bert):
    from mlmbook.models import load_mlm
    from mlmbook.toy import Grammar

    lm = load_mlm(toy_bert)
    sents = [s.words for s in Grammar.load("toy").sample(30, seed=0)]
    items = J.choose_pairs(lm, sents, 5, np.random.default_rng(0))
    assert len(items) == 10 and [it["kind"] for it in items[:2]] == ["adjacent", "random"]
    for it in items:
        assert 0 <= it["wa"] < it["wb"] < len(it["words"]) and it["distance"] == it["wb"] - it["wa"]
        assert it["words"][it["wa"]] != "." and it["words"][it["wb"]] != "."
        assert it["ids"][it["A"]] not in lm.special_ids and it["ids"][it["B"]] not in lm.special_ids
        if it["kind"] == "adjacent":
            assert it["distance"] == 1
