"""Command line of the book: ``python -m mlmbook
{build,cost,chapters,results,check-site,clear-cache}`` and the research verbs
``{pll,trees,joint,rectangle,rank,glauber}`` (:mod:`mlmbook.cli_research`); installed as the console
script ``mlmbook``. Examples: the README, and ``python -m mlmbook COMMAND --help``.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from .profiles import BUILDABLE, KNOWN_PROFILES, PROFILES


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m mlmbook",
                                     description="Build and inspect the book "
                                                 "'What Masked Language Models Know'.")
    sub = parser.add_subparsers(dest="command", required=True)

    b = sub.add_parser("build", help="execute chapters and render the site",
                       description="Execute chapters (papermill) and render the site "
                                   "(jupyter-book) into _build/html.")
    b.add_argument("chapters", nargs="*", metavar="CHAPTER",
                   help="chapters to execute: 1, 01, 01_dependencies or the file name "
                        "(default: all)")
    b.add_argument("--profile", default="full", choices=BUILDABLE,
                   help="quick: seconds per chapter (tests); full: the book (default); "
                        "pilot: the plans' planning SDs, on seeds no reference uses (mlmbook.plans); "
                        "extended: every question at its planned sample (hours; see cost --workers)")
    b.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                   metavar=("NAME", "VALUE"),
                   help="set a chapter parameter, e.g. -p model bert-base-uncased")
    for flag, what in (("--no-solutions", "leave exercise solutions out of the rendered site"),
                       ("--no-render", "execute only (into _build/exec and _build/results); "
                                       "render nothing"),
                       ("--render-only", "execute nothing; render the notebooks executed earlier"),
                       ("--fail-fast", "stop at the first failing chapter")):
        b.add_argument(flag, action="store_true", help=what)
    b.add_argument("--update-reference", action="store_true",
                   help="also copy the results (and a whole-book build's timings) to the committed "
                        "results/<profile>/ folder; only with --profile full or extended and no -p parameters")
    b.add_argument("--resume", action="store_true",
                   help="keep the chapters this build folder finished earlier with the same profile and "
                        "parameters (an interrupted build continues; trained models are always reused)")
    b.add_argument("--root", help="the book's root directory (default: found from here)")
    b.add_argument("-v", "--verbose", action="store_true", help="show jupyter-book's output")
    b.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the training and the chapters on an existing Dask cluster, e.g. tcp://host:8786 "
                        "(default: $MLMBOOK_SCHEDULER, else a local cluster of one process per core)")
    b.add_argument("--shared-cache", action="store_true", default=None,
                   help="the cluster's workers see this model cache (default: $MLMBOOK_SHARED_CACHE); "
                        "otherwise models travel to and from them as bytes")
    b.add_argument("--large-model-resource", metavar="NAME",
                   help="a chapter on a large model asks for one unit of this Dask resource (e.g. GPU) "
                        "instead of taking every local worker")

    e = sub.add_parser("cost", help="print the time estimate of a real-model build, without building")
    e.add_argument("chapters", nargs="*", metavar="CHAPTER")
    e.add_argument("--profile", default="full", choices=KNOWN_PROFILES)
    e.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"))
    e.add_argument("--workers", type=int, metavar="N",
                   help="print the profile's plan and its estimated wall time on N workers (training and chapters)")
    e.add_argument("--root")

    sub.add_parser("chapters", help="list the chapters").add_argument("--root")

    r = sub.add_parser("results", help="print the numbers chapters recorded")
    r.add_argument("chapter", nargs="?", metavar="CHAPTER")
    r.add_argument("--json", action="store_true", help="print JSON")
    r.add_argument("--root")

    c = sub.add_parser("check-site", help="load every page of a built site in headless Chromium "
                                          "and report problems (saves screenshots)")
    c.add_argument("html", nargs="?", default=None, help="the built site (default: _build/html)")
    sub.add_parser("clear-cache", help="delete the model cache ($MLMBOOK_CACHE, "
                                       "default ~/.cache/mlmbook)")
    from .cli_research import add_research_commands
    add_research_commands(sub)
    return parser


def _cmd_build(args) -> int:
    from .pipeline.execute import BuildOptions, build

    if args.render_only and args.chapters:
        raise SystemExit("mlmbook: error: --render-only takes no chapters")
    options = BuildOptions(
        solutions=not args.no_solutions, execute=not args.render_only, fail_fast=args.fail_fast,
        verbose=args.verbose, render_site=not args.no_render,
        update_reference=args.update_reference, scheduler=args.scheduler,
        shared_cache=args.shared_cache, resource=args.large_model_resource, resume=args.resume)
    parameters = [tuple(p) for p in args.parameter]
    print(build(args.root, args.chapters, args.profile, parameters, options=options))
    return 0


def _cmd_cost(args) -> int:
    from .pipeline.cost import estimate

    if args.workers is not None:
        from .pipeline.plan import plan_lines
        print("\n".join(plan_lines(args.root, args.chapters, args.profile, args.workers)))
        return 0
    if args.profile not in PROFILES:
        raise SystemExit(f"mlmbook: error: the {args.profile} profile's estimate is its plan: add --workers N")
    lines = estimate(args.root, args.chapters, args.profile, [tuple(p) for p in args.parameter])
    print("\n\n".join(lines) or "no estimate: the book's own toy models need none (give -p model M)")
    return 0


def _cmd_chapters(args) -> int:
    from .pipeline.execute import Layout, find_chapters, previous_run

    layout = Layout.find(args.root)
    chapters = find_chapters(layout)
    if not chapters:
        print(f"no chapters yet in {layout.book} (book/NN_slug.md files)")
    for chapter in chapters:
        executed = layout.exec / f"{chapter.slug}.ipynb"
        status = f"executed ({previous_run(executed)})" if executed.is_file() else "not executed"
        print(f"{chapter.number:2d}  {chapter.slug:<22} {chapter.title}  [{status}]")
    return 0


def _cmd_results(args) -> int:
    from .pipeline.execute import RUNNING, Layout, find_chapters, resolve_names
    from .pipeline.record import load_not_measured, load_results

    layout = Layout.find(args.root)
    directory = layout.results
    # only completed chapters: the build moves a results file here when its chapter finished
    files = {p.stem: p for p in sorted(directory.glob("*.json")) if not p.name.startswith(".")}
    unfinished = {p.stem for p in (directory / RUNNING).glob("*.json")}
    slugs = list(files)
    if args.chapter:
        known = sorted({c.slug for c in find_chapters(layout)} | set(files))
        slugs = resolve_names([args.chapter], known)
    data = {slug: load_results(slug, directory) for slug in slugs if slug in files}
    missing = {slug: load_not_measured(slug, directory) for slug in data}
    for slug in data:
        failed = layout.failed / f"{slug}.ipynb"
        if failed.is_file() and failed.stat().st_mtime >= (directory / f"{slug}.json").stat().st_mtime:
            print(f"note: the last run of {slug} failed (its notebook with the traceback: {failed}); "
                  f"the numbers below are from its last good run", file=sys.stderr)
    for slug in slugs if args.chapter else sorted(unfinished):
        if slug in unfinished:
            print(f"note: {slug} is executing or was interrupted; its partial results are not shown"
                  + (" (the numbers below are from its last complete run)" if slug in data else ""),
                  file=sys.stderr)
    if args.json:
        print(json.dumps(data, indent=2))
    elif not data:
        which = f" for {slugs[0]}" if args.chapter else ""
        print(f"no results{which} yet in {directory}; run python -m mlmbook build")
    for slug, values in ([] if args.json else data.items()):
        print(slug)
        width = max((len(k) for k in [*values, *missing[slug]]), default=0)
        for key, value in values.items():
            text = f"{value:.6g}" if isinstance(value, float) else json.dumps(value)
            print(f"  {key:<{width}}  {value if isinstance(value, str) else text}")
        for key, sentence in missing[slug].items():
            print(f"  {key:<{width}}  ({sentence})")
    return 0


def _cmd_clear_cache(args) -> int:
    from .paths import cache_dir

    path = cache_dir().resolve()
    if path in (Path("/"), Path.home().resolve()) or path in Path.cwd().resolve().parents:
        raise SystemExit(f"mlmbook: error: refusing to delete {path}; check MLMBOOK_CACHE")
    if not path.exists():
        print(f"nothing to delete: {path} does not exist")
        return 0
    size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    shutil.rmtree(path)
    print(f"deleted {path} ({size / 2**20:.1f} MiB)")
    return 0


def _cmd_check_site(args) -> int:
    from .pipeline.execute import Layout
    from .pipeline.sitecheck import check_site, enforced

    html = Path(args.html) if args.html else Layout.find(None).html
    if not (html / "index.html").exists():
        raise SystemExit(f"mlmbook: error: no site at {html}: build it first (make book)")
    shots = html.parent / "screenshots"
    found = check_site(html, shots)
    problems = enforced(found)
    for p in found:
        print(p if p in problems else f"advice: {p}")
    print(f"{len(problems)} problem{'' if len(problems) == 1 else 's'}, {len(found) - len(problems)} advice; "
          f"screenshots in {shots}")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    from .cli_research import RESEARCH_COMMANDS, run
    from .errors import BuildError, MLMBookError, UsageError

    args = _parser().parse_args(argv)
    if args.command in RESEARCH_COMMANDS:
        return run(args)
    command = {"build": _cmd_build, "chapters": _cmd_chapters, "results": _cmd_results,
               "clear-cache": _cmd_clear_cache, "check-site": _cmd_check_site, "cost": _cmd_cost}[args.command]
    try:
        return command(args)
    except UsageError as err:
        print(f"mlmbook: error: {err}", file=sys.stderr)
        return 2
    except MLMBookError as err:
        print(f"mlmbook: {'' if isinstance(err, BuildError) else 'error: '}{err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("mlmbook: interrupted; nothing half-written was kept (previous results and site are "
              "unchanged) — run the same command again to finish", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
