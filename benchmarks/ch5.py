"""Chapter 5 benchmark: Glauber site updates per second, batched chains vs one chain at a time.

With the full-profile default MLM and sentences of 10 tokens, the same randomness (one site
and one uniform per chain and step, drawn once from a seeded generator) drives

* every chain at once: one ``lm.logits`` call per step for all chains
  (``GlauberSampler.update``, as ``run`` does), and
* each chain on its own: one call per chain and step.

Both must give the same trajectories; the only possible difference is a draw that lands
within float rounding of a CDF boundary, where a batched and a single forward pass may round
differently, so the benchmark reports the share of chains whose trajectories agree exactly.
Figures: site updates per second (wall clock and per CPU second) of each, and the speed-up.
The chapter runs torch with one thread for the toy model, and so does this benchmark.

    python -m benchmarks.ch5            # prints the figures as JSON
"""
from __future__ import annotations

import json
import time

import torch


def _timed(fn):
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t, time.process_time() - c


def run(chains: int = 128, steps: int = 20, single_chains: int = 16, length: int = 10,
        profile: str = "full", seed: int = 0, threads: int = 1) -> dict:
    """Measure batched vs one-at-a-time Glauber updates; returns the figures."""
    from mlmbook.glauber import GlauberSampler
    from mlmbook.models import load_mlm
    from mlmbook.toy import Grammar

    if threads:
        torch.set_num_threads(threads)
    grammar = Grammar.load("toy")
    lm = load_mlm("toy", profile=profile, seed=seed)
    sents = [s for s in grammar.sample(3000, seed=seed + 1) if len(s) == length][:chains]
    init = torch.tensor([lm.encode_words(s.words)[0] for s in sents])
    C = len(init)
    sampler = GlauberSampler(lm, temperature=1.0, frozen=[length - 1], seed=seed)
    noise = [sampler.draw(C, length, t) for t in range(steps)]
    sampler.update(init, *noise[0])                                    # warm-up

    def batched():
        x, out = init, [init]
        for site, u in noise:
            x = sampler.update(x, site, u)
            out.append(x)
        return torch.stack(out)

    def one_at_a_time():
        trajs = []
        for c in range(single_chains):
            x, out = init[c:c + 1], [init[c:c + 1]]
            for site, u in noise:
                x = sampler.update(x, site[c:c + 1], u[c:c + 1])
                out.append(x)
            trajs.append(torch.cat(out))
        return torch.stack(trajs, dim=1)                               # (steps + 1, chains, n)

    tb, wall_b, cpu_b = _timed(batched)
    ts, wall_s, cpu_s = _timed(one_at_a_time)
    same = (tb[:, :single_chains] == ts).all(dim=-1).all(dim=0).float().mean().item()
    ups_b, ups_s = C * steps / wall_b, single_chains * steps / wall_s
    return {
        "model": lm.name, "profile": profile, "torch threads": torch.get_num_threads(),
        "chains (batched)": C, "chains (one at a time)": single_chains, "steps": steps, "tokens per sentence": length,
        "site updates/s, batched": ups_b,
        "site updates/s, one chain at a time": ups_s,
        "site updates per CPU second, batched": C * steps / cpu_b,
        "site updates per CPU second, one at a time": single_chains * steps / cpu_s,
        "speed-up (wall clock)": ups_b / ups_s,
        "share of chains with identical trajectories": same,
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=1))
