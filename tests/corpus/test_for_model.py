"""The front door from a treebank to a model: surface tokens, the length policy with its counts, the fit check."""
import pickle
from pathlib import Path

import numpy as np
import pytest

from mlmbook.corpus import Surface, Window, encode, read_conllu, read_for_model
from mlmbook.errors import DataFitError, TreebankError

FIXTURES = Path(__file__).parent.parent / "fixtures"
ENGLISH_WEB = FIXTURES / "english_web.conllu"
FRENCH_LIKE = FIXTURES / "french_like.conllu"


@pytest.fixture(scope="module")
def wp(wordpiece_bert):
    from mlmbook.models import load_mlm
    return load_mlm(wordpiece_bert)


@pytest.fixture(scope="module")
def toy_lm(toy_bert):
    from mlmbook.models import load_mlm
    return load_mlm(toy_bert)


def test_a_multiword_token_is_read_once_and_its_words_share_its_pieces(wp):
    s = read_conllu(ENGLISH_WEB)[1]                                   # I do n't think ...
    surface = s.surface()
    assert list(surface) == s.words and "don't" in surface.tokens and "do" not in surface.tokens
    assert surface.token_of[1] == surface.token_of[2] == 1 and surface.shared
    ids, pieces = encode(wp, s)
    tok_ids, tok_pieces = wp.encode_words(s.tokens)
    assert ids == tok_ids and len(pieces) == len(s.words)             # the model reads the tokens...
    assert pieces[1] == pieces[2] == tok_pieces[1]                    # ...and "do", "n't" share "don't"
    assert pieces[3] == tok_pieces[2]
    assert encode(wp, s.words) == wp.encode_words(s.words)            # a plain list: as given
    assert pickle.loads(pickle.dumps(surface)).tokens == surface.tokens
    with pytest.raises(ValueError, match="token_of"):
        Surface(["a", "b"], ["ab"], [0, 1])


def test_the_pair_of_two_words_of_one_token_is_not_scored(wp):
    from mlmbook import dependencies
    from mlmbook.dependencies.pieces import Encoded
    s = read_conllu(ENGLISH_WEB)[1]
    enc = Encoded(wp, s.surface())
    shared = set(enc.pieces[1])
    assert not any(p in shared and q in shared for p, q in enc.piece_pairs(None))
    [M] = dependencies.cpmi(wp, [s.surface()], [[0, 1, 2, 3]])
    assert M[1, 2] == M[2, 1] == 0.0 and M[0, 3] != 0.0


def test_read_for_model_counts_what_it_leaves_out(toy_lm, wp):
    read = read_conllu(ENGLISH_WEB)
    corpus = read_for_model(wp, ENGLISH_WEB, Window(3, 10), allow_unknown=True)  # 120 pieces: splits
    lengths = [sum(u != "PUNCT" for u in s.upos) for s in read]
    assert corpus.n_read == len(read) == 8
    assert corpus.n_outside_words == sum(not 3 <= k <= 10 for k in lengths) > 0
    assert len(corpus) + corpus.n_outside_words + corpus.n_outside_window + corpus.n_cut == corpus.n_read
    assert corpus.words[1].tokens == read[1].tokens and corpus.fit is not None
    # the toy model reads at most 15 tokens: the 20-token sentence is outside its window (and counted)
    allowed = read_for_model(toy_lm, ENGLISH_WEB, Window(2, None), allow_unknown=True)
    assert allowed.max_pieces == toy_lm.max_length == 15 and allowed.n_outside_window == 1
    assert "longer than the model's 15 pieces" in allowed.summary()
    assert not allowed.fit.ok and allowed.admonition() is not None
    limited = read_for_model(wp, ENGLISH_WEB, Window(3, 10), limit=2, seed=1, allow_unknown=True)
    assert len(limited) == 2 and limited.n_cut == len(corpus) - 2 + corpus.n_outside_window
    again = read_for_model(wp, ENGLISH_WEB, Window(3, 10), limit=2, seed=1, allow_unknown=True)
    assert [s.sent_id for s in limited.sentences] == [s.sent_id for s in again.sentences]


def test_nothing_left_is_one_line_naming_the_knob(wp):
    with pytest.raises(TreebankError) as err:
        read_for_model(wp, ENGLISH_WEB, Window(3, 4, knob="--max-words"))
    msg = str(err.value)
    assert "\n" not in msg and "--max-words" in msg and "english_web.conllu" in msg and "3–4 words" in msg
    with pytest.raises(TreebankError) as err:
        read_for_model(wp, ENGLISH_WEB, Window(3, 20, max_pieces=4, knob=None))
    assert "longer than 4 pieces" in str(err.value) and "change" not in str(err.value)


def test_the_toy_model_is_refused_on_english_unless_allowed(toy_lm):
    with pytest.raises(DataFitError) as err:
        read_for_model(toy_lm, ENGLISH_WEB, Window(3, 10))
    assert "\n" not in str(err.value) and "unknown" in str(err.value)


def test_punctuation_dropped_before_counting(wp):
    kept = read_for_model(wp, FRENCH_LIKE, Window(2, None, drop_punct=True), allow_unknown=True)
    assert all("PUNCT" not in s.upos for s in kept.sentences)
    assert np.all([len(s) for s in kept.sentences])
