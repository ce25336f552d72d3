"""The browser check has teeth: each problem it looks for, shown on a doctored copy of a tiny site.

The tiny site is rendered once (module fixture) with the book's own ``_config.yml`` (offline
MathJax, chapters numbered from 0, sphinx-exercise) through :func:`mlmbook.pipeline.site.render`;
it passes the check as built, and each test breaks one copy of it in one way.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from mlmbook.pipeline.sitecheck import check_site

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

TOC = """\
format: jb-book
root: book/intro
parts:
  - caption: Chapters
    numbered: true
    chapters:
      - file: book/00_tiny
      - file: book/01_tiny
"""
INTRO = """\
# A tiny book

A formula in the text, $q(x_i \\mid x_{\\setminus i})$, and an HTML table:

<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>
"""
CHAPTER0 = """\
# Tiny zero

The conditional of one site given the others:

$$
q(x_i \\mid x_{\\setminus i}) = \\frac{p(x)}{\\sum_{y} p(x_{\\setminus i}, y)}
$$ (eq-tiny)

```{figure} dot.png
:name: fig-tiny

A captioned figure: one dot.
```

```python
print("short code")
```

```{exercise}
:label: ex-tiny

Show that {eq}`eq-tiny` sums to one.
```
"""
CHAPTER1 = """\
# Tiny one

See {numref}`fig-tiny`, {numref}`ex-tiny` and equation {eq}`eq-tiny` of {doc}`00_tiny`.
"""




@pytest.fixture(scope="module")
def tiny_site(tmp_path_factory):
    """Render the tiny book with the book's configuration; returns its ``html`` folder."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mlmbook.pipeline.chapters import Layout
    from mlmbook.pipeline.site import render

    root = tmp_path_factory.mktemp("tiny")
    (root / "book").mkdir()
    shutil.copy2(ROOT / "_config.yml", root / "_config.yml")
    shutil.copy2(ROOT / "book" / "references.bib", root / "book" / "references.bib")
    (root / "_toc.yml").write_text(TOC)
    for name, text in (("intro", INTRO), ("00_tiny", CHAPTER0), ("01_tiny", CHAPTER1)):
        (root / "book" / f"{name}.md").write_text(text)
    fig, ax = plt.subplots(figsize=(2, 1))
    ax.plot([0], [0], "o")
    fig.savefig(root / "book" / "dot.png", dpi=50)
    plt.close(fig)
    old = os.environ.get("MLMBOOK_BUILD")
    os.environ["MLMBOOK_BUILD"] = str(root / "_build")
    try:
        render(Layout(root), root)
    finally:
        if old is None:
            os.environ.pop("MLMBOOK_BUILD", None)
        else:
            os.environ["MLMBOOK_BUILD"] = old
    return root / "_build" / "html"


def _doctored(site: Path, tmp_path: Path, page: str = "book/00_tiny.html", insert: str = "",
              edit=None) -> Path:
    """A copy of ``site`` with ``insert`` placed after the title of ``page`` (or ``edit`` applied)."""
    html = tmp_path / "html"
    shutil.copytree(site, html)
    path = html / page
    text = path.read_text(encoding="utf-8")
    if edit:
        new = edit(text)
    else:  # after the page title inside the article (the theme has a hidden <h1> before it)
        at = text.index("</h1>", text.index('<article class="bd-article"')) + len("</h1>")
        new = text[:at] + insert + text[at:]
    assert new != text, "the doctoring changed nothing"
    path.write_text(new, encoding="utf-8")
    return html


def test_tiny_site_passes_and_numbers_from_chapter_zero(tiny_site, chromium, tmp_path):
    problems = check_site(tiny_site, tmp_path / "shots", chapters_need_explorer=False)
    assert problems == []
    assert (tmp_path / "shots" / "book__00_tiny.png").is_file()
    one = (tiny_site / "book" / "01_tiny.html").read_text(encoding="utf-8")
    assert "Fig. 0.1" in one or "Figure 0.1" in one, "figures are not numbered per chapter from 0"
    assert "Exercise 0.1" in one, "exercises are not numbered per chapter from 0"
    assert "(0.1)" in one, "equations are not numbered per chapter from 0"
    assert (tiny_site / "_static" / "mathjax" / "tex-chtml.js").is_file()


