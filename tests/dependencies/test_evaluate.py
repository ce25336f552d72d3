"""Judging dependency scores: counts, the CMI error against the truth, reports of a model."""
from types import SimpleNamespace

import numpy as np
import pytest

from mlmbook.dependencies import evaluate


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


def test_the_report_of_a_model_is_memoised_by_its_weights_folder(monkeypatch):
    """A cached model loaded under two names (a knob setting that is also a rung) is scored once."""
    from mlmbook.dependencies import sample
    from mlmbook.toy import Grammar

    class Fake:
        def __init__(self, path):
            self.model = type("M", (), {"name_or_path": path})()

    sc = sample.Scored.of(Grammar.load("toy").sample(2, seed=2))
    scored = []

    def fake_scores(lm, words, keep, **kw):
        scored.append(lm)
        return SimpleNamespace(scores=[np.ones((n, n)) for n in sc.n_words])

    monkeypatch.setattr(evaluate, "_MEMO", {})
    monkeypatch.setattr(evaluate, "cmi_scores", fake_scores)
    plain = object()
    for lm in (Fake("/cache/a"), Fake("/cache/a"), Fake("/cache/b"), plain, plain, object()):
        evaluate.report(lm, sc, None, with_cpmi=False)
    assert len(scored) == 4 and scored[1].model.name_or_path == "/cache/b" and scored[2] is plain


def test_report_of_reads_the_first_sentences_of_measured_matrices():
    from mlmbook.dependencies import sample
    from mlmbook.toy import Grammar
    sc = sample.Scored.of(Grammar.load("toy").sample(6, seed=2))
    mats = {evaluate.CMI: [np.ones((n, n)) for n in sc.n_words] + [np.ones((3, 3))]}
    rep = evaluate.report_of(mats, None, sc.head(4), truth_mats=mats[evaluate.CMI])
    assert len(rep.mats[evaluate.CMI]) == 4 and rep.counts[evaluate.CMI][1].tolist() == [len(e) for e in sc.edges[:4]]
    assert rep.error.mae.estimate == 0


def test_pick_refuses_an_empty_selection():
    from mlmbook.dependencies import sample
    from mlmbook.toy import Grammar

    pool = Grammar.load("toy").sample(20, seed=0)
    with pytest.raises(ValueError, match="scored words"):
        sample.pick(pool, None, 5, max_words=60, min_words=50)
