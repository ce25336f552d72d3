"""The MaskedLM interface: HF models loaded from local paths, and the exact truth oracle."""
import numpy as np
import pytest
import torch

from mlmbook.toy import Grammar
from mlmbook.models import HFMaskedLM, ModelLoadError, TruthOracle, load_mlm


def test_save_load_roundtrip_same_logprobs_and_pll(toy_bert, tmp_path):
    lm = HFMaskedLM(toy_bert)
    g = Grammar.load("toy")
    sents = [s.words for s in g.sample(6, seed=2)]
    ids, pieces = lm.encode_words(sents[0])
    assert pieces == [[i] for i in range(len(sents[0]))]            # word-level tokenizer: one piece per word
    rows = torch.tensor([ids] * len(ids))
    rows[torch.arange(len(ids)), torch.arange(len(ids))] = lm.mask_id
    lp = lm.log_probs(rows, torch.arange(len(ids))[:, None])
    lm.model.save_pretrained(tmp_path), lm.tokenizer.save_pretrained(tmp_path)
    again = HFMaskedLM(str(tmp_path))
    torch.testing.assert_close(again.log_probs(rows, torch.arange(len(ids))[:, None]), lp)
    np.testing.assert_allclose(again.pll(sents), lm.pll(sents), rtol=1e-6)
    # special tokens never receive probability
    assert torch.isinf(lp[..., lm.special_ids]).all()
    torch.testing.assert_close(lp.exp().sum(-1), torch.ones(len(ids), 1))


def test_head_only_at_queried_positions_matches_full_model(toy_bert):
    lm = HFMaskedLM(toy_bert)
    ids, _ = lm.encode_words("the old dog sees my cat .".split())
    row = torch.tensor([ids])
    row[0, 2] = lm.mask_id
    full = torch.cat([torch.tensor([[2]]), row, torch.tensor([[3]])], 1)
    with torch.no_grad():
        ref = lm.model(input_ids=full).logits[0, 1:-1]
    got = lm.logits(row, torch.tensor([[2, 4, 0]]))[0]
    for k, p in enumerate([2, 4, 0]):
        keep = [i for i in range(lm.V) if i not in lm.special_ids]
        torch.testing.assert_close(got[k, keep], ref[p, keep], rtol=1e-5, atol=1e-5)


def test_batched_equals_one_at_a_time(toy_bert):
    lm = HFMaskedLM(toy_bert)
    lm.max_tokens = 40                                         # force many small chunks
    g = Grammar.load("toy")
    words = g.sample(1, seed=4)[0].words
    ids, _ = lm.encode_words(words)
    n = len(ids)
    rows = torch.tensor([ids] * n)
    rows[torch.arange(n), torch.arange(n)] = lm.mask_id
    batched = lm.logits(rows, torch.arange(n)[:, None])
    single = torch.cat([lm.logits(rows[i:i + 1], torch.tensor([[i]])) for i in range(n)])
    torch.testing.assert_close(batched, single, rtol=1e-5, atol=1e-5)


def test_wordpiece_model_splits_words(wordpiece_bert):
    lm = load_mlm(wordpiece_bert)
    ids, pieces = lm.encode_words(["the", "shepherds", "watched", "umbrellas", "."])
    assert len(ids) > 5 and any(len(p) > 1 for p in pieces)
    assert [q for p in pieces for q in p] == list(range(len(ids)))
    pll = lm.pll([["the", "shepherds", "watched", "umbrellas", "."], ["dogs", "bark", "."]])
    assert pll.shape == (2,) and (pll < 0).all()


def test_truth_oracle_is_exact():
    g = Grammar.load("toy")
    truth = TruthOracle(g)
    words = "the farmers near the river often feed the cows .".split()
    ids, _ = truth.encode_words(words)
    row = torch.tensor([ids])
    row[0, [1, 5]] = truth.mask_id
    lp = truth.log_probs(row, torch.tensor([[1, 5, 8]]))[0]
    exact = g.conditionals(words, masked=[1, 5])
    for k, p in enumerate([1, 5, 8]):
        np.testing.assert_allclose(lp[k, 5:].exp().numpy(), exact[p], atol=1e-12)
    assert torch.isinf(lp[:, :5]).all()
    # the truth knows agreement: with the subject visible, only plural verbs
    lp = truth.log_probs(torch.tensor([ids]).index_put((torch.tensor([0]), torch.tensor([6])), torch.tensor(truth.mask_id)),
                         torch.tensor([[6]]))[0, 0]
    assert lp[truth.vocab.index("feed")] > -np.inf and lp[truth.vocab.index("feeds")] == -np.inf
    # PLL of the truth is the sum of exact single-site log conditionals
    c = g.conditionals(words)
    assert truth.pll([words])[0] == pytest.approx(sum(np.log(c[i, g.word_id[w]]) for i, w in enumerate(words)))


def test_clear_errors(tmp_path, toy_bert):
    with pytest.raises(ModelLoadError, match="does not exist"):
        load_mlm(str(tmp_path / "no_such_model"))
    with pytest.raises(ModelLoadError, match="not in the Hugging Face cache"):
        load_mlm("someone/definitely-not-a-model")               # HF_HUB_OFFLINE=1 in conftest
    lm = HFMaskedLM(toy_bert)
    with pytest.raises(ValueError, match="longer than"):
        lm.logits(torch.full((1, lm.max_length + 1), 10), torch.tensor([[0]]))
    with pytest.raises(ValueError, match="empty input"):
        lm.logits(torch.zeros((1, 0), dtype=torch.long), torch.zeros((1, 0), dtype=torch.long))


def test_model_without_mask_token_is_refused(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast
    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]").save_pretrained(tmp_path)
    BertForMaskedLM(BertConfig(vocab_size=2, hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
                               intermediate_size=8)).save_pretrained(tmp_path)
    with pytest.raises(ModelLoadError, match="no mask token"):
        load_mlm(str(tmp_path))


def test_causal_lm_is_refused(tmp_path):
    from transformers import GPT2Config, GPT2LMHeadModel
    from mlmbook.toy import Grammar
    from mlmbook.models.train import make_tokenizer
    GPT2LMHeadModel(GPT2Config(vocab_size=240, n_embd=8, n_layer=1, n_head=1)).save_pretrained(tmp_path)
    make_tokenizer(Grammar.load("tiny")).save_pretrained(tmp_path)
    with pytest.raises(ModelLoadError, match="not a masked language model"):
        load_mlm(str(tmp_path))
