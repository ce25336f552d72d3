r"""What a figure records about itself when the book saves it, for the browser check to read.

Every figure reaches the page through :func:`figure_png` (the book's PNG formatter in a notebook,
:mod:`mlmbook.widgets` for explorers), whose ``tEXt`` chunks (read by :func:`png_record`) record
``mlmbook-min-font-pt``, the smallest font (points) of any text drawn; ``mlmbook-min-tick-pt``, the
smallest *glyph* of any tick label or axis offset text, mathtext scripts included (``$10^{-2}$`` at
9 pt draws its exponent at 0.7 × 9 = 6.3 pt); ``mlmbook-legend-over-data``, how many plotted data
points lie under a legend; ``mlmbook-labels-over-data``, how many point labels cover a data point,
error bar or label; ``mlmbook-dpi`` and ``mlmbook-display-dpi``, the resolution drawn and shown at.
"""
from __future__ import annotations

import io
import struct
import zlib
from contextlib import contextmanager, suppress

import numpy as np

__all__ = ["figure_png", "png_record", "rendered_text_px", "legend_overlaps", "label_overlaps",
           "box_overlaps", "smallest_glyph_pt", "RECORD_KEYS", "PNG_DPI", "DISPLAY_DPI"]

DISPLAY_DPI = 100        # pixels per inch at which a figure is shown (6.8 in -> 680 px)
PNG_DPI = 200            # pixels per inch drawn into the PNG (2x: sharp on high-density screens)
RECORD_KEYS = ("mlmbook-min-font-pt", "mlmbook-dpi", "mlmbook-display-dpi", "mlmbook-min-tick-pt",
               "mlmbook-legend-over-data", "mlmbook-labels-over-data")
SEGMENT_STEP_PX = 2.0    # spacing of the points sampled along a line's segments


_PARSER = None


def smallest_glyph_pt(text) -> float:
    """The smallest glyph (points) a matplotlib ``Text`` draws: its font size, or for mathtext the
    size of its smallest super- or subscript."""
    size = float(text.get_fontsize())
    try:
        s, ismath = text._preprocess_math(text.get_text())
    except Exception:  # noqa: BLE001 - an odd Text subclass: its nominal size
        return size
    if not ismath or ismath == "TeX":
        return size
    global _PARSER
    if _PARSER is None:
        from matplotlib.mathtext import MathTextParser
        _PARSER = MathTextParser("path")
    try:
        parsed = _PARSER.parse(s, 72, text.get_fontproperties())
    except (ValueError, RuntimeError):
        return size
    sizes = [float(g[1]) for g in parsed.glyphs]
    return min(sizes) if sizes else size


@contextmanager
def _recording_text(fig):
    """Collect, while ``fig`` draws, the size of every text drawn (visible, non-empty) and the
    smallest glyph of every tick label and axis offset text."""
    from matplotlib.axis import Tick
    from matplotlib.text import Text

    sizes: list[float] = []
    ticks: list[float] = []
    state = {"in_tick": 0}
    offsets = {id(a.offsetText) for ax in fig.axes for a in (ax.xaxis, ax.yaxis)}
    text_draw, tick_draw = Text.draw, Tick.draw

    def draw_text(self, renderer):
        if self.get_visible() and self.get_text().strip() and renderer is not None:
            sizes.append(float(self.get_fontsize()))
            if state["in_tick"] or id(self) in offsets:
                ticks.append(smallest_glyph_pt(self))
        return text_draw(self, renderer)

    def draw_tick(self, renderer):
        state["in_tick"] += 1
        try:
            return tick_draw(self, renderer)
        finally:
            state["in_tick"] -= 1

    Text.draw, Tick.draw = draw_text, draw_tick
    try:
        yield sizes, ticks
    finally:
        Text.draw, Tick.draw = text_draw, tick_draw


def _renderer(fig):
    """The canvas's renderer; the figure's own where the canvas has none (pdf, svg)."""
    return getattr(fig.canvas, "get_renderer", fig._get_renderer)()


