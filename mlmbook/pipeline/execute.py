"""The book pipeline: train the models, execute the chapters, publish them, render the site.

Training and chapters run as one graph of tasks (:func:`schedule`); only this process publishes
(:func:`publish`). A failed chapter is never published, and the site is not re-rendered.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from .. import workers
from ..errors import BuildError, ChapterFailed, UsageError
from ..paths import cache_dir, env_flag
from ..profiles import BUILDABLE
from . import chapter_run, runs
from . import chapters as ch
from .chapter_run import RUNNING, THREAD_VARIABLES, Outcome, Run, run_chapter
from .chapters import Chapter, Layout, find_chapters, resolve_names, say
from .checks import clean_leftovers
from .cost import announce as announce_cost
from .inputs import check_inputs
from .pages import measured_times
from .runs import previous_run
from .site import render, stage, write_notebooks_branch

__all__ = ["build", "BuildOptions", "schedule", "publish", "previous_run", "RUNNING",
           "BuildError", "UsageError", "Layout", "find_chapters", "resolve_names"]


def publish(layout: Layout, chapter: Chapter, outcome: Outcome) -> Path:
    """Write a chapter's outcome into the build folder, atomically; returns its executed notebook.
    A failed one keeps its notebook in ``_build/failed/`` and the previous good run, and raises."""
    final = layout.exec / f"{chapter.slug}.ipynb"
    results = layout.results / f"{chapter.slug}.json"
    failed = layout.failed / f"{chapter.slug}.ipynb"
    if outcome.error is not None:
        if outcome.failed:
            runs.write_bytes_atomic(failed, outcome.failed)
        previous = (f"\n  the previous results and page of {chapter.slug} ({previous_run(final)}) are kept"
                    if final.is_file() else f"\n  {chapter.slug} has no earlier results; it is left out of the site")
        raise ChapterFailed(outcome.error + previous)
    if outcome.results is not None:
        runs.write_bytes_atomic(results, outcome.results)
    else:
        results.unlink(missing_ok=True)
    runs.write_bytes_atomic(final, outcome.notebook)
    failed.unlink(missing_ok=True)
    return final


def schedule(layout: Layout, plans, profile: str, n: int, ship: bool = False,
             resource: str | None = None) -> tuple[list, list, dict]:
    """The build's tasks ``(all, training, data)``: training units, and chapters needing the units
    of their models (all, with a ``seed`` parameter): on a toy model, one worker and a one-thread
    kernel; on a large one, a Dask ``resource``, else alone, last. With ``ship``, the workers share
    no filesystem with the build: models travel to them as bytes."""
    import nbformat

    from ..models import shipping
    from ..models.load import TOY_MODELS  # torch: imported only when building
    from . import prepare

    def on_toy(values):
        return values.get("model", "toy") in TOY_MODELS

    toy = [int(c.slug[:2]) for c, values in plans if on_toy(values) and "seed" not in values and c.slug[:2].isdigit()]
    training = prepare.tasks(profile, toy, workers=n, say=say, ship=ship) if toy else []
    alone = n == 1 or sum(on_toy(v) for _, v in plans) < 2       # no chapter runs beside another
    known = measured_times(layout.root)
    tasks, data = list(training), {}
    plans = sorted(plans, key=lambda plan: not on_toy(plan[1]) and not resource)  # those alone last
    for chapter, values in plans:
        if chapter.slug[:2].isdigit() and int(chapter.slug[:2]) in toy:
            wanted = prepare.needed(profile, [int(chapter.slug[:2])])
            needs = [t.key for t in training if set(wanted).intersection(t.args[0])]
            if ship:
                cached = shipping.pack_jobs(wanted)  # those trained now come from their units
                data.update({f"model {name}": {name: blob} for name, blob in cached.items()})
                needs += [f"model {name}" for name in cached]
        else:                       # e.g. another seed: models it trains itself, after the step
            needs = [t.key for t in training]
        large = not on_toy(values)
        if large and not resource:
            needs += [t.key for t in tasks if t.key not in needs]
        run = Run(chapter, nbformat.writes(ch.read_notebook(chapter)), dict(values), layout.root,
                  None if ship else layout.build, layout.failed / f"{chapter.slug}.ipynb",
                  None if large else 1, {k: os.environ.get(k) for k in THREAD_VARIABLES},
                  chapter_run.cell_timeout(), sys.stderr.isatty() and alone)
        tasks.append(workers.Task(chapter.slug, run_chapter, (run,),
                                  needs=tuple(needs), seconds=known.get(chapter.slug, {}).get(profile, 60.0),
                                  resources=((resource, 1),) if large and resource else (), pass_needs=ship))
    return tasks, training, data


def _execute(layout: Layout, plans, profile: str, options: BuildOptions,
             t_book: float) -> tuple[list, dict, list]:
    """Run the build's tasks, publishing each chapter as it ends: (trained, timings, failures)."""
    from . import prepare

    n, where = prepare.workers_for(), options.scheduler    # the address: build() reached it
    ship = where is not None and not options.shared_cache
    timings, failures, trained, stopped = {}, [], [], []
    if plans:
        chapter_run.cell_timeout()  # a bad $MLMBOOK_CELL_TIMEOUT fails here, before any training
        chapter_run.ensure_kernel(layout.kernels)  # written here, once: chapters only read it
    tasks, training, data = schedule(layout, plans, profile, n, ship, options.resource)
    total = sum(len(t.args[0]) for t in training)
    by_slug = {c.slug: (c, v) for c, v in plans}

    def started(task):
        if task.key in by_slug:
            shown = ", ".join(f"{k}={v!r}" for k, v in by_slug[task.key][1].items())
            say(f"executing {task.key} ({shown}) {report.elapsed()} elapsed")
            report.status[task.key] = f"{task.key} (starting)"
        else:
            report.status[task.key] = f"training {len(task.args[0])} model(s) ({task.key})"

    report = workers.Progress(say, on_start=started)
    if where:
        say(f"running on the Dask cluster at {where}" + ("" if ship else " (its workers share this model cache)"))
    here = min(n, len(tasks)) if where is None else n  # one task: a worker thread of this process
    with contextlib.closing(workers.run(tasks, here, stop=lambda: bool(stopped), scheduler=where,
                                        data=data, progress=report)) as results:
        for task, value, error, seconds in results:
            if task.key not in by_slug:                      # a training unit
                if isinstance(error, workers.WorkerLost):
                    raise BuildError(f"training failed: {error}")
                if error is not None:
                    raise error
                chapter_run.install_models({task.key: value})  # trained where this cache is not
                prepare.report(value, trained, total, say, report.elapsed())
                if len(trained) == total:
                    timings["training"] = time.perf_counter() - t_book
                continue
            if isinstance(error, workers.NotRun):            # after --fail-fast stopped the build
                say(f"  {task.key} not executed: {error}")
                continue
            try:
                if isinstance(error, workers.WorkerLost):
                    raise ChapterFailed(f"chapter {error}")
                if error is not None:
                    raise error  # caught below if the chapter's; else a usage error, an interrupt
                publish(layout, by_slug[task.key][0], value)
                timings[task.key] = seconds
                say(f"  {task.key} done in {seconds:.0f} s ({report.elapsed()} elapsed)")
            except ChapterFailed as err:
                failures.append(str(err))
                say(str(err))
                if options.fail_fast:
                    stopped.append(task.key)
    return trained, timings, failures


