"""Chapter 2's figures, drawn from measured numbers (legends above the panels, never over data)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import plotting
from .derive import METHODS
from .metrics import tv_joint

__all__ = ["joint_panels", "against_truth", "ladder_figure", "soft_zeros"]


def joint_panels(vocab: Sequence[str], cand_a, cand_b, joints: dict, truth=None, k: int = 10):
    """Heat maps of the derived joints of one pair on the ``k`` likeliest words of each position,
    one colour scale; with ``truth`` the true joint comes first and each title gives the joint's
    total variation to it over the whole grid. ``joints``: ``{label: array}``."""
    panels = ({"truth p": truth} if truth is not None else {}) | dict(joints)
    ref = truth if truth is not None else next(iter(joints.values()))
    rows = np.sort(np.argsort(-ref.sum(1))[:k])
    cols = np.sort(np.argsort(-ref.sum(0))[:k])
    vmax = max(Q[np.ix_(rows, cols)].max() for Q in panels.values())
    labels = ([vocab[t] for t in np.asarray(cand_a)[rows]], [vocab[t] for t in np.asarray(cand_b)[cols]])
    n_rows = (len(panels) + 1) // 2
    fig, axes = plotting.figure(n_rows, 2, height=2.9 * n_rows, squeeze=False)
    for ax, (name, Q) in zip(axes.ravel(), panels.items()):
        plotting.heatmap(Q[np.ix_(rows, cols)], labels=labels, ax=ax, colorbar=False, vmin=0,
                         vmax=vmax, cmap="Blues")
        note = f": TV {tv_joint(truth, Q):.2f}" if truth is not None and name != "truth p" else ""
        ax.set_title(name + note)
    for ax in axes.ravel()[len(panels):]:
        ax.axis("off")
    fig.colorbar(axes[0, 0].images[0], ax=axes.ravel().tolist(), shrink=0.5, label="probability")
    return fig


def against_truth(per_pair: dict, kinds: Sequence[str]):
    """Pair by pair: AG's conditionals against the MLM's own (conditional KL to the truth, left) and
    anchored AG against AG (KL to the truth, right); the diagonal marks equality, log axes."""
    kinds = np.asarray(kinds)
    fig, axes = plotting.figure(1, 2, height=3.4)
    for kind, color in (("adjacent", plotting.PALETTE["mlm"]), ("random", plotting.PALETTE["alt"])):
        keep = kinds == kind
        axes[0].scatter(per_pair["mlm.cond_kl_truth"][keep], per_pair["ag.cond_kl_truth"][keep],
                        s=12, alpha=0.7, color=color, label=f"{kind} pairs")
        axes[1].scatter(per_pair["ag.kl_truth"][keep], per_pair["ag_anchored.kl_truth"][keep], s=12,
                        alpha=0.7, color=color)
    for ax, (x, y) in zip(axes, (("MLM's conditionals", "AG's conditionals"), ("AG", "anchored AG"))):
        (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
        ends = [max(min(x0, y0), 1e-4), max(x1, y1)]
        ax.plot(ends, ends, color=plotting.PALETTE["muted"], lw=1)
        ax.set(xscale="log", yscale="log", xlabel=f"{x}: KL to p (nats)", ylabel=f"{y}: KL to p")
    plotting.legend_above(fig, axes[0], 2)
    return fig


def ladder_figure(kls: Sequence[float], names: Sequence[str], points: Sequence[dict], methods: Sequence[str],
           seed_kls: Sequence[float] = (), seed_points: Sequence[dict] = ()):
    """The regime map: KL from the true joint to each derived joint (left) and AG's conditionals
    minus the MLM's own in conditional KL to the truth (right), per rung against its KL to the
    truth; 95 % intervals (``points``: :func:`~mlmbook.joints.rung_point` per rung). Grey: the
    smallest size's other seeds."""
    fig, axes = plotting.figure(1, 2, height=3.6)
    colors = [plotting.PALETTE[c] for c in ("extra", "miss", "alt", "mlm", "hit")]
    for m, color in zip(methods, colors):
        ivs = [p[f"{m}_kl_truth"] for p in points]
        style = plotting.RegimeStyle(label=METHODS[m], color=color, ylabel="KL(p ‖ q_m), nats")
        plotting.regime_map(kls, *np.array([tuple(iv) for iv in ivs]).T, ax=axes[0], style=style)
    gap = np.array([tuple(p["gap"]) for p in points]).T
    if len(seed_points):
        extra = np.array([tuple(p["gap"]) for p in seed_points]).T
        axes[1].errorbar(seed_kls, extra[0], yerr=[extra[0] - extra[1], extra[2] - extra[0]], fmt="s",
                         color=plotting.PALETTE["muted"], capsize=2, label="smallest size, other seeds")
    axes[1].axhline(0, ls="--", color=plotting.PALETTE["truth"], lw=1)
    style = plotting.RegimeStyle(color=plotting.PALETTE["mlm"], names=names,
                                 ylabel="AG − MLM, cond. KL to p (nats)")
    plotting.regime_map(kls, *gap, ax=axes[1], style=style)
    for ax in axes:
        ax.set_xlabel("rung's single-site KL to p (nats)")
    fig.legend(loc="outside upper center", ncol=3, frameon=False)  # both panels' entries
    return fig


def soft_zeros(settings: Sequence[float], truth_block: Sequence[float], block: dict, tv: dict,
               truth_tv: Sequence[float]):
    """The knob: the share of the mass in the wrong block (left) and the total variation to the true
    joint (right) against smoothing ε — HCB from the truth's own conditionals (exact, dashed) beside
    HCB, AG and anchored AG from each setting's MLM (95 % intervals). ``block``/``tv``: ``{method:
    [Interval per ε]}``."""
    x = np.arange(len(settings))
    fig, axes = plotting.figure(1, 2, height=3.4)
    colors = {"hcb": plotting.PALETTE["alt"], "ag": plotting.PALETTE["mlm"], "ag_anchored": plotting.PALETTE["hit"]}
    for ax, exact, ivs, label in ((axes[0], truth_block, block, "mass in the wrong block"),
                                  (axes[1], truth_tv, tv, "TV to p")):
        ax.plot(x, exact, "s--", color=plotting.PALETTE["truth"], label="HCB from p's own conditionals")
        for m, series in ivs.items():
            est = np.array([iv.estimate for iv in series])
            err = np.array([[iv.estimate - iv.low, iv.high - iv.estimate] for iv in series]).T
            ax.errorbar(x + 0.04 * (list(ivs).index(m) - 1), est, yerr=err, capsize=2, fmt="o-",
                        color=colors[m], label=f"{METHODS[m]} from the MLM")
        ax.set(xticks=x, xticklabels=[f"{e:g}" for e in settings], xlabel="smoothing ε", ylabel=label)
        ax.set_ylim(bottom=0)
    plotting.legend_above(fig, axes[0], 2)
    return fig
