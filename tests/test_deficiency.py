"""Chapter 4's measurements: like-with-like rank comparisons on blocks, the fit to the truth, the training
seed as the unit (rows for the study layer, the per-width panel, MAE-LM's training failures), its figures."""
import numpy as np
import pytest
import torch

from mlmbook import deficiency as D
from mlmbook import rank, stats
from mlmbook.deficiency import measure as geometry_module
from mlmbook.deficiency.seeds import FAIL_MARGIN, SIGN_LABELS
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


def test_top_directions_are_the_top_subspace_at_the_eps_rank():
    rng = np.random.default_rng(5)
    H = rng.normal(size=(200, 8)) @ np.diag([6, 4, 3, 1, 0.5, 0.3, 0.2, 0.1])
    U = geometry_module._top_directions(H[None], 0.1)[0]
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


def test_make_sample_leaves_out_sentences_longer_than_the_model_reads(fake):
    """Issue 35: a treebank's long sentences crashed chapter 4 with a tensor-size error; the sample keeps only
    sentences within the model's window, and the width comes from the model, not from a sentence."""
    lm, _ = fake
    rng = np.random.default_rng(4)
    words = [[f"w{k}" for k in rng.integers(0, 30, size=n)] for n in rng.integers(4, 60, size=400)]
    sample = D.make_sample(lm, words, mask_rate=0.2, n_rows=48, seed=0)
    assert all(len(r) <= lm.max_length for r in sample.rows)
    assert len(sample.rows) < sum(len(w) <= lm.max_length for w in words) + 1
    assert D.geometry(lm, sample, masked=False).width == 24


def test_sentences_for_the_toy_language():
    words, corpus = D.sentences_for(None, 12, seed=3)
    assert corpus is None and len(words) == 12
    assert words == [s.words for s in Grammar.load("toy").sample(12, seed=3 + 10_000)]


# ------------------------------------------------------------------------ the seed as the unit
def test_seed_rows_flatten_per_block_values_and_keep_each_seed_mean():
    rows = D.seed_rows({2: [1.0, 3.0], 0: np.array([0.0, 1.0, 2.0])})
    assert rows.seeds == [0, 0, 0, 2, 2] and rows.values.tolist() == [0, 1, 2, 1, 3]
    assert rows.means == {0: 1.0, 2: 2.0} and rows.n_seeds == 2
    with pytest.raises(ValueError):
        D.seed_rows({})
    with pytest.raises(ValueError, match="no values"):
        D.seed_rows({0: []})


def test_difference_pairs_units_seed_by_seed():
    a = {0: np.array([1.0, 2.0]), 1: np.array([3.0, 5.0]), 2: np.array([0.0, 0.0])}
    b = {0: np.array([2.0, 4.0]), 1: np.array([3.0, 6.0])}
    d = D.difference(a, b, scale=2.0)
    assert list(d) == [0, 1] and d[0].tolist() == [0.5, 1.0] and d[1].tolist() == [0.0, 0.5]
    with pytest.raises(ValueError, match="different units"):
        D.difference({0: np.zeros(2)}, {0: np.zeros(3)})
    with pytest.raises(ValueError, match="no seed"):
        D.difference({0: np.zeros(2)}, {1: np.zeros(2)})


def test_a_recipe_claim_is_a_t_over_seed_means():
    """Three seeds, many blocks each: the interval is Student t over the three seed means (df 2), by
    brute force; the study layer's answer on the same rows uses the same test, and one seed's rows give
    an interval over its blocks that is conditional on that model."""
    from scipy.stats import t as student_t
    rng = np.random.default_rng(7)
    by_seed = {s: rng.normal(mu, 0.01, size=18) for s, mu in zip((0, 1, 2), (0.07, 0.045, 0.034))}
    means = np.array([v.mean() for v in by_seed.values()])
    half = student_t.ppf(0.975, 2) * means.std(ddof=1) / np.sqrt(3)
    iv = D.describe_seeds(by_seed)
    assert iv.estimate == pytest.approx(means.mean()) and iv.seeds == 3
    assert (iv.low, iv.high) == pytest.approx((means.mean() - half, means.mean() + half))
    study = stats.Study("test", [stats.Question(k, k, 0.02, "2 %", unit="seed") for k in ("gap", *"bcdef")])
    rows = D.seed_rows(by_seed)
    a = study.answer("gap", rows.values, seeds=rows.seeds)
    assert a.tested.test == "seed t" and a.interval.estimate == pytest.approx(means.mean())
    assert a.side == "indistinguishable"          # all three positive, but three seeds at 5 % / 6 cannot decide
    one = D.describe_seeds({0: by_seed[0]})
    assert one.seeds == 1 and one.low > 0.06 and one.n == 18


