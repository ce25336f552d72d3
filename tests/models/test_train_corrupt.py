"""The corruption settings of TrainConfig: replacement shares, spans, cloze-like masks, noise."""
import json
import math
from dataclasses import replace

import pytest
import torch

from mlmbook.models import corrupt
from mlmbook.models.train import TrainConfig
from mlmbook.toy import Grammar
from mlmbook.toy.vocab import MASK

OFFSET = corrupt.OFFSET
V = OFFSET + 200                                   # special tokens + 200 words


def rows(B, n, seed=0):
    """Synthetic batch: [CLS] n-2 random words [SEP], every row full length."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(OFFSET, V, (B, n), generator=g)
    ids[:, 0], ids[:, -1] = 2, 3
    return ids


def within(observed, p, n, sigmas=5):
    """A share of n Bernoulli(p) draws lies within ``sigmas`` standard errors of p."""
    return abs(observed - p) <= sigmas * math.sqrt(p * (1 - p) / n) + 1e-12


def bert_masking_of_version_3(ids, config, vocab_size, gen):
    """The corruption every earlier version used (BERT 80/10/10), kept verbatim as the reference."""
    content = ids >= OFFSET
    selected = (torch.rand(ids.shape, generator=gen) < config.mask_rate) & content
    labels = torch.where(selected, ids, torch.full_like(ids, -100))
    roll = torch.rand(ids.shape, generator=gen)
    inputs = ids.clone()
    inputs[selected & (roll < 0.8)] = MASK
    rand = selected & (roll >= 0.8) & (roll < 0.9)
    inputs[rand] = torch.randint(OFFSET, vocab_size, (int(rand.sum()),), generator=gen)
    return inputs, labels


def test_defaults_reproduce_earlier_masking_bit_for_bit():
    g = Grammar.load("toy")
    cfg = TrainConfig(batch=64)
    data = corrupt.batches(g, cfg, seed=3)
    gen_new, gen_old = torch.Generator().manual_seed(11), torch.Generator().manual_seed(11)
    for _ in range(20):
        ids, _ = next(data)
        new = corrupt.mask_tokens(ids, cfg, OFFSET + len(g.vocab), gen_new)
        old = bert_masking_of_version_3(ids, cfg, OFFSET + len(g.vocab), gen_old)
        assert all(torch.equal(a, b) for a, b in zip(new, old))
    assert torch.equal(gen_new.get_state(), gen_old.get_state())     # the same draws, no extra ones


def test_eligible_batches_carry_the_same_ids():
    g = Grammar.load("toy")
    cfg = TrainConfig(batch=32, mask_only=("nsubj",))
    plain, tagged = corrupt.batches(g, cfg, 5), corrupt.batches(g, cfg, 5, eligible=True)
    for _ in range(5):
        (a, attn_a), (b, attn_b, elig) = next(plain), next(tagged)
        assert torch.equal(a, b) and torch.equal(attn_a, attn_b) and elig.shape == a.shape and elig.dtype == torch.bool


@pytest.mark.parametrize("shares", [(0.8, 0.1, 0.1), (1.0, 0.0, 0.0), (0.5, 0.3, 0.2), (0.0, 0.0, 1.0)])
def test_replacement_shares_match_replace(shares):
    cfg = TrainConfig(mask_rate=0.5, replace=shares)
    ids = rows(4000, 12)
    inputs, labels = corrupt.mask_tokens(ids, cfg, V, torch.Generator().manual_seed(0))
    sel = labels != -100
    n = int(sel.sum())
    assert torch.equal(labels[sel], ids[sel]) and torch.equal(inputs[~sel], ids[~sel])
    masked = float((inputs[sel] == MASK).float().mean())
    unchanged = float((inputs[sel] == ids[sel]).float().mean())
    words = V - OFFSET
    assert within(masked, shares[0], n)
    assert within(unchanged, shares[2] + shares[1] / words, n)      # a random word may be the word itself
    assert within(1 - masked - unchanged, shares[1] * (1 - 1 / words), n)
    assert within(n / (4000 * 10), 0.5, 4000 * 10)                    # the rate over content tokens


def runs_of(row):
    """Lengths of maximal runs of True in a 1-d bool tensor, and whether each touches an end."""
    out, start = [], None
    vals = row.tolist() + [False]
    for j, v in enumerate(vals):
        if v and start is None:
            start = j
        if not v and start is not None:
            out.append((j - start, start == 0 or j == len(row)))
            start = None
    return out


@pytest.mark.parametrize("rate, mean", [(0.15, 3.0), (0.3, 1.5), (0.15, 1.0)])
def test_span_masking_selects_runs_of_the_right_mean_length_and_rate(rate, mean):
    cfg = TrainConfig(mask_rate=rate, span=mean, replace=(1.0, 0.0, 0.0))
    ids = rows(300, 402)
    inputs, labels = corrupt.mask_tokens(ids, cfg, V, torch.Generator().manual_seed(1))
    sel = labels != -100
    assert not sel[:, 0].any() and not sel[:, -1].any()                 # never [CLS]/[SEP]
    assert torch.equal(inputs == MASK, sel)                              # 100/0/0: every selected token masked
    content = sel[:, 1:-1]
    # the rate holds per position: selected spans cover `rate` of the tokens
    assert within(float(content.float().mean()), rate, content.numel() / (2 * mean))   # runs are correlated
    lengths = [n for r in content for n, edge in runs_of(r) if not edge]
    m = sum(lengths) / len(lengths)
    sd = math.sqrt((1 - 1 / mean)) * mean / math.sqrt(len(lengths))  # geometric sd / sqrt(count)
    assert abs(m - mean) < 5 * sd + 1e-9, (m, mean)
    ones = sum(n == 1 for n in lengths) / len(lengths)
    assert within(ones, 1 / mean, len(lengths))                         # geometric: P(length 1) = 1/mean


def test_span_masking_on_real_batches_stays_inside_the_sentence():
    g = Grammar.load("toy")
    cfg = TrainConfig(batch=64, span=3.0)
    data = corrupt.batches(g, cfg, 0)
    gen = torch.Generator().manual_seed(0)
    for _ in range(10):
        ids, attn = next(data)
        _, labels = corrupt.mask_tokens(ids, cfg, OFFSET + len(g.vocab), gen)
        assert (ids[labels != -100] >= OFFSET).all()


@pytest.mark.parametrize("tags", [("nsubj",), ("NOUN",), ("det", "ADJ")])
def test_mask_only_never_selects_ineligible_tokens(tags):
    g = Grammar.load("toy")
    sents = g.sample(3000, seed=4)
    n = max(len(s) for s in sents) + 2
    elig = corrupt.eligible_mask(sents, n, tags)
    for s, row in zip(sents[:200], elig):
        want = [d in tags or u in tags for d, u in zip(s.deprels, s.upos)]
        assert row[1:len(s) + 1].tolist() == want and not row[len(s) + 1:].any() and not row[0]
    ids = torch.zeros(len(sents), n, dtype=torch.long)
    for r, s in enumerate(sents):
        ids[r, :len(s) + 2] = torch.tensor([2] + [OFFSET + g.word_id[w] for w in s.words] + [3])
    cfg = TrainConfig(mask_only=tags, mask_rate=0.3)
    _, labels = corrupt.mask_tokens(ids, cfg, OFFSET + len(g.vocab), torch.Generator().manual_seed(2), elig)
    sel = labels != -100
    assert not (sel & ~elig).any()
    assert within(int(sel.sum()) / int(elig.sum()), 0.3, int(elig.sum()))      # the rate is of eligible tokens
    with pytest.raises(ValueError, match="eligible="):
        corrupt.mask_tokens(ids, cfg, OFFSET + len(g.vocab), torch.Generator())


def test_noise_replaces_the_right_share_and_labels_are_the_noisy_tokens():
    cfg = TrainConfig(noise=0.2, mask_rate=0.5, replace=(1.0, 0.0, 0.0))
    ids = rows(3000, 12)
    gen = torch.Generator().manual_seed(3)
    inputs, labels = corrupt.mask_tokens(ids, cfg, V, gen)
    noisy = corrupt.add_noise(ids, 0.2, V, torch.Generator().manual_seed(3))     # the same first draws
    sel = labels != -100
    assert torch.equal(labels[sel], noisy[sel]) and torch.equal(inputs[~sel], noisy[~sel])
    changed = float((noisy[:, 1:-1] != ids[:, 1:-1]).float().mean())
    words = V - OFFSET
    assert within(changed, 0.2 * (1 - 1 / words), 3000 * 10)
    assert (noisy[:, 0] == 2).all() and (noisy[:, -1] == 3).all()        # special tokens are never noised


def test_clear_errors_for_impossible_settings():
    for bad, match in [(dict(replace=(0.8, 0.1)), "three"), (dict(replace=(0.8, 0.3, 0.1)), "summing to 1"),
                       (dict(span=0.5), ">= 1"), (dict(span=2.0, mask_rate=0.7), "too high"),
                       (dict(span=3.0, mask_only=("nsubj",)), "cannot be combined"), (dict(noise=1.0), "noise"),
                       (dict(decoder_layers=0), "decoder_layers")]:
        with pytest.raises(ValueError, match=match):
            TrainConfig(**bad)


def test_settings_normalise_so_equal_configs_share_a_cache_key():
    from dataclasses import asdict
    a = TrainConfig(replace=[1, 0, 0], mask_only="nsubj", noise=0)
    b = TrainConfig(replace=(1.0, 0.0, 0.0), mask_only=("nsubj",), noise=0.0)
    assert a == b and hash(a) == hash(b)
    assert json.dumps(asdict(a), sort_keys=True) == json.dumps(asdict(b), sort_keys=True)


TINY = TrainConfig(hidden=16, layers=1, heads=1, intermediate=32, steps=6, batch=16, n_eval=10, eval_every=3,
                   checkpoints=())


@pytest.mark.parametrize("kind", ["mlm", "maelm"])
@pytest.mark.parametrize("change", [dict(replace=(1.0, 0.0, 0.0)), dict(span=2.0), dict(mask_only=("NOUN",)),
                                    dict(noise=0.1)])
def test_the_trainer_trains_each_setting(tmp_path, kind, change):
    from mlmbook.models import stacked
    cfg = replace(TINY, **change)
    [history] = stacked.train_stack([stacked.Member(Grammar.load("tiny"), cfg, 0, kind, tmp_path)], progress=False)
    assert len(history["eval_loss"]) == 2 and all(math.isfinite(x) for x in history["eval_loss"])


def test_decoder_depth_comes_from_the_config_and_the_key(tmp_path, monkeypatch):
    from mlmbook.models import load_or_train, maelm
    from mlmbook.models.cache import entry_key
    monkeypatch.setenv("MLMBOOK_CACHE", str(tmp_path))
    g = Grammar.load("tiny")
    deep = replace(TINY, decoder_layers=2)
    assert entry_key(g, deep, 0, "maelm") != entry_key(g, TINY, 0, "maelm")
    entry = load_or_train(g, deep, seed=0, kind="maelm", progress=False)
    assert len(maelm.load(entry.path).model.decoder) == 2 and entry.history()["decoder_layers"] == 2
