"""Threads under load: the query engine on one and on several threads against a one-padded-batch baseline,
idle and beside a busy process (``python -m benchmarks.threads`` prints the table alone).

The baseline is written here in the style of minicons' ``MaskedLMScorer``: every masked
variant of a batch of sentences padded into one batch, the whole model (LM head at every
position) run once, then a full softmax. Each cell of the table is a median of interleaved
runs measured in this one run; the figures to read are the ratios.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager

import numpy as np
import torch

from mlmbook import queries, threads
from mlmbook.models import load_mlm
from mlmbook.toy import Grammar


def padded_batch_pll(lm, sentences, batch_sentences: int = 20) -> np.ndarray:
    """PLL the one-padded-batch way (the reference): pad, run the full model, full softmax."""
    model, pad = lm.model, lm.tokenizer.pad_token_id
    out = []
    for s in range(0, len(sentences), batch_sentences):
        rows, where, gold, owner = [], [], [], []
        for k, words in enumerate(sentences[s:s + batch_sentences]):
            ids = lm.wrap([lm.encode_words(words)[0]])[0].tolist()
            for t in range(1, len(ids) - 1):
                r = list(ids)
                r[t] = lm.mask_id
                rows.append(r), where.append(t), gold.append(ids[t]), owner.append(k)
        width = max(map(len, rows))
        x = torch.full((len(rows), width), pad)
        attn = torch.zeros_like(x)
        for i, r in enumerate(rows):
            x[i, :len(r)], attn[i, :len(r)] = torch.tensor(r), 1
        with torch.inference_mode():
            logits = model(input_ids=x, attention_mask=attn).logits
        lp = torch.log_softmax(logits[torch.arange(len(rows)), where].double(), -1)[torch.arange(len(rows)), gold]
        scores = np.zeros(len(sentences[s:s + batch_sentences]))
        np.add.at(scores, owner, lp.numpy())
        out.append(scores)
    return np.concatenate(out)


@contextmanager
def busy_neighbour():
    """One other process spinning on a core for the duration of the block."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        yield
    finally:
        proc.kill()
        proc.wait()