@dataclass(frozen=True)
class BuildOptions:
    """How :func:`build` runs: the command line's flags (``python -m mlmbook build --help``);
    ``update_reference`` copies the results (and a whole-book build's timings) to ``results/``;
    ``scheduler``: a Dask cluster's address (default ``$MLMBOOK_SCHEDULER``, else a local one);
    ``shared_cache``: its workers see this model cache (default ``$MLMBOOK_SHARED_CACHE``);
    ``resource``: a Dask resource (e.g. ``"GPU"``) a large-model chapter asks one of; ``resume``
    keeps the chapters this build folder finished with these parameters (``finished_earlier``)."""

    solutions: bool = True
    execute: bool = True
    fail_fast: bool = False
    verbose: bool = False
    render_site: bool = True
    update_reference: bool = False
    scheduler: str | None = None
    shared_cache: bool | None = None
    resource: str | None = None
    resume: bool = False


def build(root: str | os.PathLike | None = None, chapters: list[str] = (), profile: str = "full",
          parameters: list[tuple[str, str]] = (), *,
          options: BuildOptions = BuildOptions()) -> Path:
    """Execute the requested chapters and render the site (nothing tracked by git changes unless
    ``options.update_reference``): ``root``, the book's root (default: found from the cwd);
    ``chapters``, ``"1"``, ``"01"``, ``"01_dependencies"`` or a file name, all when empty (others
    are published from their previous run); ``parameters``, ``(name, value)`` strings checked
    against each chapter's ``parameters`` cell. Returns ``_build/html/index.html`` (without
    ``render_site``, the executed notebooks' folder). Raises :class:`BuildError`: bad arguments, a
    failed chapter or rendering, another build running in the same build folder."""
    from ..workers.cluster import address, reach

    o = options
    if profile not in BUILDABLE:
        raise UsageError(f"unknown profile {profile!r}; valid profiles: {', '.join(BUILDABLE)}")
    where = address(o.scheduler) if o.execute else None
    if where:
        reach(where)  # before any planning or the lock: a bad address is one line, at once
    layout = Layout.find(root)
    all_chapters = find_chapters(layout)
    selected = ch.resolve_chapters(all_chapters, list(chapters)) if o.execute else []
    if o.update_reference and (profile not in REFERENCE_PROFILES or parameters or not o.execute):
        raise UsageError("--update-reference records the default numbers of a reference profile: use it "
                         f"with --profile {' or '.join(REFERENCE_PROFILES)}, without -p parameters and without "
                         "--render-only")
    plans = ch.plan_parameters(selected, list(parameters), profile)  # all checked up front
    kept_earlier = [c.slug for c, v in plans if o.resume and finished_earlier(layout, c, v)]
    for slug in kept_earlier:
        say(f"resume: {slug} finished earlier with these parameters; kept")
    plans = [(c, v) for c, v in plans if c.slug not in kept_earlier]
    check_inputs(plans, profile)  # treebank, window, weights, model/text fit: before any training
    shared = env_flag("MLMBOOK_SHARED_CACHE") if o.shared_cache is None else o.shared_cache
    o = replace(o, scheduler=where, shared_cache=shared)
    with runs.build_lock(layout), runs.interrupt_on_sigterm():
        return _build(layout, all_chapters, plans, profile, o, kept_earlier)


