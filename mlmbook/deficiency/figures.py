"""Chapter 4's figures, drawn from the numbers it records (plain numbers or
:class:`~mlmbook.stats.Interval` objects) in the book's style; each returns its figure."""
from __future__ import annotations

from functools import partial

import numpy as np

from .. import plotting

__all__ = ["COLORS", "training", "layers", "mask_subspace", "spectra", "dose_response", "widths"]

COLORS = {"MLM": plotting.PALETTE["mlm"], "MAE-LM": plotting.PALETTE["hit"]}
"""One colour per model kind, the same in every figure."""

_bars = partial(plotting.errorbars, lw=1.2, ms=5)


def _layer_ticks(ax, n_layers: int):
    ax.set_xticks(range(n_layers), ["emb"] + [str(k) for k in range(1, n_layers)])
    ax.set_xlabel("layer")


def training(history: dict, bayes: float):
    """Held-out loss during pretraining: ``history[(name, seed)] = {"steps": [...], "eval_loss":
    [...]}``, with the exact Bayes-optimal loss as a dashed line."""
    fig, ax = plotting.figure(height=3.0)
    shown = set()
    for (name, _), h in sorted(history.items()):
        ax.plot(h["steps"], h["eval_loss"], "o-", ms=3, color=COLORS[name], alpha=0.8,
                label=None if name in shown else name)
        shown.add(name)
    ax.axhline(bayes, color=plotting.PALETTE["truth"], ls="--", label="Bayes-optimal (exact)")
    ax.set_xlabel("training step")
    ax.set_ylabel("held-out loss (nats)")
    plotting.place_legend(ax)
    return fig


def layers(by_layer: dict, labels: dict):
    """Like-with-like differences by layer: ``by_layer[(key, kind)]`` a list of intervals per layer,
    kind ``"entropy"`` (left) or ``"entropy_centred"`` (right); ``labels[key]``: its legend."""
    markers = "os^v"
    colors = [plotting.PALETTE[c] for c in ("miss", "mlm", "hit", "extra")]
    fig, axes = plotting.figure(1, 2, height=3.5, sharey=True)
    keys = list(labels)
    for ax, (kind, title) in zip(axes, (("entropy", "uncentred"), ("entropy_centred", "centred"))):
        for k, key in enumerate(keys):
            ivs = by_layer[key, kind]
            _bars(ax, np.arange(len(ivs)) + 0.08 * (k - 1), ivs, marker=markers[k], color=colors[k],
                  label=labels[key])
        ax.axhline(0, color=plotting.PALETTE["muted"], lw=1)
        _layer_ticks(ax, len(by_layer[keys[0], kind]))
        ax.set_title(title)
    axes[0].set_ylabel("difference in entropy rank")
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncols=min(3, len(names)))
    return fig


def mask_subspace(angles_deg, overlap_ivs):
    """Left: principal angles between the ``[MASK]`` and the real-token subspace; right: the
    ``[MASK]`` rows' share of energy in the real tokens' top directions minus held-out rows'."""
    fig, (a1, a2) = plotting.figure(1, 2, height=3.2)
    a1.plot(np.arange(1, len(angles_deg) + 1), angles_deg, "o-", ms=3, color=plotting.PALETTE["miss"])
    a1.axhline(90, color=plotting.PALETTE["muted"], lw=1)
    a1.set_xlabel("principal angle (smallest first)")
    a1.set_ylabel("degrees")
    _bars(a2, np.arange(len(overlap_ivs)), overlap_ivs, fmt="s-", color=plotting.PALETTE["miss"])
    a2.axhline(0, color=plotting.PALETTE["muted"], lw=1)
    _layer_ticks(a2, len(overlap_ivs))
    a2.set_ylabel("[MASK] minus held-out share")
    return fig


