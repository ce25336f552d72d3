"""The MaskedLM interface: HF models loaded from local paths, and the exact truth oracle."""
import numpy as np
import pytest
import torch

from mlmbook import queries
from mlmbook.errors import ModelLoadError
from mlmbook.models import HFMaskedLM, TruthOracle, load_mlm
from mlmbook.toy import Grammar


def test_save_load_roundtrip_same_logprobs_and_pll(toy_bert, tmp_path):
    lm = HFMaskedLM.from_pretrained(toy_bert)
    g = Grammar.load("toy")
    sents = [s.words for s in g.sample(6, seed=2)]
    ids, pieces = lm.encode_words(sents[0])
    assert pieces == [[i] for i in range(len(sents[0]))]            # word-level tokenizer: one piece per word
    rows = torch.tensor([ids] * len(ids))
    rows[torch.arange(len(ids)), torch.arange(len(ids))] = lm.mask_id
    lp = lm.log_probs(rows, torch.arange(len(ids))[:, None])
    lm.model.save_pretrained(tmp_path), lm.tokenizer.save_pretrained(tmp_path)
    again = HFMaskedLM.from_pretrained(str(tmp_path))
    torch.testing.assert_close(again.log_probs(rows, torch.arange(len(ids))[:, None]), lp)
    np.testing.assert_allclose(queries.pll(again, sents), queries.pll(lm, sents), rtol=1e-6)
    # special tokens never receive probability
    assert torch.isinf(lp[..., lm.special_ids]).all()
    torch.testing.assert_close(lp.exp().sum(-1), torch.ones(len(ids), 1))


def test_one_loader_takes_a_chapter_job_and_a_rung(toy_bert, monkeypatch):
    """``load_mlm`` is how chapters load every model: a job the build's plan names, a rung."""
    from types import SimpleNamespace

    from mlmbook.models import ladder
    from mlmbook.pipeline import zoo
    asked = []
    monkeypatch.setattr(zoo.Job, "entry", lambda job: asked.append(job) or SimpleNamespace(path=toy_bert))
    monkeypatch.setattr(ladder, "snapshot_path", lambda rung: asked.append(rung) or toy_bert)
    job = zoo.find(1, "quick", "selection 1")
    assert load_mlm(job).name == "selection 1"
    rung = ladder.rungs("quick")[0]
    assert load_mlm(rung).name == rung.label
    assert asked == [job, rung]                           # each found its own cache entry
    with pytest.raises(KeyError, match="chapter 1 lists no model named 'nothing' in the quick profile"):
        zoo.find(1, "quick", "nothing")


def test_head_only_at_queried_positions_matches_full_model(toy_bert):
    lm = HFMaskedLM.from_pretrained(toy_bert)
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
    lm = HFMaskedLM.from_pretrained(toy_bert)
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
    pll = queries.pll(lm, [["the", "shepherds", "watched", "umbrellas", "."], ["dogs", "bark", "."]])
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
    verb_masked = torch.tensor([ids])
    verb_masked[0, 6] = truth.mask_id
    lp = truth.log_probs(verb_masked, torch.tensor([[6]]))[0, 0]
    assert lp[truth.vocab.index("feed")] > -np.inf and lp[truth.vocab.index("feeds")] == -np.inf
    # PLL of the truth is the sum of exact single-site log conditionals
    c = g.conditionals(words)
    assert queries.pll(truth, [words])[0] == pytest.approx(sum(np.log(c[i, g.word_id[w]]) for i, w in enumerate(words)))


def test_clear_errors(tmp_path, toy_bert):
    with pytest.raises(ModelLoadError, match="does not exist"):
        load_mlm(str(tmp_path / "no_such_model"))
    with pytest.raises(ModelLoadError, match="not in the Hugging Face cache"):
        load_mlm("someone/definitely-not-a-model")               # HF_HUB_OFFLINE=1 in conftest
    lm = HFMaskedLM.from_pretrained(toy_bert)
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
    from mlmbook.toy.vocab import make_tokenizer
    GPT2LMHeadModel(GPT2Config(vocab_size=240, n_embd=8, n_layer=1, n_head=1)).save_pretrained(tmp_path)
    make_tokenizer(Grammar.load("tiny")).save_pretrained(tmp_path)
    with pytest.raises(ModelLoadError, match="not a masked language model"):
        load_mlm(str(tmp_path))


