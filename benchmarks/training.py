"""Training many small toy models: one model at a time against stacks (issue 28, item 7).

The same jobs are trained twice in one run, into temporary directories (never the model
cache), both by the book's one trainer (:mod:`mlmbook.models.stacked`): one model at a time (a
stack of one), one process per core, and cut into stacks by :func:`mlmbook.pipeline.prepare.plan`,
one stack per core. (Until the fifth edition "one at a time" was a second, Hugging Face trainer;
``benchmarks/results.md`` keeps the figures measured against it.) Every figure is a ratio of two
timings taken in the same run, with the same evaluator memo
(:class:`~mlmbook.models.train.SingleSiteEval`) warm for both; a *token* is a real token of a
training batch (padding excluded), so tokens/s compare the useful work whatever is padded.

``python -m benchmarks.training [steps]`` prints the tables (default 1500 steps);
``python -m benchmarks.training grouping [steps]`` only the row of :func:`stream_grouping`.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from multiprocessing import get_context
from pathlib import Path

from mlmbook.models.train import PRESETS, TrainConfig


def config(hidden: int, steps: int) -> TrainConfig:
    """A small model as the ladder and the zoo train them (the full preset's recipe, narrower)."""
    return replace(PRESETS["full"], hidden=hidden, heads=max(1, hidden // 16), intermediate=4 * hidden, steps=steps,
                   eval_every=max(1, steps // 4), checkpoints=())


def _grammar():
    from mlmbook.toy import Grammar
    return Grammar.load("toy")


def _alone(spec, out) -> dict:
    return _stack([spec], [out])[0]


def _stack(specs, outs) -> list[dict]:
    from mlmbook.models import stacked
    g = _grammar()
    return stacked.train_stack([stacked.Member(g, c, s, k, Path(o)) for (c, s, k), o in zip(specs, outs)],
                               progress=False)


def _pool(workers):
    return ProcessPoolExecutor(workers, mp_context=get_context("spawn"))


def one_per_core(specs, workers: int) -> tuple[float, int]:
    """Wall seconds and real tokens of one model at a time, one job per process, ``workers`` at a time."""
    with tempfile.TemporaryDirectory() as tmp, _pool(workers) as pool:
        t = time.perf_counter()
        hs = list(pool.map(_alone, specs, [f"{tmp}/{i}" for i in range(len(specs))]))
        return time.perf_counter() - t, sum(h["tokens"][-1] for h in hs)


def stacked_units(specs, workers: int) -> tuple[float, int, list[int]]:
    """Wall seconds, real tokens and stack sizes for the stacked trainer, units as ``prepare`` plans them."""
    from mlmbook.models import Job
    from mlmbook.pipeline import prepare
    jobs = [Job("toy", None, c, s, k) for c, s, k in specs]
    units = prepare.split(jobs, workers)              # stacks as prepare cuts them, whatever the width
    with tempfile.TemporaryDirectory() as tmp, _pool(workers) as pool:
        t = time.perf_counter()
        futures = [pool.submit(_stack, [(j.config, j.seed, j.kind) for j in u],
                               [f"{tmp}/{i}-{k}" for k in range(len(u))]) for i, u in enumerate(units)]
        hs = [h for f in futures for h in f.result()]
        return time.perf_counter() - t, sum(h["tokens"][-1] for h in hs), [len(u) for u in units]


def warm_evaluators(specs) -> float:
    """Build (or find) the held-out evaluators of every seed once; returns the seconds it took."""
    from mlmbook.models.train import SingleSiteEval
    t = time.perf_counter()
    for c, s in {(c.n_eval, s) for c, s, _ in specs}:
        SingleSiteEval(_grammar(), c, s)
    return time.perf_counter() - t


def compare(label: str, specs, workers: int) -> dict:
    warm_evaluators(specs)
    one_s, one_tok = one_per_core(specs, workers)
    st_s, st_tok, sizes = stacked_units(specs, workers)
    assert one_tok == st_tok, "a model saw other sentences alone than in a stack"
    row = dict(jobs=label, alone_seconds=one_s, alone_tokens_per_s=one_tok / one_s, stacked_seconds=st_s,
               stacked_tokens_per_s=st_tok / st_s, speedup=one_s / st_s, stacks=sizes)
    print(f"{label}: one per core {one_s:.0f} s ({one_tok / one_s:,.0f} tok/s), stacked {sizes} {st_s:.0f} s "
          f"({st_tok / st_s:,.0f} tok/s): {one_s / st_s:.2f}x", file=sys.stderr, flush=True)
    return row


def stack_sizes(hidden: int, steps: int, sizes=(2, 4, 8, 16)) -> dict:
    """Seconds per model when ``K`` models of width ``hidden`` share one stack on one core."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:               # imports and first-call costs, once
        _stack([(config(hidden, 2), 0, "mlm")], [f"{tmp}/warm"])
    for K in sizes:
        specs = [(config(hidden, steps), s, "mlm") for s in range(K)]
        warm_evaluators(specs)
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            _stack(specs, [f"{tmp}/{k}" for k in range(K)])
            out[K] = (time.perf_counter() - t) / K
        print(f"hidden {hidden}, stacks of {K}: {out[K]:.1f} s per model", file=sys.stderr, flush=True)
    return out


def _interleaved(group: list, workers: int = 1) -> list[list]:
    """The stacks ``prepare.split`` cut before it put jobs that read the same sentences side by side
    (every n-th job of the group, whatever its stream): the "before" of :func:`stream_grouping`."""
    import math

    from mlmbook.pipeline import prepare
    most = max(1, prepare.STACK_WIDTH // group[0].config.hidden)
    n = max(math.ceil(len(group) / most), min(workers, len(group) // prepare.MIN_STACK), 1)
    return [group[i::n] for i in range(n)]


def stream_grouping(steps: int = 100, seeds: int = 4, rounds: int = 2) -> dict:
    """Models per core-minute of the stacked trainer, before and after ``prepare.split`` grouped jobs by
    their stream, on chapter 3 and 4's width-64 MLMs (each seed's pair MLM, span model and knob MLM, the
    full profile's shape at ``steps`` steps): both cuts of the same jobs run one stack after another on one
    core, alternately, ``rounds`` times; each figure is the best round (a busy machine only adds time)."""
    from mlmbook.pipeline import prepare, zoo
    jobs = [replace(j, config=replace(j.config, steps=steps, eval_every=steps))
            for j in zoo.chapter4("full") + zoo.chapter3("full")
            if j.seed < seeds and j.kind == "mlm" and j.config.layers == 2 and j.config.steps == 1500
            and j.config.noise == 0]
    jobs = list(dict.fromkeys(jobs))
    warm_evaluators([(j.config, j.seed, j.kind) for j in jobs])
    with tempfile.TemporaryDirectory() as tmp:               # imports and first-call costs, once
        _stack([(config(64, 2), 0, "mlm")], [f"{tmp}/warm"])
    cuts = {"alone": [[j] for j in jobs], "before": _interleaved(jobs), "after": prepare.split(jobs)}
    best = {}
    for _ in range(rounds):
        for label, units in cuts.items():
            with tempfile.TemporaryDirectory() as tmp:
                t = time.process_time()
                for i, u in enumerate(units):
                    specs, outs = [(j.config, j.seed, j.kind) for j in u], [f"{tmp}/{i}-{k}" for k in range(len(u))]
                    _stack(specs, outs)                     # "alone": stacks of one
                best[label] = min(best.get(label, float("inf")), time.process_time() - t)
    out = {label: dict(models=len(jobs), core_seconds=best[label], per_core_minute=60 * len(jobs) / best[label],
                       streams=sum(len({prepare._stream(j) for j in u}) for u in cuts[label]),
                       stacks=[len(u) for u in cuts[label]]) for label in cuts}
    out["ratio"] = out["after"]["per_core_minute"] / out["before"]["per_core_minute"]
    out["ratio_alone"] = out["after"]["per_core_minute"] / out["alone"]["per_core_minute"]
    print(f"stream grouping: {out['before']['per_core_minute']:.1f} -> {out['after']['per_core_minute']:.1f} "
          f"models per core-minute ({out['ratio']:.2f}x); one at a time "
          f"{out['alone']['per_core_minute']:.1f} ({out['ratio_alone']:.2f}x)", file=sys.stderr, flush=True)
    return out


def run(steps: int = 1500, workers: int | None = None) -> dict:
    workers = workers or min(2, os.cpu_count() or 1)
    rows = []
    short = max(60, steps // 5)
    sizes = stack_sizes(32, short)
    for hidden in (16, 32, 64, 128):                      # one core, four models: the choice per width
        rows.append(compare(f"4 MLMs, hidden {hidden}, {short} steps, 1 core",
                            [(config(hidden, short), s, "mlm") for s in range(4)], 1))
    rows.append(compare(f"16 MLMs, hidden 32, {steps} steps, {workers} cores",
                        [(config(32, steps), s, "mlm") for s in range(16)], workers))
    rows.append(compare(f"8 MAE-LMs, hidden 32, {steps} steps, {workers} cores",
                        [(config(32, steps), s, "maelm") for s in range(8)], workers))
    knobs = [replace(config(32, steps), mask_rate=r, noise=e) for r in (0.15, 0.3, 0.45, 0.6) for e in (0.0, 0.1)]
    rows.append(compare(f"8 MLMs, hidden 32, one seed (a knob sweep: shared sentences), {steps} steps, "
                        f"{workers} cores", [(c, 0, "mlm") for c in knobs], workers))
    return dict(rows=rows, sizes=sizes, short=short, grouping=stream_grouping(max(60, steps // 15)))


def table(result: dict) -> list[str]:
    rows = result["rows"]
    lines = ["## Training many small models", "",
             "| jobs | one process per core (s) | tokens/s | stacked (s) | tokens/s | stacks | speed-up |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['jobs']} | {r['alone_seconds']:.0f} | {r['alone_tokens_per_s']:,.0f} | "
                     f"{r['stacked_seconds']:.0f} | {r['stacked_tokens_per_s']:,.0f} | "
                     f"{' + '.join(map(str, r['stacks']))} | {r['speedup']:.2f}× |")
    lines += ["", f"One stack of K hidden-32 MLMs ({result['short']} steps) on one core, seconds per model: "
              + ", ".join(f"K = {k}: {v:.1f}" for k, v in result["sizes"].items()) + "."]
    if "grouping" in result:
        g = result["grouping"]
        lines += ["", "| models per core-minute (CPU time, one core) | before | after | after / before |",
                  "|---|---|---|---|",
                  f"| {g['before']['models']} width-64 MLMs of chapters 3 and 4: one at a time (stacks of "
                  f"one) → stacked, grouped by stream | {g['alone']['per_core_minute']:.1f} | "
                  f"{g['after']['per_core_minute']:.1f} | {g['ratio_alone']:.2f}× |",
                  f"| the same: stacks of every n-th job → stacks grouped by stream (streams sampled: "
                  f"{g['before']['streams']} → {g['after']['streams']}) | {g['before']['per_core_minute']:.1f} | "
                  f"{g['after']['per_core_minute']:.1f} | {g['ratio']:.2f}× |"]
    return lines


if __name__ == "__main__":
    if sys.argv[1:2] == ["grouping"]:
        g = stream_grouping(int(sys.argv[2]) if len(sys.argv) > 2 else 100)
        print("\n".join(table(dict(rows=[], sizes={}, short=0, grouping=g))[-4:]))
    else:
        print("\n".join(table(run(int(sys.argv[1]) if len(sys.argv) > 1 else 1500))))
