"""The book's figure style records what the site check needs, and keeps tick text and legends readable:
log-axis ticks in plain numbers (no 6.3-pt mathtext exponent), the smallest tick glyph and the data
points under a legend recorded in the PNG, and a legend placed off the data."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.ticker import LogFormatterSciNotation  # noqa: E402

from mlmbook import plotting  # noqa: E402
from mlmbook.plotting.record import (  # noqa: E402
    legend_overlaps,
    png_record,
    rendered_text_px,
    smallest_glyph_pt,
)


@pytest.fixture(autouse=True)
def style():
    plotting.use_style()
    yield
    plt.close("all")


def _record(fig):
    return png_record(plotting.figure_png(fig)[0])


def test_log_ticks_are_plain_numbers_at_the_tick_size():
    fig, ax = plotting.figure()
    ax.semilogy([1, 2, 3], [1e-4, 1e-2, 1])
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert "0.01" in labels and "1" in labels and not any("$" in t for t in labels)
    record = _record(fig)
    assert record["min_tick_pt"] == plotting.MIN_FONT_PT
    shown = rendered_text_px(record["min_tick_pt"], record["dpi"], record["width"],
                             record["width"] * plotting.COLUMN_PX / (plotting.COLUMN_IN * 200))
    assert shown >= plotting.MIN_TEXT_PX


def test_a_mathtext_exponent_is_recorded_at_its_drawn_size():
    """matplotlib's own log labels draw "10^{-2}" with its exponent at 0.7 of the tick size: 8.6 px."""
    fig, ax = plotting.figure()
    ax.semilogy([1, 2, 3], [1e-4, 1e-2, 1])
    ax.yaxis.set_major_formatter(LogFormatterSciNotation())
    record = _record(fig)
    assert record["min_tick_pt"] == pytest.approx(0.7 * plotting.MIN_FONT_PT)
    assert record["min_font_pt"] == plotting.MIN_FONT_PT                # the font size alone misses it
    t = plt.figure().text(0, 0, r"$x_i$", fontsize=10)
    assert smallest_glyph_pt(t) == pytest.approx(7.0)


@pytest.mark.parametrize("x, text", [(1e-6, "1e-6"), (2e-5, "2e-5"), (1e-4, "0.0001"), (0.02, "0.02"),
                                     (1.0, "1"), (20.0, "20"), (1e3, "1,000"), (1e4, "10,000"), (3e6, "3e6")])
def test_log_tick_text(x, text):
    assert plotting.log_tick_text(x) == text


def test_a_legend_over_a_curve_is_counted_and_place_legend_moves_it_off():
    fig, ax = plotting.figure()
    ax.plot(np.linspace(0, 1, 50), np.linspace(0, 1, 50), "o-", label="a rising curve")
    ax.legend(loc="center")
    fig.draw_without_rendering()
    assert legend_overlaps(fig) > 0 and _record(fig)["legend_over_data"] > 0
    legend = plotting.place_legend(ax)
    assert legend_overlaps(fig, [legend]) == 0 and _record(fig)["legend_over_data"] == 0


def test_reference_lines_count_and_a_full_axes_sends_the_legend_outside():
    fig, ax = plotting.figure()
    ax.bar(range(8), np.ones(8), label="bars")
    ax.axhline(0.5, ls="--", label="a reference")
    legend = plotting.place_legend(ax)
    fig.draw_without_rendering()
    box = legend.get_window_extent(fig.canvas.get_renderer())
    assert box.x0 >= ax.bbox.x1 - 1 and legend_overlaps(fig, [legend]) == 0      # outside, to the right
    fig2, ax2 = plotting.figure()
    ax2.axhline(0.5, label="a reference across the axes")
    ax2.set_ylim(0, 1)
    ax2.legend(loc="center left")
    fig2.draw_without_rendering()
    assert legend_overlaps(fig2) > 0


def _cluster():
    """Eight labelled points with error bars, close together (chapter 3's budget figure: Fig. 3.10)."""
    rng = np.random.default_rng(0)
    names = ["default", "h32", "h64", "h128", "noise 0.1", "noise 0.3", "span", "twin"]
    xy = [(0.05 + 0.004 * i + rng.normal(0, 0.002), 0.01 + rng.normal(0, 0.003)) for i in range(len(names))]
    fig, ax = plotting.figure(height=3.2)
    for x, y in xy:
        ax.errorbar(x, y, xerr=0.003, yerr=0.006, fmt="o", capsize=2)
    ax.axhline(0, color="gray", lw=0.8)
    ax.margins(0.15)
    return fig, ax, xy, names


def test_point_labels_over_data_are_counted_and_place_labels_sets_them_apart():
    """Labels at one fixed offset pile on error bars and on each other, and the PNG's record says so;
    plotting.place_labels puts every label where it covers no point, bar or label (record 0)."""
    fig, ax, xy, names = _cluster()
    for (x, y), name in zip(xy, names):
        ax.annotate(name, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=9)
    assert _record(fig)["labels_over_data"] > 0
    fig, ax, xy, names = _cluster()
    labels = plotting.place_labels(ax, xy, names)
    assert [t.get_text() for t in labels] == names
    assert _record(fig)["labels_over_data"] == 0
