r"""One figure style for the book, sized to the page's column: arcs, heatmaps, distributions.

The rule every chapter follows. The site's text column is :data:`COLUMN_PX` = 672 px wide at a
1280-px window; a figure ``w`` inches wide is shown at its own width or scaled *down* to the column,
so a reader sees a font of ``s`` points at
:math:`s \cdot \frac{\mathrm{dpi}}{72} \cdot \min\Big(1, \frac{672}{w \cdot \mathrm{dpi}}\Big)` px
(a 13-inch figure shows its 9-pt tick labels at 6 px). Hence:

1. **Width at most** :data:`COLUMN_IN` (6.8 in): use :func:`figure` (``plotting.figure(ncols=2)``)
   or ``figsize=(plotting.column_width(), h)``.
2. **At most two panels per row** (:data:`MAX_PANELS_PER_ROW`): stack more panels in rows.
3. **No text below 9 pt** (:data:`MIN_FONT_PT`; 8 pt only for dense cell numbers of a full-width
   heatmap): :func:`use_style` gives ticks and legends 9 pt.
4. **Log axes read in plain numbers** (:class:`LogTicks`, set by :func:`use_style`): ``0.001``, not
   ``$10^{-3}$``, whose exponent matplotlib draws at 0.7 of the tick size (6.3 pt).
5. **Legends never over data**: :func:`place_legend` puts a legend where it covers no point.
6. Every figure reaches the page through :func:`figure_png` (installed by :func:`use_style`), whose
   record (:mod:`.record`) lets ``python -m mlmbook check-site`` fail text under
   :data:`MIN_TEXT_PX` (10 px on the page) and legends or point labels over data.

Drawing functions work on a matplotlib ``Axes`` (created if not given) and return it.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.patches import Arc
from matplotlib.scale import LogScale, register_scale
from matplotlib.ticker import LogFormatter

from .record import (
    DISPLAY_DPI,
    PNG_DPI,
    figure_png,
    legend_overlaps,
)

__all__ = ["use_style", "figure", "column_width", "figure_png", "legend_overlaps", "place_legend",
           "legend_above", "errorbars", "place_labels", "LogTicks", "LOG_DECIMALS", "log_tick_text",
           "arcs", "heatmap", "distribution_bars", "regime_map", "RegimeStyle", "PALETTE",
           "COLUMN_IN", "COLUMN_PX", "MIN_FONT_PT", "MIN_TEXT_PX", "MAX_PANELS_PER_ROW"]

PALETTE = {"gold": "#3a3a3a", "hit": "#1b9e77", "miss": "#d95f02", "extra": "#7570b3",
           "truth": "#3a3a3a", "mlm": "#1f78b4", "alt": "#e6ab02", "muted": "#bbbbbb"}

COLUMN_PX = 672          # the site's text column at a 1280-px window (measured in Chromium)
COLUMN_IN = 6.8          # the widest figure: shown at 680 px, so scaled by 672/680 at most
MIN_FONT_PT = 9          # the smallest font a figure may use
MIN_TEXT_PX = 10         # the smallest text a reader may meet on the page, in CSS pixels
MAX_PANELS_PER_ROW = 2
LOG_DECIMALS = 4  # log-axis ticks from 10^-4 to 10^4 are written as decimals (0.0001 ... 10,000)
PAGE_WIDTH_IN = COLUMN_IN  # older name


def column_width() -> float:
    """The width of the page's column in inches (:data:`COLUMN_IN`): a figure's largest width."""
    return COLUMN_IN


def use_style():
    """The book's figure style (call once at the top of a chapter): seaborn's ``whitegrid`` and
    ``colorblind``, the book's sizes, and :func:`figure_png` as a notebook's PNG formatter."""
    try:
        from IPython import get_ipython

        ip = get_ipython()        # a kernel's shell, or None
    except ImportError:
        ip = None
    if ip is not None:
        plt.close(plt.figure())  # the inline backend loads now, not over these settings later
    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    plt.rcParams.update({
        "figure.dpi": DISPLAY_DPI, "savefig.dpi": PNG_DPI, "figure.figsize": (COLUMN_IN, 3.2),
        "savefig.bbox": "tight", "savefig.pad_inches": 0.05,
        "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.35,
        "font.size": 10, "axes.titlesize": 10.5, "axes.labelsize": 10, "figure.titlesize": 11,
        "xtick.labelsize": MIN_FONT_PT, "ytick.labelsize": MIN_FONT_PT,
        "legend.fontsize": MIN_FONT_PT, "legend.title_fontsize": MIN_FONT_PT,
        "legend.frameon": False, "image.cmap": "viridis",
    })
    register_scale(_BookLogScale)             # every log axis: plain-number ticks (LogTicks)
    if ip is not None:
        from matplotlib.figure import Figure

        formatters = ip.display_formatter.formatters
        for mime in ("image/svg+xml", "image/jpeg", "application/pdf"):
            formatters[mime].pop(Figure, None)        # one image per figure: the recorded PNG
        formatters["image/png"].for_type(Figure, _png_output)


def _png_output(fig):
    if not fig.axes and not fig.lines:
        return None
    data, width = figure_png(fig)
    return data, {"width": width}


class LogTicks(LogFormatter):
    """Log-axis tick labels in plain numbers: ``0.01``, ``1``, ``1,000`` (``2e-6`` beyond
    :data:`LOG_DECIMALS` decades), drawn at the tick size — no mathtext exponent to shrink."""

    def _num_to_string(self, x, vmin, vmax):
        return log_tick_text(x)


def log_tick_text(x: float) -> str:
    """The label of one log-axis tick (see :class:`LogTicks`)."""
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else str(x)
    k = math.floor(math.log10(abs(x)) + 1e-9)
    if abs(k) > LOG_DECIMALS:
        mantissa = x / 10.0 ** k
        m = f"{mantissa:.1g}" if abs(mantissa - round(mantissa)) < 1e-6 else f"{mantissa:.2g}"
        return f"{m}e{k}"
    if k >= 0:
        return f"{x:,.0f}" if abs(x - round(x)) < 1e-9 * max(1.0, abs(x)) else f"{x:,.2g}"
    return f"{x:.{-k + 1}f}".rstrip("0").rstrip(".") if x < 1 else f"{x:g}"


class _BookLogScale(LogScale):
    """matplotlib's log scale with :class:`LogTicks` labels (registered by :func:`use_style`)."""

    name = "log"

    # matplotlib < 3.11 passes the axis
    def __init__(self, *_axis, base=10, subs=None, nonpositive="clip"):
        super().__init__(None, base=base, subs=subs, nonpositive=nonpositive)

    def set_default_locators_and_formatters(self, axis):
        super().set_default_locators_and_formatters(axis)
        axis.set_major_formatter(LogTicks(self.base))
        axis.set_minor_formatter(LogTicks(self.base, labelOnlyBase=(self.subs is not None)))


