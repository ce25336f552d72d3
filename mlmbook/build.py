"""The book pipeline: execute chapters with papermill, then render the site.

:func:`build`

1. reads each requested chapter with jupytext and executes it with papermill into
   ``_build/exec/NN_slug.ipynb`` (written under a temporary name, moved there only if
   every cell ran), injecting ``profile`` and the ``-p`` parameters, with
   ``MLMBOOK_CHAPTER``, ``MLMBOOK_RESULTS`` and ``MLMBOOK_ROOT`` set for :func:`mlmbook.record`;
2. stages and renders the site (:mod:`mlmbook.render`) into ``_build/html``.

A failed chapter is never published: its executed notebook and results are removed
(the notebook with the traceback is kept in ``_build/failed/``) and the site is left as
it was.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from .book import (PROFILES, BuildError, Chapter, ChapterFailed, Layout, UsageError,
                   find_chapters, parameters_cell_index, plan_parameters, read_notebook,
                   resolve_chapters, resolve_names, say)
from .render import render, stage, write_notebooks_branch

__all__ = ["build", "execute_chapter", "ensure_kernel", "previous_run",
           "BuildError", "UsageError", "ChapterFailed", "Layout", "find_chapters",
           "resolve_names"]


# --------------------------------------------------------------------------- execution

def ensure_kernel(layout: Layout) -> str:
    """Write a ``python3`` kernelspec that runs *this* interpreter, in a private data dir.

    The build puts that dir first on ``JUPYTER_PATH``, so chapters always run with the
    Python (and packages) of the caller, whatever kernels the user has installed.
    """
    import importlib.util

    if importlib.util.find_spec("ipykernel") is None:
        raise BuildError(f"ipykernel is not installed for {sys.executable}; "
                         "pip install ipykernel")
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}",
                 "--IPKernelApp.log_level=ERROR"],  # not the TCP-without-encryption warning
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "metadata": {"debugger": False},
    }
    path = layout.kernels / "kernels" / "python3" / "kernel.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(spec, indent=1)
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
    return "python3"


@contextlib.contextmanager
def _environment(**values: str):
    """Set environment variables (inherited by the kernel) for the duration of a block."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


def _failed_cell(nb, error) -> int | None:
    """The 1-based code-cell number of the cell papermill reports as failed.

    ``error.cell_index`` counts the cells of the executed notebook, which has the injected
    parameters cell; the code-cell number counts the chapter's own code cells only.
    """
    params = parameters_cell_index(nb)
    injected = 0 if params is None else params + 1
    index = error.cell_index - (1 if error.cell_index > injected else 0)
    if not 0 <= index < len(nb.cells):
        return None
    return sum(c.cell_type == "code" for c in nb.cells[:index + 1])


def _source_line(chapter: Chapter, cell_source: str) -> int | None:
    text = chapter.path.read_text(encoding="utf-8")
    at = text.find(cell_source.strip()) if cell_source.strip() else -1
    return None if at < 0 else text.count("\n", 0, at) + 1


def _first_line(text: str) -> str:
    lines = [line for line in str(text).splitlines() if line.strip()]
    return lines[0].strip() if lines else ""


def _prepare_for_render(nb, chapter: Chapter, parameters: dict[str, object]) -> None:
    """Hide the injected-parameters cell; note the values used under the parameters cell.

    The chapter's own ``parameters`` cell stays visible (it documents the knobs); a comment
    appended to it says which values this build injected, since their cell is removed.
    """
    for cell in nb.cells:
        tags = cell.metadata.setdefault("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
        if "parameters" in tags and parameters:
            used = ", ".join(f"{k}={v!r}" for k, v in parameters.items())
            cell.source = cell.source.rstrip("\n") + f"\n# this build used: {used}"
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                 "language": "python"}
    meta = nb.metadata.get("papermill", {})  # input_path holds the whole source notebook
    meta.update(input_path=f"{chapter.docname}.md",
                output_path=f"_build/exec/{chapter.slug}.ipynb")