def test_raw_table_pipes_fail(tiny_site, chromium, tmp_path):
    html = _doctored(tiny_site, tmp_path, insert="<p>| parser | UUAS |\n|---|---|\n| a | 0.5 |</p>")
    problems = check_site(html, None, chapters_need_explorer=False)
    assert any("00_tiny" in p and "raw pipes" in p for p in problems), problems


def test_tex_left_in_the_text_fails(tiny_site, chromium, tmp_path):
    html = _doctored(tiny_site, tmp_path, insert=r"<p>the model \(q(x_i)\) in raw TeX</p>")
    problems = check_site(html, None, chapters_need_explorer=False)
    assert any("00_tiny" in p and "unrendered math" in p for p in problems), problems


def test_math_without_a_local_mathjax_fails(tiny_site, chromium, tmp_path):
    html = tmp_path / "html"
    shutil.copytree(tiny_site, html)
    shutil.rmtree(html / "_static" / "mathjax")
    problems = check_site(html, None, chapters_need_explorer=False)
    assert any("00_tiny" in p and "unrendered math" in p for p in problems), problems
    assert any("intro" in p and "unrendered math" in p for p in problems), problems


def test_mathjax_from_a_cdn_fails(tiny_site, chromium, tmp_path):
    cdn = "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-chtml.js"
    html = _doctored(tiny_site, tmp_path, edit=lambda t: t.replace("../_static/mathjax/tex-chtml.js", cdn))
    problems = check_site(html, None, chapters_need_explorer=False)
    assert any("00_tiny" in p and "request to another host" in p and "jsdelivr" in p for p in problems), problems
    assert any("00_tiny" in p and "unrendered math" in p for p in problems), problems


def test_figure_without_caption_fails(tiny_site, chromium, tmp_path):
    def uncaption(text):
        start = text.index("<figcaption")
        return text[:start] + text[text.index("</figcaption>") + len("</figcaption>"):]
    html = _doctored(tiny_site, tmp_path, edit=uncaption)
    problems = check_site(html, None, chapters_need_explorer=False)
    assert any("00_tiny" in p and "without a caption" in p for p in problems), problems


def test_unnumbered_figure_on_a_chapter_fails(tiny_site, chromium, tmp_path):
    image = next(p.name for p in (tiny_site / "_images").iterdir())
    html = _doctored(tiny_site, tmp_path, insert=f'<figure><img src="../_images/{image}">'
                                                 '<figcaption><p>a caption, no number</p></figcaption></figure>')
    problems = check_site(html, None, chapters_need_explorer=False)
    assert any("00_tiny" in p and "without a number" in p for p in problems), problems


def test_absolute_path_and_cache_key_fail(tiny_site, chromium, tmp_path):
    html = _doctored(tiny_site, tmp_path, insert="<p>loaded /root/.cache/mlmbook/toy-e778f1e31efbc665</p>")
    problems = check_site(html, None, chapters_need_explorer=False)
    assert any("00_tiny" in p and "absolute path" in p for p in problems), problems
    assert any("00_tiny" in p and "cache key" in p for p in problems), problems


def test_overflowing_code_block_fails(tiny_site, chromium, tmp_path):
    line = "x = " + " + ".join(f"value_{i}" for i in range(60))
    html = _doctored(tiny_site, tmp_path, insert=f'<div class="highlight"><pre>{line}</pre></div>')
    problems = check_site(html, None, chapters_need_explorer=False)
    assert any("00_tiny" in p and "wider than the page" in p for p in problems), problems


def test_request_to_another_host_fails(tiny_site, chromium, tmp_path):
    html = _doctored(tiny_site, tmp_path,
                     insert='<link rel="stylesheet" href="https://fonts.example.org/font.css">')
    problems = check_site(html, None, chapters_need_explorer=False)
    assert any("00_tiny" in p and "request to another host" in p and "fonts.example.org" in p
               for p in problems), problems
