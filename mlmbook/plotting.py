"""One figure style for the book: dependency-arc diagrams, heatmaps, distributions.

Every function draws on a matplotlib ``Axes`` (created if not given) and returns it, so
chapters compose figures with ``plt.subplots`` and keep control of layout.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Arc

__all__ = ["use_style", "arcs", "heatmap", "distribution_bars", "PALETTE"]

PALETTE = {"gold": "#3a3a3a", "hit": "#1b9e77", "miss": "#d95f02", "extra": "#7570b3",
           "truth": "#3a3a3a", "mlm": "#1f78b4", "alt": "#e6ab02", "muted": "#bbbbbb"}


def use_style():
    """The book's matplotlib defaults (call once at the top of a chapter)."""
    plt.rcParams.update({
        "figure.dpi": 110, "savefig.dpi": 110, "figure.figsize": (7.5, 3.6),
        "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.25,
        "axes.titlesize": 11, "axes.labelsize": 10, "legend.frameon": False, "font.size": 10,
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
