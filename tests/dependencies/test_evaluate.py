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


def test_power_note_names_only_the_comparisons_that_cannot_detect_the_effect():
    rng = np.random.default_rng(2)
    g = np.full(400, 6)
    base = rng.binomial(6, 0.5, 400)
    sharp = evaluate.compare([(base, g)], [(base, g)], FAMILY)           # 400 sentences
    blunt = evaluate.compare([(base[:8], g[:8])], [(base[:8], g[:8])], FAMILY)   # 8 sentences
    assert sharp.detectable < 0.05 < blunt.detectable
    assert evaluate.power_note({"the big one": sharp}, 0.05) == ""
    note = evaluate.power_note({"the big one": sharp, "the small one": blunt.to_record()}, 0.05)
    assert "the small one" in note and "the big one" not in note and "one comparison" in note
    assert f"{blunt.detectable:.2f}" in note and f"{blunt.detectable / 0.05:.1f} times" in note


def test_read_treebank_keeps_the_window_in_scored_words_and_fails_in_one_line(tmp_path):
    from mlmbook.corpus import TreebankError
    from mlmbook.dependencies import sample
    from tests.chapters.conftest import ANY_MODEL_TREEBANK

    sents, loaded = sample.read_treebank(ANY_MODEL_TREEBANK, 6, seed=0)
    scored = [sum(u != "PUNCT" for u in s.upos) for s in sents]
    assert sents and all(3 <= k <= 6 for k in scored)
    assert any("PUNCT" in s.upos for s in sents)                          # punctuation is read
    assert len(sents) == len(loaded.sentences) and "any_model.conllu" in loaded.summary()
    again, _ = sample.read_treebank(ANY_MODEL_TREEBANK, 6, seed=0)
    assert [s.words for s in again] == [s.words for s in sents]            # same seed, same order
    with pytest.raises(TreebankError, match="no sentence of 3–3 words"):
        sample.read_treebank(_one_long(tmp_path), 3)


def _one_long(tmp_path):
    path = tmp_path / "long.conllu"
    rows = [f"{i}\tw{i}\tw{i}\tNOUN\t_\t_\t{0 if i == 1 else 1}\t{'root' if i == 1 else 'dep'}\t_\t_"
            for i in range(1, 9)]
    path.write_text("\n".join(rows) + "\n\n")
    return path


def test_pick_refuses_an_empty_selection():
    from mlmbook.dependencies import sample
    from mlmbook.toy import Grammar

    pool = Grammar.load("toy").sample(20, seed=0)
    with pytest.raises(ValueError, match="scored words"):
        sample.pick(pool, None, 5, max_words=60, min_words=50)
