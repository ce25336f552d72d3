"""The book pipeline (``python -m mlmbook``) on a two-chapter fixture book.

``tests/fixtures/book_min`` has ``00_min`` (a parameters cell, ``record`` calls, a
matplotlib figure, a glued number, exercises with both kinds of solutions) and
``01_fail``, which raises in its third code cell when run with ``-p fail true``.
The fixture is built once per module (in the quick profile); tests that change the
build work on their own copy of it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from mlmbook.pipeline.chapters import Chapter, UsageError, parse_value, resolve_names
from mlmbook.pipeline.site import _filter_toc
from mlmbook.pipeline.solutions import strip_solutions, strip_solutions_text

FIXTURE = Path(__file__).parent.parent / "fixtures" / "book_min"
REPO = Path(__file__).parent.parent.parent


def run_cli(*args: str, cache: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m mlmbook ARGS`` in a clean environment."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("MLMBOOK_ROOT", "MLMBOOK_CHAPTER", "MLMBOOK_RESULTS")}
    if cache is not None:
        env["MLMBOOK_CACHE"] = str(cache)
    return subprocess.run([sys.executable, "-m", "mlmbook", *args], capture_output=True,
                          text=True, env=env, timeout=300)


def tree_digest(path: Path) -> str:
    """A hash of every file name and content under ``path``."""
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(path)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The fixture book, built once in the quick profile."""
    root = tmp_path_factory.mktemp("book") / "book_min"
    shutil.copytree(FIXTURE, root)
    proc = run_cli("build", "--root", str(root), "--profile", "quick")   # the session's model cache
    assert proc.returncode == 0, proc.stderr
    return root, proc


@pytest.fixture
def copy_of_built(built, tmp_path):
    """A private copy of the built book, for tests that change it."""
    root = tmp_path / "book_min"
    shutil.copytree(built[0], root)
    return root


# --------------------------------------------------------------------------- building

def test_build_executes_records_and_renders(built):
    root, proc = built
    index = root / "_build" / "html" / "index.html"
    assert proc.stdout.strip().splitlines()[-1] == str(index)
    assert index.is_file()
    assert "book/02_missing is left out" in proc.stderr  # in the TOC, no source

    nb = nbformat.read(root / "_build" / "exec" / "00_min.ipynb", as_version=4)
    tags = [c.metadata.get("tags", []) for c in nb.cells]
    assert ["injected-parameters", "remove-cell"] in tags
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    assert "this build used: profile='quick'" in params.source

    results = json.loads((root / "_build" / "results" / "00_min.json").read_text())
    assert results["answer"] == 0.5
    assert results["profile"] == "quick"
    assert results["python"] == sys.executable  # the kernel runs the caller's Python

    page = (root / "_build" / "html" / "book" / "00_min.html").read_text()
    assert '<img alt="../_images/' in page  # the matplotlib figure
    assert "# Parameters" not in page  # papermill's injected cell is removed
    assert "this build used" in page  # the chapter's own parameters cell is shown
    assert "0.500" in page  # {glue:text}`answer:.3f`
    assert "SOLUTION-TEXT-MARKER" in page
    assert (root / "_build" / "html" / "book" / "01_fail.html").is_file()
    assert "0.25" in (root / "_build" / "html" / "book" / "01_fail.html").read_text()
    # the kernel's own log lines never reach the terminal (00_min logs one on purpose)
    assert "KeyboardInterrupt caught" not in proc.stderr and "[IPKernelApp]" not in proc.stderr
    # a build writes nothing outside the build folder: no timings or results in the book's tree
    assert not (root / "results").exists()
    assert (root / "_build" / "timings" / "quick-uncached.json").is_file() or \
        (root / "_build" / "timings" / "quick-cached.json").is_file()
    assert not list((root / "_build" / "results").glob(".running/*"))


