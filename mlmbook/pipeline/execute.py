"""The book pipeline: execute chapters with papermill, then render the site.

:func:`build`

1. reads each requested chapter with jupytext and executes it with papermill into
   ``_build/exec/NN_slug.ipynb`` and ``_build/results/NN_slug.json`` (both written under
   temporary names, moved there only if every cell ran within ``$MLMBOOK_CELL_TIMEOUT``
   and the executed chapter passed :mod:`mlmbook.pipeline.checks`), injecting ``profile``
   and the ``-p`` parameters, with ``MLMBOOK_CHAPTER``, ``MLMBOOK_RESULTS`` and
   ``MLMBOOK_ROOT`` set for :func:`mlmbook.record`;
2. stages and renders the site (:mod:`mlmbook.pipeline.site`) into ``_build/html``;
3. a whole-book build records its wall times in ``_build/timings/``. The committed
   reference results (``results/``) change only with ``update_reference``.

A failed chapter is never published: the notebook with the traceback is kept in
``_build/failed/``, the chapter's previous good run (executed notebook, results, page) stays
as it was and the build says so, and the site is not re-rendered.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from ..paths import cache_dir, env_int
from .chapters import (
    PROFILES,
    BuildError,
    Chapter,
    ChapterFailed,
    Layout,
    UsageError,
    find_chapters,
    parameters_cell_index,
    plan_parameters,
    read_notebook,
    resolve_chapters,
    resolve_names,
    say,
)
from .checks import check_executed, clean_leftovers, last_started_cell, relax_formats
from .cost import announce as announce_cost
from .record import load_not_measured
from .runs import built_with, keep_timings, mix_warning, previous_run, training_report, update_reference_files
from .site import render, stage, write_notebooks_branch

__all__ = ["build", "execute_chapter", "ensure_kernel", "previous_run", "cell_timeout", "update_reference_files",
           "RUNNING",
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
                 # CRITICAL: not the TCP-without-encryption warning, nor the "KeyboardInterrupt
                 # caught in kernel" that jupyter_client's interrupt-before-shutdown can cause;
                 # a chapter's own errors reach the build through its cells' outputs
                 "--IPKernelApp.log_level=CRITICAL"],
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


def cell_timeout() -> int:
    """Seconds one cell may run before it fails its chapter (``$MLMBOOK_CELL_TIMEOUT``, default 1200)."""
    return env_int("MLMBOOK_CELL_TIMEOUT", 1200, minimum=1)


def execute_chapter(layout: Layout, chapter: Chapter, parameters: dict[str, object],
                    progress: bool = False) -> Path:
    """Execute one chapter into ``_build/exec/<slug>.ipynb`` and ``_build/results/<slug>.json``.

    Both files appear (each by an atomic rename) only when every cell ran and the checks of
    :func:`mlmbook.pipeline.checks.check_executed` pass. While the chapter runs, its
    results go to ``_build/results/.running/`` and its notebook to a dot-file in
    ``_build/exec``; a killed run leaves only those, and the next build removes them.

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
        When a cell raises or exceeds ``$MLMBOOK_CELL_TIMEOUT`` (the message names the cell),
        the kernel dies, or the executed chapter fails its checks (a glue key the prose cites
        was never recorded, a number slot holds no finite number, a cell did not run). The
        chapter's executed notebook and results are then removed, and the notebook is kept
        in ``_build/failed/``.
    """
    import nbformat
    import papermill

    nb = read_notebook(chapter)
    kernel = ensure_kernel(layout)
    running_dir = layout.results / RUNNING
    for d in (layout.exec, layout.results, layout.failed, running_dir):
        d.mkdir(parents=True, exist_ok=True)
    final = layout.exec / f"{chapter.slug}.ipynb"
    results = layout.results / f"{chapter.slug}.json"
    running = running_dir / results.name
    failed = layout.failed / f"{chapter.slug}.ipynb"
    running.unlink(missing_ok=True)  # the chapter's results start empty
    fd, tmp_name = tempfile.mkstemp(prefix=f".{chapter.slug}.", suffix=".ipynb", dir=layout.exec)
    os.close(fd)
    tmp = Path(tmp_name)
    jupyter_path = os.pathsep.join(p for p in (str(layout.kernels),
                                               os.environ.get("JUPYTER_PATH")) if p)
    threads = os.environ.get("MLMBOOK_THREADS")
    if threads:  # a machine shared with other jobs: oversubscribed BLAS threads are ~10x slower
        os.environ.update(OMP_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=threads, MKL_NUM_THREADS=threads)
    env = dict(MLMBOOK_CHAPTER=chapter.slug, MLMBOOK_RESULTS=str(running_dir),
               MLMBOOK_ROOT=str(layout.root), JUPYTER_PATH=jupyter_path,
               PYDEVD_DISABLE_FILE_VALIDATION="1")
    timeout = cell_timeout()

    def fail(err: BaseException | None, problems: list[str] = ()) -> ChapterFailed:
        # the previous good run (executed notebook, results, page) stays as it was
        running.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            running_dir.rmdir()
        if tmp.exists() and tmp.stat().st_size:
            os.replace(tmp, failed)
        tmp.unlink(missing_ok=True)
        kept = failed if failed.exists() else None
        previous = (f"\n  the previous results and page of {chapter.slug} ({previous_run(final)}) are kept"
                    if final.is_file() else f"\n  {chapter.slug} has no earlier results; it is left out of the site")
        if err is not None:
            return ChapterFailed(str(_failure(chapter, nb, err, kept, timeout)) + previous)
        message = f"chapter {chapter.slug} failed its checks: " + "; ".join(problems)
        if kept is not None:
            message += f"\n  ({chapter.path.name}; executed notebook: {kept})"
        return ChapterFailed(message + previous)

    try:
        with _environment(**env):
            papermill.execute_notebook(nb, str(tmp), parameters=parameters, kernel_name=kernel,
                                       language="python", cwd=str(chapter.path.parent),
                                       progress_bar=progress, execution_timeout=timeout)
    except KeyboardInterrupt:  # interrupted, not failed: keep the previous run as it was
        tmp.unlink(missing_ok=True)
        running.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            running_dir.rmdir()
        raise
    except Exception as err:
        raise fail(err) from None
    executed = nbformat.read(tmp, as_version=4)
    not_measured = load_not_measured(chapter.slug, running_dir)
    problems = check_executed(executed, not_measured)
    if problems:
        raise fail(None, problems)
    relax_formats(executed, not_measured)
    _prepare_for_render(executed, chapter, parameters)
    nbformat.write(executed, tmp)
    if running.exists():
        os.replace(running, results)
    else:
        results.unlink(missing_ok=True)  # a chapter that records nothing has no results
    os.replace(tmp, final)
    failed.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # left only while some chapter is still running
        running_dir.rmdir()
    return final


RUNNING = ".running"  # under _build/results: the results of chapters still executing


def _failure(chapter: Chapter, nb, err: BaseException, kept: Path | None, timeout: int) -> ChapterFailed:
    """The one-line (plus where-to-look line) message of a chapter that raised or timed out."""
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    from papermill.exceptions import PapermillExecutionError

    detail = chapter.path.name
    if isinstance(err, PapermillExecutionError):
        number = _failed_cell(nb, err)
        where = f" in cell {number}" if number else ""
        what = f"{err.ename}: {_first_line(err.evalue)}" if err.evalue else err.ename
        line = _source_line(chapter, err.source or "")
        detail = f"{chapter.path.name} line {line}" if line else detail
    elif isinstance(err, (CellTimeoutError, DeadKernelError)):
        number, source = _stopped_cell(kept)
        where = f" in cell {number}" if number else ""
        what = (f"the cell ran longer than {timeout} s (MLMBOOK_CELL_TIMEOUT) and was stopped"
                if isinstance(err, CellTimeoutError) else "the kernel died (out of memory?)")
        line = _source_line(chapter, source or "")
        detail = f"{chapter.path.name} line {line}" if line else detail
    else:
        where, what = "", f"{type(err).__name__}: {_first_line(err)}"
    message = f"chapter {chapter.slug} failed{where}: {what}"
    if kept is not None:
        message += f"\n  ({detail}; executed notebook with the traceback: {kept})"
    return ChapterFailed(message)


def _stopped_cell(kept: Path | None) -> tuple[int | None, str | None]:
    """The chapter's code-cell number and source of the cell running when execution stopped."""
    import nbformat

    if kept is None:
        return None, None
    try:
        nb = nbformat.read(kept, as_version=4)
    except Exception:  # an unreadable partial notebook: the cell stays unnamed
        return None, None
    index = last_started_cell(nb)
    if index is None or nb.cells[index].cell_type != "code":
        return None, None
    own = [c for c in nb.cells[:index + 1] if c.cell_type == "code"
           and "injected-parameters" not in c.metadata.get("tags", [])]
    return len(own), nb.cells[index].source


