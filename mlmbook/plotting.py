r"""One figure style for the book, sized to the page's column: arcs, heatmaps, distributions.

The rule every chapter follows
------------------------------
The site's text column is :data:`COLUMN_PX` = 672 px wide at a 1280-px window. A figure is
shown at its own width or scaled *down* to the column, so what a reader sees of a font of
``s`` points in a figure ``w`` inches wide is

.. math:: s \cdot \frac{\mathrm{dpi}}{72} \cdot \min\Big(1, \frac{672}{w \cdot \mathrm{dpi}}\Big) \text{ px},

and a 13-inch figure shows its 9-pt tick labels at 6 px. Hence:

1. **Width at most** :data:`COLUMN_IN` (6.8 in): use :func:`figure` (``plotting.figure(ncols=2)``)
   or ``figsize=(plotting.column_width(), h)``. Never wider: the browser would shrink it.
2. **At most two panels per row** (:data:`MAX_PANELS_PER_ROW`): stack more panels in rows.
3. **No text below 9 pt** (:data:`MIN_FONT_PT`): ticks and legends get 9 pt from :func:`use_style`;
   do not pass ``fontsize`` < 9 to labels, annotations or heatmap cells (8 pt only for dense cell
   numbers of a full-width heatmap).
4. Every figure reaches the page through the book's PNG formatter (installed by :func:`use_style`
   in a notebook, used by :mod:`mlmbook.widgets`): it draws at :data:`PNG_DPI` (sharp on high-
   density screens), shows at :data:`DISPLAY_DPI` and writes into the PNG the smallest font it
   drew (:func:`png_record`). ``python -m mlmbook check-site`` reads that record and the width at
   which the browser shows the image and fails a figure whose smallest text is under
   :data:`MIN_TEXT_PX` (10 px) on the page (:func:`rendered_text_px`).

Statistical figures use seaborn (``sns.heatmap``, ``sns.pointplot``, ``sns.histplot``); every
drawing function here works on a matplotlib ``Axes`` (created if not given) and returns it, so
chapters compose figures with :func:`figure` and keep control of layout.
"""
from __future__ import annotations

import io
import struct
import zlib
from contextlib import contextmanager

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.patches import Arc

__all__ = ["use_style", "figure", "column_width", "figure_png", "png_record", "rendered_text_px",
           "drawn_font_sizes", "arcs", "heatmap", "distribution_bars", "regime_map", "PALETTE",
           "COLUMN_IN", "COLUMN_PX", "MIN_FONT_PT", "MIN_TEXT_PX", "MAX_PANELS_PER_ROW"]

PALETTE = {"gold": "#3a3a3a", "hit": "#1b9e77", "miss": "#d95f02", "extra": "#7570b3",
           "truth": "#3a3a3a", "mlm": "#1f78b4", "alt": "#e6ab02", "muted": "#bbbbbb"}

COLUMN_PX = 672          # the site's text column at a 1280-px window (measured in Chromium)
COLUMN_IN = 6.8          # the widest figure: shown at 680 px, so scaled by 672/680 at most
DISPLAY_DPI = 100        # pixels per inch at which a figure is shown (6.8 in -> 680 px)
PNG_DPI = 200            # pixels per inch drawn into the PNG (2x: sharp on high-density screens)
MIN_FONT_PT = 9          # the smallest font a figure may use
MIN_TEXT_PX = 10         # the smallest text a reader may meet on the page, in CSS pixels
MAX_PANELS_PER_ROW = 2
PAGE_WIDTH_IN = COLUMN_IN  # older name
RECORD_KEYS = ("mlmbook-min-font-pt", "mlmbook-dpi", "mlmbook-display-dpi")


def column_width() -> float:
    """The width of the page's column in inches (:data:`COLUMN_IN`): a figure's largest width."""
    return COLUMN_IN


