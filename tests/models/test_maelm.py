"""MAE-LM (chapter 4's architecture): the encoder never sees [MASK], keeps positions, starts from the MLM's weights."""
import math

import pytest
import torch

from mlmbook import queries
from mlmbook.models import maelm
from mlmbook.models.train import TrainConfig, batches, make_model, mask_tokens
from mlmbook.toy import Grammar

TINY = TrainConfig(hidden=32, layers=2, heads=2, intermediate=64, steps=80, batch=32, lr=3e-3,
                   n_eval=20, eval_every=20)


@pytest.fixture(scope="module")
def grammar():
    return Grammar.load("toy")


@pytest.fixture(scope="module")
def model(grammar):
    torch.manual_seed(0)
    return maelm.make_maelm(grammar, TINY, seed=0).eval()


def corrupted_batch(grammar, seed=0):
    ids, attn, *eligible = next(batches(grammar, TINY, seed))
    inputs, labels = mask_tokens(ids, TINY, 5 + len(grammar.vocab), torch.Generator().manual_seed(seed), *eligible)
    return inputs, attn, labels


def test_drop_masked_packs_real_tokens_with_their_positions():
    M = maelm.MASK
    ids = torch.tensor([[2, 10, M, 11, 12, 3, 0], [2, M, M, 13, 3, 0, 0]])
    keep = (ids != M) & (ids != 0)
    enc, pos, attn = maelm.drop_masked(ids, keep)
    assert enc.tolist() == [[2, 10, 11, 12, 3], [2, 13, 3, 0, 0]]
    assert pos.tolist() == [[0, 1, 3, 4, 5], [0, 3, 4, 0, 0]]
    assert attn.tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]


def test_encoder_never_receives_the_mask_id(grammar, model):
    inputs, attn, labels = corrupted_batch(grammar)
    assert (inputs == maelm.MASK).any()                    # the batch does contain [MASK]
    seen = {}
    hooks = [model.encoder.embeddings.word_embeddings.register_forward_hook(
                 lambda m, args, out: seen.__setitem__("ids", args[0].clone())),
             model.encoder.embeddings.position_embeddings.register_forward_hook(
                 lambda m, args, out: seen.__setitem__("pos", args[0].clone()))]
    try:
        with torch.no_grad():
            model(inputs, attn, labels)
    finally:
        for h in hooks:
            h.remove()
    assert not (seen["ids"] == maelm.MASK).any()
    keep = attn.bool() & (inputs != maelm.MASK)
    real = seen["ids"] != maelm.PAD
    assert int(real.sum()) == int(keep.sum())              # every real token, nothing else
    for b in range(inputs.shape[0]):                       # at its original position
        assert seen["pos"][b][real[b]].tolist() == keep[b].nonzero().flatten().tolist()
        assert seen["ids"][b][real[b]].tolist() == inputs[b][keep[b]].tolist()


def test_shapes_and_masked_lm_interface(grammar, model):
    inputs, attn, labels = corrupted_batch(grammar)
    B, n = inputs.shape
    d = TINY.hidden
    with torch.no_grad():
        states, keep = model.encode(inputs, attn)
        assert states.shape == (B, n, d) and keep.shape == (B, n)
        assert torch.all(states[~keep] == 0)
        full = model.decode(states, keep, attn)
        assert full.shape == (B, n, d)
        sel = labels != -100
        part = model.decode(states, keep, attn, wanted=sel)
        assert part.shape == (int(sel.sum()), d)
        torch.testing.assert_close(part, full[sel], atol=1e-5, rtol=1e-5)
        assert model(inputs, attn, labels).ndim == 0
    lm = maelm.MAEMaskedLM(model, ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + grammar.vocab)
    ids, _ = lm.encode_words("the dogs bark .".split())
    row = torch.tensor([ids, ids])
    row[0, 1] = lm.mask_id
    out = lm.logits(row, torch.tensor([[1], [2]]))
    assert out.shape == (2, 1, lm.V) and torch.isinf(out[..., :5]).all() and torch.isfinite(out[..., 5:]).all()
    hs = lm.hidden_states(row)
    assert len(hs) == TINY.layers + 1 and all(h.shape == (2, 4, d) for h in hs)
    assert torch.all(hs[-1][0, 1] == 0) and torch.any(hs[-1][1, 1] != 0)      # no state where [MASK] was
    assert len(lm.decoder_states(row)) == len(model.decoder) + 1


def test_decoder_layer_at_chosen_positions_equals_full_layer():
    torch.manual_seed(1)
    layer = maelm.DecoderLayer(16, 2, 32, 1e-12).eval()
    h = torch.randn(3, 7, 16)
    padding = torch.zeros(3, 7, dtype=torch.bool)
    padding[1, 5:] = True
    wanted = torch.rand(3, 7) < 0.4
    wanted &= ~padding
    wanted[0, 0] = True
    with torch.no_grad():
        torch.testing.assert_close(layer(h, padding, wanted), layer(h, padding)[wanted], atol=1e-5, rtol=1e-5)


def test_without_masks_the_encoder_is_a_plain_bert(grammar, model):
    ids, attn, *_ = next(batches(grammar, TINY, 3))
    with torch.no_grad():
        states, keep = model.encode(ids, attn)
        plain = model.encoder(input_ids=ids, attention_mask=attn).last_hidden_state
    assert torch.equal(keep, attn.bool())
    torch.testing.assert_close(states[keep], plain[keep], atol=1e-5, rtol=1e-5)


def test_starts_from_the_mlms_initial_weights(grammar):
    enc = maelm.make_maelm(grammar, TINY, seed=3).encoder.state_dict()
    mlm = make_model(grammar, TINY, seed=3).bert.state_dict()
    assert enc.keys() == mlm.keys() and all(torch.equal(enc[k], mlm[k]) for k in enc)


def test_training_lowers_the_loss_and_caches(grammar, tmp_path, monkeypatch):
    import json

    from mlmbook.models import cache
    monkeypatch.setenv("MLMBOOK_CACHE", str(tmp_path))
    path = cache.load_or_train(grammar, TINY, seed=0, progress=False, kind="maelm").path
    hist = json.loads((path / "history.json").read_text())
    assert hist["eval_loss"][-1] < hist["eval_loss"][0] - 0.1              # the loss falls on a short run
    assert hist["train_loss"][-1] < hist["train_loss"][0]
    assert hist["eval_loss"][-1] < math.log(5 + len(grammar.vocab))         # below a uniform guess
    assert (path / "encoder" / "config.json").exists() and (path / "maelm.safetensors").exists()
    assert "maelm" in path.name
    assert cache.entry_key(grammar, TINY, 0, "mlm") not in path.name
    # a second call loads from the cache instead of training again
    monkeypatch.setattr("mlmbook.models.stacked.train_stack", lambda *a, **k: pytest.fail("retrained a cached MAE-LM"))
    assert cache.load_or_train(grammar, TINY, seed=0, progress=False, kind="maelm").path == path
    with pytest.raises(ValueError, match="kind"):
        cache.load_or_train(grammar, TINY, seed=0, kind="electra")
    # reload: the MaskedLM wrapper and the bare encoder agree
    lm, enc = maelm.load(path), maelm.load_encoder(path)
    ids, _ = lm.encode_words("the dogs bark .".split())
    with torch.no_grad():
        direct = enc(input_ids=torch.tensor([[2] + ids + [3]])).last_hidden_state[:, 1:-1]
    torch.testing.assert_close(lm.hidden_states(torch.tensor([ids]))[-1], direct, atol=1e-5, rtol=1e-5)
    assert abs(queries.pll(lm, ["the dogs bark ."])[0]) < 1e3
