"""Chapter 5's figures: each draws measured numbers (no measurement here) and returns its figure;
legends go where they cover no data (:func:`mlmbook.plotting.place_legend`) or above the panels."""
from __future__ import annotations

import numpy as np

from .. import plotting
from .study import coupon

__all__ = ["rectangles", "frame_chains", "scaling", "grid", "escapes", "trajectory", "stationary_law"]


def rectangles(absd: dict, floor: float, material: float, truth=None):
    """Histograms of :math:`\\log_{10}|\\Delta|` per kind of pair (``absd``: ``{kind: |Δ|}``), the
    truth's beside them when given, with the float32 noise floor (dotted) and the material threshold
    (dashed)."""
    fig, ax = plotting.figure(height=3.3)
    bins = np.linspace(-17, 1.5, 60)
    for (kind, d), color in zip(absd.items(), ("mlm", "alt")):
        ax.hist(np.log10(np.asarray(d) + 1e-17), bins=bins, alpha=0.75,
                color=plotting.PALETTE[color], label=f"MLM, {kind} pairs")
    if truth is not None:
        ax.hist(np.log10(np.abs(truth) + 1e-17), bins=bins, alpha=0.75,
                color=plotting.PALETTE["truth"], label="truth (same rectangles)")
    for x, ls in ((floor, ":"), (material, "--")):
        ax.axvline(np.log10(x), color="k", ls=ls, lw=1)
    ax.set_xlabel(r"$\log_{10} |\Delta|$  (natural-log odds ratios)")
    ax.set_ylabel("rectangles")
    plotting.legend_above(fig, ax, 3)
    return fig


def frame_chains(sweep, gamma: float | None = None):
    """Top: relaxation times against :math:`1/T` for the plain MLM chain, the MH-corrected one and
    (with the truth) the truth's chain with the slope :math:`\\Gamma`. Bottom (with the truth): TV
    of each MLM chain's stationary law to :math:`p_T`."""
    toy = len(sweep.trel_truth) > 0
    fig, axes = plotting.figure(2 if toy else 1, 1, height=6.2 if toy else 3.2, squeeze=False)
    ax, pal = axes[0, 0], plotting.PALETTE
    inv = 1 / np.asarray(sweep.T)
    # a gap below rounding: not drawn
    trel_mh = np.where(np.isfinite(sweep.trel_mh), sweep.trel_mh, np.nan)
    ax.semilogy(inv, sweep.trel_mlm, "o-", color=pal["mlm"], label="MLM, plain chain")
    ax.semilogy(inv, trel_mh, "^--", color=pal["alt"], label="MLM, MH-corrected")
    if toy:
        ax.semilogy(inv, sweep.trel_truth, "s-", color=pal["truth"], label="truth's chain")
        ax.semilogy(inv, sweep.trel_truth[0] * np.exp(gamma * (inv - inv[0])), ":",
                    color=pal["truth"], label=fr"slope $\Gamma$ = {gamma:.2f}")
    ax.set_xlabel("1 / T")
    ax.set_ylabel("relaxation time (steps)")
    plotting.legend_above(fig, ax, 2)
    if toy:
        ax = axes[1, 0]
        ax.plot(sweep.T, sweep.tv_T, "o-", color=pal["mlm"], label="plain chain")
        ax.plot(sweep.T, sweep.tv_mh_T, "^--", color=pal["alt"], label="MH-corrected")
        ax.set_xscale("log")
        ax.set_xlabel("temperature T")
        ax.set_ylabel(r"TV(stationary law, $p_T$)")
        plotting.place_legend(ax)
    return fig


def scaling(curve: dict):
    """:math:`t_\\text{mix} / (m H_m)` against the sentence length, per chain and temperature (log
    scale): one small point per sentence, the line through the geometric means of each length."""
    n = np.asarray(curve["length"])
    lengths = np.unique(n)
    ratio_of = coupon(n - 1)
    fig, axes = plotting.figure(1, 2, height=3.3, sharey=True)
    pal = plotting.PALETTE
    for ax, (b, T) in zip(axes, enumerate(curve["temps"])):
        for who, color, name, shift in (("truth", pal["truth"], "truth's chain", -0.12),
                                        ("mlm", pal["mlm"], "MLM's chain", 0.12)):
            r = curve[f"tmix_{who}"][b] / ratio_of
            ax.plot(n + shift, r, ".", color=color, alpha=0.35, ms=4)
            # geometric: the fits read log t
            mean = [np.exp(np.log(r[n == k]).mean()) for k in lengths]
            ax.plot(lengths + shift, mean, "o-", color=color, label=name)
        ax.set_yscale("log")
        ax.set_title(f"T = {T:g}")
        ax.set_xticks(lengths)
        ax.set_xlabel("sentence length n")
    axes[0].set_ylabel(r"$t_\mathrm{mix}$ / ($m\,H_m$)")
    plotting.legend_above(fig, axes[0], 2)
    return fig


