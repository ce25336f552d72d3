"""Model–data fit: unknown pieces, the model's own predictions (no language's yardstick), one-line stops."""
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
    assert "Model and text" in html                               # the title every page's fit box has
    assert box._repr_markdown_().startswith("```{warning}") and str(box) in box._repr_markdown_()
    assert check_fit(toy_lm, [s.words for s in english[:0]] + [["the", "cows", "."]]).admonition() is None


@pytest.fixture(scope="module")
def made_up(tmp_path_factory):
    """A briefly trained 150-piece model of a made-up agglutinative language (a vocabulary fixed by
    counts: the tokenizers trainer breaks ties differently run to run), and CoNLL-U files of it."""
    from mlmbook.models import load_mlm
    from tests.trained_models import made_up_language, train_wordpiece_bert, write_conllu
    folder = tmp_path_factory.mktemp("made_up")
    texts = [" ".join(words) for words, _ in made_up_language(1000)]
    lm = load_mlm(train_wordpiece_bert(folder / "model", texts, vocab_size=150, fixed_vocab=True))
    own = write_conllu(folder / "own.conllu", [(w, s.upos, s.heads) for w, s in made_up_language(300, seed=7)])
    return lm, own


@pytest.mark.parametrize("max_words", [5, 10, None])        # chapter 1's quick and full windows, and none
def test_a_small_model_of_another_language_is_accepted_on_it_at_every_window(made_up, max_words):
    from mlmbook.corpus import Window, read_for_model
    lm, own = made_up
    corpus = read_for_model(lm, own, Window(3, max_words))
    assert corpus.fit.ok and corpus.fit.pll_per_piece is not None
    assert corpus.fit.pieces_per_word > 1.5                 # an English word-split limit would refuse it


def test_the_same_model_is_refused_on_english(made_up):
    from mlmbook.corpus import Window, read_for_model
    lm, _ = made_up
    with pytest.raises(DataFitError) as err:
        read_for_model(lm, ENGLISH_WEB, Window(3, None))
    msg = str(err.value)
    assert "\n" not in msg and "allow_unknown" in msg
    assert "English" not in msg and "bert-base" not in msg and "1.5" not in msg   # no English yardstick
    fit = read_for_model(lm, ENGLISH_WEB, Window(3, None), allow_unknown=True).fit
    assert fit.share <= RULES.max_unknown                   # refused by its predictions, not by unknowns


def test_a_random_weight_model_is_refused_on_its_own_language(made_up, tmp_path):
    from mlmbook.models import load_mlm
    from tests.trained_models import made_up_language, train_wordpiece_bert
    texts = [" ".join(words) for words, _ in made_up_language(300)]
    random = load_mlm(train_wordpiece_bert(tmp_path / "random", texts, vocab_size=150, steps=0,
                                          fixed_vocab=True))
    sentences = [words for words, _ in made_up_language(60, seed=7)]
    fit = measure_fit(random, sentences)
    assert fit.share == 0.0 and abs(fit.pll_per_piece + fit.log_v) < 0.1 * fit.log_v   # about a uniform guess
    with pytest.raises(DataFitError, match="no better than chance"):
        check_fit(random, sentences, model="random")
    assert check_fit(made_up[0], sentences).ok             # the trained one, on the same sentences


def test_the_prediction_rules():
    base = dict(share=0.0, n_unknown=0, n_words_unknown=0, n_words=100, examples=(), log_v=10.0, n_sentences=5,
                n_pieces=180)
    chance = Fit(pll_per_piece=-9.8, context_free=-9.9, **base)     # a uniform guess: -10
    confused = Fit(pll_per_piece=-6.0, context_free=-5.0, **base)   # the context makes it worse
    good = Fit(pll_per_piece=-4.0, context_free=-6.0, **base)
    assert "no better than chance" in RULES.problems(chance)[0] and len(RULES.problems(chance)) == 1
    assert "context does not help" in RULES.problems(confused)[0]
    assert not RULES.problems(good)
    few = Fit(pll_per_piece=-9.9, context_free=-9.9, **{**base, "n_words": 10})   # too few words to judge
    assert not RULES.problems(few)
    assert FitRules(min_context_gain=3.0).problems(good)          # the thresholds are settable


def test_the_pll_is_measured_only_when_the_rules_apply(toy_lm):
    from mlmbook.toy import Grammar
    toy = Grammar.load("toy").sample(20, seed=5)
    short = [["the", "cows", "sleep", "."]]
    assert check_fit(toy_lm, short).pll_per_piece is None          # too few words to judge
    assert check_fit(toy_lm, toy, rules=FitRules(pll=False)).pll_per_piece is None
    measured = check_fit(toy_lm, toy, rules=FitRules(pll=True), allow=True)     # an untrained model
    assert measured.pll_per_piece is not None and measured.context_free is not None
    assert "no better than chance" in measured.message()
    assert "PLL" in measured.summary() and "pieces per word" in measured.summary()
