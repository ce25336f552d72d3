"""Model–data fit: the share of unknown pieces, and the one-line stop above the threshold."""
from pathlib import Path

import pytest

from mlmbook.corpus.conllu import read_conllu
from mlmbook.corpus.fit import check_fit, unknown_share
from mlmbook.errors import DataFitError

TINY = Path(__file__).parent.parent / "fixtures" / "tiny.conllu"


@pytest.fixture(scope="module")
def toy_lm(toy_bert):
    from mlmbook.models.hf import HFMaskedLM
    return HFMaskedLM.from_pretrained(toy_bert, name="toy")


def test_toy_vocabulary_on_english_is_mostly_unknown(toy_lm):
    from mlmbook.toy import Grammar
    english = read_conllu(TINY)
    fit = unknown_share(toy_lm, english)
    words = sum(len(s) for s in english)
    vocab = set(Grammar.load("toy").vocab)
    assert fit.n_words == words and fit.n_pieces == words  # WordLevel: one piece per word
    assert fit.n_unknown == sum(w not in vocab for s in english for w in s.words)
    assert fit.share > 0.5 and fit.examples
    toy = [s.words for s in Grammar.load("toy").sample(20, seed=0)]
    assert unknown_share(toy_lm, toy).share == 0.0


def test_check_fit_stops_or_warns(toy_lm, capsys):
    english = read_conllu(TINY)
    with pytest.raises(DataFitError) as err:
        check_fit(toy_lm, english, model="toy", treebank="tiny.conllu")
    msg = str(err.value)
    assert "\n" not in msg and "'toy'" in msg and "tiny.conllu" in msg and "allow_unknown" in msg
    fit = check_fit(toy_lm, english, model="toy", treebank="tiny.conllu", allow=True)
    assert fit.share > 0.1
    assert "warning" in capsys.readouterr().err


def test_subword_model_knows_english_pieces(wordpiece_bert):
    from mlmbook.models.hf import HFMaskedLM
    lm = HFMaskedLM.from_pretrained(wordpiece_bert)
    english = read_conllu(TINY)
    fit = check_fit(lm, english, model="wp", treebank="tiny.conllu")  # letters are pieces: nothing unknown
    assert fit.n_pieces > fit.n_words and fit.share <= 0.10
