"""A tiny book rendered with the book's own configuration, and doctored copies of it, for the browser
check's tests (the fixture ``tiny_site`` is in ``tests/pipeline/conftest.py``)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

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
CARD = """\
```{div} mlmbook-card
**About 5 minutes to read.** It runs in 1 s.
```

```{admonition} Learning objectives
:class: tip

1. read a tiny chapter.
```
"""
CHAPTER0 = """\
# Tiny zero

""" + CARD + """
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

""" + CARD + """
See {numref}`fig-tiny`, {numref}`ex-tiny` and equation {eq}`eq-tiny` of {doc}`00_tiny`.
"""


def render_tiny_site(tmp_path_factory) -> Path:
    """Render the tiny book with the book's configuration; returns its ``html`` folder."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mlmbook import plotting
    from mlmbook.pipeline.chapters import Layout
    from mlmbook.pipeline.site import render

    root = tmp_path_factory.mktemp("tiny")
    (root / "book").mkdir()
    shutil.copytree(ROOT / "book" / "_static", root / "_static")       # the book's own CSS
    shutil.copy2(ROOT / "_config.yml", root / "_config.yml")
    shutil.copy2(ROOT / "book" / "references.bib", root / "book" / "references.bib")
    (root / "_toc.yml").write_text(TOC)
    for name, text in (("intro", INTRO), ("00_tiny", CHAPTER0), ("01_tiny", CHAPTER1)):
        (root / "book" / f"{name}.md").write_text(text)
    plotting.use_style()
    fig, ax = plt.subplots(figsize=(2, 1))
    ax.plot([0], [0], "o")
    (root / "book" / "dot.png").write_bytes(plotting.figure_png(fig)[0])   # with its font record
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


_DOCTORED: dict = {}
"""A doctored copy's folder -> the one page that differs from the tiny site (:func:`check`)."""


def check(html: Path) -> list:
    """The browser check of a doctored copy, on the one page :func:`doctored` changed (every other page is
    the tiny site's own, which passes whole in its test); on the whole copy for any other folder."""
    from mlmbook.pipeline.sitecheck import check_site
    page = _DOCTORED.get(Path(html))
    return check_site(html, None, chapters_need_explorer=False, pages=[page] if page else None)


def doctored(site: Path, tmp_path: Path, page: str = "book/00_tiny.html", insert: str = "",
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
    _DOCTORED[html] = page
    return html
