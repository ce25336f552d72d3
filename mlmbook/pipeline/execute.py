"""The book pipeline: train the models, execute the chapters, publish what they made, render the
site.

:func:`build` trains the toy models the chapters need and executes the chapters as one graph of
tasks (:func:`schedule`, :mod:`mlmbook.workers`), publishes each chapter in this process only
(:func:`publish`) and renders the site (:mod:`mlmbook.pipeline.site`). A failed chapter is never
published: its previous good run stays as it was, and the site is not re-rendered.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from ..paths import cache_dir, env_flag
from ..profiles import BUILDABLE
from .chapter_run import RUNNING, THREAD_VARIABLES, Outcome, Run, cell_timeout, run_chapter
from .chapter_run import ensure_kernel as _ensure_kernel
from .chapters import (
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
from .checks import clean_leftovers
from .cost import announce as announce_cost
from .inputs import check_inputs
from .pages import measured_times
from .runs import (
    build_lock,
    built_with,
    interrupt_on_sigterm,
    keep_timings,
    mix_warning,
    previous_run,
    run_parameters,
    training_report,
    update_reference_files,
    write_bytes_atomic,
)
from .site import render, stage, write_notebooks_branch

__all__ = ["build", "BuildOptions", "schedule", "Placement", "publish", "previous_run", "RUNNING",
           "BuildError", "UsageError", "Layout", "find_chapters", "resolve_names"]


def publish(layout: Layout, chapter: Chapter, outcome: Outcome) -> Path:
    """Write a chapter's :class:`~mlmbook.pipeline.chapter_run.Outcome` into the build folder,
    atomically; returns ``_build/exec/<slug>.ipynb``. A failed outcome keeps its notebook in
    ``_build/failed/``, leaves the previous good run as it was and raises :class:`ChapterFailed`."""
    final = layout.exec / f"{chapter.slug}.ipynb"
    results = layout.results / f"{chapter.slug}.json"
    failed = layout.failed / f"{chapter.slug}.ipynb"
    if outcome.error is not None:
        if outcome.failed:
            write_bytes_atomic(failed, outcome.failed)
        previous = (f"\n  the previous results and page of {chapter.slug} ({previous_run(final)}) are kept"
                    if final.is_file() else f"\n  {chapter.slug} has no earlier results; it is left out of the site")
        raise ChapterFailed(outcome.error + previous)
    if outcome.results is not None:
        write_bytes_atomic(results, outcome.results)
    else:
        results.unlink(missing_ok=True)
    write_bytes_atomic(final, outcome.notebook)
    failed.unlink(missing_ok=True)
    return final


@dataclass(frozen=True)
class Placement:
    """Where a build's tasks run: ``ship``, on workers that share no filesystem with the build
    (models travel as bytes); ``resource``, the Dask resource a chapter on a large model asks one of
    (else it takes every slot)."""

    ship: bool = False
    resource: str | None = None


def schedule(layout: Layout, plans, profile: str, n: int, progress: bool = False,
             placement: Placement = Placement()) -> tuple[list, list, dict]:
    """The build's tasks (:class:`mlmbook.workers.Task`): the training units of the toy models the
    chapters need (:func:`mlmbook.pipeline.prepare.tasks`) and one task per chapter, which needs only
    the units holding *its* models (a chapter with a ``seed`` parameter needs every unit). A chapter
    on a toy model takes one of the ``n`` workers and a kernel of one thread; one on a large model
    asks for one ``placement.resource``, or else runs alone after every other task, with all the
    threads. ``placement.ship``: the units return their models as bytes, and each chapter is passed
    its models (those cached here as ``data``). Returns ``(all tasks, training tasks, data)``.
    """
    import nbformat

    from .. import workers
    from ..models import shipping
    from ..models.load import TOY_MODELS  # torch: imported only when building
    from . import prepare

    def on_toy(values):
        return values.get("model", "toy") in TOY_MODELS

    ship, resource = placement.ship, placement.resource
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
        run = Run(chapter, nbformat.writes(read_notebook(chapter)), dict(values), layout.root,
                  None if ship else layout.build, layout.failed / f"{chapter.slug}.ipynb",
                  None if large else 1, {k: os.environ.get(k) for k in THREAD_VARIABLES},
                  cell_timeout(), progress and alone)
        tasks.append(workers.Task(chapter.slug, run_chapter, (run,),
                                  needs=tuple(needs), seconds=known.get(chapter.slug, {}).get(profile, 60.0),
                                  resources=((resource, 1),) if large and resource else (), pass_needs=ship))
    return tasks, training, data


def _execute(layout: Layout, plans, profile: str, options: BuildOptions,
             t_book: float) -> tuple[list, dict, list]:
    """Train the toy models the chapters need and execute the chapters, as one graph of tasks
    (:func:`schedule`); publish each chapter as it ends. Returns the
    :class:`~mlmbook.pipeline.prepare.Trained` records, each chapter's and the training's wall time
    (``t_book`` is when the build began) and the failures' messages."""
    from .. import workers
    from ..models import shipping
    from . import prepare

    n, where = prepare.workers_for(), options.scheduler    # the address: build() reached it
    ship = where is not None and not options.shared_cache
    timings, failures, trained, stopped = {}, [], [], []
    if plans:
        cell_timeout()                # a bad $MLMBOOK_CELL_TIMEOUT fails here, before any training
        _ensure_kernel(layout.kernels)  # written once here, only read by chapters side by side
    placement = Placement(ship, options.resource)
    tasks, training, data = schedule(layout, plans, profile, n, sys.stderr.isatty(), placement)
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
                for name, blob in value.models.items():  # trained where this cache is not
                    shipping.install(name, blob)
                prepare.report(value, trained, total, say, report.elapsed())
                if len(trained) == total:
                    timings["training"] = time.perf_counter() - t_book
                continue
            if isinstance(error, workers.NotRun):            # after --fail-fast stopped the build
                say(f"  {task.key} not executed: {error}")
                continue
            if error is None:
                try:
                    publish(layout, by_slug[task.key][0], value)
                except ChapterFailed as err:
                    error = err
            if isinstance(error, workers.WorkerLost):
                error = ChapterFailed(f"chapter {error}")
            if error is None:
                timings[task.key] = seconds
                say(f"  {task.key} done in {seconds:.0f} s ({report.elapsed()} elapsed)")
            elif not isinstance(error, ChapterFailed):
                raise error  # not the chapter's fault: a usage error, an interrupt
            else:
                failures.append(str(error))
                say(str(error))
                if options.fail_fast:
                    stopped.append(task.key)
    return trained, timings, failures