def spectra(curves: dict, eps: float, title: str):
    """The energy outside the top k directions, ``curves[label] = (1 - c_k array, eps-rank)``."""
    styles = ("-", "--", ":")
    fig, ax = plotting.figure(height=3.2)
    for (label, (rest, k)), ls in zip(curves.items(), styles):
        ax.plot(np.arange(1, len(rest) + 1), rest, ls=ls, color=COLORS["MLM"], label=f"{label}: ε-rank {k}")
        ax.plot([k], [rest[k - 1]], "o", color=COLORS["MLM"])
    ax.axhline(eps, color=plotting.PALETTE["muted"], lw=1)
    ax.set_yscale("log")
    ax.set_ylim(1e-4, 1.05)
    ax.set_xlabel("number of directions k")
    ax.set_ylabel("energy outside the top k")
    ax.set_title(title)
    plotting.place_legend(ax)
    return fig


def dose_response(shares, deficiency: dict, kl: dict):
    """Dose–response at one width. Left: the deficiency (MAE-LM minus MLM, share of the width) of
    each seed, ``deficiency[share] = {seed: value}``, with the seeds' mean joined; right: the fit,
    ``kl[(name, share)]`` an interval of the KL to the truth."""
    fig, (a1, a2) = plotting.figure(1, 2, height=3.3)
    shares = list(shares)
    for s in sorted({s for v in deficiency.values() for s in v}):
        a1.plot(shares, [deficiency[x][s] for x in shares], "o:", ms=4, color=COLORS["MAE-LM"],
                alpha=0.6, label="one seed" if s == 0 else None)
    a1.plot(shares, [np.mean(list(deficiency[x].values())) for x in shares], "s-",
            color=COLORS["MAE-LM"], lw=2, label="mean over seeds")
    a1.axhline(0, color=plotting.PALETTE["muted"], lw=1)
    a1.set_xlabel("[MASK] share of input tokens")
    a1.set_ylabel("rank gap / width")
    plotting.place_legend(a1)
    for k, name in enumerate(("MLM", "MAE-LM")):
        _bars(a2, np.array(shares) + 0.006 * k, [kl[name, x] for x in shares], fmt="o-",
              color=COLORS[name], label=name)
    a2.axhline(0, color=plotting.PALETTE["truth"], ls="--", lw=1, label="truth")
    a2.set_xlabel("[MASK] share of input tokens")
    a2.set_ylabel("KL to the truth (nats)")
    plotting.place_legend(a2)
    return fig


def widths(rows, kl: dict):
    """The robustness panel. Left: MAE-LM minus MLM (share of the width) at each width, every seed a
    dot and the interval over seeds (a hollow marker where it rests on one model). Right: each
    kind's KL to the truth by width, ``kl[(name, width)]``."""
    fig, (a1, a2) = plotting.figure(1, 2, height=3.4)
    for k, row in enumerate(rows):
        x = np.log2(row.width)
        a1.plot(np.full(len(row.per_seed), x) - 0.12, list(row.per_seed.values()), "o", ms=4,
                alpha=0.7, color=COLORS["MAE-LM"], label="one seed" if k == 0 else None)
        _bars(a1, [x], [row.interval], fmt="s", color=COLORS["MAE-LM"], mfc="white" if row.conditional else None,
              label="interval over seeds" if k == 0 else None)
    a1.axhline(0, color=plotting.PALETTE["muted"], lw=1)
    ticks = [r.width for r in rows]
    a1.set_xticks(np.log2(ticks), [str(t) for t in ticks])
    a1.set_xlabel("width (hidden size)")
    a1.set_ylabel("rank gap / width")
    plotting.place_legend(a1, outside="below")
    for name in ("MLM", "MAE-LM"):
        a2.plot(np.log2(ticks), [kl[name, w] for w in ticks], "o-", color=COLORS[name], label=name)
    a2.set_xticks(np.log2(ticks), [str(t) for t in ticks])
    a2.set_yscale("log")
    a2.set_xlabel("width (hidden size)")
    a2.set_ylabel("KL to the truth (nats)")
    plotting.place_legend(a2)
    return fig
