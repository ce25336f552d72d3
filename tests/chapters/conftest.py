"""Fixtures for running chapters on a model that is not the toy model.

``wordpiece_bert_2k``: a random-weight BERT with a **2,000-piece** WordPiece vocabulary, saved
locally — large enough that chapter 1's exact CMI grid (2V + 1 rows per pair) is out of budget
and the chapter takes its Gibbs path, as it does for ``bert-base-uncased``. Its tokenizer is
trained on the toy language plus deterministic pseudo-words (the toy language alone has too few
words to fill 2,000 pieces). ``ANY_MODEL_TREEBANK`` is a CoNLL-U file written by the project and
shipped with the tests (:func:`write_any_model_treebank` regenerates it), so no test needs a
downloaded treebank. Random weights predict no better than chance, which the fit check refuses, so
the book on this model runs with ``allow_unknown`` and shows the fit warning on its pages.
"""
from pathlib import Path

import pytest

ANY_MODEL_TREEBANK = Path(__file__).resolve().parent.parent / "fixtures" / "any_model.conllu"
VOCAB_2K = 2000


def pseudo_words(n: int = 4000, seed: int = 0) -> list[str]:
    """``n`` pronounceable made-up words (2–4 syllables), the same for a given seed."""
    import random
    rng = random.Random(seed)
    onsets = ["b", "br", "d", "dr", "f", "g", "gl", "k", "l", "m", "n", "p", "pl", "r", "s", "st", "t", "tr", "v", "z"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ou", "ea"]
    codas = ["", "", "n", "r", "s", "t", "l", "m", "ng"]
    return ["".join(rng.choice(onsets) + rng.choice(vowels) + rng.choice(codas) for _ in range(rng.randint(2, 4)))
            for _ in range(n)]


@pytest.fixture(scope="session")
def wordpiece_bert_2k(tmp_path_factory):
    """A locally saved random BERT whose WordPiece vocabulary has 2,000 pieces, the same on every run
    (:func:`tests.trained_models.wordpiece_vocab`): the book built on it gives the same answers each time."""
    from mlmbook.toy import Grammar
    from tests.conftest import save_tiny_wordpiece_bert
    corpus = [s.text for s in Grammar.load("toy").sample(500, seed=0)]
    words = pseudo_words()
    corpus += [" ".join(words[i:i + 12]) for i in range(0, len(words), 12)]
    path = save_tiny_wordpiece_bert(tmp_path_factory.mktemp("wp_bert_2k"), corpus, vocab_size=VOCAB_2K,
                                    fixed_vocab=True)
    from transformers import AutoTokenizer
    assert len(AutoTokenizer.from_pretrained(path)) >= VOCAB_2K, "the tokenizer did not reach 2,000 pieces"
    return str(path)


def write_any_model_treebank(path: Path = ANY_MODEL_TREEBANK, n: int = 120) -> Path:
    """(Re)write the shipped treebank: ``tiny.conllu``'s hard cases and ``n`` toy sentences."""
    from mlmbook.toy import Grammar
    header = ("# A small treebank written by the project for the any-model test: the hard cases of tiny.conllu\n"
              "# (multiword tokens, empty nodes, comments) and 120 sentences of the book's toy language with\n"
              "# their gold trees. Regenerate: see tests/chapters/conftest.py (any_model_treebank).\n")
    blocks = [(path.parent / "tiny.conllu").read_text().strip()]
    for k, s in enumerate(Grammar.load("toy").sample(n, seed=99)):
        lines = [f"# sent_id = toy-{k}", f"# text = {s.text}"]
        for i, w in enumerate(s.words):
            feats = "|".join(f"{a}={b}" for a, b in sorted(s.feats[i].items())) or "_"
            lines.append(f"{i + 1}\t{w}\t{w}\t{s.upos[i]}\t_\t{feats}\t{s.heads[i] + 1}\t{s.deprels[i] or 'dep'}\t_\t_")
        blocks.append("\n".join(lines))
    path.write_text(header + "\n\n".join(blocks) + "\n\n")
    return path


@pytest.fixture(scope="session")
def other_model_book(tmp_path_factory, wordpiece_bert_2k):
    """The whole book built once (quick profile) on ``wordpiece_bert_2k`` with ``ANY_MODEL_TREEBANK``:
    the any-model test reads its pages, and each chapter's real-model test its results and notebook
    (one build instead of one per chapter)."""
    from mlmbook.pipeline.execute import build
    from tests.conftest import BookRun, _with_build_dir
    out = tmp_path_factory.mktemp("any_model")
    index = _with_build_dir(out / "_build", lambda: build(
        profile="quick", parameters=[("model", wordpiece_bert_2k), ("treebank", str(ANY_MODEL_TREEBANK)),
                                    ("allow_unknown", "true")]))
    return BookRun(out / "_build", index)