def test_chapters_and_results_commands(built):
    root, _ = built
    listing = run_cli("chapters", "--root", str(root))
    assert listing.returncode == 0
    assert "00_min" in listing.stdout and "A minimal chapter" in listing.stdout
    assert "A chapter that fails on demand" in listing.stdout

    shown = run_cli("results", "0", "--root", str(root), "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["00_min"]["answer"] == 0.5
    table = run_cli("results", "--root", str(root))
    assert "answer" in table.stdout and "01_fail" in table.stdout


def test_failed_rerun_keeps_the_previous_good_run_and_says_so(copy_of_built):
    """A failed rerun used to delete the chapter's previous good results while the site kept
    showing its old page, and `results 1` then said "no results"."""
    root = copy_of_built
    html = root / "_build" / "html"
    before = tree_digest(html)
    good_nb = (root / "_build" / "exec" / "01_fail.ipynb").read_bytes()
    good_results = (root / "_build" / "results" / "01_fail.json").read_bytes()

    proc = run_cli("build", "1", "--root", str(root), "--profile", "quick", "-p", "fail", "true")

    assert proc.returncode == 1
    assert "chapter 01_fail failed in cell 3: RuntimeError: deliberate failure" in proc.stderr
    assert "the previous results and page of 01_fail (model toy, profile quick" in proc.stderr
    assert (root / "_build" / "exec" / "01_fail.ipynb").read_bytes() == good_nb
    assert (root / "_build" / "results" / "01_fail.json").read_bytes() == good_results
    assert (root / "_build" / "failed" / "01_fail.ipynb").is_file()
    assert not list((root / "_build" / "exec").glob(".*"))  # no temporary leftovers
    assert tree_digest(html) == before
    assert (root / "_build" / "exec" / "00_min.ipynb").is_file()  # others untouched
    shown = run_cli("results", "1", "--root", str(root))
    assert shown.returncode == 0 and "late" in shown.stdout and "0.25" in shown.stdout
    assert "the last run of 01_fail failed" in shown.stderr


def test_failed_rendering_keeps_the_site(copy_of_built):
    root = copy_of_built
    html = root / "_build" / "html"
    before = tree_digest(html)
    with open(root / "book" / "intro.md", "a") as f:
        f.write("\nA broken reference: {ref}`no-such-label`.\n")

    proc = run_cli("build", "--render-only", "--root", str(root))

    assert proc.returncode == 1
    assert "no-such-label" in proc.stderr
    assert "rendering failed" in proc.stderr
    assert tree_digest(html) == before


def test_no_solutions(copy_of_built):
    root = copy_of_built
    proc = run_cli("build", "--render-only", "--no-solutions", "--root", str(root))
    assert proc.returncode == 0, proc.stderr
    page = (root / "_build" / "html" / "book" / "00_min.html").read_text()
    assert "Why is the answer one half?" in page  # exercises stay
    for marker in ("SOLUTION-TEXT-MARKER", "GATED-TEXT-MARKER", "GATED-CODE-MARKER"):
        assert marker not in page
    assert "That is all." in page


# --------------------------------------------------------------------------- CLI errors

def test_unknown_chapter():
    line = one_line_error(run_cli("build", "7", "--root", str(FIXTURE)))
    assert "unknown chapter '7'" in line
    assert "valid chapters: 00_min, 01_fail" in line


def test_unknown_parameter_suggests_a_close_one():
    line = one_line_error(run_cli("build", "0", "-p", "seeed", "3", "--root", str(FIXTURE)))
    assert "unknown parameter 'seeed'" in line
    assert "did you mean 'seed'?" in line
    assert "profile, model, seed" in line


def test_parameter_of_wrong_type():
    line = one_line_error(run_cli("build", "0", "-p", "seed", "abc", "--root", str(FIXTURE)))
    assert "parameter 'seed' of chapter 00_min expects an int, got 'abc'" in line
    line = one_line_error(run_cli("build", "01_fail", "-p", "fail", "maybe",
                                  "--root", str(FIXTURE)))
    assert "expects a bool" in line


def test_clear_cache(tmp_path):
    cache = tmp_path / "cache"
    (cache / "models").mkdir(parents=True)
    (cache / "models" / "weights.bin").write_bytes(b"0" * 1000)
    proc = run_cli("clear-cache", cache=cache)
    assert proc.returncode == 0 and "deleted" in proc.stdout
    assert not cache.exists()
    assert "nothing to delete" in run_cli("clear-cache", cache=cache).stdout


# --------------------------------------------------------------------------- units

def test_resolve_names():
    slugs = ["00_toy_world", "01_dependencies", "02_joints"]
    assert resolve_names(["1"], slugs) == ["01_dependencies"]
    assert resolve_names(["01", "02_joints.md", "book/00_toy_world.md"], slugs) == \
        ["01_dependencies", "02_joints", "00_toy_world"]
    assert resolve_names(["joints", "2"], slugs) == ["02_joints"]
    with pytest.raises(UsageError, match="did you mean '02_joints'"):
        resolve_names(["jionts"], slugs)


def test_parse_value():
    assert parse_value("3", 0) == 3
    assert parse_value("0.5", 1.0) == 0.5
    assert parse_value("2", 1.0) == 2.0
    assert parse_value("True", False) is True and parse_value("no", True) is False
    assert parse_value("bert-base-uncased", "toy") == "bert-base-uncased"
    assert parse_value("x.conllu", None) == "x.conllu"
    assert parse_value("12", None) == "12"  # a None default is an optional name or path
    assert parse_value("none", None) is None
    assert parse_value("[1, 2]", [0]) == [1, 2]
    for text, default in (("abc", 0), ("1.5", 3), ("maybe", True), ("abc", [1])):
        with pytest.raises(ValueError):
            parse_value(text, default)


def test_strip_solutions_text_keeps_code_blocks_and_other_directives():
    text = "\n".join([
        "```{exercise}", ":label: e", "Q?", "```",
        "```{solution} e", ":class: dropdown", "SECRET", "``py", "x", "``", "```",
        ":::{note}", "```{solution} e", "SECRET", "```", "kept note", ":::",
        "````md", "```{solution} e", "syntax shown", "```", "````",
        "end",
    ])
    out, removed = strip_solutions_text(text)
    assert removed == 2
    assert "SECRET" not in out
    assert "kept note" in out and ":::" in out and "syntax shown" in out and "end" in out


def test_strip_solutions_gated_across_cells():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("Intro\n\n```{solution-start} e\n:class: dropdown\n```"),
        nbformat.v4.new_markdown_cell("SECRET text"),
        nbformat.v4.new_code_cell("print('SECRET')"),
        nbformat.v4.new_markdown_cell("```{solution-end}\n```\nAfter"),
        nbformat.v4.new_code_cell("print('kept')"),
    ])
    assert strip_solutions(nb) == 1
    sources = [c.source for c in nb.cells]
    assert sources == ["Intro", "After", "print('kept')"]


