"""Chapter 3 benchmark: the consistency probes, batched against one query at a time.

For ``n_sentences`` toy sentences and the full-profile default MLM, time per sentence

* the rectangle test and the order inconsistency of every pair of word positions
  (``consistency.probe_pairs``: about eight model rows per pair, a few batched calls), and
* the Ensemble of Conditionals for one target per sentence with five auxiliary positions and
  12 candidates, as the chapter runs it (``consistency.ensemble_versions_many``: 66 rows per target),
* the span routes of the same targets (``consistency.route_versions`` over the five spans of two
  and three words, 8 candidates: 69 rows per target), and
* the incompatibility budget of the target–auxiliary pairs as the chapter computes it
  (``joints.pair_conditionals_batch`` over top-6 candidates, 13 rows, and one ``joints.ag`` solve per
  pair; batched only, its solves do not batch),

once as the chapter runs them and once through :class:`OneAtATime`, a wrapper that sends
every row to the model in a call of its own — the same functions, the same rows, so the
outputs must agree up to float32 batching noise. Wall-clock and CPU seconds are both
reported; on a machine shared with other work the CPU seconds are the better guide.

    python -m benchmarks.ch3            # prints the figures as JSON
"""
from __future__ import annotations

import json
import time

import numpy as np
import torch


class OneAtATime:
    """A masked LM whose ``logits`` answers each row in a separate call (the naive loop)."""

    def __init__(self, lm):
        self.lm, self.mask_id, self.V, self.special_ids = lm, lm.mask_id, lm.V, lm.special_ids

    def logits(self, ids, positions, full_softmax: bool = False):
        ids, positions = torch.as_tensor(ids), torch.as_tensor(positions)
        return torch.cat([self.lm.logits(ids[b:b + 1], positions[b:b + 1], full_softmax)
                          for b in range(len(ids))])


def _timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def run(n_sentences: int = 6, profile: str = "full", seed: int = 0) -> dict:
    """Per-sentence cost of the chapter's probes, batched and one query at a time."""
    from mlmbook import consistency as C
    from mlmbook.models import load_mlm
    from mlmbook.toy import Grammar

    grammar = Grammar.load("toy")
    lm = load_mlm("toy", profile=profile, seed=seed)
    rng = np.random.default_rng(seed)
    sents = [s for s in grammar.sample(20 * n_sentences, seed=seed + 77) if len(s) >= 7][:n_sentences]
    ids = [torch.tensor(lm.encode_words(s.words)[0]) for s in sents]
    pairs = np.array([(k, i, j) for k, s in enumerate(sents)
                      for i in range(len(s) - 1) for j in range(i + 1, len(s) - 1)])
    targets = [int(rng.integers(2, len(s) - 3)) for s in sents]      # every span of 2 and 3 words fits
    aux = [sorted((k for k in range(len(s) - 1) if k != t), key=lambda k: (abs(k - t), k))[:5]
           for s, t in zip(sents, targets)]
    naive = OneAtATime(lm)
    out = {"model": lm.name, "sentences timed": n_sentences, "pairs per sentence": len(pairs) / n_sentences,
           "mean sentence length (tokens)": float(np.mean([len(s) for s in sents]))}

    C.probe_pairs(lm, ids, pairs[:10])                                     # warm-up
    fast, wall, cpu = _timed(lambda: C.probe_pairs(lm, ids, pairs))
    slow, wall1, cpu1 = _timed(lambda: C.probe_pairs(naive, ids, pairs))
    out.update(_timing_rows("Δ + order inconsistency", wall, cpu, wall1, cpu1, n_sentences))
    out["Δ + order inconsistency: max |difference| (nats)"] = float(max(
        np.abs(fast.rect.delta - slow.rect.delta).max(),
        np.abs(fast.order.abs_log_ratio - slow.order.abs_log_ratio).max()))
    out["Δ: same rectangles chosen"] = bool(all((a == b).all() for a, b in zip(fast.rect[1:], slow.rect[1:])))

    run_eoc = lambda m: C.ensemble_versions_many(m, ids, targets, aux, candidates=12)  # noqa: E731
    fast_v, wall, cpu = _timed(lambda: run_eoc(lm))
    slow_v, wall1, cpu1 = _timed(lambda: run_eoc(naive))
    out.update(_timing_rows("ensemble of conditionals", wall, cpu, wall1, cpu1, n_sentences))
    out["ensemble of conditionals: max |difference| of version probabilities"] = float(max(
        np.abs(a.probs - b.probs).max() for a, b in zip(fast_v, slow_v)))

    routes = [C.span_routes(t, range(len(s) - 1)) for s, t in zip(sents, targets)]
    run_span = lambda m: C.route_versions(m, ids, targets, routes, candidates=8)  # noqa: E731
    fast_s, wall, cpu = _timed(lambda: run_span(lm))
    slow_s, wall1, cpu1 = _timed(lambda: run_span(naive))
    out.update(_timing_rows("span routes", wall, cpu, wall1, cpu1, n_sentences))
    out["span routes: max |difference| of version probabilities"] = float(max(
        np.abs(a.probs - b.probs).max() for a, b in zip(fast_s, slow_s)))

    from mlmbook import joints
    queries = [(ids[n].tolist(), t, k) for n, (t, a) in enumerate(zip(targets, aux)) for k in a]

    def budget():
        tables = joints.pair_conditionals_batch(lm, queries, joints.topk_candidates(lm, queries, k=6, gold=False))
        return [joints.ag(pc).objective[-1] / sum(pc.shape) for pc in tables]
    _, wall, cpu = _timed(budget)
    out["incompatibility budget (5 pairs, k = 6): wall s per sentence"] = wall / n_sentences
    out["incompatibility budget (5 pairs, k = 6): CPU s per sentence"] = cpu / n_sentences
    return out


def _timing_rows(name, wall, cpu, wall1, cpu1, n):
    """Per-sentence wall/CPU seconds, batched and one row per call, and the CPU speed-up."""
    return {f"{name}, batched: wall s per sentence": wall / n, f"{name}, batched: CPU s per sentence": cpu / n,
            f"{name}, one row per call: wall s per sentence": wall1 / n,
            f"{name}, one row per call: CPU s per sentence": cpu1 / n,
            f"{name}: speed-up of batching (CPU)": cpu1 / cpu}


if __name__ == "__main__":
    print(json.dumps(run(), indent=1, ensure_ascii=False))
