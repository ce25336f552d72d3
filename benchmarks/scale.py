"""Scale on paper: what a chapter's estimators cost per sentence on a bert-base-sized model.

The CPU figure is *measured*: a randomly initialised ``BertForMaskedLM`` with
bert-base-uncased's configuration (no download needed; the weights' values do not change the
cost). The GPU figure is an *estimate*: the forward pass's FLOPs divided by a sustained
fraction of an accelerator's peak, stated as such (no GPU was available to measure).
"""
from __future__ import annotations

import time

import torch

GPU_NAME = "one H200 (bf16 dense peak ~790 TFLOP/s usable; we assume 30 % sustained on batched BERT inference)"
GPU_FLOPS = 0.30 * 790e12


def bert_base_cpu_tokens_per_s(n=22, batch=64):
    from transformers import BertConfig, BertForMaskedLM
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig()).eval()           # bert-base-uncased's shape
    ids = torch.randint(1000, 30000, (batch, n))
    with torch.inference_mode():
        model.bert(input_ids=ids[:4])
        t = time.perf_counter()
        h = model.bert(input_ids=ids).last_hidden_state[:, 1]
        model.cls(h)
        dt = time.perf_counter() - t
    params = sum(p.numel() for n_, p in model.bert.named_parameters() if "embeddings" not in n_)
    return batch * n / dt, params


def run():
    rate, params = bert_base_cpu_tokens_per_s()
    flops_per_token = 2 * params                               # one multiply-add per weight (attention over n small)
    gpu_rate = GPU_FLOPS / flops_per_token
    pieces, V, K = 26, 30522, 50                              # a 20-word sentence is ~26 WordPiece tokens
    tok = pieces + 2
    window_pairs = 9 * pieces - 45                            # pairs within 9 pieces
    rows = {
        "ch1 CPMI, all pairs (n + n² rows)": pieces + pieces * (pieces - 1),
        "ch1 CMI by Gibbs (4 chains × 60 steps × 2 sites, window 9)": window_pairs * 4 * 60 * 2,
        f"ch1/ch2 exact V×V grid (2V+1 rows per pair; V = {V}), one pair": 2 * V + 1,
        f"ch2 top-{K} grid, one pair": 2 * K + 1,
        "ch3 rectangles + order inconsistency (top-2, 3 + 4 rows per pair, window 9)": window_pairs * 7,
        "ch5 Glauber, one sweep of one chain": pieces,
        "pseudo-log-likelihood": pieces,
    }
    out = {"bert-base CPU tokens/s (measured, 2 cores)": rate,
           f"bert-base GPU tokens/s (estimate: {GPU_NAME})": gpu_rate}
    for name, r in rows.items():
        out[f"{name}: CPU s/sentence"] = r * tok / rate
        out[f"{name}: GPU ms/sentence (estimate)"] = 1000 * r * tok / gpu_rate   # ms: no 0.000523
    return out