def use_style():
    """The book's figure style (call once at the top of a chapter).

    seaborn's ``whitegrid`` theme and ``colorblind`` palette, then the book's sizes: figures
    :data:`COLUMN_IN` wide, text 10 pt, ticks and legends 9 pt, titles 10.5 pt, no legend frame,
    top and right spines removed. Inside a notebook it also installs the book's PNG formatter
    (:func:`figure_png`), which records the smallest font of every figure for the site check.
    """
    _activate_backend()
    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    plt.rcParams.update({
        "figure.dpi": DISPLAY_DPI, "savefig.dpi": PNG_DPI, "figure.figsize": (COLUMN_IN, 3.2),
        "savefig.bbox": "tight", "savefig.pad_inches": 0.05,
        "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.35,
        "font.size": 10, "axes.titlesize": 10.5, "axes.labelsize": 10, "figure.titlesize": 11,
        "xtick.labelsize": MIN_FONT_PT, "ytick.labelsize": MIN_FONT_PT,
        "legend.fontsize": MIN_FONT_PT, "legend.title_fontsize": MIN_FONT_PT, "legend.frameon": False,
        "image.cmap": "viridis",
    })
    _install_formatter()


def _activate_backend() -> None:
    """Load pyplot's backend now (in a kernel: the inline backend and its formatters), so that
    what :func:`use_style` sets afterwards is not overwritten when the first figure is made."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    if get_ipython() is not None:
        plt.close(plt.figure())


def _install_formatter() -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    ip = get_ipython()
    if ip is None:
        return
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


def figure(nrows: int = 1, ncols: int = 1, height: float | None = None, **kw):
    """A figure of the column's width with ``nrows`` × ``ncols`` panels (``plt.subplots`` arguments).

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


# --------------------------------------------------------------------------- the recorded PNG

@contextmanager
def _recording_text():
    """Collect the size in points of every text matplotlib actually draws (visible, non-empty)."""
    from matplotlib.text import Text

    sizes: list[float] = []
    original = Text.draw

    def draw(self, renderer):
        if self.get_visible() and self.get_text().strip() and renderer is not None:
            sizes.append(float(self.get_fontsize()))
        return original(self, renderer)

    Text.draw = draw
    try:
        yield sizes
    finally:
        Text.draw = original


def drawn_font_sizes(fig) -> list[float]:
    """The font sizes (points) of every text the figure draws: tick labels, legends, annotations."""
    with _recording_text() as sizes:
        fig.canvas.draw()
    return sizes


def figure_png(fig, dpi: int = PNG_DPI) -> tuple[bytes, int]:
    """The figure as the book shows it: a PNG at ``dpi`` carrying its smallest font, and its width.

    The PNG holds tEXt chunks ``mlmbook-min-font-pt`` (the smallest text drawn) and
    ``mlmbook-dpi``; the width returned (pixels at :data:`DISPLAY_DPI`) is the size to show it at.
    """
    with _recording_text() as sizes:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", pad_inches=0.05,
                    facecolor="white", metadata={"Software": None})
    smallest = min(sizes) if sizes else 0.0
    data = _add_text_chunks(buf.getvalue(), {RECORD_KEYS[0]: f"{smallest:g}", RECORD_KEYS[1]: str(dpi),
                                             RECORD_KEYS[2]: str(DISPLAY_DPI)})
    width = _png_size(data)[0]
    return data, int(round(width * DISPLAY_DPI / dpi))


def _png_size(data: bytes) -> tuple[int, int]:
    return struct.unpack(">II", data[16:24])


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def _add_text_chunks(png: bytes, texts: dict) -> bytes:
    """Insert tEXt chunks right after the PNG's IHDR chunk."""
    end_ihdr = 8 + 4 + 4 + 13 + 4
    extra = b"".join(_chunk(b"tEXt", k.encode("latin-1") + b"\0" + v.encode("latin-1")) for k, v in texts.items())
    return png[:end_ihdr] + extra + png[end_ihdr:]


