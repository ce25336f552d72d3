"""The stacked trainer: K small models as one computation, each exactly as if trained alone."""
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from mlmbook.models import maelm, stacked
from mlmbook.models.corrupt import batches, mask_tokens
from mlmbook.models.train import TrainConfig, make_model
from mlmbook.toy import Grammar

TINY = TrainConfig(hidden=16, layers=2, heads=2, intermediate=32, steps=12, batch=16, n_eval=8, eval_every=6,
                   checkpoints=())


@pytest.fixture(scope="module")
def tiny():
    return Grammar.load("tiny")


def _batch(g, config, seed, K):
    """One corrupted batch per model, padded to a common length: (inputs, attention, labels)."""
    n = g.max_length + 2
    out = []
    for k in range(K):
        ids, attn = next(batches(g, config, seed + k))
        x, y = mask_tokens(ids, config, 5 + len(g.vocab), torch.Generator().manual_seed(seed + k))
        out.append([F.pad(x, (0, n - x.shape[1])), F.pad(attn, (0, n - x.shape[1])),
                    F.pad(y, (0, n - x.shape[1]), value=-100)])
    return [torch.stack(t) for t in zip(*out)]


@pytest.mark.parametrize("kind", ["mlm", "maelm"])
def test_the_stack_computes_each_models_own_loss_and_exports_it_exactly(tiny, kind):
    models = [maelm.make_maelm(tiny, TINY, s) if kind == "maelm" else make_model(tiny, TINY, s) for s in range(3)]
    stack = stacked.Stack([m.state_dict() for m in models], kind, TINY.heads, TINY.layers, TINY.decoder_layers)
    for k, m in enumerate(models):                                   # the export is the model itself
        state = stack.state(k)
        assert state.keys() == m.state_dict().keys()
        assert all(torch.equal(state[key], m.state_dict()[key]) for key in state)
    x, a, y = _batch(tiny, TINY, 0, 3)
    with torch.no_grad():
        losses = stack(x, a, y)
        for k, m in enumerate(models):
            ref = m(x[k], a[k], y[k]) if kind == "maelm" else m(input_ids=x[k], attention_mask=a[k], labels=y[k]).loss
            assert abs(float(losses[k]) - float(ref)) < 1e-5


def test_trained_weights_give_the_stacks_logits(tiny, tmp_path):
    """After training, the written BertForMaskedLM gives the stacked model's logits (to 1e-5)."""
    from mlmbook.models.hf import HFMaskedLM
    members = [stacked.Member(tiny, TINY, s, "mlm", tmp_path / f"m{s}") for s in range(2)]
    stacked.train_stack(members, progress=False)
    x, a, _ = _batch(tiny, TINY, 5, 2)
    for k, m in enumerate(members):
        hf = HFMaskedLM.from_pretrained(m.out).model
        stack = stacked.Stack([hf.state_dict()] * 2, "mlm", TINY.heads, TINY.layers)
        with torch.no_grad():
            p = stack.subset()
            ours = stack.logits(p, stack.encode(p, x, a.bool()))[k].view(x.shape[1], x.shape[2], -1)
            theirs = hf(input_ids=x[k], attention_mask=a[k]).logits
        real = a[k].bool()
        assert (ours[real] - theirs[real]).abs().max() < 1e-5


def _weights(member):
    from safetensors.torch import load_file
    return load_file(member.out / ("maelm.safetensors" if member.kind == "maelm" else "model.safetensors"))


@pytest.mark.parametrize("kind, chunk", [("mlm", None), ("maelm", None), ("mlm", 6), ("maelm", 6)])
def test_a_models_weights_do_not_depend_on_its_stack(tiny, tmp_path, kind, chunk):
    """Alone, or beside two other models with other seeds, rates and masking: the same bits
    (``chunk=6`` forces several rounds of the output layer, of different numbers per model)."""
    other = replace(TINY, lr=3e-3, warmup=0.3, weight_decay=0.1, span=2.0, mask_rate=0.3, eval_every=4)
    alone = stacked.Member(tiny, TINY, 0, kind, tmp_path / "alone")
    crowd = [stacked.Member(tiny, other, 7, kind, tmp_path / "a"), stacked.Member(tiny, TINY, 0, kind, tmp_path / "in"),
             stacked.Member(tiny, TINY, 1, kind, tmp_path / "b")]
    h1 = stacked.train_stack([alone], progress=False, chunk=chunk)[0]
    h3 = stacked.train_stack(crowd, progress=False, chunk=chunk)
    w1, w3 = _weights(alone), _weights(crowd[1])
    assert w1.keys() == w3.keys() and all(torch.equal(w1[k], w3[k]) for k in w1)
    assert h1["eval_loss"] == h3[1]["eval_loss"] and h1["train_loss"] == h3[1]["train_loss"]
    assert not torch.equal(w1[next(iter(w1))], _weights(crowd[2])[next(iter(w1))])   # another seed differs
    again = stacked.Member(tiny, TINY, 0, kind, tmp_path / "again")
    stacked.train_stack([again], progress=False, chunk=chunk)
    w = _weights(again)
    assert all(torch.equal(w[k], w1[k]) for k in w)                                  # same seed, same weights


