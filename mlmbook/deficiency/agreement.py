r"""Chapter 4's downstream measurement: number agreement, by a probe and by fine-tuning.

Q6 is answered by a **linear probe on frozen features** (nothing in it is random, so the spread
between seeds is the encoders' own); fine-tuning, noisier, runs on the first seeds only, as a
description. Both read the same examples.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import downstream, stats
from .seeds import describe_seeds

__all__ = ["Agreement", "agreement"]

TESTS = ("ordinary", "attractor")


@dataclass
class Agreement:
    """Which held-out example each encoder gets right: ``probed`` (every encoder) and ``tuned`` (the
    first seeds), ``{(name, seed): {test: bool array}}``, and the protocol's sizes."""

    probed: dict
    tuned: dict
    n_probe_train: int
    n_ft_train: int
    n_test: int
    ft_epochs: int

    def gap(self, test: str, tuned: bool = False) -> dict:
        """``{seed: MAE-LM's hits minus the MLM's}`` on ``test``, example by example."""
        hits = self.tuned if tuned else self.probed
        return {s: hits["MAE-LM", s][test].astype(float) - hits["MLM", s][test]
                for n, s in hits if n == "MAE-LM" and ("MLM", s) in hits}

    def accuracy(self) -> dict:
        """``{(name, seed): {test: Clopper–Pearson interval}}`` of fine-tuning."""
        return {k: {t: stats.proportion(int(h.sum()), len(h), exact=True) for t, h in hs.items()}
                for k, hs in self.tuned.items()}

    def rows(self) -> list:
        """One table row per encoder: its probe's accuracies, then fine-tuning's (or blanks)."""
        acc = self.accuracy()
        return [[f"{n}, seed {s}", *[f"{hs[t].mean():.3f}" for t in TESTS],
                 *([f"{acc[n, s][t].estimate:.3f} [{acc[n, s][t].low:.3f}, {acc[n, s][t].high:.3f}]" for t in TESTS]
                   if (n, s) in acc else ["", ""])] for (n, s), hs in self.probed.items()]

    def records(self) -> dict:
        """The page's numbers: per-seed accuracies, the descriptive gaps, the protocol's sizes."""
        acc, out = self.accuracy(), {}
        names = sorted({n for n, _ in self.probed}, key=["MLM", "MAE-LM"].index)
        for n in names:
            key = n.lower().replace("-", "")
            for t in TESTS:
                out[f"probe_{t}_{key}"] = ", ".join(f"{hs[t].mean():.3f}" for (m, _), hs in self.probed.items()
                                                   if m == n)
                out[f"ft_{t}_{key}"] = ", ".join(f"{a[t].estimate:.3f}" for (m, _), a in acc.items() if m == n)
        out["probe_accuracy"] = {f"{n} s{s}": {t: float(h.mean()) for t, h in hs.items()}
                                 for (n, s), hs in self.probed.items()}
        out["probe_ordinary_gap"] = describe_seeds(self.gap("ordinary"))
        out["ft_attractor_gap"] = describe_seeds(self.gap("attractor", tuned=True))
        out["ft_accuracy"] = {f"{n} s{s}": {t: iv.estimate for t, iv in a.items()} for (n, s), a in acc.items()}
        out["ft_lowest_low"] = min(iv.low for a in acc.values() for iv in a.values())
        out["ft_models_clear"] = sum(all(iv.low > 0.5 for iv in a.values()) for a in acc.values())
        out["ft_n_models"], out["ft_n_seeds"] = len(acc), len({s for _, s in acc})
        out.update(n_probe_train=self.n_probe_train, n_probe_test=self.n_test,
                   n_ft_train=self.n_ft_train, n_ft_test=self.n_test, n_ft_epochs=self.ft_epochs)
        return out


def agreement(models: dict, grammar, size: dict, seed: int = 0) -> Agreement:
    """Probe every encoder of ``models`` (``{(name, seed): MaskedLM}``) and fine-tune those of the
    first ``size["ft_seeds"]`` seeds, on examples drawn with ``seed``; ``size`` also gives the
    ``probe_train`` and ``ft_train`` sentences, ``probe_test`` of each kind, and ``ft_epochs``."""
    n_probe, n_ft, n_test = size["probe_train"], size["ft_train"], size["probe_test"]
    pool = downstream.agreement_task(grammar, max(n_probe, n_ft) + n_test, seed=seed + 30_000, verbs=True)
    tests = [tuple(x[-n_test:] for x in pool),
             downstream.agreement_task(grammar, n_test, seed=seed + 31_000, attractors=True, verbs=True)]
    train = tuple(x[:n_probe] for x in pool)
    probed = {k: dict(zip(TESTS, downstream.probe_agreement(m, train, tests))) for k, m in models.items()}
    first = sorted({s for _, s in models})[:size["ft_seeds"]]
    tuned = {(n, s): dict(zip(TESTS, downstream.finetune_encoder(m, pool[0][:n_ft], pool[1][:n_ft],
                                                                  [t[:2] for t in tests], epochs=size["ft_epochs"])))
             for (n, s), m in models.items() if s in first}
    return Agreement(probed, tuned, n_probe, n_ft, n_test, size["ft_epochs"])
