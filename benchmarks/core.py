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

from mlmbook import queries, threads
from mlmbook.models import load_mlm
from mlmbook.toy import Grammar


def median_time(fn, repeats=5, warmup=1):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def paired_ratio(fn_ref, fn, repeats=5):
    """Median over interleaved runs of time(fn) / time(fn_ref): robust to the machine's drift."""
    fn_ref(), fn()
    ratios = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn_ref()
        a = time.perf_counter() - t
        t = time.perf_counter()
        fn()
        ratios.append((time.perf_counter() - t) / a)
    return statistics.median(ratios)


def rows_for(lm, sentences):
    """All single-site masked variants of equal-length sentences: (rows, positions, gold)."""
    ids = torch.tensor([lm.encode_words(s)[0] for s in sentences])
    B, n = ids.shape
    rows = ids.repeat_interleave(n, 0)
    pos = torch.arange(n).repeat(B)
    gold = rows[torch.arange(B * n), pos].clone()
    rows[torch.arange(B * n), pos] = lm.mask_id
    return rows, pos[:, None], gold


def raw_forward(lm, rows, positions, batch):
    """The limit: the bare encoder on the same rows in batches of ``batch``, output layer at the
    queried position only — no oracle bookkeeping. Returns a callable."""
    full = lm.wrap(rows)
    pos = positions[:, 0] + (full.shape[1] - rows.shape[1]) // 2

    def run():
        with torch.inference_mode():
            for s in range(0, full.shape[0], batch):
                h = lm.encoder(input_ids=full[s:s + batch]).last_hidden_state
                lm.head(h[torch.arange(h.shape[0]), pos[s:s + batch]])
    return run


def best_batch(lm, rows, positions, sizes=(64, 256, 1024)):
    """The batch size at which the raw forward pass is fastest, and its tokens/s."""
    best = None
    for B in sizes:
        t = median_time(raw_forward(lm, rows[:B * 2], positions[:B * 2], B), repeats=3)
        rate = min(rows.shape[0], B * 2) * (rows.shape[1] + 2) / t
        best = max(best or (0, B), (rate, B))
    return best


def run(profile="full", repeats=5):
    """Every core figure, measured under the thread policy for small work (as the book runs them)."""
    with threads.limited():
        return _run(profile, repeats)


def _run(profile, repeats):
    torch.manual_seed(0)
    g = Grammar.load("toy")
    lm = load_mlm("toy", profile=profile)
    out = {"model": f"toy ({profile} preset)", "threads": torch.get_num_threads()}

    # masked single-site conditionals of 12-token sentences, against the raw forward pass
    sents = [s.words for s in g.sample(6000, seed=1) if len(s) == 12][:100]
    rows, pos, gold = rows_for(lm, sents)
    rate, B = best_batch(lm, rows, pos)
    out["limit_tokens_per_s"], out["limit_batch"] = rate, B
    limit = raw_forward(lm, rows, pos, B)
    out["conditionals_fraction"] = 1 / paired_ratio(limit, lambda: lm.logits(rows, pos), repeats)
    few = slice(0, 48)
    batched = lm.logits(rows[few], pos[few])
    loop = torch.cat([lm.logits(rows[i:i + 1], pos[i:i + 1]) for i in range(48)])
    assert torch.allclose(batched, loop, atol=1e-5), "batched and one-at-a-time conditionals differ"
    out["conditionals_speedup"] = paired_ratio(lambda: lm.logits(rows[few], pos[few]),
                                               lambda: [lm.logits(rows[i:i + 1], pos[i:i + 1]) for i in range(48)], 3)

    # pseudo-log-likelihood of mixed-length sentences (length-bucketed), against the raw pass
    mixed = [s.words for s in g.sample(120, seed=2)]
    by_len = {}
    for s in mixed:
        by_len.setdefault(len(s), []).append(s)
    parts = [rows_for(lm, group) for group in by_len.values()]
    raw_parts = [raw_forward(lm, r, p, B) for r, p, _ in parts]
    out["pll_fraction"] = 1 / paired_ratio(lambda: [f() for f in raw_parts], lambda: queries.pll(lm, mixed), repeats)

    def pll_loop(sentences):
        scores = []
        for words in sentences:
            ids = lm.encode_words(words)[0]
            total = 0.0
            for i in range(len(ids)):
                row = torch.tensor([[*ids[:i], lm.mask_id, *ids[i + 1:]]])
                scores_i = lm.logits(row, torch.tensor([[i]]), full_softmax=True)[0, 0].double()
                total += torch.log_softmax(scores_i, -1)[ids[i]].item()
            scores.append(total)
        return np.array(scores)
    assert np.allclose(queries.pll(lm, mixed[:10]), pll_loop(mixed[:10]), atol=1e-4), \
        "batched PLL differs from the loop"
    out["pll_speedup"] = paired_ratio(lambda: queries.pll(lm, mixed[:20]), lambda: pll_loop(mixed[:20]), 3)

    # Glauber site updates: 256 chains per batched call, against the raw pass on the same shapes
    from mlmbook.glauber import GlauberSampler
    init = torch.tensor([lm.encode_words(s)[0] for s in sents[:1]] * 256)
    steps = 10
    sampler = GlauberSampler(lm, temperature=1.0, seed=0)
    g_rows = init.repeat(steps, 1)
    g_pos = torch.zeros(g_rows.shape[0], 1, dtype=torch.long)
    t_ratio = paired_ratio(raw_forward(lm, g_rows, g_pos, 256), lambda: sampler.run(init, steps, progress=False), 3)
    out["glauber_fraction"] = 1 / t_ratio
    out["glauber_updates_per_s"] = 256 * steps / median_time(lambda: sampler.run(init, steps, progress=False), 3)
    single = GlauberSampler(lm, temperature=1.0, seed=0)
    out["glauber_speedup"] = paired_ratio(
        lambda: sampler.run(init, steps, progress=False),
        lambda: [single.run(init[:1], steps, progress=False) for _ in range(16)], 3) * 256 / 16

    # training: tokens/s with and without length bucketing (same model, same steps)
    out.update(training_bucketing(g))
    return out


def training_bucketing(g, steps=25):
    from mlmbook.models.train import PRESETS, batches, make_model, mask_tokens
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
