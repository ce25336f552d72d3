r"""Chapter 3's figures: each takes the chapter's measured arrays and returns a matplotlib Figure
(error bars: descriptive 95 % intervals, the sentence as the unit where pairs share one; legends
never over data)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import plotting, stats
from ..plotting import errorbars

__all__ = ["delta_histogram", "flip_scatter", "order_panels", "dependence_bins", "snapshot_panels", "ensemble_curves",
           "span_gains", "noise_panels", "rung_map", "budget_scatter", "chain_rule_panels"]

PAL = plotting.PALETTE


def _log10_abs(x, tiny: float = 1e-17) -> np.ndarray:
    return np.log10(np.maximum(np.abs(np.asarray(x, dtype=float)), tiny))


def delta_histogram(delta, floor: float, truth_delta=None):
    """Histogram of the MLM's :math:`\\log_{10}|\\Delta|` beside the truth's, same rectangles."""
    fig, ax = plotting.figure(height=2.6)
    bins = np.linspace(-17, 1.5, 60)
    ax.hist(_log10_abs(delta), bins=bins, color=PAL["mlm"], alpha=0.85, label=f"MLM ({len(delta)} rectangles)")
    if truth_delta is not None:
        ax.hist(_log10_abs(truth_delta), bins=bins, color=PAL["truth"],
                label=f"truth, same rectangles ({len(truth_delta)})")
    ax.axvline(np.log10(floor), color=PAL["miss"], ls="--", lw=1, label="float32 rounding bound")
    ax.set_xlabel(r"$\log_{10} |\Delta|$  ($\Delta$ in nats; exact zeros drawn at $-17$)")
    ax.set_ylabel("rectangles")
    plotting.place_legend(ax)
    return fig


def flip_scatter(gap_fwd, gap_bwd, truth_fwd=None, truth_bwd=None):
    """The two orders' preferences :math:`g_0, g_1` of each bigram pair; flips shaded."""
    fig, ax = plotting.figure(height=2.7)
    lim = float(np.quantile(np.abs(np.r_[gap_fwd, gap_bwd]), 0.98)) + 0.5
    ax.fill_between([0, lim], -lim, 0, color=PAL["miss"], alpha=0.12, lw=0)
    ax.fill_between([-lim, 0], 0, lim, color=PAL["miss"], alpha=0.12, lw=0, label="flip")
    ax.scatter(gap_fwd, gap_bwd, s=5, alpha=0.4, color=PAL["mlm"], label=f"MLM ({len(gap_fwd)} pairs)")
    if truth_fwd is not None:
        ax.scatter(truth_fwd, truth_bwd, s=14, marker="x", color=PAL["truth"], label=f"truth ({len(truth_fwd)} pairs)")
    ax.plot([-lim, lim], [-lim, lim], color="gray", lw=0.8)
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_xlabel(r"$g_0 = \log j_0(a,b) / j_0(a',b)$")
    ax.set_ylabel(r"$g_1 = \log j_1(a,b) / j_1(a',b)$")
    plotting.place_legend(ax)
    return fig


def order_panels(log_fwd, log_bwd, rel, truth_fwd=None, truth_bwd=None):
    """Left: :math:`\\log j_0` against :math:`\\log j_1`; right: the relative differences."""
    fig, (ax1, ax2) = plotting.figure(1, 2, height=2.5)
    ax1.scatter(log_fwd, log_bwd, s=4, alpha=0.35, color=PAL["mlm"], label="MLM")
    if truth_fwd is not None:
        ax1.scatter(truth_fwd, truth_bwd, s=12, marker="x", color=PAL["truth"], label="truth")
    lo = float(min(np.min(log_fwd), np.min(log_bwd)))
    ax1.plot([lo, 0], [lo, 0], color="gray", lw=0.8)
    ax1.set_xlabel(r"$\log j_0$")
    ax1.set_ylabel(r"$\log j_1$")
    plotting.place_legend(ax1)
    ax2.hist(rel, bins=np.linspace(0, 2, 31), color=PAL["mlm"], alpha=0.85)
    ax2.axvline(float(np.mean(rel)), color=PAL["mlm"], ls="--", lw=1, label="MLM mean")
    if truth_fwd is not None:
        ax2.axvline(0, color=PAL["truth"], lw=2.5, label="truth (all at 0)")
    ax2.set_xlabel("relative difference")
    ax2.set_ylabel("pairs")
    plotting.place_legend(ax2)
    return fig