@dataclass(frozen=True)
class BuildOptions:
    """How :func:`build` runs, beside what it builds: the command line's flags (``python -m
    mlmbook build --help``). ``execute`` False renders the notebooks executed earlier only;
    ``render_site`` False stops after executing; ``update_reference`` also copies the results (and
    a whole-book build's timings) to the committed ``results/``; ``scheduler`` is an existing Dask
    cluster's address (default ``$MLMBOOK_SCHEDULER``, else a local cluster), checked before
    anything else; ``shared_cache``: its workers see this model cache (default
    ``$MLMBOOK_SHARED_CACHE``); ``resource``: a Dask resource (e.g. ``"GPU"``) a chapter on a large
    model asks one of, instead of running alone; ``resume`` keeps the chapters this build folder
    finished earlier with the same parameters (:func:`finished_earlier`).
    """

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
    """Execute the requested chapters and render the site.

    Nothing tracked by git changes, unless ``options.update_reference``.

    Parameters
    ----------
    root : path-like, optional
        The book's root (``_config.yml``, ``_toc.yml``, ``book/``); default: found from the cwd.
    chapters : list of str
        Chapters to execute (``"1"``, ``"01"``, ``"01_dependencies"``, a file name); all when
        empty. The others are published from their previous executed notebook.
    profile : {"quick", "full", "extended", "pilot"}
    parameters : list of (name, value) pairs
        Extra parameters, as strings, checked against each chapter's ``parameters`` cell.
    options : BuildOptions

    Returns
    -------
    pathlib.Path
        ``_build/html/index.html`` (with ``render_site`` off, the folder of executed notebooks).

    Raises
    ------
    BuildError
        Bad arguments, a failed chapter (:class:`ChapterFailed`), or a failed rendering; another
        build running in the same build folder.
    """
    from ..workers.cluster import address, reach

    o = options
    if profile not in BUILDABLE:
        raise UsageError(f"unknown profile {profile!r}; valid profiles: {', '.join(BUILDABLE)}")
    where = address(o.scheduler) if o.execute else None
    if where:
        reach(where)  # before any planning or the lock: a bad address is one line, at once
    layout = Layout.find(root)
    all_chapters = find_chapters(layout)
    selected = resolve_chapters(all_chapters, list(chapters)) if o.execute else []
    if o.update_reference and (profile not in REFERENCE_PROFILES or parameters or not o.execute):
        raise UsageError("--update-reference records the default numbers of a reference profile: use it "
                         f"with --profile {' or '.join(REFERENCE_PROFILES)}, without -p parameters and without "
                         "--render-only")
    plans = plan_parameters(selected, list(parameters), profile)  # all checked up front
    kept_earlier = [c.slug for c, v in plans if o.resume and finished_earlier(layout, c, v)]
    for slug in kept_earlier:
        say(f"resume: {slug} finished earlier with these parameters; kept")
    plans = [(c, v) for c, v in plans if c.slug not in kept_earlier]
    check_inputs(plans, profile)  # treebank, window, weights, model/text fit: before any training
    shared = env_flag("MLMBOOK_SHARED_CACHE") if o.shared_cache is None else o.shared_cache
    o = replace(o, scheduler=where, shared_cache=shared)
    with build_lock(layout), interrupt_on_sigterm():
        return _build(layout, all_chapters, plans, profile, o, kept_earlier)