def grid(g, ratio, cap: int):
    """The coupling grid: median meeting time in sweeps per cell ("> cap" where censored; green
    boxes where the influence estimate is below 1), and below, the median divided by :math:`m H_m`
    (censored cells left out)."""
    import matplotlib.pyplot as plt
    fig, axes = plotting.figure(2, 1, height=6.8)
    ax = axes[0]
    med = np.array([[np.nan if iv.lower_bound else iv.estimate for iv in row] for row in g.tau])
    im = ax.imshow(np.log10(med), cmap="magma_r", aspect="auto", vmin=0, vmax=np.log10(cap))
    ax.set_facecolor("#d9d9d9")
    ax.grid(False)
    for (r, c), v in np.ndenumerate(med):
        dark = np.isfinite(v) and v >= cap ** 0.5
        ax.text(c, r, f"{v:.0f}" if np.isfinite(v) else "> cap", ha="center", va="center",
                fontsize=9, color="w" if dark else "k")
        if g.alpha[r, c] < 1:
            ax.add_patch(plt.Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, ec=plotting.PALETTE["hit"], lw=2))
    ax.set_xticks(range(len(g.temps)), [f"{T:g}" for T in g.temps])
    ax.set_yticks(range(len(g.lengths)), g.lengths)
    ax.set_xlabel("temperature T")
    ax.set_ylabel("sentence length n")
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="log10 sweeps")
    ax = axes[1]
    shades = plt.cm.viridis(np.linspace(0, 0.9, len(g.temps)))
    for b, T in enumerate(g.temps):
        ok = np.isfinite(ratio[:, b])
        ax.plot(np.array(g.lengths)[ok], ratio[ok, b], "o-", color=shades[b], label=f"T = {T:g}")
    ax.set_yscale("log")
    ax.set_xticks(g.lengths)
    ax.set_xlabel("sentence length n")
    ax.set_ylabel(r"$\tau$ / ($m\,H_m$)")
    plotting.place_legend(ax, ncols=2, outside="right")
    return fig


def escapes(world: dict, temps, mlms: dict, fit: dict):
    """Top: exact mean escape times against :math:`1/T`, the truth in each world (solid) and the
    MLMs named in ``mlms`` (``{label: (knob, name)}``, dashed), with the wall's :math:`\\Gamma` as a
    slope (dotted). Bottom: the exact escape slope between the two coldest temperatures of every
    model ``fit`` names (``{name: KL}``, the wall's ladder) against its KL to the truth, with the
    truth's slope and :math:`\\Gamma`."""
    fig, axes = plotting.figure(2, 1, height=6.6)
    ax, pal = axes[0], plotting.PALETTE
    colors = {"plateau": pal["miss"], "ridge": pal["alt"], "wall": pal["mlm"]}
    inv = 1 / np.asarray(temps)
    for knob, w in world.items():
        ax.semilogy(inv, w["exact_truth"], "-", color=colors[knob], label=f"{knob}: truth (Γ = {w['gamma']:.2f})")
    for label, (knob, name) in mlms.items():
        ax.semilogy(inv, world[knob][f"exact_{name}"], "--", color=colors[knob], label=label)
    wall = world["wall"]
    ax.semilogy(inv, wall["exact_truth"][-1] * np.exp(wall["gamma"] * (inv - inv[-1])), ":",
                color=colors["wall"], lw=1)
    ax.set_xlabel("1 / T")
    ax.set_ylabel("mean escape time (sweeps)")
    plotting.legend_above(fig, ax, 2)
    ax = axes[1]
    ax.axhline(wall["gamma"], color=pal["truth"], ls=":", label="barrier Γ of the wall")
    ax.axhline(wall["exact_slope_truth"], color=pal["truth"], ls="-", lw=1, label="truth's exact slope")
    ax.axhline(0, color="k", lw=0.8)
    kl = np.array(list(fit.values()))
    slope = np.array([wall[f"exact_slope_{name}"] for name in fit])
    ax.plot(kl, slope, "o", color=pal["mlm"], label="MLMs on the ladder")
    ax.set_xscale("log")
    ax.set_xlabel("KL to the truth (nats per token)")
    ax.set_ylabel("exact escape slope (nats)")
    plotting.place_labels(ax, list(zip(kl, slope)), [name.replace("wall ", "") for name in fit])
    plotting.place_legend(ax)
    return fig


def trajectory(lam, threshold: float, chains: int = 3):
    """The topic log-odds of the first ``chains`` chains, sweep by sweep, with the farm and town
    thresholds."""
    fig, ax = plotting.figure(height=3.0)
    for c in range(min(chains, lam.shape[1])):
        ax.plot(lam[:, c], lw=1, label=f"chain {c + 1}")
    for y in (threshold, -threshold):
        ax.axhline(y, color="gray", lw=0.8)
    ax.set_xlabel("sweep")
    ax.set_ylabel(r"topic log-odds $\lambda$")
    plotting.legend_above(fig, ax, 3)
    return fig


def stationary_law(dists: dict, text, groups: dict | None = None):
    """The ten likeliest frame sentences under each law of ``dists`` (``{label: law}``), and with
    ``groups`` (``{name: boolean mask over states}``) each law's mass per group."""
    if groups is None:
        fig, *axes = plotting.figure(height=3.6)
    else:
        fig, axes = plotting.figure(2, 1, height=6.4, gridspec_kw=dict(height_ratios=[1.4, 1]))
    plotting.distribution_bars(dists, text, top=10, ax=axes[0])
    axes[0].tick_params(axis="x", labelsize=9)
    if groups is not None:
        pal = plotting.PALETTE
        for k, (name, d) in enumerate(dists.items()):
            shares = [d[mask].sum() for mask in groups.values()]
            axes[1].bar(np.arange(len(groups)) + 0.27 * k - 0.27, shares, 0.27, label=name,
                        color=[pal["truth"], pal["mlm"], pal["alt"]][k % 3])
        axes[1].set_xticks(range(len(groups)), list(groups))
        axes[1].set_ylabel("stationary mass")
        plotting.place_legend(axes[1])
    return fig