def dependence_bins(cmi, rel, adelta, dist, units, min_pairs: int = 8):
    """Mean order inconsistency (95 % over sentences) and median :math:`|\\Delta|` (over pairs) in
    bins of the truth's CMI, adjacent pairs and pairs farther apart."""
    fig, axes = plotting.figure(1, 2, height=2.9)
    dep = cmi > 0
    log_cmi = np.log10(cmi[dep])
    edges = np.quantile(log_cmi, np.linspace(0, 1, 5)) if dep.sum() >= 4 * min_pairs else np.array([])
    for ax, values, label in ((axes[0], rel, "mean relative order inconsistency"),
                              (axes[1], adelta, r"median $|\Delta|$ (nats)")):
        for group, name, color, dx in ((dist == 1, "adjacent", PAL["mlm"], -0.12), (dist > 1, "farther apart",
                                                                                     PAL["alt"], 0.12)):
            xs, ivs = [], []
            zero = group & ~dep
            if zero.sum() >= min_pairs:  # independent given the rest: drawn at x = 0
                xs.append(dx)
                ivs.append(_stat(values[zero], units[zero], median=ax is axes[1]))
            for k, (lo, hi) in enumerate(zip(edges[:-1], edges[1:])):
                inside = np.zeros_like(dep)
                inside[dep] = (log_cmi >= lo) & (log_cmi <= hi)
                inside &= group
                if inside.sum() >= min_pairs:
                    xs.append(k + 1 + dx)
                    ivs.append(_stat(values[inside], units[inside], median=ax is axes[1]))
            if xs:
                errorbars(ax, xs, ivs, fmt="o", color=color, label=name)
        ax.axhline(0, color=PAL["truth"], ls="--", lw=1, label="truth")
        ticks = ["0"] + [f"{10 ** lo:.2g}–{10 ** hi:.2g}" for lo, hi in zip(edges[:-1], edges[1:])]
        ax.set_xticks(range(len(ticks)), ticks, rotation=30, ha="right")
        ax.set_xlabel("truth's CMI of the pair (nats)")
        ax.set_ylabel(label)
    plotting.place_legend(axes[0])
    return fig


def _stat(values, units, median: bool):
    if median:  # a median: its percentile interval over pairs
        return stats.bootstrap(lambda v: np.median(v, axis=-1), values, n_boot=500)
    return stats.describe(values, units=units)


def snapshot_panels(steps, kls, order_means: Sequence[tuple], n_pairs: int):
    """The default model's snapshots: KL to the truth and mean order inconsistency."""
    fig, (ax1, ax2) = plotting.figure(1, 2, height=2.9)
    ax1.plot(steps, kls, "o-", color=PAL["truth"])
    ax1.set_ylabel("KL(truth ‖ model), nats")
    errorbars(ax2, steps, order_means, fmt="o-", color=PAL["mlm"])
    ax2.set_ylabel("mean order inconsistency")
    ax2.set_title(f"the same {n_pairs} pairs at each step")
    for ax in (ax1, ax2):
        ax.axhline(0, color="gray", lw=0.8)
        ax.set_xlabel("training step")
    return fig


def ensemble_curves(curves: dict, bayes_loss: float | None = None, bayes_acc: float | None = None):
    """Log-loss and accuracy of the ensemble of the first m versions, averaging and max-pooling."""
    fig, (ax1, ax2) = plotting.figure(1, 2, height=2.8)
    first = next(iter(curves.values()))
    m_axis = np.arange(1, first.log_loss.shape[1] + 1)
    styles = {"mean": dict(color=PAL["mlm"], marker="o"), "max": dict(color=PAL["alt"], marker="s")}
    for how, cur in curves.items():
        ax1.plot(m_axis, np.nanmean(cur.log_loss, 0), label=f"ensemble ({how})", **styles[how])
        ax2.plot(m_axis, np.nanmean(cur.correct, 0), label=f"ensemble ({how})", **styles[how])
    for ax, value in ((ax1, np.mean(first.log_loss[:, 0])), (ax2, np.mean(first.correct[:, 0]))):
        ax.axhline(value, color=PAL["mlm"], ls=":", lw=1, label="single conditional")
    if bayes_loss is not None:
        ax1.axhline(bayes_loss, color=PAL["truth"], ls="--", label="truth")
        ax2.axhline(bayes_acc, color=PAL["truth"], ls="--", label="truth")
    ax1.set_ylabel("log-loss of the gold word (nats)")
    ax2.set_ylabel("accuracy")
    for ax in (ax1, ax2):
        ax.set_xlabel("conditionals combined")
        ax.set_xticks(m_axis)
    _legend_below(fig, ax2)
    return fig