LEGEND_SPOTS = ("upper right", "upper left", "lower right", "lower left", "center right",
                "center left", "upper center", "lower center")


def errorbars(ax, x, intervals, **style):
    """Points at the intervals' estimates with their ``(estimate, low, high)`` as error bars."""
    e, lo, hi = (np.array(v, dtype=float) for v in zip(*intervals))
    return ax.errorbar(x, e, yerr=[e - lo, hi - e], capsize=3, **style)


def legend_above(fig, ax, ncol: int):
    """One legend for the whole figure, in a row above its panels (never over data)."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncol=ncol, frameon=False)


def place_legend(ax, *args, spots=LEGEND_SPOTS, outside: str = "right", **kw):
    """Draw ``ax``'s legend where it covers no plotted data point; returns the Legend.

    Tries each of ``spots`` inside the axes and keeps the first that covers no data
    (:func:`legend_overlaps`, what the site check reads); else puts the legend outside the axes,
    to the ``"right"`` or ``"below"`` (``outside``).

    Parameters
    ----------
    ax : Axes
    *args, **kw
        Passed to ``ax.legend`` (handles, labels, ``ncols``, ``title``, ...), not ``loc``.
    """
    if "loc" in kw:
        raise TypeError("place_legend chooses loc itself; pass spots=(...) to limit where it looks")
    fig = ax.figure
    fig.draw_without_rendering()  # lay out first: the axes' final place on the figure
    for spot in spots:
        legend = ax.legend(*args, loc=spot, **kw)
        if legend_overlaps(fig, [legend]) == 0:
            return legend
    if outside == "below":
        ncols = kw.pop("ncols", min(4, max(1, len(ax.get_legend_handles_labels()[0]))))
        return ax.legend(*args, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncols=ncols, **kw)
    return ax.legend(*args, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, **kw)


LABEL_DIRECTIONS = ((1, 1), (1, -1), (-1, 1), (-1, -1), (1, 0), (-1, 0), (0, 1), (0, -1))
LABEL_DISTANCES = (4, 9, 16, 26, 38, 52)   # offsets tried, in points from the labelled point
LEADER_FROM = 16                            # from this distance on, a thin line leads to the point
LABEL_PAD = 3                               # clear space kept around a label, in display pixels


def place_labels(ax, points, names, **kw) -> list:
    """Label each of ``points`` (data coordinates) of ``ax`` with its ``names`` entry beside it,
    where the label covers no data, error bar or other label (:func:`box_overlaps`, what the PNG's
    record counts; else where it covers least); returns the Annotations. Call it after everything is
    plotted and the limits are set. ``kw`` goes to ``ax.annotate`` (``color`` may be a list).
    """
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    from .record import _data_points, _renderer, box_overlaps

    fig = ax.figure
    fig.draw_without_rendering()
    renderer = _renderer(fig)
    pts, patches = _data_points(ax)
    colors = kw.pop("color", None)
    kw.setdefault("fontsize", MIN_FONT_PT)
    placed, boxes = [], []
    for k, ((x, y), name) in enumerate(zip(points, names)):
        color = colors[k] if isinstance(colors, (list, tuple)) else colors
        best = None
        for distance, (dx, dy) in itertools.product(LABEL_DISTANCES, LABEL_DIRECTIONS):
            lead = {"arrowprops": {"arrowstyle": "-", "lw": 0.6, "color": "0.45", "shrinkA": 1,
                                   "shrinkB": 4}} if distance >= LEADER_FROM else {}
            label = ax.annotate(name, (x, y), textcoords="offset points",
                                xytext=(dx * distance, dy * distance), color=color,
                                ha={1: "left", -1: "right", 0: "center"}[dx],
                                va={1: "bottom", -1: "top", 0: "center"}[dy], **lead, **kw)
            label.set_in_layout(False)  # the axes keep their place: offsets stay true
            label.update_positions(renderer)            # where it is drawn, not a cached place
            words = Text.get_window_extent(label, renderer)  # the words, not the leader line
            box = Bbox.from_extents(words.x0 - LABEL_PAD, words.y0 - LABEL_PAD,
                                    words.x1 + LABEL_PAD, words.y1 + LABEL_PAD)
            outside = not (ax.bbox.x0 <= box.x0 and box.x1 <= ax.bbox.x1
                           and ax.bbox.y0 <= box.y0 and box.y1 <= ax.bbox.y1)
            cost = box_overlaps(box, pts, patches, boxes, renderer) + 0.5 * outside
            if best is None or cost < best[0]:
                if best is not None:
                    best[1].remove()
                best = (cost, label, box)
            else:
                label.remove()
            if best[0] == 0:
                break
        placed.append(best[1])
        boxes.append(best[2])
    return placed


def figure(nrows: int = 1, ncols: int = 1, height: float | None = None, **kw):
    """A figure of the column's width with ``nrows`` × ``ncols`` panels (``plt.subplots``).

    Parameters
    ----------
    nrows, ncols : int
        At most :data:`MAX_PANELS_PER_ROW` columns: stack more panels in rows.
    height : float, optional
        Total height in inches (default 3.2 for one row, 2.9 per row beyond).
    **kw
        Passed to ``plt.subplots`` (``sharex``, ``gridspec_kw``, ``squeeze``, ...).

    Returns
    -------
    (Figure, Axes or array of Axes)
    """
    if ncols > MAX_PANELS_PER_ROW:
        raise ValueError(f"{ncols} panels in a row would be drawn at {COLUMN_IN / ncols:.1f} in each; "
                         f"use at most {MAX_PANELS_PER_ROW} per row and stack the rest "
                         f"(plotting.figure(nrows={-(-ncols // MAX_PANELS_PER_ROW)}, ncols=2))")
    if height is None:
        height = 3.2 if nrows == 1 else 2.9 * nrows
    kw.setdefault("layout", "constrained")
    return plt.subplots(nrows, ncols, figsize=(COLUMN_IN, height), **kw)


def _axes(ax, size=(COLUMN_IN, 2.4)):
    if ax is None:
        _, ax = plt.subplots(figsize=size)
    return ax


def arcs(words, gold=None, pred=None, ax=None, title=None):
    """A dependency-arc diagram: gold edges above the words, predicted edges below.

    Predicted edges that are also gold are drawn in green, the others in orange; gold edges
    the prediction missed are drawn dashed.  ``gold``/``pred`` are iterables of pairs ``(i, j)``
    (unordered) or head lists (``heads[i]``, -1 for the root). One sentence of up to ~12 words
    takes the column's width; draw several sentences one under another, not side by side.
    """
    ax = _axes(ax, (COLUMN_IN, 2.4))
    gold, pred = _edge_set(gold), _edge_set(pred)
    for x, w in enumerate(words):
        ax.text(x, 0, w, ha="center", va="center", fontsize=plt.rcParams["font.size"])
    top = 0.5
    for (i, j) in sorted(gold, key=lambda e: e[1] - e[0]):
        hit = pred is None or (i, j) in pred
        ax.add_patch(Arc(((i + j) / 2, 0.18), j - i, 0.6 * (j - i) ** 0.8 + 0.2, theta1=0,
                         theta2=180, color=PALETTE["gold"], lw=1.3, ls="-" if hit else "--"))
        top = max(top, 0.3 * (j - i) ** 0.8 + 0.35)
    bottom = -0.5
    for (i, j) in sorted(pred or (), key=lambda e: e[1] - e[0]):
        color = PALETTE["hit"] if (i, j) in gold else PALETTE["miss"]
        ax.add_patch(Arc(((i + j) / 2, -0.18), j - i, 0.6 * (j - i) ** 0.8 + 0.2, theta1=180,
                         theta2=360, color=color, lw=1.6))
        bottom = min(bottom, -0.3 * (j - i) ** 0.8 - 0.35)
    ax.set_xlim(-0.7, len(words) - 0.3)
    ax.set_ylim(bottom - 0.1, top + 0.1)
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=plt.rcParams["font.size"])
    return ax


def _edge_set(edges):
    if edges is None:
        return None
    edges = list(edges)
    if edges and not isinstance(edges[0], (tuple, list)):            # a head list
        return {tuple(sorted((d, h))) for d, h in enumerate(edges) if h >= 0}
    return {tuple(sorted(e)) for e in edges}


def heatmap(M, labels=None, ax=None, cmap="viridis", colorbar=True, **kw):
    """A labelled matrix (e.g. a dependency-score matrix over a sentence's words), labels 9 pt."""
    M = np.asarray(M, dtype=float)
    ax = _axes(ax, (min(COLUMN_IN, 0.45 * M.shape[1] + 2), 0.45 * M.shape[0] + 1))
    im = ax.imshow(M, cmap=cmap, **kw)
    ax.grid(False)
    if labels is not None:
        rows, cols = (labels, labels) if not isinstance(labels, tuple) else labels
        ax.set_xticks(range(len(cols)), cols, rotation=60, ha="right", fontsize=MIN_FONT_PT)
        ax.set_yticks(range(len(rows)), rows, fontsize=MIN_FONT_PT)
    if colorbar:
        plt.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return ax


def distribution_bars(dists: dict, vocab, top: int = 12, ax=None, title=None):
    """Side-by-side bars of several distributions over the same vocabulary (their top words)."""
    ax = _axes(ax, (COLUMN_IN, 3))
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
    if title:
        ax.set_title(title)
    place_legend(ax)
    return ax


@dataclass(frozen=True)
class RegimeStyle:
    """The marks of one method in :func:`regime_map`: legend ``label``, ``color``, ``ylabel``, rung
    ``names`` by the points, a dashed line at ``truth`` (legend ``truth_label``)."""

    label: str | None = None
    color: str | None = None
    ylabel: str | None = None
    names: object = None
    truth: float | None = None
    truth_label: str = "truth"


def regime_map(kl, value, lo=None, hi=None, *, ax=None, style: RegimeStyle = RegimeStyle()):
    r"""A paper's quantity across the model ladder: one point per rung against its KL to the truth.

    The x-axis is the rung's mean single-site :math:`\mathrm{KL}(p\,\|\,q)` (log scale, the truth at
    the left); error bars show ``[lo, hi]``. Call once per method on the same axes, the one with
    rung names last (:func:`place_labels` places them).

    Parameters
    ----------
    kl, value : sequences of float (one per rung)
    lo, hi : sequences of float, optional   interval ends (e.g. 95 % bootstrap)
    style : RegimeStyle                     labels, colour, rung names and the truth's line
    """
    ax = _axes(ax, size=(COLUMN_IN, 3.4))
    kl, value = np.asarray(kl, float), np.asarray(value, float)
    order = np.argsort(kl)
    err = None
    if lo is not None and hi is not None:
        err = np.vstack([value - np.asarray(lo, float), np.asarray(hi, float) - value])[:, order]
    ax.errorbar(kl[order], value[order], yerr=err, fmt="o-", capsize=3, label=style.label,
                color=style.color, lw=1.2)
    if style.truth is not None:
        ax.axhline(style.truth, ls="--", color=PALETTE["truth"], lw=1, label=style.truth_label)
    ax.set_xscale("log")
    ax.set_xlabel("mean single-site KL to the truth (nats, log scale)")
    if style.ylabel:
        ax.set_ylabel(style.ylabel)
    ax.grid(True, which="both", alpha=0.2)
    if style.names is not None:
        place_labels(ax, list(zip(kl, value)), [str(n) for n in style.names], color="0.3")
    return ax