def test_filter_toc_drops_missing_files_and_empty_parts():
    toc = {"format": "jb-book", "root": "book/intro", "parts": [
        {"caption": "Chapters", "chapters": [{"file": "book/01_a"}, {"file": "book/02_b"}]},
        {"caption": "Appendices", "chapters": [{"file": "book/x"}]},
    ]}
    dropped = []
    out = _filter_toc(toc, {"book/intro", "book/01_a"}, dropped)
    assert out["parts"] == [{"caption": "Chapters", "chapters": [{"file": "book/01_a"}]}]
    assert dropped == ["book/02_b", "book/x"]


def test_chapter_title_and_number():
    chapter = Chapter(FIXTURE / "book" / "01_fail.md")
    assert (chapter.number, chapter.slug, chapter.docname) == (1, "01_fail", "book/01_fail")
    assert chapter.title == "A chapter that fails on demand"


def test_record_in_memory_and_to_file(tmp_path, monkeypatch):
    import numpy as np

    import mlmbook
    from mlmbook.pipeline.record import load_results, recorded

    monkeypatch.delenv("MLMBOOK_RESULTS", raising=False)
    assert mlmbook.record("k", np.float64(0.25)) == 0.25
    assert recorded()["k"] == 0.25 and type(recorded()["k"]) is float

    monkeypatch.setenv("MLMBOOK_RESULTS", str(tmp_path))
    monkeypatch.setenv("MLMBOOK_CHAPTER", "03_x")
    mlmbook.record("a", 1)
    mlmbook.record("b", [np.int64(2), 3.5])
    assert load_results("03_x", tmp_path) == {"a": 1, "b": [2, 3.5]}
    with pytest.raises(TypeError):
        mlmbook.record("c", object())
    with pytest.raises(ValueError):
        mlmbook.record("bad key", 1)


def test_interrupted_build_then_rebuild(copy_of_built):
    """Ctrl-C while a chapter executes: a one-line message, the previous executed notebook,
    results and site stay as they were, no temporary file is left; a rebuild then works."""
    import signal
    import time

    root = copy_of_built
    build = root / "_build"
    before = {name: tree_digest(build / name) for name in ("html", "exec", "results")}
    env = {k: v for k, v in os.environ.items() if k not in ("MLMBOOK_ROOT", "MLMBOOK_BUILD")}
    proc = subprocess.Popen([sys.executable, "-m", "mlmbook", "build", "1", "--root", str(root),
                             "--profile", "quick", "-p", "wait", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True,       # and SIGINT not inherited as ignored (a background job)
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 120
    while time.time() < deadline and not list((build / "exec").glob(".01_fail.*")):
        time.sleep(0.2)
    time.sleep(3)                                     # the kernel is now inside time.sleep(60)
    os.killpg(proc.pid, signal.SIGINT)               # Ctrl-C reaches the whole process group
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert err.strip().splitlines()[-1].startswith("mlmbook: interrupted"), err
    assert not list((build / "exec").glob(".*.ipynb")), "a temporary notebook was left behind"
    after = {name: tree_digest(build / name) for name in ("html", "exec", "results")}
    assert after == before
    again = run_cli("build", "1", "--root", str(root), "--profile", "quick")
    assert again.returncode == 0, again.stderr


def test_a_partial_build_keeps_the_chapter_numbers(tmp_path):
    """Built alone, chapter 1 used to be numbered 0 (Sphinx numbers the chapters present)."""
    import re
    root = tmp_path / "book_min"
    shutil.copytree(FIXTURE, root)
    proc = run_cli("build", "1", "--root", str(root), "--profile", "quick")   # the session's model cache
    assert proc.returncode == 0, proc.stderr
    page = (root / "_build" / "html" / "book" / "01_fail.html").read_text()
    numbers = re.findall(r'<span class="section-number">([\d.]+)', page)
    assert numbers and all(n.split(".")[0] == "1" for n in numbers), numbers