def _legend_below(fig, ax):
    """One legend for the figure, in a row under its panels (never over data)."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncols=min(4, len(labels)))


def span_gains(per_seed: dict, arms: Sequence[tuple]):
    """Per training seed, the ensemble's gain over the single conditional in log-loss and accuracy
    for each arm (95 % intervals over targets); ``per_seed[seed][arm]``: per-target scores
    (:func:`~.regime.ensemble_scores`), ``arms``: ``(key, label)`` (:data:`~.spans.ARMS`)."""
    fig, (ax1, ax2) = plotting.figure(1, 2, height=2.8)
    seeds = list(per_seed)
    width = 0.8 / len(arms)
    colors = (PAL["alt"], PAL["mlm"], PAL["muted"], PAL["miss"])
    for k, ((arm, label), color) in enumerate(zip(arms, colors)):
        x = np.arange(len(seeds)) + (k - (len(arms) - 1) / 2) * width
        scores = [per_seed[s][arm] for s in seeds]
        loss = [stats.describe(sc["single"] - sc["ens"]) for sc in scores]
        acc = [stats.bootstrap(lambda h: h.mean(-1), sc["hit_ens"] - sc["hit_single"], n_boot=2000)
               for sc in scores]                      # differences of hits: a percentile bootstrap
        errorbars(ax1, x, loss, fmt="o", color=color, label=label)
        errorbars(ax2, x, [[100 * v for v in a] for a in acc], fmt="o", color=color, label=label)
    for ax, ylabel in ((ax1, "gain in log-loss (nats)"), (ax2, "gain in accuracy (points)")):
        ax.axhline(0, color="gray", lw=0.8)
        ax.set_xticks(range(len(seeds)), [f"seed {s}" for s in seeds])
        ax.set_ylabel(ylabel)
    _legend_below(fig, ax2)
    return fig


def noise_panels(etas, headroom: Sequence[tuple], exact_floor, gain: Sequence[tuple], n_targets: int, n_floor: int):
    """The noise knob: headroom to the truth and the ensemble's gain, models and exact."""
    fig, (ax1, ax2) = plotting.figure(1, 2, height=3.0)
    errorbars(ax1, etas, headroom, fmt="o-", color=PAL["mlm"], label=f"MLMs ({n_targets} targets)")
    ax1.plot(etas, exact_floor, "s--", color=PAL["truth"], label=f"exact floor ({n_floor} targets)")
    errorbars(ax2, etas, gain, fmt="o-", color=PAL["mlm"], label="MLMs")
    ax2.plot(etas, [0.0] * len(etas), "s--", color=PAL["truth"], label="exact (noisy language)")
    ax1.set_ylabel("headroom to the truth (nats)")
    ax2.set_ylabel("ensemble gain (nats)")
    for ax in (ax1, ax2):
        ax.set_xlabel(r"training noise $\eta$")
        plotting.place_legend(ax)
    return fig


