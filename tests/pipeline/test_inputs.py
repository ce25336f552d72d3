"""Inputs checked before any training or kernel (``mlmbook.pipeline.inputs.check_inputs``): one line each."""
from pathlib import Path

import pytest

from mlmbook.errors import BuildError, UsageError
from mlmbook.pipeline.inputs import CHAPTER_INPUTS, check_inputs, words_window

FIXTURES = Path(__file__).parent.parent / "fixtures"
ANY_MODEL = FIXTURES / "any_model.conllu"
ENGLISH_WEB = FIXTURES / "english_web.conllu"


def _plans(numbers, parameters, profile="quick"):
    from mlmbook.pipeline.chapters import Layout, find_chapters, plan_parameters
    chapters = {c.number: c for c in find_chapters(Layout.find(None))}
    return plan_parameters([chapters[n] for n in numbers], list(parameters), profile)


@pytest.fixture(scope="module")
def english_wordpiece(tmp_path_factory):
    """A BERT trained briefly on the toy language (English words), its WordPiece vocabulary 1,000 pieces."""
    from mlmbook.toy import Grammar
    from tests.trained_models import train_wordpiece_bert
    corpus = [s.text for s in Grammar.load("toy").sample(1000, seed=0)]
    return train_wordpiece_bert(tmp_path_factory.mktemp("en_wp"), corpus, vocab_size=1000)


def _one_line(err) -> str:
    text = str(err.value)
    assert "\n" not in text, text
    return text


def test_the_default_book_loads_nothing_to_check(monkeypatch):
    import mlmbook.pipeline.inputs as inputs

    def no_reader(*a):
        raise AssertionError("the toy book has no treebank and no model to load")
    monkeypatch.setattr(inputs, "_reader", no_reader)
    check_inputs(_plans(range(6), []), "quick")


def test_a_treebank_the_toy_model_does_not_read_is_an_error():
    """Chapters 1-4 read a treebank with any model (issue 35: the toy model too, its fit checked first);
    one whose words the toy model does not know stops the build in one line, before any work."""
    check_inputs(_plans([1, 2, 3, 4], [("treebank", str(ANY_MODEL))]), "quick")   # toy sentences: it fits
    with pytest.raises(BuildError) as err:
        check_inputs(_plans([2, 3], [("treebank", str(ENGLISH_WEB))]), "quick")
    line = _one_line(err)
    assert "02_joints" in line and "does not fit" in line and "allow_unknown" in line
    with pytest.raises(UsageError) as err:                                          # chapter 5 reads none
        check_inputs(_plans([5], [("treebank", str(ANY_MODEL))]), "quick")
    assert "'treebank'" in _one_line(err) and "05_glauber" in _one_line(err)


def test_a_real_model_without_the_text_it_needs_is_an_error(english_wordpiece, monkeypatch, tmp_path):
    import mlmbook.corpus.conllu as conllu
    monkeypatch.setattr(conllu, "data_dirs", lambda *a: [tmp_path])          # UD English EWT nowhere
    with pytest.raises(UsageError) as err:
        check_inputs(_plans([1, 2, 3], [("model", english_wordpiece)]), "quick")
    line = _one_line(err)
    assert "02_joints" in line and "03_consistency" in line and "01_" not in line and "-p treebank" in line
    # given its text, it is no usage error; whether 150 steps taught it the text is the fit check's business
    # (tests/corpus/test_fit.py), and that brief training lands near chance under some thread schedules
    check_inputs(_plans([2, 3], [("model", english_wordpiece), ("treebank", str(ANY_MODEL)),
                                 ("allow_unknown", "true")]), "quick")


def test_a_treebank_outside_every_window_is_caught_before_work(tmp_path):
    from mlmbook.toy import Grammar
    long = [s for s in Grammar.load("toy").sample(200, seed=1) if sum(u != "PUNCT" for u in s.upos) > 5][:3]
    path = tmp_path / "long.conllu"
    path.write_text("\n\n".join("\n".join(f"{i + 1}\t{w}\t{w}\t{s.upos[i]}\t_\t_\t{s.heads[i] + 1}\tdep\t_\t_"
                                          for i, w in enumerate(s.words)) for s in long) + "\n\n")
    with pytest.raises(BuildError) as err:
        check_inputs(_plans([1], [("treebank", str(path))]), "quick")    # quick: chapter 1 reads 3-5 words
    line = _one_line(err)
    assert line.startswith("chapter 01_dependencies:") and "3–5 words" in line and "long.conllu" in line


def test_allow_unknown_lets_the_build_run_with_a_warning(capsys):
    check_inputs(_plans([1, 4], [("treebank", str(ENGLISH_WEB)), ("allow_unknown", "true")]), "quick")
    assert "warning" in capsys.readouterr().err


def test_the_registry_covers_the_chapters_and_their_treebank_parameter():
    from mlmbook.pipeline.chapters import Layout, find_chapters, parameter_defaults, read_notebook
    for chapter in find_chapters(Layout.find(None)):
        spec = CHAPTER_INPUTS[chapter.slug]
        has = "treebank" in parameter_defaults(read_notebook(chapter))
        assert has == (spec.treebank != "none"), chapter.slug
        if has:
            lo, hi = words_window(chapter.slug, "quick")
            assert 1 <= lo <= hi and words_window(chapter.number, "extended") == words_window(chapter.slug, "full")
