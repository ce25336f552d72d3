"""The browser check has teeth: each problem it looks for, shown on a doctored copy of a tiny site.

The tiny site is rendered once (the session fixture ``tiny_site``, ``tests/pipeline/tiny_site.py``)
with the book's own ``_config.yml`` (offline MathJax, chapters numbered from 0, sphinx-exercise)
through :func:`mlmbook.pipeline.site.render`;
it passes the check as built, and each test breaks one copy of it in one way.
"""
from __future__ import annotations

import shutil

import pytest

from mlmbook.pipeline.sitecheck import check_site
from tests.pipeline.tiny_site import check
from tests.pipeline.tiny_site import doctored as _doctored

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_browser")]


def test_tiny_site_passes_and_numbers_from_chapter_zero(tiny_site, chromium, tmp_path):
    problems = check_site(tiny_site, tmp_path / "shots", chapters_need_explorer=False)
    assert problems == []
    assert (tmp_path / "shots" / "book__00_tiny.png").is_file()
    one = (tiny_site / "book" / "01_tiny.html").read_text(encoding="utf-8")
    assert "Fig. 0.1" in one or "Figure 0.1" in one, "figures are not numbered per chapter from 0"
    assert "Exercise 0.1" in one, "exercises are not numbered per chapter from 0"
    assert "(0.1)" in one, "equations are not numbered per chapter from 0"
    assert (tiny_site / "_static" / "mathjax" / "tex-chtml.js").is_file()
    assert "unpkg.com" not in one, "the unused Thebe CDN address is still in the page"


def test_raw_table_pipes_fail(tiny_site, chromium, tmp_path):
    html = _doctored(tiny_site, tmp_path, insert="<p>| parser | UUAS |\n|---|---|\n| a | 0.5 |</p>")
    problems = check(html)
    assert any("00_tiny" in p and "raw pipes" in p for p in problems), problems


def test_tex_left_in_the_text_fails(tiny_site, chromium, tmp_path):
    html = _doctored(tiny_site, tmp_path, insert=r"<p>the model \(q(x_i)\) in raw TeX</p>")
    problems = check(html)
    assert any("00_tiny" in p and "unrendered math" in p for p in problems), problems


def test_math_without_a_local_mathjax_fails(tiny_site, chromium, tmp_path):
    html = tmp_path / "html"
    shutil.copytree(tiny_site, html)
    shutil.rmtree(html / "_static" / "mathjax")
    problems = check(html)
    assert any("00_tiny" in p and "unrendered math" in p for p in problems), problems
    assert any("intro" in p and "unrendered math" in p for p in problems), problems


def test_mathjax_from_a_cdn_fails(tiny_site, chromium, tmp_path):
    cdn = "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-chtml.js"
    html = _doctored(tiny_site, tmp_path, edit=lambda t: t.replace("../_static/mathjax/tex-chtml.js", cdn))
    problems = check(html)
    assert any("00_tiny" in p and "request to another host" in p and "jsdelivr" in p for p in problems), problems
    assert any("00_tiny" in p and "unrendered math" in p for p in problems), problems


def test_figure_without_caption_fails(tiny_site, chromium, tmp_path):
    def uncaption(text):
        start = text.index("<figcaption")
        return text[:start] + text[text.index("</figcaption>") + len("</figcaption>"):]
    html = _doctored(tiny_site, tmp_path, edit=uncaption)
    problems = check(html)
    assert any("00_tiny" in p and "without a caption" in p for p in problems), problems


def test_unnumbered_figure_on_a_chapter_fails(tiny_site, chromium, tmp_path):
    image = next(p.name for p in (tiny_site / "_images").iterdir())
    html = _doctored(tiny_site, tmp_path, insert=f'<figure><img src="../_images/{image}">'
                                                 '<figcaption><p>a caption, no number</p></figcaption></figure>')
    problems = check(html)
    assert any("00_tiny" in p and "without a number" in p for p in problems), problems


def test_absolute_path_and_cache_key_fail(tiny_site, chromium, tmp_path):
    html = _doctored(tiny_site, tmp_path, insert="<p>loaded /root/.cache/mlmbook/toy-e778f1e31efbc665</p>")
    problems = check(html)
    assert any("00_tiny" in p and "absolute path" in p for p in problems), problems
    assert any("00_tiny" in p and "cache key" in p for p in problems), problems


def test_overflowing_code_block_fails(tiny_site, chromium, tmp_path):
    line = "x = " + " + ".join(f"value_{i}" for i in range(60))
    html = _doctored(tiny_site, tmp_path, insert=f'<div class="highlight"><pre>{line}</pre></div>')
    problems = check(html)
    assert any("00_tiny" in p and "wider than the page" in p for p in problems), problems


def test_request_to_another_host_fails(tiny_site, chromium, tmp_path):
    html = _doctored(tiny_site, tmp_path,
                     insert='<link rel="stylesheet" href="https://fonts.example.org/font.css">')
    problems = check(html)
    assert any("00_tiny" in p and "request to another host" in p and "fonts.example.org" in p
               for p in problems), problems


# --------------------------------------------------------------------------- issue 26: what a reader meets

def test_figure_text_shrunk_below_ten_pixels_fails(tiny_site, chromium, tmp_path):
    """dot.png's 9-pt ticks are 25 px at its natural size; shown 90 px wide they are under 6 px."""
    html = _doctored(tiny_site, tmp_path, edit=lambda t: t.replace('<img alt=', '<img style="width:90px" alt=', 1))
    problems = check(html)
    assert any("00_tiny" in p and "figure text" in p and "under 10 px" in p for p in problems), problems