def _median_times(fns: dict, repeats: int) -> dict:
    """Median seconds of each callable, the callables interleaved round by round."""
    for f in fns.values():
        f()
    times = {k: [] for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def blas_solve(n_threads: int | None, size: int = 228, repeats: int = 50) -> float:
    """Median seconds of one ``np.linalg.solve`` of a ``size``-square system (the exact CMI
    grid's and AG's inner step), with BLAS limited to ``n_threads`` (None: its own default)."""
    from threadpoolctl import threadpool_limits
    a = np.random.default_rng(0).random((size, size)) + size * np.eye(size)
    b = np.ones(size)
    with threadpool_limits(n_threads, user_api="blas"):
        np.linalg.solve(a, b)
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            np.linalg.solve(a, b)
            times.append(time.perf_counter() - t)
    return statistics.median(times)


@contextmanager
def policy_threads(n: int):
    """The thread policy set to ``n`` threads for the block (``$MLMBOOK_THREADS``), as a reader would set it."""
    old = os.environ.get("MLMBOOK_THREADS")
    os.environ["MLMBOOK_THREADS"] = str(n)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("MLMBOOK_THREADS", None)
        else:
            os.environ["MLMBOOK_THREADS"] = old


@contextmanager
def second_edition():
    """The engine as it was: every call one forward pass split across the policy's threads (intra-op)."""
    original = queries._workers
    queries._workers = lambda lm: 1
    try:
        yield
    finally:
        queries._workers = original


def run(profile: str = "full", n_sentences: int = 200, repeats: int = 5) -> dict:
    g = Grammar.load("toy")
    lm = load_mlm("toy", profile=profile)
    sents = [s.words for s in g.sample(n_sentences, seed=11)]
    n = max(2, threads._DEFAULT)
    with policy_threads(1):
        ours = queries.pll(lm, sents)
    with policy_threads(n):
        side_by_side = queries.pll(lm, sents)
    ref = padded_batch_pll(lm, sents)
    out = {"pll_max_abs_diff_vs_padded_batch": float(np.abs(ours - ref).max()),
           "pll_max_abs_diff_threads": float(np.abs(ours - side_by_side).max()),
           "threads": n, "sentences": n_sentences}

    def engine(k, before=False):
        def f():
            with policy_threads(k), (second_edition() if before else _nothing()):
                queries.pll(lm, sents)
        return f

    def baseline(k):
        def f():
            with threads.using(k):
                padded_batch_pll(lm, sents)
        return f

    for load in ("idle", "busy"):
        with (busy_neighbour() if load == "busy" else _nothing()):
            t = _median_times({"one": engine(1), "multi": engine(n), "groups": engine(n, before=True),
                               "padded_one": baseline(1), "padded_multi": baseline(n)}, repeats)
            out[f"{load}_blas_policy_s"] = blas_solve(threads.policy())
            out[f"{load}_blas_default_s"] = blas_solve(threads._DEFAULT)
        out.update({f"{load}_{k}_s": v for k, v in t.items()})
        out[f"{load}_multi_vs_one"] = t["multi"] / t["one"]
        out[f"{load}_multi_vs_padded"] = t["multi"] / t["padded_multi"]
        out[f"{load}_groups_vs_one"] = t["groups"] / t["one"]
        out[f"{load}_groups_vs_padded"] = t["groups"] / t["padded_multi"]
        out[f"{load}_one_vs_padded"] = t["one"] / t["padded_one"]
    return out


@contextmanager
def _nothing():
    yield


def table(r: dict) -> list[str]:
    f = lambda v: f"{v:.3g}"
    n = r["threads"]
    lines = [f"## Threads under load: PLL of {r['sentences']} toy sentences", "",
             f"`mlmbook.queries.pll` on 1 thread (the policy for small models) and with {n} threads (as for a large "
             f"encoder, or with `MLMBOOK_THREADS={n}`: chunks side by side on {n} one-thread workers or on one "
             f"thread, whichever the engine measured faster), against the one-padded-batch reference (minicons "
             f"style, full model, full softmax) on the same threads; \"before\" is the second edition's engine "
             f"on {n} threads (each forward pass split across them). The padded reference agrees with the engine "
             f"to {r['pll_max_abs_diff_vs_padded_batch']:.2g} nats per sentence, the engine on {n} threads with "
             f"the engine on one to {r['pll_max_abs_diff_threads']:.2g}. Times are medians of interleaved runs "
             f"(s); ratios below 1 favour the engine on {n} threads.", "",
             f"| machine | engine, 1 thread | engine, {n} threads | before, {n} threads "
             f"| padded batch, 1 thread | padded batch, {n} threads | {n} threads vs 1 (goal ≤ 1 busy) "
             f"| {n} threads vs padded batch (goal ≤ 1) | before vs 1 thread |",
             "|---|---|---|---|---|---|---|---|---|"]
    for load in ("idle", "busy"):
        lines.append(f"| {load if load == 'idle' else 'one busy process'} | {f(r[f'{load}_one_s'])} | "
                     f"{f(r[f'{load}_multi_s'])} | {f(r[f'{load}_groups_s'])} | {f(r[f'{load}_padded_one_s'])} | "
                     f"{f(r[f'{load}_padded_multi_s'])} | {f(r[f'{load}_multi_vs_one'])}× | "
                     f"{f(r[f'{load}_multi_vs_padded'])}× | {f(r[f'{load}_groups_vs_one'])}× |")
    lines += ["", "NumPy's BLAS follows the same policy (`threadpoolctl`, per call): one 228×228 `np.linalg.solve`, "
              "the inner step of the exact CMI grid and of AG's Newton solver (ms):", "",
              "| machine | BLAS, policy | BLAS, its default | default / policy |", "|---|---|---|---|"]
    for load in ("idle", "busy"):
        p, d = r[f"{load}_blas_policy_s"], r[f"{load}_blas_default_s"]
        lines.append(f"| {load if load == 'idle' else 'one busy process'} | {1e3 * p:.2f} | {1e3 * d:.2f} | "
                     f"{d / p:.1f}× |")
    return lines


if __name__ == "__main__":
    result = run(sys.argv[1] if len(sys.argv) > 1 else "full")
    print("\n".join(table(result)))
