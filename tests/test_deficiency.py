"""Chapter 4's measurements: like-with-like rank comparisons on blocks, paired intervals, the fit to the truth."""
import numpy as np
import pytest
import torch

from mlmbook import deficiency as D
from mlmbook import rank, stats
from mlmbook.toy import Grammar

MASK_ID = 4


class ContextFree:
    """A fake encoder: every token's state is a fixed row of E (no context), at two layers.

    Word rows span a 12-dimensional subspace; the [MASK] row is orthogonal to it. So the
    [MASK] rows add exactly one direction and lie wholly outside the real-token subspace.
    """

    mask_id, max_length = MASK_ID, 40

    def __init__(self, d=24, n_words=30, seed=0):
        rng = np.random.default_rng(seed)
        Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
        self.E = np.zeros((5 + n_words, d))
        self.E[5:] = rng.normal(size=(n_words, 12)) @ Q[:, :12].T
        self.E[MASK_ID] = 3.0 * Q[:, 12]
        self.words = [f"w{i}" for i in range(n_words)]

    def encode_words(self, words):
        ids = [5 + int(w[1:]) for w in words]
        return ids, [[p] for p in range(len(ids))]

    def hidden_states(self, ids):
        h = torch.as_tensor(self.E)[torch.as_tensor(ids)]
        return h, 2 * h


@pytest.fixture(scope="module")
def fake():
    lm = ContextFree()
    rng = np.random.default_rng(1)
    words = [[f"w{k}" for k in rng.integers(0, 30, size=rng.integers(4, 12))] for _ in range(400)]
    return lm, D.make_sample(lm, words, mask_rate=0.2, n_rows=96, seed=0)


def test_sample_blocks_are_disjoint_and_rows_are_the_right_kind(fake):
    lm, sample = fake
    assert sample.n_blocks >= 10 and sample.kept.shape == (sample.n_blocks, 96, 2)
    seen = np.concatenate(sample.blocks)
    assert len(seen) == len(set(seen.tolist()))                      # no sentence in two blocks
    for b, block in enumerate(sample.blocks):
        assert set(sample.kept[b, :, 0]) <= set(block) and set(sample.every[b, :, 0]) <= set(block)
        assert not any(sample.masked[s][p] for s, p in sample.kept[b])        # kept rows are unmasked
        assert len({tuple(x) for x in sample.kept[b]}) == 96                   # no row twice
    assert any(sample.masked[s][p] for s, p in sample.every[0])               # 'every' includes [MASK] rows
    with pytest.raises(ValueError, match="fewer than"):
        D.make_sample(lm, [["w1", "w2"]], 0.2, 96)


def test_geometry_on_a_model_whose_answer_is_known(fake):
    lm, sample = fake
    g = D.geometry(lm, sample)
    assert g.width == 24 and g.n_layers == 2
    for kind in rank.RANK_KINDS:
        # no context: the same tokens give the same rows with or without [MASK] in the input
        np.testing.assert_allclose(g.ranks["clean", kind], g.ranks["masked_real", kind])
    assert np.all(g.ranks["clean", "mass"] <= 12)                     # words span 12 directions
    assert np.all(g.ranks["all", "entropy"] > g.ranks["masked_real", "entropy"])   # [MASK] adds a direction
    np.testing.assert_allclose(g.overlap["mask"], 0, atol=1e-12)      # and it is outside the real subspace
    assert np.all(g.overlap["heldout"] > 0.8)
    # the per-block ranks are those of the matrices the sample names
    H = lm.E[np.array([sample.rows[s][p] for s, p in sample.kept[3]])]
    assert g.ranks["clean", "entropy"][0, 3] == pytest.approx(rank.effective_rank_entropy(H))
    assert g.ranks["clean", "mass_centred"][1, 3] == rank.effective_rank_mass(2 * H, center=True)


def test_paired_and_mean_intervals_follow_the_stats_rule():
    rng = np.random.default_rng(0)
    a = [rng.normal(10, 1, size=12) for _ in range(3)]
    b = [x + 0.5 + rng.normal(0, 0.01, size=12) for x in a]           # paired: a constant shift
    iv = D.paired(a, b, level=0.99)
    assert iv.estimate == pytest.approx(np.mean(np.concatenate(b) - np.concatenate(a)))
    assert iv.seeds == 3 and "hierarchical" in iv.method and iv.low > 0.4 and iv.high < 0.6
    assert stats.decide(iv).side == "above"
    assert D.paired(a, a).estimate == 0 and D.paired(a[:1], b[:1]).seeds == 1
    m = D.mean_interval(a)
    assert m.low < np.mean(np.concatenate(a)) < m.high
    with pytest.raises(ValueError, match="same units"):
        D.per_seed([np.zeros(3), np.zeros(4)])


