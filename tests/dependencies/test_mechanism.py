"""The head-error mechanism and the truth's zeros, on constructed matrices whose answers are known."""
import numpy as np
import pytest

from mlmbook.dependencies import mechanism


def _sentence():
    # 4 words; gold edges (0,1), (1,2), (2,3); the truth leaves (0,1) and the non-edges (0,2), (1,3) at zero
    T = np.zeros((4, 4))
    T[1, 2] = T[2, 1] = 0.5
    T[2, 3] = T[3, 2] = 0.4
    T[0, 3] = T[3, 0] = 0.2
    M = np.full((4, 4), 0.05)
    M[0, 1] = 0.45                                      # the model's leftover dependence on the zero gold edge
    M[1, 2], M[2, 3] = 0.5, 0.4
    return M, T, {(0, 1), (1, 2), (2, 3)}


def test_head_error_compares_zero_gold_edges_with_other_zero_pairs_within_a_sentence():
    M, T, gold = _sentence()
    model_tree, truth_tree = {(0, 1), (1, 2), (2, 3)}, {(0, 3), (1, 2), (2, 3)}
    h = mechanism.head_error([M, M], [T, T], [gold, gold], [model_tree] * 2, [truth_tree] * 2)
    assert h.n_gold == 2 and h.n_other == 4                    # per sentence: (0,1); (0,2), (1,3)
    np.testing.assert_allclose(h.differences, [0.4, 0.4])
    assert h.gold_mean == pytest.approx(0.45) and h.other_mean == pytest.approx(0.05)
    assert h.found_by_model == 2 and h.found_by_truth == 0


def test_truth_zeros_count_gold_edges_other_pairs_and_relations():
    M, T, gold = _sentence()
    rels = [{(0, 1): "det", (1, 2): "nsubj", (2, 3): "obl"}]
    out = mechanism.truth_zeros([T], [gold], rels, [{(0, 3), (1, 2), (2, 3)}], min_edges=1)
    assert out["truth_zero_on_gold"] == pytest.approx(1 / 3) and out["truth_zero_off_gold"] == pytest.approx(2 / 3)
    assert out["truth_pp_zero"] == 0.0
    assert out["truth_worst_rel"] == "det" and out["truth_worst_rel_recall"] == 0
    assert out["truth_best_rel_recall"] == 1.0
    assert (out["truth_worst_rel_found"], out["truth_worst_rel_edges"]) == (0, 1)
    assert out["truth_best_rel_found"] == out["truth_best_rel_edges"] == 1
    assert "truth_pp_zero" not in mechanism.truth_zeros([T], [gold], [{(0, 1): "det"}], [set()], min_edges=1)