def execute_chapter(layout: Layout, chapter: Chapter, parameters: dict[str, object],
                    progress: bool = False) -> Path:
    """Execute one chapter into ``_build/exec/<slug>.ipynb``.

    Parameters
    ----------
    layout : Layout
    chapter : Chapter
    parameters : dict
        Values injected by papermill (``profile`` included).
    progress : bool
        Show papermill's per-cell progress bar.

    Returns
    -------
    pathlib.Path
        The executed notebook.

    Raises
    ------
    ChapterFailed
        When a cell raises (or the kernel dies); the chapter's executed notebook and
        results are then removed, and the notebook with the traceback is kept in
        ``_build/failed/``.
    """
    import nbformat
    import papermill

    nb = read_notebook(chapter)
    kernel = ensure_kernel(layout)
    for d in (layout.exec, layout.results, layout.failed):
        d.mkdir(parents=True, exist_ok=True)
    final = layout.exec / f"{chapter.slug}.ipynb"
    results = layout.results / f"{chapter.slug}.json"
    failed = layout.failed / f"{chapter.slug}.ipynb"
    previous = results.with_name(f".{results.name}.previous")
    if results.exists():  # set aside: the chapter's results start empty
        os.replace(results, previous)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{chapter.slug}.", suffix=".ipynb", dir=layout.exec)
    os.close(fd)
    tmp = Path(tmp_name)
    jupyter_path = os.pathsep.join(p for p in (str(layout.kernels),
                                               os.environ.get("JUPYTER_PATH")) if p)
    threads = os.environ.get("MLMBOOK_THREADS")
    if threads:  # a machine shared with other jobs: oversubscribed BLAS threads are ~10x slower
        os.environ.update(OMP_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=threads, MKL_NUM_THREADS=threads)
    env = dict(MLMBOOK_CHAPTER=chapter.slug, MLMBOOK_RESULTS=str(layout.results),
               MLMBOOK_ROOT=str(layout.root), JUPYTER_PATH=jupyter_path,
               PYDEVD_DISABLE_FILE_VALIDATION="1")
    try:
        with _environment(**env):
            papermill.execute_notebook(nb, str(tmp), parameters=parameters, kernel_name=kernel,
                                       language="python", cwd=str(chapter.path.parent),
                                       progress_bar=progress, execution_timeout=CELL_TIMEOUT)
    except KeyboardInterrupt:  # interrupted, not failed: keep the previous run as it was
        tmp.unlink(missing_ok=True)
        if previous.exists():
            os.replace(previous, results)
        raise
    except Exception as err:
        for stale in (final, results, previous):
            stale.unlink(missing_ok=True)
        if tmp.exists() and tmp.stat().st_size:
            os.replace(tmp, failed)
        tmp.unlink(missing_ok=True)
        raise _failure(chapter, nb, err, failed if failed.exists() else None) from None
    executed = nbformat.read(tmp, as_version=4)
    _prepare_for_render(executed, chapter, parameters)
    nbformat.write(executed, tmp)
    os.replace(tmp, final)
    previous.unlink(missing_ok=True)
    failed.unlink(missing_ok=True)
    if parameters == {"profile": "full"} and results.exists():
        _keep_reference_results(layout, results)
    return final


CELL_TIMEOUT = int(os.environ.get("MLMBOOK_CELL_TIMEOUT", 1200))   # seconds; a stuck cell fails the chapter


def _keep_timings(layout: Layout, profile: str, chapters: dict, render_s: float, total_s: float,
                  trained: list) -> None:
    """Record a whole-book build's wall times in ``<root>/results/timings/<profile>-<cache>.json``.

    ``cache`` is ``uncached`` when the run trained models (new cache entries appeared),
    else ``cached``. The Performance appendix compares these with the budgets.
    """
    import platform

    state = "uncached" if trained else "cached"
    keep = layout.root / "results" / "timings"
    keep.mkdir(parents=True, exist_ok=True)
    record = dict(profile=profile, cache=state, total_seconds=round(total_s, 1), render_seconds=round(render_s, 1),
                  chapters={k: round(v, 1) for k, v in chapters.items()}, trained=trained,
                  cpus=os.cpu_count(), machine=platform.machine(), when=time.strftime("%Y-%m-%d %H:%M"))
    fd, tmp = tempfile.mkstemp(dir=keep, prefix=".", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(record, f, indent=1)
    os.replace(tmp, keep / f"{profile}-{state}.json")


def _keep_reference_results(layout: Layout, results: Path) -> None:
    """Copy a default full-profile run's numbers to ``<root>/results/full/`` (tracked in git).

    These are the numbers the chapters' prose was written against; the tests assert the
    prose's claims on them, so a change that moves a number past a claim fails the tests.
    """
    keep = layout.root / "results" / "full"
    keep.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=keep, prefix=".", suffix=".json")
    os.close(fd)
    shutil.copyfile(results, tmp)
    os.replace(tmp, keep / results.name)


def _failure(chapter: Chapter, nb, err: BaseException, kept: Path | None) -> ChapterFailed:
    from papermill.exceptions import PapermillExecutionError

    if isinstance(err, PapermillExecutionError):
        number = _failed_cell(nb, err)
        where = f" in cell {number}" if number else ""
        what = f"{err.ename}: {_first_line(err.evalue)}" if err.evalue else err.ename
        line = _source_line(chapter, err.source or "")
        detail = f"{chapter.path.name} line {line}" if line else chapter.path.name
    else:
        where, what = "", f"{type(err).__name__}: {_first_line(err)}"
        detail = chapter.path.name
    message = f"chapter {chapter.slug} failed{where}: {what}"
    if kept is not None:
        message += f"\n  ({detail}; executed notebook with the traceback: {kept})"
    return ChapterFailed(message)