def _along(xy: np.ndarray, step: float = SEGMENT_STEP_PX) -> np.ndarray:
    """``xy`` (display) with points every ``step`` px along each segment between finite vertices."""
    out = [xy]
    for a, b in zip(xy[:-1], xy[1:]):
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
            continue
        n = int(np.hypot(*(b - a)) // step)
        if n > 1:
            t = np.linspace(0, 1, n + 1)[1:-1, None]
            out.append(a + t * (b - a))
    return np.concatenate(out)


def _data_points(ax) -> tuple[np.ndarray, list]:
    """Display coordinates of what ``ax`` plots inside it: every line's vertices (``axhline``
    included) and points every 2 px along a styled line's segments, scatter points, error bar
    segments; and its data patches (bars, other patches in data coordinates; not filled bands)."""
    from matplotlib.collections import LineCollection, PathCollection

    pts = []
    for line in ax.get_lines():
        if not line.get_visible():
            continue
        xy = line.get_transform().transform(np.asarray(line.get_xydata(), float))
        drawn = line.get_linestyle() not in ("None", "none", "", " ")
        pts.append(_along(xy) if drawn and len(xy) > 1 else xy)
    for coll in ax.collections:
        if not coll.get_visible():
            continue
        if isinstance(coll, PathCollection) and coll.get_offset_transform() is ax.transData:
            pts.append(ax.transData.transform(np.asarray(coll.get_offsets(), float)))
        elif isinstance(coll, LineCollection) and coll.get_transform() is ax.transData:
            for seg in coll.get_segments():
                if len(seg):
                    pts.append(_along(ax.transData.transform(np.asarray(seg, float))))
    patches = [p for p in ax.patches if p.get_visible() and p.get_transform().contains_branch(ax.transData)]
    pts = np.concatenate(pts) if pts else np.zeros((0, 2))
    pts = pts[np.all(np.isfinite(pts), axis=1)]
    box = ax.bbox
    inside = (pts[:, 0] >= box.x0) & (pts[:, 0] <= box.x1) & (pts[:, 1] >= box.y0) & (pts[:, 1] <= box.y1)
    return pts[inside], patches


def legend_overlaps(fig, legends=None) -> int:
    """How many plotted data points (and data patches) of a laid-out ``fig`` lie under its
    ``legends`` (default: every axes' and the figure's own), counted by :func:`box_overlaps`."""
    renderer = _renderer(fig)
    if legends is None:
        legends = [ax.get_legend() for ax in fig.axes] + list(fig.legends)
    legends = [leg for leg in legends if leg is not None and leg.get_visible()]
    if not legends:
        return 0
    data = [_data_points(ax) for ax in fig.axes]
    boxes = [leg.get_window_extent(renderer) for leg in legends]
    return sum(box_overlaps(box, pts, patches, [], renderer)
               for box in boxes for pts, patches in data)


def box_overlaps(box, pts: np.ndarray, patches, boxes, renderer) -> int:
    """Data points strictly inside ``box`` (a display Bbox shrunk by 1 px), data patches overlapping
    it by more than 4 px², and other ``boxes`` overlapping it by more than 4 px²."""
    x0, y0, x1, y1 = box.x0 + 1, box.y0 + 1, box.x1 - 1, box.y1 - 1
    if x1 <= x0 or y1 <= y0:
        return 0
    count = int(np.sum((pts[:, 0] > x0) & (pts[:, 0] < x1) & (pts[:, 1] > y0) & (pts[:, 1] < y1)))
    others = [p.get_window_extent(renderer) for p in patches] + list(boxes)
    for p in others:
        w = min(p.x1, x1) - max(p.x0, x0)
        h = min(p.y1, y1) - max(p.y0, y0)
        count += int(w > 0 and h > 0 and w * h > 4)
    return count


def label_overlaps(fig) -> int:
    """How many point labels (``Annotation`` texts) of ``fig`` cover a plotted data point, an error
    bar, a data patch or another label (counted once per pair); see :func:`box_overlaps`."""
    from matplotlib.text import Annotation, Text

    fig.draw_without_rendering()  # texts placed at the figure's own dpi, not the PNG's
    renderer = _renderer(fig)
    count = 0
    for ax in fig.axes:
        labels = [t for t in ax.texts if isinstance(t, Annotation) and t.get_visible() and t.get_text().strip()]
        if not labels:
            continue
        pts, patches = _data_points(ax)
        # the words, not a leader line
        boxes = [Text.get_window_extent(t, renderer) for t in labels]
        for i, box in enumerate(boxes):
            count += box_overlaps(box, pts, patches, boxes[i + 1:], renderer)
    return count


def figure_png(fig, dpi: int = PNG_DPI) -> tuple[bytes, int]:
    """The figure as the book shows it: a PNG at ``dpi`` carrying its record (the module
    docstring's ``tEXt`` chunks), and the width to show it at (pixels at :data:`DISPLAY_DPI`)."""
    with _recording_text(fig) as (sizes, ticks):
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", pad_inches=0.05,
                    facecolor="white", metadata={"Software": None})
    try:
        over, labels = legend_overlaps(fig), label_overlaps(fig)
    except Exception:  # noqa: BLE001 - not measurable on this canvas: no record, never a failure
        over = labels = None
    record = {RECORD_KEYS[0]: f"{min(sizes) if sizes else 0.0:g}", RECORD_KEYS[1]: str(dpi),
              RECORD_KEYS[2]: str(DISPLAY_DPI)}
    if ticks:
        record[RECORD_KEYS[3]] = f"{min(ticks):g}"
    if over is not None:
        record[RECORD_KEYS[4]] = str(over)
        record[RECORD_KEYS[5]] = str(labels)
    data = _add_text_chunks(buf.getvalue(), record)
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


_FIELDS = {RECORD_KEYS[0]: ("min_font_pt", float), RECORD_KEYS[1]: ("dpi", float),
           RECORD_KEYS[3]: ("min_tick_pt", float), RECORD_KEYS[4]: ("legend_over_data", int),
           RECORD_KEYS[5]: ("labels_over_data", int)}


def png_record(data: bytes) -> dict:
    """What a PNG says about itself: ``width``, ``height`` (pixels), ``dpi`` (pHYs) and the book's
    record (``min_font_pt``, ``dpi``, ``min_tick_pt``, ``legend_over_data``), where present."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return {}
    out = dict(zip(("width", "height"), _png_size(data)))
    at = 8
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"tEXt" and b"\0" in body:
            key, value = body.split(b"\0", 1)
            field = _FIELDS.get(key.decode("latin-1"))
            if field is not None:
                with suppress(ValueError):
                    out[field[0]] = field[1](value.decode("latin-1"))
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
