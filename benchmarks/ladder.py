"""The model ladder's cost: training seconds and KL to the truth of every rung (issue 14).

Training seconds come from each cached model's own history (measured when it was trained,
on the machine that trained it); snapshots of the default model cost nothing extra.
"""
from __future__ import annotations

import sys

from mlmbook import compare
from mlmbook.models import ladder


def run(profile: str = "full") -> list[dict]:
    rows = []
    for kind in ("mlm", "maelm"):
        for rung in ladder.rungs(profile, kind=kind) + ladder.seed_rungs(profile, kind=kind)[1:]:
            entry = ladder._entry(rung)
            seconds = entry.history()["train_seconds"] if rung.fraction == 1.0 else 0.0
            rows.append(dict(kind=kind, name=rung.name, seed=rung.seed, steps=rung.config.steps,
                             train_seconds=seconds, kl=compare.rung_kl(rung)))
    return rows


def table(rows: list[dict], profile: str = "full") -> list[str]:
    total = sum(r["train_seconds"] for r in rows)
    lines = [f"## The model ladder ({profile} profile)", "",
             "| model | rung | seed | steps | training (s) | mean single-site KL to the truth (nats) |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        cost = f"{r['train_seconds']:.0f}" if r["train_seconds"] else "(a snapshot)"
        lines.append(f"| {'MAE-LM' if r['kind'] == 'maelm' else 'MLM'} | {r['name']} | {r['seed']} | {r['steps']} | "
                     f"{cost} | {r['kl']:.3f} |")
    lines += ["", f"All rungs together: {total:.0f} s of training (the default models included), each on one "
              "thread. A build trains them on one process per core beside its chapters "
              "(`mlmbook.pipeline.prepare`, `mlmbook.workers`), so two trainings share the two cores and each "
              "rung's seconds above include that neighbour; the whole-book table below gives the wall "
              "time the training took in the cold build."]
    return lines


if __name__ == "__main__":
    profile = sys.argv[1] if len(sys.argv) > 1 else "full"
    print("\n".join(table(run(profile), profile)))
