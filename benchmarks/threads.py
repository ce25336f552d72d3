"""Threads under load: the query engine against a one-padded-batch baseline, idle and beside a busy process.

The baseline is written here in the style of minicons' ``MaskedLMScorer``: every masked
variant of a batch of sentences padded into one batch, the whole model (LM head at every
position) run once, then a full softmax. Each cell of the table is a median of interleaved
runs measured in this one run; the figures to read are the ratios.
"""
from __future__ import annotations

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


def run(profile: str = "full", n_sentences: int = 200, repeats: int = 5) -> dict:
    g = Grammar.load("toy")
    lm = load_mlm("toy", profile=profile)
    sents = [s.words for s in g.sample(n_sentences, seed=11)]
    ours = queries.pll(lm, sents)
    ref = padded_batch_pll(lm, sents)
    out = {"pll_max_abs_diff_vs_padded_batch": float(np.abs(ours - ref).max()),
           "policy_threads": threads.policy(), "default_threads": threads._DEFAULT}
    for load in ("idle", "busy"):
        with (busy_neighbour() if load == "busy" else _nothing()):
            cells = {}
            for label, n in (("policy", threads.policy()), ("default", threads._DEFAULT)):
                with threads.using(n):
                    t = _median_times({"mlmbook": lambda: queries.pll(lm, sents),
                                       "padded": lambda: padded_batch_pll(lm, sents)}, repeats)
                cells.update({f"{label}_mlmbook_s": t["mlmbook"], f"{label}_padded_s": t["padded"]})
            out[f"{load}_blas_policy_s"] = blas_solve(threads.policy())
            out[f"{load}_blas_default_s"] = blas_solve(threads._DEFAULT)
        for k, v in cells.items():
            out[f"{load}_{k}"] = v
        out[f"{load}_speedup_vs_padded"] = cells["policy_padded_s"] / cells["policy_mlmbook_s"]
        out[f"{load}_policy_vs_default"] = cells["default_mlmbook_s"] / cells["policy_mlmbook_s"]
    return out


@contextmanager
def _nothing():
    yield


def table(r: dict) -> list[str]:
    f = lambda v: f"{v:.3g}"  # noqa: E731
    lines = ["## Threads under load: PLL of 200 toy sentences", "",
             f"The policy uses {r['policy_threads']} thread(s) for the toy model; torch's default here is "
             f"{r['default_threads']}. The one-padded-batch reference agrees with `mlmbook.queries.pll` to "
             f"{r['pll_max_abs_diff_vs_padded_batch']:.1e} nats per sentence (both use the full softmax).", "",
             "| machine | mlmbook, policy (s) | mlmbook, torch default (s) | padded batch, policy (s) | "
             "padded batch, default (s) | mlmbook vs padded batch (goal ≥ 2× idle, ≥ 1× busy) | policy vs default |", "|---|---|---|---|---|---|---|"]
    for load in ("idle", "busy"):
        lines.append(f"| {load if load == 'idle' else 'one busy process'} | {f(r[f'{load}_policy_mlmbook_s'])} | "
                     f"{f(r[f'{load}_default_mlmbook_s'])} | {f(r[f'{load}_policy_padded_s'])} | "
                     f"{f(r[f'{load}_default_padded_s'])} | {f(r[f'{load}_speedup_vs_padded'])}× | "
                     f"{f(r[f'{load}_policy_vs_default'])}× |")
    lines += ["", "NumPy's BLAS follows the same policy (`threadpoolctl`): one 228×228 `np.linalg.solve`, "
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
