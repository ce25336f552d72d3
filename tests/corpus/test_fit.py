"""Model–data fit: unknown pieces, the language (tokenisation) check, the one-line stop and the page's warning box."""
from pathlib import Path

import pytest

from mlmbook.corpus.conllu import read_conllu
from mlmbook.corpus.fit import RULES, Fit, FitRules, check_fit, measure_fit, unknown_share
from mlmbook.errors import DataFitError

FIXTURES = Path(__file__).parent.parent / "fixtures"
TINY = FIXTURES / "tiny.conllu"
FRENCH_LIKE = FIXTURES / "french_like.conllu"
ENGLISH_WEB = FIXTURES / "english_web.conllu"


@pytest.fixture(scope="module")
def toy_lm(toy_bert):
    from mlmbook.models.hf import HFMaskedLM
    return HFMaskedLM.from_pretrained(toy_bert, name="toy")


@pytest.fixture(scope="module")
def english_wordpiece(tmp_path_factory):
    """A random BERT whose WordPiece vocabulary was trained on the toy language (English words only)."""
    from mlmbook.models import load_mlm
    from mlmbook.toy import Grammar
    from tests.conftest import save_tiny_wordpiece_bert
    corpus = [s.text for s in Grammar.load("toy").sample(500, seed=0)]
    return load_mlm(str(save_tiny_wordpiece_bert(tmp_path_factory.mktemp("en_wp"), corpus, vocab_size=1000)))


def test_toy_vocabulary_on_english_is_mostly_unknown(toy_lm):
    from mlmbook.toy import Grammar
    english = read_conllu(TINY)
    fit = unknown_share(toy_lm, english)
    tokens = [t for s in english for t in s.tokens]                 # the model reads surface tokens
    vocab = set(Grammar.load("toy").vocab)
    assert fit.n_words == len(tokens) and fit.n_pieces == len(tokens)  # WordLevel: one piece per token
    assert fit.n_unknown == sum(t not in vocab for t in tokens)
    assert "can't" in tokens and "ca" not in tokens
    assert fit.share > 0.5 and fit.examples and fit.pll_per_piece is None
    toy = [s.words for s in Grammar.load("toy").sample(20, seed=0)]
    assert unknown_share(toy_lm, toy).share == 0.0


def test_check_fit_stops_or_warns_and_the_warning_is_a_box_on_the_page(toy_lm, capsys):
    english = read_conllu(ENGLISH_WEB)
    with pytest.raises(DataFitError) as err:
        check_fit(toy_lm, english, model="toy", treebank="english_web.conllu")
    msg = str(err.value)
    assert "\n" not in msg and "'toy'" in msg and "english_web.conllu" in msg and "allow_unknown" in msg
    assert "unknown" in msg and "10%" in msg
    fit = check_fit(toy_lm, english, model="toy", treebank="english_web.conllu", allow=True)
    assert fit.share > 0.1 and not fit.ok and fit.allowed
    assert "warning" in capsys.readouterr().err                   # the build's terminal
    box = fit.admonition()
    html = box._repr_html_()
    assert 'class="admonition warning"' in html and "english_web.conllu" in html and "allow_unknown" in html
    assert box._repr_markdown_().startswith("```{warning}") and str(box) in box._repr_markdown_()
    assert check_fit(toy_lm, [s.words for s in english[:0]] + [["the", "cows", "."]]).admonition() is None


def test_an_english_wordpiece_model_is_refused_on_a_french_like_treebank(english_wordpiece):
    """The French case: few unknown pieces, but many pieces per word; the same model passes on its own language."""
    from mlmbook.toy import Grammar
    french = read_conllu(FRENCH_LIKE)
    fit = measure_fit(english_wordpiece, french, pll=False)
    assert fit.share <= RULES.max_unknown < 0.5                      # not caught by unknown pieces...
    assert fit.pieces_per_word > RULES.max_pieces_per_word           # ...but by the tokenisation
    with pytest.raises(DataFitError, match="pieces on average") as err:
        check_fit(english_wordpiece, french, model="en-wp", treebank="french_like.conllu")
    assert "\n" not in str(err.value) and "1.50" in str(err.value)
    own = check_fit(english_wordpiece, Grammar.load("toy").sample(20, seed=5), model="en-wp")
    assert own.ok and own.pieces_per_word < RULES.doubtful_pieces_per_word


def test_the_third_rule_needs_a_doubtful_tokenisation_and_a_poor_pll():
    base = dict(share=0.0, n_unknown=0, n_words_unknown=0, n_words=100, examples=(), log_v=10.0, n_sentences=5)
    doubtful_poor = Fit(n_pieces=140, pll_per_piece=-6.0, **base)
    doubtful_good = Fit(n_pieces=140, pll_per_piece=-2.0, **base)
    whole_poor = Fit(n_pieces=110, pll_per_piece=-9.0, **base)     # a random model on its own words: fine
    assert RULES.doubtful(doubtful_poor) and len(RULES.problems(doubtful_poor)) == 1
    assert "predicts them poorly" in RULES.problems(doubtful_poor)[0]
    assert not RULES.problems(doubtful_good) and not RULES.problems(whole_poor)
    few = Fit(n_pieces=20, pll_per_piece=-9.0, **{**base, "n_words": 10})   # too few words to judge a language
    assert not RULES.problems(few)
    assert FitRules(max_pieces_per_word=1.3).problems(doubtful_good)       # the thresholds are settable


def test_the_pll_is_measured_only_when_the_third_rule_needs_it(english_wordpiece, toy_lm):
    from mlmbook.toy import Grammar
    toy = Grammar.load("toy").sample(20, seed=5)
    assert check_fit(toy_lm, toy).pll_per_piece is None               # word-level: nothing doubtful
    measured = check_fit(toy_lm, toy, rules=FitRules(pll=True))
    assert measured.pll_per_piece is not None and -measured.log_v - 1 < measured.pll_per_piece < 0
    assert "PLL" in measured.summary() and "pieces per word" in measured.summary()
