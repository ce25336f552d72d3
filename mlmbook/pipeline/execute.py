"""The book pipeline: execute chapters with papermill, then render the site.

:func:`build`

0. trains the toy models the chapters need and executes the chapters on one pool of processes
   (:func:`schedule`, :mod:`mlmbook.workers`): a chapter starts as soon as its own models are
   trained, chapters on toy models side by side (one kernel thread each), one on a large model alone;
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
    plan_parameters,
    read_notebook,
    resolve_chapters,
    resolve_names,
    say,
)
from .checks import check_executed, clean_leftovers, relax_formats
from .cost import announce as announce_cost
from .failures import failure
from .pages import measured_times
from .record import load_not_measured
from .runs import built_with, keep_timings, mix_warning, previous_run, training_report, update_reference_files
from .site import render, stage, write_notebooks_branch

__all__ = ["build", "schedule", "execute_chapter", "ensure_kernel", "previous_run", "cell_timeout",
           "update_reference_files", "RUNNING",
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
                    progress: bool = False, threads: int | None = None) -> Path:
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
    threads : int, optional
        Threads of the kernel's torch and BLAS (``OMP_NUM_THREADS`` and friends), unless
        ``$MLMBOOK_THREADS`` sets them: the build gives a chapter on toy models 1, so that two
        such chapters side by side on two cores never oversubscribe them (and a chapter's numbers
        do not depend on whether it ran alone).

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
    env = dict(MLMBOOK_CHAPTER=chapter.slug, MLMBOOK_RESULTS=str(running_dir),
               MLMBOOK_ROOT=str(layout.root), JUPYTER_PATH=jupyter_path,
               PYDEVD_DISABLE_FILE_VALIDATION="1")
    count = os.environ.get("MLMBOOK_THREADS") or (str(threads) if threads else None)
    if count:  # a busy machine (or a chapter beside another): oversubscribed threads are ~10x slower
        env.update(OMP_NUM_THREADS=count, OPENBLAS_NUM_THREADS=count, MKL_NUM_THREADS=count)
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
            return ChapterFailed(str(failure(chapter, nb, err, kept, timeout)) + previous)
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


# --------------------------------------------------------------------------- build

def schedule(layout: Layout, plans, profile: str, n: int, progress: bool = False) -> tuple[list, list]:
    """The build's tasks (:class:`mlmbook.workers.Task`): the training units of the toy models the
    chapters need (:func:`mlmbook.models.prepare.tasks`) and one task per chapter, which needs only
    the units holding *its* models (a chapter with a ``seed`` parameter, which trains its own, needs
    every unit). A chapter on a toy model takes one of the ``n`` workers and a kernel of one
    thread; a chapter on a large model takes them all. Returns ``(all tasks, training tasks)``."""
    from .. import workers
    from ..models import prepare
    from ..models.load import TOY_MODELS  # torch: imported only when building

    def on_toy(values):
        return values.get("model", "toy") in TOY_MODELS

    toy = [int(c.slug[:2]) for c, values in plans if on_toy(values) and "seed" not in values and c.slug[:2].isdigit()]
    training = prepare.tasks(profile, toy, workers=n, say=say) if toy else []
    alone = n == 1 or sum(on_toy(v) for _, v in plans) < 2       # no chapter runs beside another
    known = measured_times(layout.root)
    tasks = list(training)
    for chapter, values in plans:
        if chapter.slug[:2].isdigit() and int(chapter.slug[:2]) in toy:
            wanted = set(prepare.needed(profile, [int(chapter.slug[:2])]))
            needs = tuple(t.key for t in training if wanted.intersection(t.args[0]))
        else:                       # e.g. another seed: models it trains itself, after the step
            needs = tuple(t.key for t in training)
        tasks.append(workers.Task(chapter.slug, execute_chapter,
                                  (layout, chapter, values, progress and alone, 1 if on_toy(values) else None),
                                  needs=needs, seconds=known.get(chapter.slug, {}).get(profile, 60.0),
                                  slots=1 if on_toy(values) else n))
    return tasks, training


def _execute(layout: Layout, plans, profile: str, progress: bool, fail_fast: bool, timings: dict,
             failures: list, t_book: float) -> list:
    """Train the toy models the chapters need and execute the chapters, on one pool of workers
    (:func:`schedule`). Records each chapter's and the training's wall time in ``timings`` and each
    failure in ``failures``; returns the :class:`~mlmbook.models.prepare.Trained` records."""
    from .. import workers
    from ..models import prepare

    n = prepare.workers_for()
    if plans:
        cell_timeout()            # a bad $MLMBOOK_CELL_TIMEOUT fails here, before any training
        ensure_kernel(layout)     # written once here, only read by chapters running side by side
    tasks, training = schedule(layout, plans, profile, n, progress)
    total = sum(len(t.args[0]) for t in training)
    trained: list = []
    chapters = {c.slug for c, _ in plans}
    stopped = []
    values_of = {c.slug: v for c, v in plans}

    def started(task):
        if task.key in values_of:
            shown = ", ".join(f"{k}={v!r}" for k, v in values_of[task.key].items())
            say(f"executing {task.key} ({shown})")

    for task, value, error, seconds in workers.run(tasks, n if len(tasks) > 1 else 1,
                                                   stop=lambda: bool(stopped), started=started):
        if task.key not in chapters:                 # a training unit
            if error is not None:
                raise error
            prepare.report(value, trained, total, say)
            if len(trained) == total:
                timings["training"] = time.perf_counter() - t_book
        elif isinstance(error, workers.NotRun):         # after --fail-fast stopped the build
            say(f"  {task.key} not executed: the build stopped at the first failure")
        elif error is not None and not isinstance(error, ChapterFailed):
            raise error                                  # not the chapter's fault: a usage error, an interrupt
        elif error is not None:
            failures.append(str(error))
            say(str(error))
            if fail_fast:
                stopped.append(task.key)
        else:
            timings[task.key] = seconds
            say(f"  {task.key} done in {seconds:.0f} s")
    return trained


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
    trained_models = _execute(layout, plans, profile, progress, fail_fast, timings, failures, t_book)
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
