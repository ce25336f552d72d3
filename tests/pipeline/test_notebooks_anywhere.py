"""The launch/download notebooks run outside the site: numbers written in, an install cell first."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from mlmbook.pipeline.site import repository_url, runnable_notebook, unlink_missing

ROOT = Path(__file__).resolve().parents[2]


def _executed_like(markdown: str, glued: dict) -> nbformat.NotebookNode:
    """A small 'executed' notebook: one markdown cell and the glue outputs myst-nb would leave."""
    outputs = [nbformat.v4.new_output("display_data", data={"text/plain": repr(v)},
                                      metadata={"scrapbook": {"name": k, "mime_prefix": ""}})
               for k, v in glued.items()]
    code = nbformat.v4.new_code_cell("record(...)", outputs=outputs)
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(markdown), code])


def test_glue_roles_become_the_values_and_an_install_cell_comes_first():
    nb = _executed_like("UUAS is {glue:text}`uuas:.3f`, the test is {glue:text}`alt`, "
                        "and {glue}`n` sentences.", {"uuas": 0.71234, "alt": "less", "n": 40})
    out = runnable_notebook(nb, "https://example.org/owner/repo")
    text = out.cells[1].source
    assert "{glue" not in text
    assert text == "UUAS is 0.712, the test is less, and 40 sentences."
    first = out.cells[0]
    assert first.cell_type == "code" and "mlmbook-install" in first.metadata["tags"]
    assert "git+https://example.org/owner/repo@main" in first.source
    assert "{glue" in nb.cells[0].source, "the executed notebook itself must not change"
    nbformat.validate(out)


def test_an_unglued_key_is_named_not_left_as_a_role():
    out = runnable_notebook(_executed_like("x = {glue:text}`missing:.2f`.", {}), "https://e.org/r")
    assert out.cells[1].source == "x = `missing`."


def test_the_repository_is_named_once_in_the_config():
    from mlmbook.pipeline.chapters import Layout

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert repository_url(Layout(ROOT)) == config["repository"]["url"].rstrip("/")


def test_references_into_a_dropped_chapter_become_text():
    text = ("see {numref}`ex2-pivot`, {ref}`the pivot <ex2-pivot>`, {doc}`02_joints` "
            "and {numref}`ex1-kept`")
    out = unlink_missing(text, {"ex2-pivot"}, {"02_joints"})
    assert out == "see `ex2-pivot` (not in this build), the pivot, `02_joints` (not in this build) " \
                  "and {numref}`ex1-kept`"


def test_the_teachers_page_lists_every_chapters_exercises():
    """The teachers' page holds the marker the build replaces by the generated table, and that
    table links every exercise of every chapter, each to a label the chapter defines."""
    import re

    from mlmbook.pipeline.chapters import Layout, find_chapters
    from mlmbook.pipeline.pages import EXERCISES_MARKER, exercise_table
    from mlmbook.pipeline.site import _labels

    assert EXERCISES_MARKER in (ROOT / "book" / "for_teachers.md").read_text()
    chapters = [(c.slug, c.title, c.path.read_text()) for c in find_chapters(Layout(ROOT))]
    table = exercise_table(chapters)
    defined = set().union(*(_labels(text) for _, _, text in chapters))
    cited = re.findall(r"\{numref\}`([^`<>]+)`", table)
    declared = set().union(*(re.findall(r"\{exercise\}[^\n]*\n:label:\s*(\S+)", text) for _, _, text in chapters))
    assert cited and set(cited) <= defined and set(cited) == declared


MYST = """\
(sec-x)=
## A section

See {numref}`fig-a`, {numref}`Figure %s <fig-a>`, equation {eq}`eq-a`, {cite:t}`devlin2019bert`,
{cite}`devlin2019bert,lari1990estimation`, {term}`the MLM <Masked language model>`, {doc}`00_toy_world`,
{ref}`sec-x` and {math}`x_i`.

$$
p(x) = 1
$$ (eq-a)

```{admonition} Learning objectives
:class: tip

1. one
```

:::{note}
A note with `code`.
:::

```{exercise} Core: a title
:label: ex-a

Do it.
```

```{solution} ex-a
:class: dropdown

Done.
```

