"""The launch/download notebooks run outside the site: numbers written in, an install cell first."""
from __future__ import annotations

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


def test_the_teachers_page_links_to_exercises_that_exist():
    """Every {numref} of the teachers' page names an exercise label some chapter defines."""
    import re

    from mlmbook.pipeline.site import _labels

    defined = set().union(*(_labels(p.read_text()) for p in (ROOT / "book").glob("[0-9][0-9]_*.md")))
    cited = set(re.findall(r"\{numref\}`([^`<>]+)`", (ROOT / "book" / "for_teachers.md").read_text()))
    assert cited, "the teachers' page links to no exercise"
    assert cited <= defined, f"labels no chapter defines: {sorted(cited - defined)}"


@pytest.mark.slow
def test_generated_notebooks_have_no_glue_and_chapter_0_runs_from_a_fresh_kernel(quick_book, tmp_path,
                                                                                 monkeypatch):
    check_generated_notebooks(quick_book.build_dir / "notebooks", tmp_path, monkeypatch)


def check_generated_notebooks(folder: Path, tmp_path: Path, monkeypatch) -> None:
    from nbclient import NotebookClient

    notebooks = sorted((folder / "book").glob("*.ipynb"))
    assert any(p.stem == "00_toy_world" for p in notebooks), notebooks
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"].rstrip("/")
    assert url in (folder / "binder" / "requirements.txt").read_text()
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        left = [c.source for c in nb.cells if c.cell_type == "markdown" and "{glue" in c.source]
        assert not left, f"{path.name}: {len(left)} markdown cell(s) still hold a {{glue}} role"
        assert "mlmbook-install" in nb.cells[0].metadata.get("tags", []) and url in nb.cells[0].source
    # chapter 0 from a fresh kernel, in a folder that is not the repository, recording nothing
    for name in ("MLMBOOK_RESULTS", "MLMBOOK_CHAPTER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MLMBOOK_THREADS", "1")
    nb = nbformat.read(folder / "book" / "00_toy_world.ipynb", as_version=4)
    assert any("quick" in c.source for c in nb.cells if "parameters" in c.metadata.get("tags", [])
               or "injected-parameters" in c.metadata.get("tags", [])), "not a quick-profile notebook"
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
