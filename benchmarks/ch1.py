"""Chapter 1 benchmark: dependency scores per sentence, batched vs one pair at a time.

For the longest sentences of the toy language (15 tokens, the grammar's maximum) and the
full-profile default MLM, time

* the exact CMI grid (``mlmbook.dependencies.cmi_grid``: 2V + 1 rows per pair of positions),
* CPMI (``mlmbook.dependencies.cpmi``),

once as the package computes them (every pair of every sentence in a few large model calls)
and once looping over the pairs of words, each pair on its own (its own model calls). Both
must give the same numbers (to 1e-5 nats); the benchmark reports the wall-clock and CPU
seconds per sentence of each and the wall-clock speed-up (CPU seconds are the better guide
on a machine shared with other work).

:func:`top_k` measures the top-K grid (``cmi_grid(..., max_candidates=K)``): the model rows it
actually runs per pair on a 30,000-token vocabulary (a cheap stand-in model of that size: the
row count does not depend on the weights) against the full grid's ``2V + 1``, and on the toy
model its largest per-pair CMI error against the full grid beside the bound it reports.

    python -m benchmarks.ch1            # prints the figures as JSON
"""
from __future__ import annotations

import json
import time

import numpy as np


def _longest(grammar, n: int, seed: int):
    """``n`` sentences of the grammar's maximum length (with their non-punctuation words)."""
    out, k = [], 0
    while len(out) < n:
        out += [s for s in grammar.sample(2000, seed=seed + k) if len(s) == grammar.max_length]
        k += 1
    return out[:n]


def run(n_sentences: int = 2, profile: str = "full", seed: int = 0) -> dict:
    """Measure batched vs per-pair CMI (exact grid) and CPMI; returns the figures."""

    from mlmbook import dependencies as dep
    from mlmbook.models import load_mlm
    from mlmbook.toy import Grammar

    grammar = Grammar.load("toy")
    lm = load_mlm("toy", profile=profile, seed=seed)
    sents = _longest(grammar, n_sentences, seed)
    words = [s.words for s in sents]
    keep = [[i for i, u in enumerate(s.upos) if u != "PUNCT"] for s in sents]
    out = {"model": lm.name, "profile": profile, "sentences": n_sentences,
           "tokens_per_sentence": grammar.max_length, "window": dep.WINDOW}

    def pairs(k):
        kp = keep[k]
        return [(a, b) for a in range(len(kp)) for b in range(a + 1, len(kp))
                if kp[b] - kp[a] <= dep.WINDOW]

    for name, batched_fn, pair_fn in [
        ("cmi", lambda: dep.cmi_grid(lm, words, keep),
         lambda k, a, b: dep.cmi_grid(lm, [words[k]], [[keep[k][a], keep[k][b]]], window=None)[0]),
        ("cpmi", lambda: dep.cpmi(lm, words, keep),
         lambda k, a, b: dep.cpmi(lm, [words[k]], [[keep[k][a], keep[k][b]]])[0]),
    ]:
        t0, c0 = time.perf_counter(), time.process_time()
        batched = batched_fn()
        t_batched, c_batched = time.perf_counter() - t0, time.process_time() - c0
        t0, c0 = time.perf_counter(), time.process_time()
        diff = 0.0
        for k in range(n_sentences):
            for a, b in pairs(k):
                M = pair_fn(k, a, b)
                diff = max(diff, abs(M[0, 1] - batched[k][a, b]), abs(M[1, 0] - batched[k][b, a]))
        t_loop, c_loop = time.perf_counter() - t0, time.process_time() - c0
        out.update({f"{name}_pairs_per_sentence": float(np.mean([len(pairs(k)) for k in range(n_sentences)])),
                    f"{name}_batched_s_per_sentence": t_batched / n_sentences,
                    f"{name}_loop_s_per_sentence": t_loop / n_sentences,
                    f"{name}_batched_cpu_s_per_sentence": c_batched / n_sentences,
                    f"{name}_loop_cpu_s_per_sentence": c_loop / n_sentences,
                    f"{name}_speedup": t_loop / t_batched,
                    f"{name}_max_abs_diff": float(diff)})
    return out


def _wide_model(V: int, seed: int = 0):
    """A stand-in masked LM with ``V`` tokens: logits from a fixed random two-layer map of the row."""
    import torch

    from mlmbook.models.base import MaskedLMBase

    class Wide(MaskedLMBase):
        name = f"random {V}-token stand-in"
        mask_id, special_ids, max_length = 0, [0], 64

        def __init__(self):
            g = torch.Generator().manual_seed(seed)
            self.vocab = [f"t{i}" for i in range(V)]
            self.E = torch.randn(V, 16, generator=g)
            self.P = torch.randn(64, 16, generator=g)
            self.W = torch.randn(16, V, generator=g)

        def encode_words(self, words):
            ids = [1 + (sum(map(ord, w)) * 7919) % (V - 1) for w in words]
            return ids, [[i] for i in range(len(words))]

        def _logits_chunk(self, ids, positions):
            h = torch.tanh(self.E[ids].sum(1, keepdim=True) + self.P[positions])   # (B, k, 16)
            return h @ self.W

    return Wide()


def top_k(K: int = 50, V: int = 30_000, profile: str = "full", seed: int = 0) -> dict:
    """Rows per pair of the top-K grid vs the full grid; error vs bound on the toy model."""
    from mlmbook import dependencies as dep
    from mlmbook.models import load_mlm
    from mlmbook.toy import Grammar

    wide = _wide_model(V, seed)
    words = [["alpha", "beta", "gamma", "delta"]]
    t0 = time.process_time()
    grid = dep.cmi_grid(wide, words, max_candidates=K)
    cpu = time.process_time() - t0
    full_per_pair = dep.grid_rows(wide, words) / grid.pairs
    out = {"topk_K": K, "topk_V": V, "topk_rows_per_pair": grid.rows / grid.pairs,
           "full_rows_per_pair": full_per_pair,
           "topk_over_full_rows": grid.rows / grid.pairs / full_per_pair,
           "topk_cpu_s_per_pair_stand_in": cpu / grid.pairs}
    grammar = Grammar.load("toy")
    lm = load_mlm("toy", profile=profile, seed=seed)
    sents = _longest(grammar, 1, seed)
    keep = [[i for i, u in enumerate(s.upos) if u != "PUNCT"] for s in sents]
    wds = [s.words for s in sents]
    full = dep.cmi_grid(lm, wds, keep)
    for k in (20, K):
        top = dep.cmi_grid(lm, wds, keep, max_candidates=k)
        err = max(np.abs(a - b).max() for a, b in zip(top, full))
        out.update({f"toy_top{k}_rows_per_pair": top.rows / top.pairs,
                    f"toy_top{k}_max_abs_err": float(err),
                    f"toy_top{k}_max_left_out": top.max_left_out,
                    f"toy_top{k}_median_error_bound": float(np.median(top.error_bound)),
                    f"toy_top{k}_max_error_bound": top.max_error_bound})
    out["toy_full_rows_per_pair"] = full.rows / full.pairs
    return out


if __name__ == "__main__":
    print(json.dumps({**run(), **top_k()}, indent=1))