```python
{numref}`left-alone-in-code`
```
"""


def _chapter_like():
    figure = nbformat.v4.new_code_cell("plt.show()", metadata={"mystnb": {"figure": {
        "name": "fig-a", "caption": "A figure, see {cite:t}`devlin2019bert`."}}})
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Zero"), figure,
                                         nbformat.v4.new_markdown_cell(MYST)])
    nb.metadata["papermill"] = {"input_path": "book/00_toy_world.md"}
    return nb


def test_myst_becomes_plain_markdown_with_the_sites_numbers():
    from mlmbook.pipeline.notebooks import context_for

    nb = _chapter_like()
    ctx = context_for({"00_toy_world": nb}, ROOT / "book")
    out = runnable_notebook(nb, "https://e.org/r", ctx)
    text = "\n".join(c.source for c in out.cells if c.cell_type == "markdown")
    for raw in ("{numref}", "{eq}", "{cite", "{term}", "{doc}", "{ref}", "{math}", "```{", ":::{", ":label:",
                "(sec-x)="):
        assert raw not in text.replace("```python\n{numref}`left-alone-in-code`\n```", ""), raw
    assert "See Figure 0.1, Figure 0.1, equation (0.1), Devlin et al. (2019)," in text
    assert "(Devlin et al., 2019; Lari and Young, 1990)" in text and "the MLM" in text
    assert "[chapter 0, *Zero*](00_toy_world.ipynb)" in text and "A section and $x_i$." in text
    assert "\\tag{0.1}" in text
    assert "> **Learning objectives**" in text and "> **Note**" in text
    assert "**Exercise 0.1** (Core: a title)" in text
    assert "<details>\n<summary>Solution to Exercise 0.1</summary>" in text and "Done." in text
    assert "{numref}`left-alone-in-code`" in text          # code blocks are copied verbatim
    assert "*Figure 0.1: A figure, see Devlin et al. (2019).*" in text
    nbformat.validate(out)


def test_gated_solutions_are_collapsed_or_removed():
    cells = [nbformat.v4.new_markdown_cell("# Zero\n\n```{exercise}\n:label: ex-b\n\nWrite it.\n```"),
             nbformat.v4.new_code_cell("def f():\n    raise NotImplementedError"),
             nbformat.v4.new_markdown_cell("```{solution-start} ex-b\n:class: dropdown\n```\n\nThe idea."),
             nbformat.v4.new_code_cell("def f():\n    return 1"),
             nbformat.v4.new_markdown_cell("```{solution-end}\n```\n\nAfter the solution.")]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["papermill"] = {"input_path": "book/00_toy_world.md"}
    full = runnable_notebook(nb, "https://e.org/r")
    sources = [c.source for c in full.cells]
    assert any(s.startswith("**Solution to Exercise 0.1** (collapsed cells") for s in sources)
    assert any("<details>" in s and "The idea." in s for s in sources)
    solution = next(c for c in full.cells if "return 1" in c.source)
    assert solution.metadata["jupyter"]["source_hidden"] and "# @title Solution to Exercise 0.1" in solution.source
    assert "After the solution." in sources[-1] and "<details>" not in sources[-1]
    student = runnable_notebook(nb, "https://e.org/r", student=True)
    text = "\n".join(c.source for c in student.cells)
    assert "return 1" not in text and "The idea." not in text and "Solution" not in text
    assert "raise NotImplementedError" in text and "After the solution." in text


def test_binder_installs_what_the_notebooks_need():
    lines = (ROOT / "binder" / "requirements.txt").read_text().splitlines()
    wanted = {line.split("#")[0].split(">=")[0].strip() for line in lines if line.strip() and not line.startswith("#")}
    assert {"ipywidgets", "jupytext", "jupyterlab-myst"} <= wanted
    assert any("download.pytorch.org/whl/cpu" in line for line in lines)     # no CUDA build of torch


@pytest.mark.slow
def test_generated_notebooks_have_no_glue_and_chapter_0_runs_from_a_fresh_kernel(quick_book, tmp_path,
                                                                                 monkeypatch):
    check_generated_notebooks(quick_book.build_dir / "notebooks", tmp_path, monkeypatch)


def check_generated_notebooks(folder: Path, tmp_path: Path, monkeypatch) -> None:
    import re


    notebooks = sorted((folder / "book").glob("*.ipynb"))
    assert any(p.stem == "00_toy_world" for p in notebooks), notebooks
    assert sorted(p.name for p in (folder / "student").glob("*.ipynb")) == [p.name for p in notebooks]
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"].rstrip("/")
    requirements = (folder / "binder" / "requirements.txt").read_text()
    assert url in requirements and "ipywidgets" in requirements
    for path in notebooks + sorted((folder / "student").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        raw = re.findall(r"\{[a-z:-]+\}`|^\s*(?:`{3,}|:{3,})\{[\w:-]+\}", markdown, re.M)
        assert not raw, f"{path.parent.name}/{path.name}: raw MyST left: {sorted(set(raw))[:5]}"
        assert "mlmbook-install" in nb.cells[0].metadata.get("tags", []) and url in nb.cells[0].source
        if path.parent.name == "student":
            assert "Solution to Exercise" not in markdown, f"{path.name}: the student edition shows a solution"
    # chapter 0 from a fresh kernel, in a folder that is not the repository, recording nothing; run by a
    # fresh Python as a reader's Jupyter would. Its cells take seconds; the cell limit is kept short
    # because twice in the suite nbclient waited out its whole limit (600 s, then 300 s) for a reply and
    # then went on and passed: a wake-up it missed, not a slow cell
    for name in ("MLMBOOK_RESULTS", "MLMBOOK_CHAPTER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MLMBOOK_THREADS", "1")
    nb = nbformat.read(folder / "book" / "00_toy_world.ipynb", as_version=4)
    assert any("quick" in c.source for c in nb.cells if "parameters" in c.metadata.get("tags", [])
               or "injected-parameters" in c.metadata.get("tags", [])), "not a quick-profile notebook"
    executed = tmp_path / "executed.ipynb"
    run = ("import sys, nbformat; from nbclient import NotebookClient; nb = nbformat.read(sys.argv[1], 4); "
           "NotebookClient(nb, timeout=120, kernel_name='python3', "
           "resources={'metadata': {'path': sys.argv[3]}}).execute(); nbformat.write(nb, sys.argv[2])")
    done = subprocess.run([sys.executable, "-c", run, str(folder / "book" / "00_toy_world.ipynb"), str(executed),
                           str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    nb = nbformat.read(executed, as_version=4)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