def test_slope_contrast_recovers_a_linear_dose_response():
    x = [0.12, 0.24, 0.36, 0.48]
    w = D.slope_weights(x)
    assert np.dot(w, x) == pytest.approx(1.0) and np.sum(w) == pytest.approx(0.0)
    rng = np.random.default_rng(2)
    noise = [rng.normal(0, 0.02, size=10) for _ in range(3)]
    series = [[2.0 * xs + 1 + e for e in noise] for xs in x]          # the same units at every setting
    iv = D.contrast(series, w, level=0.99)
    assert iv.estimate == pytest.approx(2.0) and iv.low < 2.0 < iv.high and iv.high - iv.low < 1e-6
    flat = D.contrast([[np.full(10, 1.0) + e for e in noise] for _ in x], w)
    assert flat.estimate == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError):
        D.slope_weights([0.3, 0.3])


def test_probe_gap_is_a_paired_ratio_over_seeds_and_sentences():
    total = [np.full(20, 5.0)] * 3
    a = [(np.full(20, 3.0), t) for t in total]
    b = [(np.full(20, 4.0), t) for t in total]
    iv = D.probe_gap(a, b)
    assert iv.estimate == pytest.approx(0.2) and iv.seeds == 3


def test_truth_kl_is_the_package_kl_per_sentence():
    from mlmbook.compare import kl_to_truth
    from mlmbook.models.truth import TruthOracle
    g = Grammar.load("tiny")
    sents = [s.words for s in g.sample(6, seed=1)]
    truth = D.Truth(g, sents)
    oracle = TruthOracle(g)
    np.testing.assert_allclose(truth.kl(oracle), 0.0, atol=1e-9)        # the truth fits itself exactly

    class Uniform(TruthOracle):                                         # a model that ignores context
        def _logits_chunk(self, ids, positions):
            out = super()._logits_chunk(ids, positions)
            return torch.where(torch.isfinite(out), torch.zeros_like(out), out)

    u = Uniform(g)
    want = [k.mean() for k in kl_to_truth(g, u, sents, offset=truth.offset)]
    np.testing.assert_allclose(truth.kl(u), want, rtol=1e-10)
    assert np.all(truth.kl(u) > 0)


def test_beside_paper_reads_sides_never_point_estimates():
    assert D.beside_paper(["above", "indistinguishable"]) == "agrees"
    assert D.beside_paper(["below", "indistinguishable", "indistinguishable"]) == "runs against"
    assert D.beside_paper(["above", "below"]) == "mixed"
    assert D.beside_paper(["indistinguishable", "undefined"]) == "inconclusive"
    # the old chapter called the downstream result agreeing or not from point estimates; an
    # indistinguishable verdict whose estimate favours MAE-LM must not count as agreement
    iv = stats.Interval(0.02, -0.01, 0.05, level=0.99, se=0.015)
    assert D.beside_paper([stats.decide(iv).side]) == "inconclusive"


def test_probe_value_is_the_pooled_ratio():
    runs = [(np.full(10, 2.0), np.full(10, 4.0)) for _ in range(3)]
    iv = D.probe_value(runs)
    assert iv.estimate == pytest.approx(0.5) and iv.low < 0.5 < iv.high


def test_top_directions_are_the_top_subspace_at_the_eps_rank():
    rng = np.random.default_rng(5)
    H = rng.normal(size=(200, 8)) @ np.diag([6, 4, 3, 1, 0.5, 0.3, 0.2, 0.1])
    U = D._top_directions(H, 0.1)
    k = rank.effective_rank_mass(H, 0.1)
    V = rank.top_subspace(H, k)
    assert U.shape == (8, k)
    np.testing.assert_allclose(U @ U.T, V @ V.T, atol=1e-9)


def test_sample_keeps_only_the_sentences_its_blocks_use(fake):
    lm, _ = fake
    rng = np.random.default_rng(3)
    words = [[f"w{k}" for k in rng.integers(0, 30, size=8)] for _ in range(300)]
    small = D.make_sample(lm, words, mask_rate=0.2, n_rows=40, seed=1, max_blocks=2)
    assert small.n_blocks == 2 and len(small.rows) == sum(len(b) for b in small.blocks) < 300
    assert sorted(np.concatenate(small.blocks).tolist()) == list(range(len(small.rows)))
    for b in range(2):                                   # the remapped pairs still name unmasked tokens of the block
        assert set(small.kept[b, :, 0]) <= set(small.blocks[b])
        assert not any(small.masked[s][p] for s, p in small.kept[b])


def test_geometry_of_the_clean_input_alone_is_the_same(fake):
    """``masked=False`` encodes only the clean input: the same clean ranks, no other condition."""
    lm, sample = fake
    full, clean = D.geometry(lm, sample), D.geometry(lm, sample, masked=False)
    assert {c for c, _ in clean.ranks} == {"clean"} and not clean.overlap
    for kind in rank.RANK_KINDS:
        np.testing.assert_array_equal(clean.ranks["clean", kind], full.ranks["clean", kind])
