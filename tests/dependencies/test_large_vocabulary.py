"""A large vocabulary costs nothing extra: chapter 1's worked example and the CMI grid hold no V x V table.

The model is a random 2-layer BERT whose WordPiece vocabulary is padded to 20,000 pieces (a V x V table
of float64 would be 3.2 GB); the worked example is chapter 1's own cells, read from the chapter.
"""
import itertools
import string
import tracemalloc

import jupytext
import numpy as np
import pytest

from mlmbook import dependencies as dep
from mlmbook.models import load_mlm
from mlmbook.pipeline import cost
from mlmbook.pipeline.chapters import Layout, find_chapters

V = 20_000


def save_padded_bert(path, corpus, vocab_size):
    """A random tiny BERT whose WordPiece vocabulary is trained on ``corpus`` and padded to ``vocab_size``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast

    def tokenizer(vocab=None):
        tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece()
        return tok

    trained = tokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    trained.train_from_iterator(corpus, trainers.WordPieceTrainer(vocab_size=1000, special_tokens=specials))
    vocab = dict(trained.get_vocab())
    letters = itertools.product(string.ascii_lowercase, repeat=4)
    while len(vocab) < vocab_size:
        vocab.setdefault("##q" + "".join(next(letters)), len(vocab))
    tok = tokenizer(vocab)
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
                                                       special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                                       num_attention_heads=2, intermediate_size=64, max_position_embeddings=64))
    model.save_pretrained(path)
    fast.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    from mlmbook.toy import Grammar
    corpus = [s.text for s in Grammar.load("toy").sample(300, seed=0)]
    return load_mlm(save_padded_bert(tmp_path_factory.mktemp("big_bert"), corpus, V))


@pytest.fixture(scope="module")
def chapter_one():
    return next(c for c in find_chapters(Layout.find(None)) if c.number == 1)


def _cells(chapter, first: str, last: str) -> str:
    """The code of the chapter's cells from the one starting with ``first`` to the one starting with ``last``."""
    code = [c.source for c in jupytext.read(chapter.path).cells if c.cell_type == "code"]
    start = next(k for k, s in enumerate(code) if s.startswith(first))
    stop = next(k for k, s in enumerate(code) if s.startswith(last))
    return "\n\n".join(code[start:stop + 1])


def test_the_worked_example_holds_no_vocabulary_square(big, chapter_one):
    from mlmbook import queries
    from mlmbook.corpus import encode
    from mlmbook.stats import mutual_information
    size = dep.design.Sizes(**cost.chapter_constants(chapter_one)["SIZES"]["quick"])
    sample = dep.design.sentences(big, size, 0, None, allow_unknown=True, toy_model=False)
    env = dict(np=np, dep=dep, queries=queries, encode=encode, mutual_information=mutual_information, lm=big,
               main=sample.main, size=size, window=9)
    tracemalloc.start()
    exec(_cells(chapter_one, "k, a, b = dep.sample.example_pair", "package = dep.cmi_grid"), env)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    k = env["K"]
    assert k is not None and k < big.V // 100          # the policy's candidates, not the vocabulary
    assert len(env["cp"]) == len(env["cq"]) == k
    assert peak < 0.02 * V * V * 8                    # a V x V float64 table would be 3.2 GB
    assert abs(env["by_hand"] - env["package"]) < 1e-8


def test_the_grid_sends_rows_by_candidates_not_by_vocabulary(big):
    words = [["the", "farmers", "feed", "the", "cows"], ["a", "dog", "sleeps"]]
    k = 6
    tracemalloc.start()
    grid = dep.cmi_grid(big, words, window=None, max_candidates=k,
                        settings=dep.GridSettings(allocate="position"))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert grid.rows == grid.pairs * (2 * k + 1)
    assert peak < 0.02 * V * V * 8


def test_cost_counts_the_worked_example_and_the_grid_by_the_policy(big, chapter_one):
    work = cost.rows_for(chapter_one, big, {"profile": "quick"})
    size = cost.chapter_constants(chapter_one)["SIZES"]["quick"]
    example, _ = work.terms["worked example"]
    grid, _ = work.terms["CMI grid"]
    assert example < 2 * size["grid_rows"] / size["main"]     # one pair at the policy's K, not 2V + 1
    # about the budget: a sentence whose share affords fewer than MIN_CANDIDATES gets that many (2V + 1 per
    # pair would be 40,000 passes a pair)
    assert size["grid_rows"] / 2 < grid <= size["grid_rows"] * 1.5