def test_models_on_different_grammars_of_one_shape_share_a_stack(tmp_path):
    a, b = Grammar.load("toy"), Grammar.load("toy[selection=0.5]")
    cfg = replace(TINY, steps=4, eval_every=4)
    assert stacked.shape_of(a, cfg, "mlm") == stacked.shape_of(b, cfg, "mlm") and a.fingerprint != b.fingerprint
    alone = stacked.Member(b, cfg, 0, "mlm", tmp_path / "alone")
    pair = [stacked.Member(a, cfg, 0, "mlm", tmp_path / "a"), stacked.Member(b, cfg, 0, "mlm", tmp_path / "b")]
    stacked.train_stack([alone], progress=False)
    stacked.train_stack(pair, progress=False)
    w1, w2 = _weights(alone), _weights(pair[1])
    assert all(torch.equal(w1[k], w2[k]) for k in w1)
    with pytest.raises(ValueError, match="different shapes"):
        stacked.train_stack([pair[0], stacked.Member(a, replace(cfg, hidden=32), 0, "mlm", tmp_path / "c")])


def test_a_trained_model_is_an_ordinary_checkpoint_with_its_history_and_snapshots(tiny, tmp_path):
    import json

    from transformers import BertForMaskedLM
    cfg = replace(TINY, checkpoints=(0.5,))
    stacked.train_stack([stacked.Member(tiny, cfg, 0, "mlm", tmp_path / "s")], progress=False)
    history = json.loads((tmp_path / "s" / "history.json").read_text())
    assert {"bayes", "unigram", "steps", "train_loss", "eval_loss", "tokens", "seconds"} <= set(history)
    assert history["steps"] == list(range(cfg.eval_every, cfg.steps + 1, cfg.eval_every)) and history["stack"] == 1
    snapshot = f"checkpoints/step_{cfg.steps // 2:06d}"
    files = sorted(p.relative_to(tmp_path / "s").as_posix() for p in (tmp_path / "s").rglob("*") if p.is_file())
    assert {"model.safetensors", "config.json", "tokenizer.json", f"{snapshot}/model.safetensors"} <= set(files), files
    for where in (tmp_path / "s", tmp_path / "s" / snapshot):
        assert BertForMaskedLM.from_pretrained(where).config.hidden_size == cfg.hidden


def test_optimiser_and_clipping_match_torch_per_model():
    """StackAdamW and clip_per_model do for each model what torch's AdamW and clip_grad_norm_ do."""
    torch.manual_seed(0)
    K = 3
    stacked_p = [torch.nn.Parameter(torch.randn(K, 4, 5)), torch.nn.Parameter(torch.randn(K, 7))]
    singles = [[torch.nn.Parameter(p.detach()[k].clone()) for p in stacked_p] for k in range(K)]
    lrs, wds = [1e-2, 3e-3, 0.0], [0.01, 0.1, 0.01]
    opt = stacked.StackAdamW(stacked_p, wds)
    refs = [torch.optim.AdamW(ps, lr=lr, weight_decay=wd) for ps, lr, wd in zip(singles, lrs, wds)]
    for step in range(5):
        grads = [torch.randn_like(p) * (1 + 3 * step) for p in stacked_p]
        for p, g in zip(stacked_p, grads):
            p.grad = g.clone()
        norms = stacked.clip_per_model(stacked_p, 1.0)
        opt.step(torch.tensor(lrs))
        for k in range(K):
            for p, g in zip(singles[k], grads):
                p.grad = g[k].clone()
            ref_norm = torch.nn.utils.clip_grad_norm_(singles[k], 1.0)
            assert abs(float(norms[k]) - float(ref_norm)) < 1e-4 * float(ref_norm)
            refs[k].step()
    for k in range(K):
        for p, q in zip(stacked_p, singles[k]):
            assert torch.allclose(p.detach()[k], q.detach(), atol=1e-6)


def test_every_cache_key_names_the_one_trainer_s_version(monkeypatch):
    """A model of any width is trained stacked; a change of the trainer's arithmetic (its VERSION)
    gives every model, narrow or wide, MLM or MAE-LM, a new cache entry."""
    from mlmbook.models.cache import entry_key
    g = Grammar.load("tiny")
    configs = [(TINY, "mlm"), (replace(TINY, hidden=128, heads=4, intermediate=512), "mlm"), (TINY, "maelm")]
    before = [entry_key(g, c, 0, k) for c, k in configs]
    monkeypatch.setattr(stacked, "VERSION", stacked.VERSION + 1)
    after = [entry_key(g, c, 0, k) for c, k in configs]
    assert len(set(before)) == 3 and not set(before) & set(after)