def rung_map(kl, points: Sequence[dict], names, title: str):
    """The regime map: four quantities per rung against its KL to the truth (see :mod:`.regime`)."""
    from matplotlib.ticker import LogLocator, NullFormatter
    fig, axes = plotting.figure(2, 2, height=5.8)
    panels = [("flips", "preference flips (share)", 0.0), ("paper", "paper's measure", 0.0),
              ("delta", r"median $|\Delta|$ (nats)", 0.0), ("loss_frac", "ensemble gain / headroom", 1.0)]
    for ax, (q, ylabel, best) in zip(axes.flat, panels):
        kept = [k for k, p in enumerate(points) if p[q].defined]
        e, lo, hi = (np.array([list(points[k][q])[i] for k in kept]) for i in range(3))
        style = plotting.RegimeStyle(truth=best, names=np.asarray(names)[kept], ylabel=ylabel,
                                     color=PAL["mlm"])
        plotting.regime_map(np.asarray(kl)[kept], e, lo, hi, ax=ax, style=style)
        ax.xaxis.label.set_size(9)
        ax.xaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
        ax.xaxis.set_minor_formatter(NullFormatter())
    fig.suptitle(title, fontsize=10)
    return fig


def budget_scatter(budget: dict, gains: dict, highlight: str = "span"):
    """One point per model: its mean incompatibility budget against its mean ensemble gain (95 %
    intervals over the same targets), labelled; the truth at the origin."""
    fig, ax = plotting.figure(height=3.2)
    points = []
    for name in budget:
        b = stats.bootstrap(lambda x: x.mean(-1), budget[name], n_boot=1000)
        g = stats.describe(gains[name])
        ax.errorbar(b.estimate, g.estimate, xerr=[[b.estimate - b.low], [b.high - b.estimate]],
                    yerr=[[g.estimate - g.low], [g.high - g.estimate]], fmt="o", capsize=2,
                    color=PAL["alt" if name == highlight else "mlm"])
        points.append((b.estimate, g.estimate))
    ax.plot([0], [0], "s", color=PAL["truth"])
    ax.axhline(0, color="gray", lw=0.8)
    ax.set_xlabel("incompatibility budget (nats per conditional)")
    ax.set_ylabel("ensemble gain (nats)")
    first = next(iter(budget.values()))
    ax.set_title(f"{len(budget)} models on the same {len(first)} targets")
    ax.margins(0.15)  # room for the labels beside the outer points
    plotting.place_labels(ax, points + [(0.0, 0.0)], [*budget, "truth"],
                          color=[None] * len(points) + [PAL["truth"]])
    return fig


def chain_rule_panels(lm, row, i: int, j: int, grammar=None, words=None):
    """The explorer's figure: the pair distribution through the two chain-rule orders, their
    log-ratio and (``grammar`` and ``words`` given) the exact joint, on each position's top six."""
    from .. import queries
    from .order import chain_rule_grids
    n = len(row)
    i, j = sorted((min(int(i), n - 1), min(int(j), n - 1)))
    if i == j:
        i, j = (j - 1, j) if j > 0 else (0, 1)
    both = [int(x) for x in row]
    both[i] = both[j] = lm.mask_id
    lq = queries.log_probs(lm, [both], [[i, j]])[0]
    a_ids, b_ids = np.argsort(-lq[0])[:6], np.argsort(-lq[1])[:6]
    fwd, bwd = chain_rule_grids(lm, row, i, j, a_ids, b_ids)
    grids = {r"$j_0$": np.exp(fwd), r"$j_1$": np.exp(bwd), r"$\log j_0/j_1$": fwd - bwd}
    if grammar is not None:
        offset = len(lm.vocab) - len(grammar.vocab)         # the special tokens come first
        joint = grammar.pair_joint(list(words), i, j)
        grids["truth"] = joint[np.ix_(a_ids - offset, b_ids - offset)]
    fig, axes = plotting.figure(2, 2, height=5.6)
    labels = ([lm.vocab[a] for a in a_ids], [lm.vocab[b] for b in b_ids])
    vmax = max(g.max() for k, g in grids.items() if "log" not in k)
    for ax, (name, g) in zip(axes.flat, grids.items()):
        big = np.abs(g).max()
        kw = dict(vmin=0, vmax=vmax) if "log" not in name else dict(cmap="coolwarm", vmin=-big, vmax=big)
        plotting.heatmap(g, labels=labels, ax=ax, colorbar=False, **kw)
        ax.set_title(name)
    for ax in list(axes.flat)[len(grids):]:
        ax.axis("off")
    shown = [lm.vocab[int(x)] for x in row]
    shown[i], shown[j] = "__", "__"
    fig.suptitle(" ".join(shown), fontsize=10)
    return fig