# --------------------------------------------------------------------------- build

def previous_run(path: Path) -> str:
    """A short description of an executed notebook kept from an earlier build."""
    import nbformat

    try:
        meta = nbformat.read(path, as_version=4).metadata.get("papermill", {})
    except Exception:  # unreadable: describe by date only
        meta = {}
    profile = meta.get("parameters", {}).get("profile", "?")
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(path.stat().st_mtime))
    return f"profile {profile}, {when}"


def build(root: str | os.PathLike | None = None, chapters: list[str] = (),
          profile: str = "full", parameters: list[tuple[str, str]] = (),
          solutions: bool = True, execute: bool = True, fail_fast: bool = False,
          progress: bool | None = None, verbose: bool = False, render_site: bool = True) -> Path:
    """Execute the requested chapters and render the site.

    Parameters
    ----------
    root : path-like, optional
        The book's root (``_config.yml``, ``_toc.yml``, ``book/``); default: found from the cwd.
    chapters : list of str
        Chapters to execute (``"1"``, ``"01"``, ``"01_dependencies"``, a file name); all when
        empty. Chapters not executed now are published from their previous executed
        notebook when there is one, otherwise left out of the TOC.
    profile : {"quick", "full"}
    parameters : list of (name, value) pairs
        Extra parameters, as strings, checked against each chapter's ``parameters`` cell.
    solutions : bool
        False strips exercise solutions from the rendered site.
    execute : bool
        False renders the previously executed notebooks only.
    fail_fast : bool
        Stop at the first failing chapter instead of executing the others.
    progress : bool, optional
        Per-cell progress bars (default: when stderr is a terminal).
    verbose : bool
        Show jupyter-book's output.
    render_site : bool
        False stops after executing (``_build/exec``, ``_build/results``); nothing is rendered.

    Returns
    -------
    pathlib.Path
        ``_build/html/index.html``.

    Raises
    ------
    BuildError
        Bad arguments, a failed chapter (:class:`ChapterFailed`), or a failed rendering.
    """
    if profile not in PROFILES:
        raise UsageError(f"unknown profile {profile!r}; valid profiles: {', '.join(PROFILES)}")
    layout = Layout.find(root)
    all_chapters = find_chapters(layout)
    selected = resolve_chapters(all_chapters, list(chapters)) if execute else []
    if progress is None:
        progress = sys.stderr.isatty()

    plans = plan_parameters(selected, list(parameters), profile)  # all checked up front

    failures = []
    from .paths import cache_dir
    cache_before = set(cache_dir().glob("*")) if cache_dir().exists() else set()
    t_book = time.perf_counter()
    timings = {}
    for chapter, values in plans:
        shown = ", ".join(f"{k}={v!r}" for k, v in values.items())
        say(f"executing {chapter.slug} ({shown})")
        start = time.perf_counter()
        try:
            execute_chapter(layout, chapter, values, progress=progress)
        except ChapterFailed as err:
            failures.append(str(err))
            say(str(err))
            if fail_fast:
                break
            continue
        timings[chapter.slug] = time.perf_counter() - start
        say(f"  done in {timings[chapter.slug]:.0f} s")
    if failures:
        raise ChapterFailed(f"{len(failures)} chapter(s) failed; the site was not updated")
    trained = sorted(p.name for p in (set(cache_dir().glob("*")) if cache_dir().exists() else set()) - cache_before
                     if not p.name.startswith("."))

    if not render_site:
        return layout.exec
    executed_now = {c.slug for c, _ in plans}
    notebooks = {}
    for chapter in all_chapters:
        path = layout.exec / f"{chapter.slug}.ipynb"
        if not path.is_file():
            continue
        if chapter.slug not in executed_now:
            stale = " (source changed since)" if chapter.path.stat().st_mtime > \
                path.stat().st_mtime else ""
            say(f"note: reusing {chapter.slug} executed earlier ({previous_run(path)}){stale}")
        notebooks[chapter.slug] = path
    say("rendering the site")
    t_render = time.perf_counter()
    index = render(layout, stage(layout, notebooks, solutions=solutions), verbose=verbose)
    write_notebooks_branch(layout, notebooks)
    whole_book = len(plans) == len(all_chapters) and all(v == {"profile": profile} for _, v in plans)
    if whole_book and plans:
        _keep_timings(layout, profile, timings, time.perf_counter() - t_render, time.perf_counter() - t_book, trained)
    return index