# ---------------------------------------------------------------- no global side effects
def test_loading_and_querying_leave_the_callers_thread_counts(toy_bert):
    """A reader's torch.set_num_threads survives loading a model, the truth, a query and AG."""
    from threadpoolctl import threadpool_info

    from mlmbook import joints
    blas = lambda: {d["filepath"]: d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas"}
    before_threads, before_blas = torch.get_num_threads(), blas()
    try:
        torch.set_num_threads(2)
        lm = load_mlm(toy_bert)
        truth = load_mlm("truth")
        assert torch.get_num_threads() == 2
        words = "the farmers near the river often feed the cows .".split()
        queries.pll(lm, [words]), queries.pll(truth, [words])
        joints.ag(joints.pair_conditionals(lm, lm.encode_words(words)[0], 1, 6))
        assert torch.get_num_threads() == 2 and blas() == before_blas
    finally:
        torch.set_num_threads(before_threads)


def test_the_constructor_only_wraps(toy_bert, monkeypatch):
    """HFMaskedLM(model, tokenizer) reads no file and sets no thread count; a path is a clear TypeError."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer
    model, tokenizer = AutoModelForMaskedLM.from_pretrained(toy_bert), AutoTokenizer.from_pretrained(toy_bert)
    monkeypatch.setattr(torch, "set_num_threads", lambda n: pytest.fail("the constructor set the thread count"))
    monkeypatch.setattr("builtins.open", lambda *a, **k: pytest.fail("the constructor opened a file"))
    lm = HFMaskedLM(model, tokenizer, name="mine")
    assert lm.name == "mine" and lm.V == model.config.vocab_size
    with pytest.raises(TypeError, match="from_pretrained"):
        HFMaskedLM(toy_bert, tokenizer)


def test_training_evaluation_equals_the_engine(toy_bert):
    """The held-out loss of training (model layer only) equals the query engine's single-site answer."""
    from mlmbook.models.train import SingleSiteEval
    lm, g = load_mlm(toy_bert), Grammar.load("toy")
    ev = SingleSiteEval(g, 6, seed=0)
    lp = np.concatenate(queries.single_site(lm, [s.words for s in ev.sentences]))
    assert ev.loss(lm) == pytest.approx(-np.mean(lp[np.arange(len(ev.gold)), ev.gold]), abs=1e-9)


# ---------------------------------------------------------------- one-line loading errors
@pytest.fixture
def saved(tmp_path, toy_bert):
    """A copy of a locally saved tiny model that a test may damage."""
    import shutil
    return shutil.copytree(toy_bert, tmp_path / "model")


def _one_line(err) -> str:
    message = str(err.value)
    assert "\n" not in message and err.value.__cause__ is None
    return message


def test_truncated_weights_are_one_line_with_a_remedy(saved):
    weights = saved / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    with pytest.raises(ModelLoadError) as err:
        load_mlm(saved)
    message = _one_line(err)
    assert "weight file" in message and "damaged" in message and "save_pretrained" in message


@pytest.mark.parametrize("damage, expected", [
    (lambda d: (d / "model.safetensors").unlink(), "has no weights"),
    (lambda d: (d / "tokenizer.json").unlink(), "has no tokenizer files"),
    (lambda d: (d / "config.json").write_text('{"model_type": "bert", "hidd'), "config.json"),
    (lambda d: (d / "tokenizer.json").write_text('{"version": "1.0", "trunc'), "tokenizer"),
], ids=["no-weights", "no-tokenizer", "truncated-config", "truncated-tokenizer"])
def test_damaged_model_folders_are_one_line(saved, damage, expected):
    damage(saved)
    with pytest.raises(ModelLoadError) as err:
        load_mlm(saved)
    assert expected in _one_line(err)


@pytest.mark.slow                  # spawns the command line
def test_a_damaged_model_in_the_hugging_face_cache_says_to_delete_it(toy_bert, tmp_path):
    """The same truncation inside $HF_HOME's hub cache names the cache entry to delete."""
    import os
    import shutil
    import subprocess
    import sys
    snapshot = tmp_path / "hf" / "hub" / "models--someone--tiny" / "snapshots" / ("0" * 40)
    shutil.copytree(toy_bert, snapshot)
    (snapshot.parent.parent / "refs").mkdir()
    (snapshot.parent.parent / "refs" / "main").write_text("0" * 40)
    weights = snapshot / "model.safetensors"
    code = "import mlmbook; mlmbook.load_mlm('someone/tiny')"
    env = dict(os.environ, HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1")
    env.pop("HF_HUB_CACHE", None)
    ok = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr                                   # the cache entry itself is fine
    weights.write_bytes(weights.read_bytes()[:1000])
    bad = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    last = bad.stderr.strip().splitlines()[-1]
    assert "ModelLoadError" in last and "damaged" in last and "models--someone--tiny" in last, bad.stderr
