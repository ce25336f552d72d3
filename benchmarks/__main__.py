"""``python -m benchmarks``: measure, print a table, and write ``benchmarks/results.md``.

The Performance appendix of the book includes ``benchmarks/results.md``. Chapter
benchmarks (``benchmarks/chN.py`` with a ``run() -> dict``) are included when present; the
book's wall times come from the timings the last whole-book builds recorded in
``_build/timings/`` (else the committed ``results/timings/``; a full uncached build takes
longer than this command may).
"""
from __future__ import annotations

import importlib
import json
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BUDGETS = {("quick", "uncached"): 300, ("quick", "cached"): 300, ("full", "uncached"): 1200, ("full", "cached"): 480}
"""Wall-time budgets of the whole book (s), on 2 cores, the package install not counted (DESIGN.md)."""


def fmt(v):
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


def main() -> int:
    t0 = time.perf_counter()
    import torch

    from benchmarks import core

    lines = [f"Measured {time.strftime('%Y-%m-%d %H:%M')} on {platform.machine()} with {os.cpu_count()} CPU cores, "
             f"torch {torch.__version__} ({torch.get_num_threads()} threads), no GPU. "
             f"Each timing is a median of repeated runs; each figure is a ratio measured in the same run.", ""]
    print("measuring the core estimators ...", file=sys.stderr)
    c = core.run()
    lines += ["## The limit and the estimators", "",
              "| measure | value | goal |", "|---|---|---|",
              "| the limit: bare encoder, output layer at the queried position "
              f"(tokens/s, best batch {c['limit_batch']}) | {fmt(c['limit_tokens_per_s'])} | |",
              f"| masked single-site conditionals, fraction of the limit | {fmt(c['conditionals_fraction'])} | ≥ 0.9 |",
              f"| pseudo-log-likelihood (mixed lengths), fraction of the limit | {fmt(c['pll_fraction'])} | ≥ 0.9 |",
              f"| Glauber site updates, 256 chains (updates/s, for reference) | {fmt(c['glauber_updates_per_s'])} | |",
              f"| Glauber site updates, fraction of the limit | {fmt(c['glauber_fraction'])} | ≥ 0.8 |",
              "", "| batched against one item at a time (same outputs to 1e-5) | speed-up | goal |", "|---|---|---|",
              f"| masked conditionals | {fmt(c['conditionals_speedup'])}× | ≥ 5× |",
              f"| pseudo-log-likelihood | {fmt(c['pll_speedup'])}× | ≥ 5× |",
              f"| Glauber chains | {fmt(c['glauber_speedup'])}× | ≥ 5× |",
              "", "## Training", "", "| measure | value |", "|---|---|",
              f"| tokens/s with length bucketing | {fmt(c['train_bucketed_tokens_per_s'])} |",
              f"| tokens/s without | {fmt(c['train_unbucketed_tokens_per_s'])} |",
              f"| bucketing speed-up | {fmt(c['bucketing_speedup'])}× |"]
    hist = _full_history()
    if hist:
        lines.append(f"| full preset: {hist['steps'][-1]} steps, trained in (s) | {fmt(hist['train_seconds'])} |")
    from benchmarks import training as bench_training
    print("measuring stacked against one-process-per-core training ...", file=sys.stderr)
    lines += [""] + bench_training.table(bench_training.run())
    from benchmarks import scheduler as bench_scheduler
    print("measuring the build's scheduler: Dask against the old process pool ...", file=sys.stderr)
    lines += [""] + bench_scheduler.table(bench_scheduler.run())
    from benchmarks import ladder as bench_ladder
    from benchmarks import threads as bench_threads
    print("reading the model ladder ...", file=sys.stderr)
    lines += [""] + bench_ladder.table(bench_ladder.run("full"), "full")
    print("measuring threads under load ...", file=sys.stderr)
    lines += [""] + bench_threads.table(bench_threads.run())
    for k in range(1, 6):
        try:
            mod = importlib.import_module(f"benchmarks.ch{k}")
        except ImportError:
            continue
        print(f"measuring chapter {k} ...", file=sys.stderr)
        res = mod.run()
        if hasattr(mod, "top_k"):                  # chapter 1: the real-vocabulary grid's cost
            res.update({f"top-K grid: {k}": v for k, v in mod.top_k().items()})
        lines += ["", f"## Chapter {k}", "", "| measure | value |", "|---|---|"]
        lines += [f"| {name} | {fmt(v)} |" for name, v in res.items()]
    from benchmarks import cost as bench_cost
    print("calibrating and checking the cost estimate (every chapter on two small BERTs) ...", file=sys.stderr)
    lines += [""] + bench_cost.table(bench_cost.run("quick"))
    from benchmarks import vocab as bench_vocab
    print("the estimate on large vocabularies: calibrating at 100,000 pieces, checking at 50,000 and 250,000 ...",
          file=sys.stderr)
    bench_vocab.calibrate()
    lines += [""] + bench_vocab.table(bench_vocab.run())
    print("measuring scale (bert-base shape) ...", file=sys.stderr)
    from benchmarks import scale
    sc = scale.run()
    lines += ["", "## Scale on paper: bert-base-uncased", "",
              "CPU: measured on a randomly initialised model of bert-base-uncased's shape (weights do not change "
              "the cost). GPU: an **estimate** from FLOPs, not a measurement (no GPU was available).", "",
              "| measure | value |", "|---|---|"]
    lines += [f"| {name} | {fmt(v)} |" for name, v in sc.items()]
    lines += ["", "## The book", "", "| profile | models | wall time (s) | budget (s) | within | recorded |",
              "|---|---|---|---|---|---|"]
    for (profile, cache), budget in BUDGETS.items():
        path = _timings(f"{profile}-{cache}.json")
        if path.exists():
            t = json.loads(path.read_text())
            lines.append(f"| {profile} | {cache} | {t['total_seconds']:.0f} | {budget} | "
                         f"{'yes' if t['total_seconds'] <= budget else 'NO'} | {t['when']} |")
        else:
            lines.append(f"| {profile} | {cache} | not recorded yet | {budget} | | |")
    per = _timings("full-cached.json")
    if per.exists():
        t = json.loads(per.read_text())
        chapters = ", ".join(f"{k} {v:.0f} s" for k, v in t["chapters"].items())
        lines += ["", "Per chapter, full profile, models cached: " + chapters
                  + f"; rendering {t['render_seconds']:.0f} s. Chapters on toy models run two at a time, one "
                  "kernel thread each, so their times add up to more than the wall time."]
    lines += ["", f"(`make bench` itself took {time.perf_counter() - t0:.0f} s.)"]
    text = "\n".join(lines) + "\n"
    (HERE / "results.md").write_text(text)
    print(text)
    return 0


def _timings(name: str) -> Path:
    """This machine's latest timings (``_build/timings``), else the committed reference ones."""
    from mlmbook.paths import build_dir
    local = build_dir(ROOT) / "timings" / name
    return local if local.exists() else ROOT / "results" / "timings" / name


def _full_history():
    from mlmbook.models import load_or_train
    return load_or_train("toy", preset="full", seed=0, progress=False).history()


if __name__ == "__main__":
    sys.exit(main())
