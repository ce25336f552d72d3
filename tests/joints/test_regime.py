"""Tests for mlmbook.joints.regime and mlmbook.joints.sampling (chapter 2's regime map)."""
import numpy as np

from mlmbook import joints as J
from mlmbook import stats
from mlmbook.joints.metrics import truth_conditional_kl
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
    point = J.rung_point(per, sentence=np.arange(len(queries)))
    assert all(isinstance(v, stats.Interval) for v in point.values())
    for m in ("hcb", "ag", "ag_anchored"):                     # compatible, positive: exact
        assert point[f"{m}_kl_truth"].estimate < 1e-9 and point[f"{m}_tv_truth"].estimate < 1e-6
    assert abs(point["gap"].estimate) < 1e-9 and point["mlm_cond_kl_truth"].estimate < 1e-9
    assert abs(point["anchor"].estimate) < 1e-9 and point["nearest_compatible"].estimate < 1e-12


def test_rung_point_matches_brute_force_on_a_perturbed_oracle():
    logp = random_joint(3, 4, seed=4)
    oracle = PerturbedOracle(logp, scale=0.8)
    queries, truths = _queries(oracle, n_queries=6, seed=1)
    sentence = np.repeat(np.arange(3), 2)                       # two pairs per sentence
    per = J.rung_pairs(oracle, queries, truths)
    point = J.rung_point(per, sentence)
    # the gap is AG's conditional KL to the truth minus the MLM's, computed pair by pair; the anchor
    # difference is anchored AG's KL to the truth minus AG's
    gaps, anchors = [], []
    for (ids, A, B), P in zip(queries, truths):
        pc = J.pair_conditionals(oracle, ids, A, B)
        joint = J.ag(pc).joint
        gaps.append(truth_conditional_kl(P, joint) - truth_conditional_kl(P, pc))
        anchors.append(J.kl_joint(P, J.anchor(joint, pc)) - J.kl_joint(P, joint))
        assert np.isclose(per["ag.tv_truth"][len(gaps) - 1], 0.5 * np.abs(P - joint).sum())
        assert np.isclose(per["ag_anchored.tv_truth"][len(gaps) - 1], J.tv_joint(P, J.anchor(joint, pc)))
    est, lo, hi = point["gap"]
    assert np.isclose(est, np.mean(gaps)) and lo <= est <= hi and point["gap"].n == 3    # sentences, not pairs
    assert np.isclose(point["anchor"].estimate, np.mean(anchors))
    assert "sign-flip" in point["gap"].method and point["gap"].level == 0.95
    assert point["mrf_kl_truth"].estimate > 0 and 0 < point["hcb_tv_truth"].estimate <= 1


def test_choose_pairs(toy_bert):
    from mlmbook.models import load_mlm
    from mlmbook.toy import Grammar

    lm = load_mlm(toy_bert)
    sents = Grammar.load("toy").sample(30, seed=0)
    items = J.choose_pairs(lm, sents, 5, np.random.default_rng(0))
    assert len(items) == 10 and [it["kind"] for it in items[:2]] == ["adjacent", "random"]
    assert [it["sentence"] for it in items] == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    for it in items:
        assert 0 <= it["wa"] < it["wb"] < len(it["words"]) and it["distance"] == it["wb"] - it["wa"]
        assert it["words"][it["wa"]] != "." and it["words"][it["wb"]] != "."
        assert it["ids"][it["A"]] not in lm.special_ids and it["ids"][it["B"]] not in lm.special_ids
        assert 1 <= it["tree_distance"] <= len(it["words"])
        if it["kind"] == "adjacent":
            assert it["distance"] == 1
    # word lists (no gold tree): no tree distance
    plain = J.choose_pairs(lm, [s.words for s in sents], 2, np.random.default_rng(0))
    assert all(it["tree_distance"] is None for it in plain)
    assert [(it["wa"], it["wb"]) for it in plain] == [(it["wa"], it["wb"]) for it in items[:4]]