@pytest.mark.slow                  # trains models
def test_training_together_fills_the_cache_with_what_load_or_train_would_train(tmp_path, monkeypatch):
    from safetensors.torch import load_file

    from mlmbook.models.cache import load_or_train, train_together
    g = Grammar.load("tiny")
    monkeypatch.setenv("MLMBOOK_CACHE", str(tmp_path / "together"))
    entries = train_together([(g, TINY, 0, "mlm"), (g, TINY, 1, "mlm"), (g, TINY, 2, "mlm")])
    assert [e.info["trainer"] for e in entries] == [f"stacked {stacked.VERSION}"] * 3
    assert load_or_train(g, TINY, seed=1, progress=False).path == entries[1].path        # found, not retrained
    monkeypatch.setenv("MLMBOOK_CACHE", str(tmp_path / "alone"))
    alone = load_or_train(g, TINY, seed=1, progress=False)
    a, b = load_file(entries[1].path / "model.safetensors"), load_file(alone.path / "model.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("kind", ["mlm", "maelm"])
def test_the_output_layer_at_selected_rows_in_rounds_gives_the_full_loss(tiny, kind):
    """Taking the selected rows a few at a time (forcing extra rounds) changes nothing but rounding."""
    models = [maelm.make_maelm(tiny, TINY, s) if kind == "maelm" else make_model(tiny, TINY, s) for s in range(3)]
    stack = stacked.Stack([m.state_dict() for m in models], kind, TINY.heads, TINY.layers)
    x, a, y = _batch(tiny, replace(TINY, mask_rate=0.4), 0, 3)
    with torch.no_grad():
        full = stack(x, a, y)
        stack.chunk = 5
        rounds = stack(x, a, y)
        one = stacked.Stack([models[1].state_dict()], kind, TINY.heads, TINY.layers)
        one.chunk = 5
        alone = one(x[1:2], a[1:2], y[1:2])
    assert torch.allclose(full, rounds, atol=1e-6) and int((y != -100).sum(-1).flatten(1).sum(1).max()) > 10
    assert torch.equal(alone[0], rounds[1])                   # extra rounds of one model: the same bits


@pytest.mark.parametrize("kind", ["mlm", "maelm"])
def test_weights_do_not_depend_on_the_stack_at_the_books_shapes(tmp_path, kind):
    """Hidden 32, 64 sentences a batch, the toy grammar: the shapes the build stacks (the batched
    products may take other code paths than at the tiny shapes), alone and in a stack of 8."""
    g = Grammar.load("toy")
    cfg = TrainConfig(hidden=32, layers=2, heads=2, intermediate=128, batch=64, steps=3, n_eval=4, eval_every=3,
                      checkpoints=())
    alone = stacked.Member(g, cfg, 5, kind, tmp_path / "alone")
    crowd = [stacked.Member(g, replace(cfg, mask_rate=0.1 + 0.05 * s), s, kind, tmp_path / f"c{s}") for s in range(8)]
    crowd[5] = stacked.Member(g, cfg, 5, kind, tmp_path / "in")
    stacked.train_stack([alone], progress=False)
    stacked.train_stack(crowd, progress=False)
    w1, w8 = _weights(alone), _weights(crowd[5])
    assert all(torch.equal(w1[k], w8[k]) for k in w1)


def test_batches_of_different_lengths_are_computed_each_at_its_own_length(tiny):
    """A stack groups models by batch length; each model's loss is the bits it gets alone."""
    models = [make_model(tiny, TINY, s) for s in range(4)]
    stack = stacked.Stack([m.state_dict() for m in models], "mlm", TINY.heads, TINY.layers)
    data = []
    for k, length in enumerate((5, 7, 5, 9)):                  # three lengths among four models
        ids = torch.randint(5, 5 + len(tiny.vocab), (TINY.batch, length), generator=torch.Generator().manual_seed(k))
        ids[:, 0], ids[:, -1] = 2, 3
        x, y = mask_tokens(ids, replace(TINY, mask_rate=0.3), 5 + len(tiny.vocab), torch.Generator().manual_seed(k))
        data.append((x, torch.ones_like(x), y))
    with torch.no_grad():
        together = stack(*zip(*data))
        for k, m in enumerate(models):
            alone = stacked.Stack([m.state_dict()], "mlm", TINY.heads, TINY.layers)
            assert torch.equal(alone(*([t] for t in data[k]))[0], together[k])
            ref = m(input_ids=data[k][0], attention_mask=data[k][1], labels=data[k][2]).loss
            assert abs(float(ref) - float(together[k])) < 1e-5