# --------------------------------------------------------------------------- build

def build(root: str | os.PathLike | None = None, chapters: list[str] = (),
          profile: str = "full", parameters: list[tuple[str, str]] = (),
          solutions: bool = True, execute: bool = True, fail_fast: bool = False,
          progress: bool | None = None, verbose: bool = False, render_site: bool = True,
          update_reference: bool = False) -> Path:
    """Execute the requested chapters and render the site.

    Nothing tracked by git changes: executed notebooks, results and timings live under the
    build folder. Only ``update_reference`` writes the committed reference results.

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
    update_reference : bool
        Also copy the executed chapters' results (and a whole-book build's timings) to the
        committed ``results/full/`` and ``results/timings/``; only for the default full
        profile (no ``-p`` parameters).

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

    if update_reference and (profile != "full" or parameters or not execute):
        raise UsageError("--update-reference records the default full-profile numbers: use it with "
                         "--profile full, without -p parameters and without --render-only")
    plans = plan_parameters(selected, list(parameters), profile)  # all checked up front
    announce_cost(plans)          # a real model: the time estimate per chapter, before anything runs
    if plans:  # what a killed build left: temporary notebooks, results of unfinished chapters
        clean_leftovers(layout.exec, layout.results)

    failures = []
    cache_before = set(cache_dir().glob("*")) if cache_dir().exists() else set()
    t_book = time.perf_counter()
    timings = {}
    from ..models.load import TOY_MODELS  # torch: imported only when building
    from ..models.prepare import prepare as prepare_models
    toy = [int(c.slug[:2]) for c, values in plans
           if values.get("model", "toy") in TOY_MODELS and "seed" not in values and c.slug[:2].isdigit()]
    trained_models = []
    if toy:                       # train the toy models they need (stacked or one process per core)
        trained_models = prepare_models(profile, toy, say=say)
        if trained_models:
            timings["training"] = time.perf_counter() - t_book
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
    for line in training_report(trained_models, timings.get("training", 0.0)):
        say(line)
    if failures:
        raise ChapterFailed(f"{len(failures)} chapter(s) failed; the site was not updated")
    trained = sorted(p.name for p in (set(cache_dir().glob("*")) if cache_dir().exists() else set()) - cache_before
                     if not p.name.startswith("."))

    if not render_site:
        if update_reference:
            for path in update_reference_files(layout, [c.slug for c, _ in plans], None):
                say(f"updated reference {path.relative_to(layout.root)}")
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
    warning = mix_warning({slug: built_with(path) for slug, path in notebooks.items()})
    if warning:
        say(warning)
    say("rendering the site")
    t_render = time.perf_counter()
    index = render(layout, stage(layout, notebooks, solutions=solutions), verbose=verbose)
    write_notebooks_branch(layout, notebooks)
    whole_book = len(plans) == len(all_chapters) and all(v == {"profile": profile} for _, v in plans)
    kept = None
    if whole_book and plans:
        kept = keep_timings(layout, profile, timings, time.perf_counter() - t_render,
                             time.perf_counter() - t_book, trained)
    if update_reference:
        for path in update_reference_files(layout, [c.slug for c, _ in plans], kept):
            say(f"updated reference {path.relative_to(layout.root)}")
    return index
