"""Core benchmarks: the model's forward-pass limit and how close the oracle's estimators get.

Every figure is a ratio measured side by side in one run (these machines drift ±30–50 %
between runs): each timing is the median of ``repeats`` runs, interleaved with the
reference it is compared with.
"""
from __future__ import annotations

import statistics
import time

import numpy as np
import torch

from mlmbook.language import Grammar
from mlmbook.oracle import load_mlm


def median_time(fn, repeats=5, warmup=1):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def rows_for(lm, sentences):
    """All single-site masked variants of equal-length sentences: (rows, positions, gold)."""
    ids = torch.tensor([lm.encode_words(s)[0] for s in sentences])
    B, n = ids.shape
    rows = ids.repeat_interleave(n, 0)
    pos = torch.arange(n).repeat(B)
    gold = rows[torch.arange(B * n), pos].clone()
    rows[torch.arange(B * n), pos] = lm.mask_id
    return rows, pos[:, None], gold


def forward_limit(lm, n=12, batches=(64, 256, 1024)):
    """Raw batched encoder throughput (tokens/s, [CLS]/[SEP] included) at the best batch size,
    with the output layer applied at one position per row (what every estimator needs)."""
    best = (0.0, None)
    for B in batches:
        ids = torch.randint(5, lm.V, (B, n))
        full = torch.cat([torch.full((B, 1), 2), ids, torch.full((B, 1), 3)], 1)

        def run():
            with torch.inference_mode():
                h = lm._base(input_ids=full).last_hidden_state[:, 1]
                lm._head(h)
        t = median_time(run, repeats=3)
        best = max(best, (B * (n + 2) / t, B))
    return best


def run(profile="full", repeats=5):
    torch.manual_seed(0)
    g = Grammar.load("toy")
    lm = load_mlm("toy", profile=profile)
    out = {"model": f"toy ({profile} preset)", "threads": torch.get_num_threads()}
    limit, best_b = forward_limit(lm)
    out["limit_tokens_per_s"], out["limit_batch"] = limit, best_b

    # masked single-site conditionals through the oracle (one length: 12-token sentences)
    sents = [s.words for s in g.sample(4000, seed=1) if len(s) == 12][:60]
    rows, pos, gold = rows_for(lm, sents)
    t_batched = median_time(lambda: lm.logits(rows, pos), repeats)
    out["conditionals_fraction"] = rows.shape[0] * 14 / t_batched / limit
    few = slice(0, 48)
    batched = lm.logits(rows[few], pos[few])
    loop = torch.cat([lm.logits(rows[i:i + 1], pos[i:i + 1]) for i in range(48)])
    assert torch.allclose(batched, loop, atol=1e-5), "batched and one-at-a-time conditionals differ"
    t_loop = median_time(lambda: [lm.logits(rows[i:i + 1], pos[i:i + 1]) for i in range(48)], 3)
    out["conditionals_speedup"] = t_loop / median_time(lambda: lm.logits(rows[few], pos[few]), repeats)

    # pseudo-log-likelihood of mixed-length sentences (length-bucketed)
    mixed = [s.words for s in g.sample(80, seed=2)]
    n_tok = sum(len(s) * (len(s) + 2) for s in mixed)
    t_pll = median_time(lambda: lm.pll(mixed), repeats)
    out["pll_fraction"] = n_tok / t_pll / limit
    ref = np.array([sum(torch.log_softmax(lm.logits(torch.tensor([r]), torch.tensor([[i]]))[0, 0], -1)[r0[i]].item()
                        for i in range(len(r0)) for r in [[*r0[:i], lm.mask_id, *r0[i + 1:]]])
                    for r0 in [lm.encode_words(s)[0] for s in mixed[:6]]])
    assert np.allclose(lm.pll(mixed[:6]), ref, atol=1e-4), "batched PLL differs from the loop"
    t_pll_loop = median_time(lambda: [lm.pll([s]) for s in mixed[:20]], 3)
    out["pll_speedup"] = t_pll_loop / median_time(lambda: lm.pll(mixed[:20]), repeats)

    # Glauber site updates: many chains per batched call vs one chain at a time
    from mlmbook.glauber import GlauberSampler
    init = torch.tensor([lm.encode_words(s)[0] for s in sents[:1]] * 256)
    sampler = GlauberSampler(lm, temperature=1.0, seed=0)
    t_g = median_time(lambda: sampler.run(init, 10, progress=False), 3)
    out["glauber_updates_per_s"] = 256 * 10 / t_g
    out["glauber_fraction"] = 256 * 10 * 14 / t_g / limit
    single = GlauberSampler(lm, temperature=1.0, seed=0)
    t_g1 = median_time(lambda: single.run(init[:1], 40, progress=False), 3)
    out["glauber_speedup"] = (256 * 10 / t_g) / (40 / t_g1)

    # training: tokens/s with and without length bucketing (same model, same steps)
    out.update(training_bucketing(g))
    return out


def training_bucketing(g, steps=25):
    from mlmbook.train import PRESETS, batches, make_model, mask_tokens
    cfg = PRESETS["full"]
    res = {}
    for label, pool in (("bucketed", 16), ("unbucketed", 1)):
        model = make_model(g, cfg, 0)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        data = batches(g, cfg, 0, pool=pool)
        gen = torch.Generator().manual_seed(0)
        real = 0
        t = time.perf_counter()
        for _ in range(steps):
            ids, attn = next(data)
            x, y = mask_tokens(ids, cfg, model.config.vocab_size, gen)
            loss = model(input_ids=x, attention_mask=attn, labels=y).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            real += int(attn.sum())
        res[f"train_{label}_tokens_per_s"] = real / (time.perf_counter() - t)
    res["bucketing_speedup"] = res["train_bucketed_tokens_per_s"] / res["train_unbucketed_tokens_per_s"]
    return res