def test_a_table_clipped_at_its_right_edge_fails(tiny_site, chromium, tmp_path):
    cells = "".join(f"<td>column {k}</td>" for k in range(40))
    html = _doctored(tiny_site, tmp_path, insert=f'<div style="overflow:hidden;width:300px"><table><tr>{cells}'
                                                 '</tr></table></div>')
    problems = check(html)
    assert any("00_tiny" in p and "a table clipped at the right edge" in p for p in problems), problems


def test_a_table_wider_than_the_column_fails_and_one_that_scrolls_passes(tiny_site, chromium, tmp_path):
    """Past the column: fails; scrolling in a box marked as scrolling (mlmbook.tables.table's): passes."""
    cells = "".join(f"<td>column {k}</td>" for k in range(40))
    html = _doctored(tiny_site, tmp_path,
                     insert=f"<table><tr>{cells}</tr></table>"
                            f'<div class="mlmbook-table-wrap mlmbook-scroll"><table><tr>{cells}</tr></table></div>')
    problems = [p for p in check(html) if "table" in p]
    wide = [p for p in problems if "at 390 px" not in p]
    assert len(wide) == 1 and "running past the column" in wide[0], problems
    phone = [p for p in problems if "at 390 px" in p]
    assert len(phone) == 1 and "running past the column" in phone[0], problems   # not reported twice


def test_a_display_equation_clipped_at_its_right_edge_fails(tiny_site, chromium, tmp_path):
    terms = " + ".join(f"a_{{{k}}}" for k in range(90))
    html = _doctored(tiny_site, tmp_path, insert='<style>mjx-container{overflow:hidden!important}</style>'
                                                 f'<div class="math notranslate nohighlight">\\[{terms}\\]</div>')
    problems = check(html)
    assert any("00_tiny" in p and "display equation wider than the column" in p for p in problems), problems


def test_not_drawn_beside_a_drawn_figure_fails(tiny_site, chromium, tmp_path):
    marked = ('<p>As <span class="mlmbook-undrawn" data-figure="fig-tiny">a figure that is not drawn for this '
              'model</span> shows.</p><p>Plain: a figure that is not drawn for this model, again.</p>')
    problems = check(_doctored(tiny_site, tmp_path, insert=marked))
    drawn = [p for p in problems if "00_tiny" in p and "but it is drawn on the page" in p]
    assert any("fig-tiny" in p for p in drawn) and any("(unmarked)" in p for p in drawn), problems


def test_log_lines_printed_dicts_and_noqa_fail(tiny_site, chromium, tmp_path):
    insert = ('<div class="cell_output"><pre>training took 12.3 s</pre></div>'
              "<div class=\"cell_output\"><pre>p(verb | ...): {'bark': 0.41, 'barks': 0.0}</pre></div>"
              '<div class="cell_input"><pre>import numpy  # noqa: F401</pre></div>'
              '<div class="cell_output"><pre>uuas MLM vs CPMI → above</pre></div>')
    problems = check(_doctored(tiny_site, tmp_path, insert=insert))
    for what in ("a log line", "a printed dict", "# noqa", "a printed verdict log line"):
        assert any("00_tiny" in p and what in p for p in problems), (what, problems)


def test_template_residue_fails(tiny_site, chromium, tmp_path):
    insert = ("<p>On 1 training seed(s): inf [inf, inf], sharpened as p^(1/T).</p>"
              "<p><strong>The whole of this paragraph is bold, every word of it, and then</strong> one.</p>")
    problems = check(_doctored(tiny_site, tmp_path, insert=insert))
    for what in ("template plural", "nan or inf", "math written as plain text", "almost entirely bold"):
        assert any("00_tiny" in p and what in p for p in problems), (what, problems)


def test_indistinguishable_without_its_detectable_effect_fails(tiny_site, chromium, tmp_path):
    bare = "<p>The two parsers are statistically indistinguishable from. Then the next sentence.</p>"
    full = ("<p>The two parsers are indistinguishable (a difference of 0.012 nats or more would have been "
            "detected (80 % power at the 99.8 % level)). Then the next sentence.</p>")
    table = ("<table><tr><th>difference</th><th>verdict (detectable at 80 % power)</th></tr>"
             "<tr><td>AG − HCB</td><td>+0.01 [-0.02, +0.04]: indistinguishable; detectable 0.05</td></tr>"
             "<tr><td>AG − MRF</td><td>+0.01 [-0.02, +0.04]: indistinguishable here</td></tr></table>")
    problems = check(_doctored(tiny_site, tmp_path, insert=bare + full + table))
    found = [p for p in problems if "indistinguishable" in p]
    assert len(found) == 2 and all("00_tiny" in f for f in found), problems
    assert any("statistically indistinguishable from." in f for f in found), problems
    assert any("indistinguishable here" in f for f in found), problems       # a table cell without its effect


def test_a_chapter_card_below_the_fold_fails(tiny_site, chromium, tmp_path):
    problems = check(_doctored(tiny_site, tmp_path, insert='<div style="height:1500px"></div>'))
    assert any("00_tiny" in p and "time card" in p and "not on the first screen" in p for p in problems), problems
    assert any("00_tiny" in p and "learning objectives" in p for p in problems), problems


def test_a_code_line_too_long_for_common_fonts_fails(tiny_site, chromium, tmp_path):
    """Measured at the 0.6-em advance of common monospace fonts, whatever fonts the checker has."""
    line = "x" * 95                            # 95 x 0.6 x 12 px = 684 px in a 660-px box
    insert = f'<div class="highlight"><pre>{line}</pre></div>'
    problems = check(_doctored(tiny_site, tmp_path, insert=insert))
    assert any("00_tiny" in p and "wider than the page" in p for p in problems), problems
