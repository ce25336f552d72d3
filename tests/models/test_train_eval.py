"""The held-out evaluator of training: its reference losses are computed once per grammar and seed."""
import json

from mlmbook.models.train import SingleSiteEval
from mlmbook.toy import Grammar


def test_reference_losses_are_kept_and_reused_exactly(tmp_path, monkeypatch):
    monkeypatch.setenv("MLMBOOK_CACHE", str(tmp_path))
    g = Grammar.load("tiny")
    first = SingleSiteEval(g, 12, 3)
    memo = list((tmp_path / "evaluator").glob("*.json"))
    assert len(memo) == 1 and json.loads(memo[0].read_text())["bayes"] == first.bayes
    again = SingleSiteEval(g, 12, 3)
    assert (again.bayes, again.unigram) == (first.bayes, first.unigram) and first.bayes < first.unigram
    assert [s.words for s in again.sentences] == [s.words for s in first.sentences]
    other = SingleSiteEval(g, 12, 4)                                       # another seed: its own entry
    assert len(list((tmp_path / "evaluator").glob("*.json"))) == 2 and other.bayes != first.bayes
    memo[0].write_text("{not json")                                        # unreadable: computed again
    assert SingleSiteEval(g, 12, 3).bayes == first.bayes