@contextlib.contextmanager
def _still(what: str):
    """Say that ``what`` still runs after each :data:`mlmbook.workers.QUIET_SECONDS` of silence."""
    progress, done = workers.Progress(say), threading.Event()
    progress.status[what] = what

    def beat():
        while not done.wait(5.0):
            progress.heartbeat()

    threading.Thread(target=beat, daemon=True, name="mlmbook-still").start()
    try:
        yield
    finally:
        done.set()


REFERENCE_PROFILES = ("full", "extended")
"""The profiles whose default numbers are committed (``results/<profile>/``)."""


def finished_earlier(layout: Layout, chapter, values: dict) -> bool:
    """Whether ``chapter``'s finished run here (newer than its source) had exactly ``values``."""
    notebook, results = layout.exec / f"{chapter.slug}.ipynb", layout.results / f"{chapter.slug}.json"
    if not (notebook.is_file() and results.is_file()):
        return False
    params = runs.run_parameters(notebook)  # None, unreadable: run it again
    newest = chapter.path.stat().st_mtime
    return params == values and notebook.stat().st_mtime > newest and results.stat().st_mtime > newest


def _build(layout, all_chapters, plans, profile, options: BuildOptions, kept_earlier=()) -> Path:
    announce_cost(plans)  # a real model: the time estimate per chapter, before anything runs
    if plans:  # what a killed build left: temporary notebooks, results of unfinished chapters
        clean_leftovers(layout.exec, layout.results)

    cache_before = set(cache_dir().glob("*"))
    t_book = time.perf_counter()
    try:
        trained_models, timings, failures = _execute(layout, plans, profile, options, t_book)
    except KeyboardInterrupt:
        clean_leftovers(layout.exec, layout.results)  # the workers are stopped: what they left goes
        raise
    runs.training_report(trained_models, timings.get("training", 0.0))
    if failures:
        raise ChapterFailed(f"{len(failures)} chapter(s) failed; the site was not updated")
    trained = sorted(p.name for p in set(cache_dir().glob("*")) - cache_before
                     if not p.name.startswith("."))

    slugs = [c.slug for c, _ in plans] + list(kept_earlier)
    if not options.render_site:
        if options.update_reference:
            runs.update_reference_files(layout, slugs, None, profile)
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
    runs.mix_warning(notebooks)
    say("rendering the site")
    t_render = time.perf_counter()
    with _still("rendering the site"):
        staged = stage(layout, notebooks, solutions=options.solutions)
        index = render(layout, staged, verbose=options.verbose)
    write_notebooks_branch(layout, notebooks)
    whole_book = plans and len(plans) + len(kept_earlier) == len(all_chapters) and \
        all(v == {"profile": profile} for _, v in plans)
    kept = runs.keep_timings(layout, profile, timings, time.perf_counter() - t_render,
                             time.perf_counter() - t_book, trained) if whole_book else None
    if options.update_reference:
        runs.update_reference_files(layout, slugs, kept, profile)
    return index