def png_record(data: bytes) -> dict:
    """What a PNG says about itself: ``width``, ``height`` (pixels), ``dpi`` (pHYs) and the
    book's record (``min_font_pt``, ``dpi`` from :func:`figure_png`), where present."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return {}
    out: dict = {}
    out["width"], out["height"] = _png_size(data)
    at = 8
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"tEXt" and b"\0" in body:
            key, value = body.split(b"\0", 1)
            key = key.decode("latin-1")
            if key == RECORD_KEYS[0]:
                out["min_font_pt"] = float(value)
            elif key == RECORD_KEYS[1]:
                out["dpi"] = float(value)
        elif kind == b"pHYs" and length == 9 and "dpi" not in out:
            ppm_x, _, unit = struct.unpack(">IIB", body)
            if unit == 1:
                out["dpi"] = ppm_x * 0.0254
        elif kind == b"IDAT":
            break
        at += 12 + length
    return out


def rendered_text_px(font_pt: float, dpi: float, natural_px: float, shown_px: float) -> float:
    """The height in CSS pixels of a ``font_pt`` text of an image drawn at ``dpi`` whose
    ``natural_px`` pixels are shown ``shown_px`` wide."""
    return font_pt * dpi / 72.0 * shown_px / natural_px


# --------------------------------------------------------------------------- drawings

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
        ax.set_title(title, fontsize=plt.rcParams["font.size"])
    return ax


def _edge_set(edges):
    if edges is None:
        return None
    edges = list(edges)
    if edges and not isinstance(edges[0], (tuple, list)):            # a head list
        return {tuple(sorted((d, h))) for d, h in enumerate(edges) if h >= 0}
    return {tuple(sorted(e)) for e in edges}


def heatmap(M, labels=None, ax=None, cmap="viridis", title=None, colorbar=True, fmt=None, **kw):
    """A labelled matrix (e.g. a dependency-score matrix over a sentence's words).

    Labels are 9 pt; cell numbers (``fmt``) 8 pt, so a heatmap with numbers should take the
    column's width (or half of it for at most ~8 columns).
    """
    M = np.asarray(M, dtype=float)
    ax = _axes(ax, (min(COLUMN_IN, 0.45 * M.shape[1] + 2), 0.45 * M.shape[0] + 1))
    im = ax.imshow(M, cmap=cmap, **kw)
    ax.grid(False)
    if labels is not None:
        rows, cols = (labels, labels) if not isinstance(labels, tuple) else labels
        ax.set_xticks(range(len(cols)), cols, rotation=60, ha="right", fontsize=MIN_FONT_PT)
        ax.set_yticks(range(len(rows)), rows, fontsize=MIN_FONT_PT)
    if fmt:
        for (r, c), v in np.ndenumerate(M):
            if np.isfinite(v):
                ax.text(c, r, format(v, fmt), ha="center", va="center", fontsize=8, color="w")
    if colorbar:
        plt.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    if title:
        ax.set_title(title)
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
    ax.legend()
    if title:
        ax.set_title(title)
    return ax


def regime_map(kl, value, lo=None, hi=None, *, ax=None, truth=None, label=None, color=None, names=None,
               ylabel=None, truth_label="truth"):
    r"""A paper's quantity across the model ladder: one point per rung against its KL to the truth.

    The x-axis is the rung's mean single-site :math:`\mathrm{KL}(p\,\|\,q)` (log scale, the truth
    at the left: closer to the truth means smaller KL); error bars show ``[lo, hi]``; a dashed
    line marks the truth's own value. Call once per method on the same axes. Rung names are
    written beside their points, alternately above and below, so neighbours do not overlap.

    Parameters
    ----------
    kl, value : sequences of float (one per rung)
    lo, hi : sequences of float, optional   interval ends (e.g. 95 % bootstrap)
    truth : float, optional                 the truth's value (a reference line)
    names : sequences of str, optional      rung names, written next to the points
    """
    ax = _axes(ax, size=(COLUMN_IN, 3.4))
    kl, value = np.asarray(kl, float), np.asarray(value, float)
    order = np.argsort(kl)
    err = None
    if lo is not None and hi is not None:
        err = np.vstack([value - np.asarray(lo, float), np.asarray(hi, float) - value])[:, order]
    ax.errorbar(kl[order], value[order], yerr=err, fmt="o-", capsize=3, label=label, color=color, lw=1.2)
    if names is not None:
        names = np.asarray(list(names), dtype=object)
        for rank, k in enumerate(order):
            dy = 5 if rank % 2 == 0 else -11
            ax.annotate(names[k], (kl[k], value[k]), textcoords="offset points", xytext=(4, dy),
                        fontsize=MIN_FONT_PT, color="0.3")
    if truth is not None:
        ax.axhline(truth, ls="--", color=PALETTE["truth"], lw=1, label=truth_label)
    ax.set_xscale("log")
    ax.set_xlabel("mean single-site KL to the truth (nats, log scale)")
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.2)
    return ax
