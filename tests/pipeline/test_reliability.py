"""Faults during a build: a stuck cell, a killed build, a chapter whose prose cites what it never recorded.

Every case ends in a non-zero exit with the chapter (and cell or keys) named, or in a
page that says what was not measured; nothing half-written is published or shown.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from mlmbook.pipeline.checks import check_executed, clean_leftovers, glue_uses, relax_formats

FIXTURE = Path(__file__).parent.parent / "fixtures" / "book_min"
REPO = Path(__file__).parent.parent.parent


def cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items()
         if k not in ("MLMBOOK_ROOT", "MLMBOOK_CHAPTER", "MLMBOOK_RESULTS", "MLMBOOK_BUILD")}
    e.update(env)
    return subprocess.run([sys.executable, "-m", "mlmbook", *args], capture_output=True, text=True,
                          env=e, timeout=300)


@pytest.fixture
def book(tmp_path):
    root = tmp_path / "book_min"
    shutil.copytree(FIXTURE, root)
    return root


def test_a_cell_past_its_timeout_fails_the_chapter_naming_the_cell(book):
    start = time.time()
    proc = cli("build", "1", "--root", str(book), "--profile", "quick", "--no-render",
               "-p", "wait", "30", MLMBOOK_CELL_TIMEOUT="2")
    assert proc.returncode == 1, proc.stderr
    assert "chapter 01_fail failed in cell 3: the cell ran longer than 2 s (MLMBOOK_CELL_TIMEOUT)" in proc.stderr
    assert "01_fail.md line" in proc.stderr
    assert "done in" not in proc.stderr
    assert not (book / "_build" / "exec" / "01_fail.ipynb").exists()
    assert not (book / "_build" / "results" / "01_fail.json").exists()
    assert time.time() - start < 30 + 60  # stopped, not waited out


def test_bad_timeout_value_is_a_usage_error(book):
    proc = cli("build", "1", "--root", str(book), "--profile", "quick", "--no-render",
               MLMBOOK_CELL_TIMEOUT="soon")
    assert proc.returncode == 2 and "MLMBOOK_CELL_TIMEOUT='soon' is not an integer" in proc.stderr


def test_sigkill_leaves_nothing_that_looks_complete_and_the_next_run_cleans_up(book):
    build = book / "_build"
    e = {k: v for k, v in os.environ.items() if k not in ("MLMBOOK_ROOT", "MLMBOOK_BUILD")}
    proc = subprocess.Popen([sys.executable, "-m", "mlmbook", "build", "1", "--root", str(book),
                             "--profile", "quick", "--no-render", "-p", "wait", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, start_new_session=True)
    running = build / "results" / ".running" / "01_fail.json"
    deadline = time.time() + 120
    while time.time() < deadline and not running.exists():  # cell 2 recorded "ran": mid-chapter
        time.sleep(0.2)
    assert running.exists(), "the chapter never started"
    time.sleep(1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert list((build / "exec").glob(".01_fail.*.ipynb"))  # what a kill leaves ...
    assert not (build / "results" / "01_fail.json").exists()  # ... never as a complete file
    shown = cli("results", "1", "--root", str(book))
    assert "01_fail is executing or was interrupted" in shown.stderr
    assert "ran" not in shown.stdout
    (build / "results" / ".01_fail.json.previous").write_text("{}")  # an older version's leftover

    again = cli("build", "1", "--root", str(book), "--profile", "quick", "--no-render")
    assert again.returncode == 0, again.stderr
    assert not [p for d in ("exec", "results") for p in (build / d).iterdir() if p.name.startswith(".")]
    assert json.loads((build / "results" / "01_fail.json").read_text())["ran"] is True
    shown = cli("results", "1", "--root", str(book))
    assert "interrupted" not in shown.stderr and "ran" in shown.stdout


def test_prose_citing_an_unrecorded_key_fails_the_chapter(book):
    proc = cli("build", "1", "--root", str(book), "--profile", "quick", "--no-render",
               "-p", "measured", "false", "-p", "forget", "true")
    assert proc.returncode == 1
    assert "chapter 01_fail failed its checks: the prose cites glue key(s) never recorded: late" in proc.stderr
    assert not (book / "_build" / "exec" / "01_fail.ipynb").exists()
    assert (book / "_build" / "failed" / "01_fail.ipynb").is_file()


def test_not_measured_shows_its_sentence_in_a_number_slot(book):
    proc = cli("build", "--root", str(book), "--profile", "quick", "-p", "measured", "false")
    assert proc.returncode == 0, proc.stderr
    page = (book / "_build" / "html" / "book" / "01_fail.html").read_text()
    assert "the late number is NOT-MEASURED-MARKER" in " ".join(page.split()).replace(
        '<span class="pasted-text">', "").replace("</span>", "")
    from mlmbook.pipeline.record import load_not_measured, load_results
    assert "late" not in load_results("01_fail", book / "_build" / "results")
    assert load_not_measured("01_fail", book / "_build" / "results") == {"late": "NOT-MEASURED-MARKER"}
    shown = cli("results", "1", "--root", str(book))
    assert "(NOT-MEASURED-MARKER)" in shown.stdout


def build_here(book, monkeypatch, capsys, chapter: str, profile: str = "full", **options) -> str:
    """``mlmbook build CHAPTER`` of the fixture book in this process, with the training step left out, and
    what it printed. The fixture's chapters load no model: what these tests check is what a build records
    and keeps, not the models a profile trains (the full profile's default model takes minutes to train
    from an empty cache, as in CI)."""
    from mlmbook.pipeline import prepare
    from mlmbook.pipeline.execute import BuildOptions, build
    monkeypatch.setattr(prepare, "tasks", lambda *a, **k: [])
    for name in ("MLMBOOK_ROOT", "MLMBOOK_CHAPTER", "MLMBOOK_RESULTS", "MLMBOOK_BUILD"):
        monkeypatch.delenv(name, raising=False)
    capsys.readouterr()
    build(root=book, chapters=[chapter], profile=profile, options=BuildOptions(render_site=False, **options))
    return capsys.readouterr().err


def test_update_reference_is_explicit(book, monkeypatch, capsys):
    bad = cli("build", "1", "--root", str(book), "--profile", "quick", "--update-reference")
    assert bad.returncode == 2 and "--update-reference" in bad.stderr
    assert not (book / "results" / "full" / "00_min.json").exists()
    build_here(book, monkeypatch, capsys, "0", profile="full", update_reference=True)
    assert json.loads((book / "results" / "full" / "00_min.json").read_text())["profile"] == "full"


def test_an_extended_build_records_its_reference_and_resumes_its_finished_chapters(book, monkeypatch, capsys):
    first = build_here(book, monkeypatch, capsys, "0", profile="extended", update_reference=True, resume=True)
    assert "resume:" not in first
    ref = book / "results" / "extended" / "00_min.json"
    assert json.loads(ref.read_text())["profile"] == "extended"
    assert json.loads(ref.read_text())["reference"]["profile"] == "extended"                # the copy says when
    assert "reference" not in json.loads((book / "_build" / "results" / "00_min.json").read_text())
    done = (book / "_build" / "results" / "00_min.json").stat().st_mtime_ns
    again = build_here(book, monkeypatch, capsys, "0", profile="extended", update_reference=True, resume=True)
    assert "resume: 00_min finished earlier with these parameters; kept" in again
    assert (book / "_build" / "results" / "00_min.json").stat().st_mtime_ns == done     # not run again
    assert json.loads(ref.read_text())["profile"] == "extended"                          # still recorded
    other = build_here(book, monkeypatch, capsys, "0", profile="quick", resume=True)
    assert "resume:" not in other                                                        # another profile: runs
    assert (book / "_build" / "results" / "00_min.json").stat().st_mtime_ns != done


# ------------------------------------------------------------------ units of the checks

def _nb(markdown: str, glued: dict):
    cells = [nbformat.v4.new_markdown_cell(markdown)]
    code = nbformat.v4.new_code_cell("")
    code.metadata["papermill"] = {"start_time": "t", "status": "completed", "exception": False}
    code.outputs = [nbformat.v4.new_output("display_data", data={"application/papermill.record/text/plain": v},
                                           metadata={"scrapbook": {"name": k, "mime_prefix":
                                                                   "application/papermill.record/"}})
                    for k, v in glued.items()]
    return nbformat.v4.new_notebook(cells=cells + [code])


def test_glue_uses_skips_code_fences_and_reads_directives():
    md = "\n".join(["A {glue:text}`a:.3f` and {glue:}`b` and {glue:md}`c`, {glue:text}`other.ipynb::d:.1f`.",
                    "```python", "{glue:text}`in_code:.3f`", "```",
                    "```{note}", "inside a note {glue:text}`e`", "```",
                    "```{glue:figure} fig", ":name: f", "```"])
    assert glue_uses(_nb(md, {})) == [("a", ".3f"), ("b", None), ("c", None), ("e", None), ("fig", None)]


def test_check_executed_names_missing_and_nan_and_placeholders():
    nb = _nb("{glue:text}`a:.3f` {glue:text}`b:.2f` {glue:text}`c:.1%` {glue:text}`d`",
             {"a": "0.5", "b": "nan", "c": "'n/a'"})
    problems = check_executed(nb)
    assert any("never recorded: d" in p for p in problems)
    assert any("b = nan" in p and "c = 'n/a'" in p for p in problems)
    assert check_executed(_nb("{glue:text}`a:.3f`", {"a": "0.5"})) == []
    sentence = _nb("x {glue:text}`a:.3f` y", {"a": "'not measured on this model'"})
    assert check_executed(sentence, {"a": "not measured on this model"}) == []
    assert relax_formats(sentence, {"a"}) == 1 and "{glue:text}`a` y" in sentence.cells[0].source


def test_check_executed_names_cells_that_did_not_run():
    nb = _nb("text", {})
    nb.cells[1].metadata["papermill"]["start_time"] = None
    assert check_executed(nb) == ["code cell(s) 1 did not run to completion"]


def test_clean_leftovers_removes_only_dot_entries(tmp_path):
    (tmp_path / ".01_x.abc.ipynb").write_text("{}")
    (tmp_path / ".running").mkdir()
    (tmp_path / ".running" / "01_x.json").write_text("{}")
    (tmp_path / "01_x.json").write_text("{}")
    removed = clean_leftovers(tmp_path)
    assert sorted(p.name for p in removed) == [".01_x.abc.ipynb", ".running"]
    assert [p.name for p in tmp_path.iterdir()] == ["01_x.json"]