def test_width_panel_reads_each_trained_model_and_the_sign_change():
    rng = np.random.default_rng(8)
    neg = {s: rng.normal(-0.05, 0.01, size=10) for s in range(3)}
    pos = {s: rng.normal(0.05, 0.01, size=10) for s in range(3)}
    mixed = {0: rng.normal(0.05, 0.01, size=10), 1: rng.normal(-0.05, 0.01, size=10)}
    panel = D.width_panel({64: pos, 32: neg, 128: {0: pos[0]}})
    assert [r.width for r in panel] == [32, 64, 128]
    assert [r.side for r in panel] == ["below", "above", "above"] and panel[2].conditional
    assert all(iv.high < 0 for iv in panel[0].per_model.values())
    assert panel[0].per_seed == pytest.approx({s: v.mean() for s, v in neg.items()})
    assert D.sign_change(panel) == "changes sign"
    assert D.sign_change(D.width_panel({32: pos, 64: pos})) == "keeps one sign"
    assert D.sign_change(D.width_panel({32: neg, 64: mixed})) == SIGN_LABELS[2]
    assert D.width_panel({16: mixed})[0].side == "mixed"


def test_training_failures_count_runs_far_above_their_twin():
    from scipy.stats import beta
    runs = {"a": (2.23, 2.13), "b": (2.675, 1.851), "c": (1.95, 1.90), "d": (2.20, 1.90)}
    st = D.training_failures(runs)
    assert st.n == 4 and st.failed == ["b", "d"] and st.excess["b"] == pytest.approx(0.824)
    assert st.interval.estimate == 0.5
    assert (st.interval.low, st.interval.high) == pytest.approx((beta.ppf(0.025, 2, 3), beta.ppf(0.975, 3, 2)))
    assert D.training_failures(runs, margin=0.9).failed == []
    with pytest.raises(ValueError):
        D.training_failures({})


def test_interval_format_has_no_negative_zero():
    assert stats.Interval(-0.0001, -0.02, 0.01).format() == "0.000 [-0.020, 0.010]"
    assert stats.Interval(0.0512, 0.0023, 0.099).format() == "0.051 [0.002, 0.099]"
    assert stats.Interval(-0.04, -0.09, -0.0004).format(4) == "-0.0400 [-0.0900, -0.0004]"
    assert stats.Interval(0.02, float("-inf"), float("inf")).format() == "0.020 [unbounded]"


INTERVALS = ("gap_share", "gap_directions", "deficiency_slope", "mask_adds_slope", "fit_matched", "depth_matched")


def test_earlier_results_are_intervals_with_their_commit():
    for key, entry in D.EARLIER.items():
        assert len(entry["commit"]) >= 7, key
        intervals = [v for k, v in entry.items() if k in INTERVALS] + [
            iv for k in ("mlm", "maelm") for iv in entry.get(k, {}).values()]
        for value in intervals:
            assert len(value) == 3 and value[1] <= value[0] <= value[2], (key, value)
    h128 = D.EARLIER["h128_three_seeds"]
    excess = [a - b for a, b in zip(h128["maelm_final_loss"], h128["mlm_final_loss"])]
    assert D.training_failures(dict(enumerate(zip(h128["maelm_final_loss"], h128["mlm_final_loss"])))).failed == [1]
    assert max(excess) > FAIL_MARGIN > sorted(excess)[-2]


def test_figures_keep_legends_off_the_data():
    """Issue 36: Fig 4.2's legend covered data; the chapter's figures place legends where they cover none."""
    import matplotlib.pyplot as plt

    from mlmbook import plotting
    from mlmbook.deficiency import figures
    plotting.use_style()
    iv = [stats.Interval(x, x - 0.5, x + 0.5) for x in (0.0, 1.0, 2.0)]
    by_layer = {(k, kind): iv for k in ("a", "b", "c") for kind in ("entropy", "entropy_centred")}
    fig = figures.layers(by_layer, {"a": "first", "b": "second", "c": "third"})
    fig.draw_without_rendering()
    assert plotting.legend_overlaps(fig, fig.legends) == 0
    panel = D.width_panel({32: {s: np.full(4, -0.05 + 0.01 * s) for s in range(3)},
                           64: {0: np.linspace(0.04, 0.06, 8)}})
    fig = figures.widths(panel, {(n, w): 0.5 for n in ("MLM", "MAE-LM") for w in (32, 64)})
    fig.draw_without_rendering()
    legends = [a.get_legend() for a in fig.axes if a.get_legend() is not None]
    assert legends and plotting.legend_overlaps(fig, legends) == 0
    plt.close("all")
