"""Issue 36's checks of ``check-site``, each failing on a doctored copy of the tiny site.

Content wider than the column (a display equation, even one that scrolls; a table that scrolls
without saying so), tick text under 10 px (a mathtext exponent on a log axis), a legend over
plotted data, the template patterns ("0.0e+00", "-0.000", "1 verdicts", "at most 1 verdict",
doubled words, plain-text math) and a chapter page longer than 12 screens.
"""
from __future__ import annotations

import base64

import pytest

from mlmbook.pipeline.sitecheck import MAX_SCREENS, SCREEN_PX
from tests.pipeline.tiny_site import check, doctored

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_browser")]


def _ours(problems, what):
    return [p for p in problems if "00_tiny" in p and what in p]


def test_an_equation_wider_than_the_column_fails_even_when_it_scrolls(tiny_site, chromium, tmp_path):
    """The book's CSS lets a display equation scroll in its own box: a reader still loses its end."""
    terms = " + ".join(f"a_{{{k}}}" for k in range(90))
    html = doctored(tiny_site, tmp_path, insert=f'<div class="math notranslate nohighlight">\\[{terms}\\]</div>')
    found = _ours(check(html), "display equation wider than the column")
    assert len(found) == 1, found


def test_a_wide_table_scrolling_without_a_mark_fails(tiny_site, chromium, tmp_path):
    cells = "".join(f"<td>column {k}</td>" for k in range(40))
    html = doctored(tiny_site, tmp_path, insert=f'<div style="overflow-x:auto"><table><tr>{cells}</tr></table></div>'
                                                f'<div class="mlmbook-scroll"><table><tr>{cells}</tr></table></div>')
    problems = [p for p in check(html) if "table" in p]
    for width in ([p for p in problems if "at 390 px" not in p], [p for p in problems if "at 390 px" in p]):
        assert len(width) == 1 and "scrolls sideways without saying so" in width[0], problems   # 1280 and 390


def test_a_narrow_table_in_a_scroll_box_passes(tiny_site, chromium, tmp_path):
    html = doctored(tiny_site, tmp_path, insert='<div style="overflow-x:auto"><table><tr><td>1</td></tr></table></div>')
    assert not [p for p in check(html) if "table" in p]