@contextlib.contextmanager
def _still(what: str):
    """Say that ``what`` still runs after each :data:`mlmbook.workers.QUIET_SECONDS` of a block's
    silence."""
    import threading

    from .. import workers

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
    """Whether this build folder holds ``chapter``'s finished run with exactly ``values`` as
    parameters: its executed notebook and results exist (a killed chapter leaves neither,
    :func:`clean_leftovers`), the notebook's recorded parameters are ``values`` and the chapter's
    source is older than both."""
    notebook, results = layout.exec / f"{chapter.slug}.ipynb", layout.results / f"{chapter.slug}.json"
    if not (notebook.is_file() and results.is_file()):
        return False
    params = run_parameters(notebook)  # None, unreadable: run it again
    newest = chapter.path.stat().st_mtime
    return params == values and notebook.stat().st_mtime > newest and results.stat().st_mtime > newest


def _build(layout, all_chapters, plans, profile, options: BuildOptions, kept_earlier=()) -> Path:
    announce_cost(plans)  # a real model: the time estimate per chapter, before anything runs
    if plans:  # what a killed build left: temporary notebooks, results of unfinished chapters
        clean_leftovers(layout.exec, layout.results)

    cache_before = set(cache_dir().glob("*")) if cache_dir().exists() else set()
    t_book = time.perf_counter()
    try:
        trained_models, timings, failures = _execute(layout, plans, profile, options, t_book)
    # the workers are stopped by now: what they left in the build folder goes
    except KeyboardInterrupt:
        clean_leftovers(layout.exec, layout.results)
        raise
    for line in training_report(trained_models, timings.get("training", 0.0)):
        say(line)
    if failures:
        raise ChapterFailed(f"{len(failures)} chapter(s) failed; the site was not updated")
    trained = sorted(p.name for p in (set(cache_dir().glob("*")) if cache_dir().exists() else set()) - cache_before
                     if not p.name.startswith("."))

    slugs = [c.slug for c, _ in plans] + list(kept_earlier)
    if not options.render_site:
        if options.update_reference:
            for path in update_reference_files(layout, slugs, None, profile):
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
    with _still("rendering the site"):
        staged = stage(layout, notebooks, solutions=options.solutions)
        index = render(layout, staged, verbose=options.verbose)
    write_notebooks_branch(layout, notebooks)
    whole_book = len(plans) + len(kept_earlier) == len(all_chapters) and \
        all(v == {"profile": profile} for _, v in plans)
    kept = None
    if whole_book and plans:
        kept = keep_timings(layout, profile, timings, time.perf_counter() - t_render,
                             time.perf_counter() - t_book, trained)
    if options.update_reference:
        for path in update_reference_files(layout, slugs, kept, profile):
            say(f"updated reference {path.relative_to(layout.root)}")
    return index
