"""One figure style for the book: dependency-arc diagrams, heatmaps, distributions.

:func:`use_style` sets the book-wide look once per chapter: seaborn's white-grid theme with
a colour-blind-safe palette, sized so that a figure of the default width (7.5 in) is read at
the page's width without zooming. Statistical figures use seaborn (``sns.heatmap`` with a
colour bar, ``sns.pointplot``/``errorbar`` intervals, ``sns.histplot``); every function here
draws on a matplotlib ``Axes`` (created if not given) and returns it, so chapters compose
figures with ``plt.subplots`` and keep control of layout.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.patches import Arc

__all__ = ["use_style", "arcs", "heatmap", "distribution_bars", "regime_map", "PALETTE"]

PALETTE = {"gold": "#3a3a3a", "hit": "#1b9e77", "miss": "#d95f02", "extra": "#7570b3",
           "truth": "#3a3a3a", "mlm": "#1f78b4", "alt": "#e6ab02", "muted": "#bbbbbb"}


# The content column of the site is about 800 px wide; at 110 dpi a 7.5 in figure fills it,
# so 10 pt text on the figure reads at about the size of the page's own small print.
PAGE_WIDTH_IN = 7.5


def use_style():
    """The book's figure style (call once at the top of a chapter).

    seaborn's ``whitegrid`` theme and ``colorblind`` palette, then the book's sizes: default
    figures of page width (``PAGE_WIDTH_IN``), titles 11 pt, labels and ticks 10/9 pt, no legend
    frame, top and right spines removed.
    """
    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    plt.rcParams.update({
        "figure.dpi": 110, "savefig.dpi": 110, "figure.figsize": (PAGE_WIDTH_IN, 3.6),
        "savefig.bbox": "tight",
        "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.35,
        "axes.titlesize": 11, "axes.labelsize": 10, "xtick.labelsize": 9, "ytick.labelsize": 9,
        "legend.fontsize": 9, "legend.title_fontsize": 9, "legend.frameon": False, "font.size": 10,
        "image.cmap": "viridis",
    })


def _axes(ax, size=(8, 2.4)):
    if ax is None:
        _, ax = plt.subplots(figsize=size)
    return ax


def arcs(words, gold=None, pred=None, ax=None, title=None):
    """A dependency-arc diagram: gold edges above the words, predicted edges below.

    Predicted edges that are also gold are drawn in green, the others in orange; gold edges
    the prediction missed are drawn dashed.  ``gold``/``pred`` are iterables of pairs ``(i, j)``
    (unordered) or head lists (``heads[i]``, -1 for the root).
    """
    ax = _axes(ax, (max(6, 0.75 * len(words)), 2.6))
    gold, pred = _edge_set(gold), _edge_set(pred)
    for x, w in enumerate(words):
        ax.text(x, 0, w, ha="center", va="center", fontsize=10)
    top = 0.5
    for (i, j) in sorted(gold, key=lambda e: e[1] - e[0]):
        hit = pred is None or (i, j) in pred
        ax.add_patch(Arc(((i + j) / 2, 0.18), j - i, 0.6 * (j - i) ** 0.8 + 0.2, theta1=0, theta2=180,
                         color=PALETTE["gold"], lw=1.3, ls="-" if hit else "--"))
        top = max(top, 0.3 * (j - i) ** 0.8 + 0.35)
    bottom = -0.5
    for (i, j) in sorted(pred or (), key=lambda e: e[1] - e[0]):
        color = PALETTE["hit"] if (i, j) in gold else PALETTE["miss"]
        ax.add_patch(Arc(((i + j) / 2, -0.18), j - i, 0.6 * (j - i) ** 0.8 + 0.2, theta1=180, theta2=360,
                         color=color, lw=1.6))
        bottom = min(bottom, -0.3 * (j - i) ** 0.8 - 0.35)
    ax.set_xlim(-0.7, len(words) - 0.3)
    ax.set_ylim(bottom - 0.1, top + 0.1)
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=10)
    return ax


def _edge_set(edges):
    if edges is None:
        return None
    edges = list(edges)
    if edges and not isinstance(edges[0], (tuple, list)):            # a head list
        return {tuple(sorted((d, h))) for d, h in enumerate(edges) if h >= 0}
    return {tuple(sorted(e)) for e in edges}


def heatmap(M, labels=None, ax=None, cmap="viridis", title=None, colorbar=True, fmt=None, **kw):
    """A labelled matrix (e.g. a dependency-score matrix over a sentence's words)."""
    M = np.asarray(M, dtype=float)
    ax = _axes(ax, (0.45 * M.shape[1] + 2, 0.45 * M.shape[0] + 1))
    im = ax.imshow(M, cmap=cmap, **kw)
    ax.grid(False)
    if labels is not None:
        rows, cols = (labels, labels) if not isinstance(labels, tuple) else labels
        ax.set_xticks(range(len(cols)), cols, rotation=60, ha="right", fontsize=8)
        ax.set_yticks(range(len(rows)), rows, fontsize=8)
    if fmt:
        for (r, c), v in np.ndenumerate(M):
            if np.isfinite(v):
                ax.text(c, r, format(v, fmt), ha="center", va="center", fontsize=6, color="w")
    if colorbar:
        plt.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    if title:
        ax.set_title(title)
    return ax


def distribution_bars(dists: dict, vocab, top: int = 12, ax=None, title=None):
    """Side-by-side bars of several distributions over the same vocabulary (their top words)."""
    ax = _axes(ax, (7.5, 3))
    names = list(dists)
    stacked = np.stack([np.asarray(dists[k], dtype=float) for k in names])
    order = np.argsort(-stacked.max(0))[:top]
    width = 0.8 / len(names)
    colors = [PALETTE["truth"], PALETTE["mlm"], PALETTE["alt"], PALETTE["extra"]]
    for k, name in enumerate(names):
        ax.bar(np.arange(len(order)) + k * width - 0.4 + width / 2, stacked[k, order], width,
               label=name, color=colors[k % len(colors)])
    ax.set_xticks(range(len(order)), [vocab[i] for i in order], rotation=45, ha="right")
    ax.set_ylabel("probability")
    ax.legend()
    if title:
        ax.set_title(title)
    return ax


def regime_map(kl, value, lo=None, hi=None, *, ax=None, truth=None, label=None, color=None, names=None,
               ylabel=None, truth_label="truth"):
    r"""A paper's quantity across the model ladder: one point per rung against its KL to the truth.

    The x-axis is the rung's mean single-site :math:`\mathrm{KL}(p\,\|\,q)` (log scale, the truth
    at the left: closer to the truth means smaller KL); error bars show ``[lo, hi]``; a dashed
    line marks the truth's own value. Call once per method on the same axes.

    Parameters
    ----------
    kl, value : sequences of float (one per rung)
    lo, hi : sequences of float, optional   interval ends (e.g. 95 % bootstrap)
    truth : float, optional                 the truth's value (a reference line)
    names : sequences of str, optional      rung names, written next to the points
    """
    ax = _axes(ax, size=(7, 3.6))
    kl, value = np.asarray(kl, float), np.asarray(value, float)
    order = np.argsort(kl)
    err = None
    if lo is not None and hi is not None:
        err = np.vstack([value - np.asarray(lo, float), np.asarray(hi, float) - value])[:, order]
    ax.errorbar(kl[order], value[order], yerr=err, fmt="o-", capsize=3, label=label, color=color, lw=1.2)
    if names is not None:
        for x, y, n in zip(kl, value, names):
            ax.annotate(n, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7, color="0.35")
    if truth is not None:
        ax.axhline(truth, ls="--", color=PALETTE["truth"], lw=1, label=truth_label)
    ax.set_xscale("log")
    ax.set_xlabel("mean single-site KL to the truth (nats, log scale; the truth is at the left)")
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.2)
    return ax