def _png(log_exponents: bool = False, legend_on_data: bool = False) -> tuple[str, int]:
    """A figure through the book's PNG formatter: a log axis labelled with mathtext exponents (as
    matplotlib's default does), or a legend set on a curve."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import LogFormatterSciNotation

    from mlmbook import plotting

    plotting.use_style()
    fig, ax = plotting.figure()
    x = [1, 10, 100, 1000]
    ax.plot(x, x, "o-", label="a curve through the middle")
    ax.set_xscale("log")
    ax.set_yscale("log")
    if log_exponents:
        ax.yaxis.set_major_formatter(LogFormatterSciNotation())
    if legend_on_data:
        ax.legend(loc="center")
    else:
        plotting.place_legend(ax)
    data, width = plotting.figure_png(fig)
    plt.close(fig)
    return base64.b64encode(data).decode("ascii"), width


def _figure(png: str, width: int, number: str) -> str:
    return (f'<figure><img src="data:image/png;base64,{png}" width="{width}" alt="a figure">'
            f'<figcaption><p><span class="caption-number">Fig. {number} </span>A figure.</p></figcaption></figure>')


def test_mathtext_exponents_on_a_log_axis_fail_and_the_books_ticks_pass(tiny_site, chromium, tmp_path):
    bad, good = _png(log_exponents=True), _png()
    html = doctored(tiny_site, tmp_path, insert=_figure(*bad, "0.8") + _figure(*good, "0.9"))
    problems = check(html)
    found = _ours(problems, "tick text")
    assert len(found) == 1 and "under 10 px" in found[0], problems
    assert not _ours(problems, "legend over")


def test_a_legend_over_data_fails(tiny_site, chromium, tmp_path):
    html = doctored(tiny_site, tmp_path, insert=_figure(*_png(legend_on_data=True), "0.8"))
    found = _ours(check(html), "a legend over")
    assert len(found) == 1 and "place_legend" in found[0], found


def test_template_patterns_fail(tiny_site, chromium, tmp_path):
    insert = ("<p>The readings add up (relative difference 0.0e+00, rounding).</p>"
              "<p>The gain is -0.000 [-0.048, +0.035] nats.</p>"
              "<p>The chapter states at most 1 verdict.</p>"
              "<p>There are 1 verdicts on the page.</p>"
              "<p>We compare the the two models.</p>"
              "<p>The cost is m H_m passes, about n log n in all.</p>"
              "<p>The effect of interest is 0.00753365 nats; only 0% of the nmod edges are found.</p>"
              "<p>The span routes lead on 3 of the 3 seeds, by 0.000 [0.000, 0.001].</p>")
    problems = check(doctored(tiny_site, tmp_path, insert=insert))
    for what in ("zero in exponent notation", "a negative zero", "a template count", "a count of one with a plural",
                 "a doubled word", "math written as plain text", "an unrounded number", "a share of 0%",
                 "'N of the N'", "rounded to zero"):
        assert _ours(problems, what), (what, problems)


def test_numbers_that_look_like_templates_but_are_not_pass(tiny_site, chromium, tmp_path):
    """No false alarms: a negative interval end, 0.1 of a verdict, 'Figure 1 shows', code names."""
    insert = ("<p>The interval is [−0.048, +0.035] and 1e-05 is small; Figure 1 shows 10.1 verdicts per page.</p>"
              "<p>2 of the 3 seeds, 10% and 50 % of pairs, 0.001 [0.000, 0.004], 3.14159 and 0.12345.</p>"
              "<p>Set <code>allow_unknown</code> and <code>p_T</code> in code; at most one verdict; 1 verdict.</p>"
              "<p>doi:10.3115/1218955.1219016</p>"                   # a DOI is not an unrounded number
              "<table><tr><td>0.0520</td><td>164</td><td>100</td></tr></table>")   # cells read apart
    problems = check(doctored(tiny_site, tmp_path, insert=insert))
    assert problems == [], problems


def test_a_chapter_page_longer_than_twelve_screens_fails(tiny_site, chromium, tmp_path):
    tall = MAX_SCREENS * SCREEN_PX + 100
    problems = check(doctored(tiny_site, tmp_path, insert=f'<div style="height:{tall}px"></div>'))
    found = _ours(problems, "screens long")
    assert len(found) == 1 and f"over {MAX_SCREENS}" in found[0], problems
    # the same height on a page outside the chapters is not a chapter page: no length limit
    intro = doctored(tiny_site, tmp_path / "intro", page="book/intro.html",
                     insert=f'<div style="height:{tall}px"></div>')
    assert not [p for p in check(intro) if "screens long" in p]


# ------------------------------------------------------------------ a phone (issue 43)

def _phone(problems, what):
    return [p for p in _ours(problems, what) if "at 390 px" in p]


def test_at_a_phones_width_small_figure_text_needs_a_tap_that_enlarges_it(tiny_site, chromium, tmp_path):
    """A column-width figure shows its 9-pt text at about 6 px on a phone: a figure the book's script
    makes tappable passes (the check taps it and measures the full-size view); one it cannot fails."""
    png, width = _png()
    tappable = _figure(png, width, "0.8")
    untappable = (_figure(png, width, "0.9").replace("<img", '<a href="#fig-x"><img')   # a link: no tap view
                  .replace('figure">', 'figure"></a>', 1))
    html = doctored(tiny_site, tmp_path, insert=tappable + untappable)
    problems = check(html)
    found = _phone(problems, "figure text")
    assert len(found) == 1 and "under 9 px" in found[0] and "tap" in found[0], problems
    assert not [p for p in _ours(problems, "figure text") if "at 390 px" not in p], problems   # 1280 px: fine


def test_at_a_phones_width_a_wide_equation_scrolls_with_a_cue(tiny_site, chromium, tmp_path):
    """An equation that fits the column at 1280 px scrolls on a phone: with its "scroll sideways" cue it
    passes; with the cue hidden it fails."""
    terms = " + ".join(f"a_{{{k}}}" for k in range(10, 22))
    eq = f'<div class="math notranslate nohighlight">\\[{terms}\\]</div>'
    assert not _ours(check(doctored(tiny_site, tmp_path / "cue", insert=eq)), "display equation")
    hidden = "<style>.mlmbook-scroll.mlmbook-overflowing::before{content:none!important}</style>"
    problems = check(doctored(tiny_site, tmp_path / "none", insert=hidden + eq))
    found = _ours(problems, "display equation")
    assert len(found) == 1 and "at 390 px" in found[0] and "without saying so" in found[0], problems


def test_at_a_phones_width_nothing_runs_past_the_right_edge(tiny_site, chromium, tmp_path):
    insert = '<p><span style="white-space:nowrap">' + "x" * 70 + "</span></p>"
    problems = check(doctored(tiny_site, tmp_path, insert=insert))
    found = _phone(problems, "past the right edge")
    assert len(found) == 1 and "xxxx" in found[0], problems
    assert not [p for p in _ours(problems, "past the right edge") if "at 390 px" not in p], problems
