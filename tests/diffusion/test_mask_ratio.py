"""The training knob of chapter 6: a mask ratio drawn per sentence (masked diffusion) beside BERT's fixed
rate, which must leave every existing model's cache key and corruption as they were."""
import hashlib
import json
from dataclasses import asdict, replace

import pytest
import torch

from mlmbook.models import cache, stacked
from mlmbook.models.corrupt import mask_tokens
from mlmbook.models.train import PRESETS, TRAIN_THREADS, TrainConfig
from mlmbook.toy import Grammar


def _key_before_the_setting(grammar, config, seed, kind="mlm"):
    """The cache key as it was computed before ``mask_ratio`` existed (with the trainer's version, which
    every key names since every width is trained stacked)."""
    settings = {k: v for k, v in asdict(config).items() if k != "mask_ratio"}
    parts = [cache.VERSION, kind, grammar.fingerprint, settings, seed, TRAIN_THREADS, f"stacked {stacked.VERSION}"]
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def test_the_default_keeps_every_cache_key_and_the_uniform_ratio_gets_its_own():
    g = Grammar.load("tiny")
    for config in (PRESETS["quick"], PRESETS["full"], replace(PRESETS["quick"], hidden=16, span=3.0)):
        assert cache.entry_key(g, config, 0, "mlm") == _key_before_the_setting(g, config, 0)
    uniform = replace(PRESETS["quick"], mask_ratio="uniform")
    assert cache.entry_key(g, uniform, 0, "mlm") != cache.entry_key(g, PRESETS["quick"], 0, "mlm")


def test_the_fixed_ratio_corrupts_as_before_and_the_uniform_one_draws_a_rate_per_sentence():
    ids = torch.randint(5, 60, (400, 12))
    ids[:, 0], ids[:, -1] = 2, 3
    fixed = PRESETS["quick"]
    x, y = mask_tokens(ids, fixed, 60, torch.Generator().manual_seed(1))
    gen = torch.Generator().manual_seed(1)                       # BERT's draws, written out
    selected = (torch.rand(ids.shape, generator=gen) < fixed.mask_rate) & (ids >= 5)
    assert torch.equal(y, torch.where(selected, ids, torch.full_like(ids, -100)))
    _, y_u = mask_tokens(ids, replace(fixed, mask_ratio="uniform"), 60, torch.Generator().manual_seed(1))
    share = (y_u != -100).float().sum(1) / 10                    # ten content tokens per row
    assert share.std() > 0.2 and 0.4 < share.mean() < 0.6       # U(0, 1) rates: spread, mean 1/2
    assert (share == 0).any() and (share == 1).any()


def test_impossible_settings_fail_with_one_line():
    with pytest.raises(ValueError, match="mask_ratio='sometimes'"):
        TrainConfig(mask_ratio="sometimes")
    with pytest.raises(ValueError, match="span masking and mask_ratio"):
        TrainConfig(mask_ratio="uniform", span=3.0)
