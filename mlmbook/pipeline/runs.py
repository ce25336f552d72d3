"""What a build leaves behind and says about its runs: timings, reference results, which model
and parameters each executed chapter was built with, and the training share per model.

Kept apart from :mod:`mlmbook.pipeline.execute` (which runs chapters) so each stays one idea.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ..paths import write_json_atomic
from .chapters import Layout

__all__ = ["keep_timings", "update_reference_files", "previous_run", "built_with", "mix_warning",
           "training_report"]


def _write_json(path: Path, data: dict) -> None:
    write_json_atomic(path, data, indent=1)


def keep_timings(layout: Layout, profile: str, chapters: dict, render_s: float, total_s: float,
                  trained: list) -> Path:
    """Record a whole-book build's wall times in ``_build/timings/<profile>-<cache>.json``.

    ``cache`` is ``uncached`` when the run trained models (new cache entries appeared),
    else ``cached``. These are this machine's; ``--update-reference`` copies them to the
    committed ``results/timings/``, which the Performance appendix compares with the budgets.
    """
    import platform

    state = "uncached" if trained else "cached"
    record = dict(profile=profile, cache=state, total_seconds=round(total_s, 1), render_seconds=round(render_s, 1),
                  chapters={k: round(v, 1) for k, v in chapters.items()}, trained=trained,
                  cpus=os.cpu_count(), machine=platform.machine(), when=time.strftime("%Y-%m-%d %H:%M"))
    path = layout.build / "timings" / f"{profile}-{state}.json"
    _write_json(path, record)
    return path


def update_reference_files(layout: Layout, slugs: list[str], timings: Path | None) -> list[Path]:
    """Copy this build's results (and whole-book timings) to the committed ``results/`` folder.

    ``results/full/<slug>.json`` holds the numbers of a default full-profile run: the
    chapters' prose was written against them and the tests assert its claims on them, so
    they change only by ``python -m mlmbook build --profile full --update-reference``.
    """
    written = []
    for slug in slugs:
        src = layout.results / f"{slug}.json"
        if src.is_file():
            dest = layout.root / "results" / "full" / src.name
            _write_json(dest, json.loads(src.read_text()))
            written.append(dest)
    if timings is not None and timings.is_file():
        dest = layout.root / "results" / "timings" / timings.name
        _write_json(dest, json.loads(timings.read_text()))
        written.append(dest)
    return written


def previous_run(path: Path) -> str:
    """A short description of an executed notebook kept from an earlier build."""
    import nbformat

    try:
        meta = nbformat.read(path, as_version=4).metadata.get("papermill", {})
    except Exception:  # unreadable: describe by date only
        meta = {}
    params = dict(meta.get("parameters", {}))
    profile = params.pop("profile", "?")
    model = params.pop("model", "toy")
    rest = "".join(f", {k}={v!r}" for k, v in sorted(params.items()))
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(path.stat().st_mtime))
    return f"model {model}, profile {profile}{rest}, {when}"


def built_with(path: Path) -> tuple[str, str]:
    """``(model, profile)`` an executed notebook was built with (``("?", "?")`` if unreadable)."""
    import nbformat

    try:
        params = nbformat.read(path, as_version=4).metadata.get("papermill", {}).get("parameters", {})
    except Exception:  # unreadable: unknown
        return "?", "?"
    return str(params.get("model", "toy")), str(params.get("profile", "?"))


def mix_warning(built: dict[str, tuple[str, str]]) -> str | None:
    """A one-line warning when the chapters of a site were built with different models or
    profiles (``built``: slug -> ``(model, profile)``), else None."""
    if len(set(built.values())) <= 1:
        return None
    groups: dict[str, list[str]] = {}
    for slug, (model, profile) in built.items():
        groups.setdefault(f"model {model}, profile {profile}", []).append(slug)
    return ("warning: the site mixes chapters built differently: "
            + "; ".join(f"{k}: {', '.join(v)}" for k, v in groups.items()))


def training_report(trained: list, wall_seconds: float) -> list[str]:
    """Lines for the end of a build: the training step's wall time and each model's share of it
    (``trained``: :class:`mlmbook.models.prepare.Trained` records), longest first."""
    if not trained:
        return []
    lines = [f"training: {len(trained)} model{'s' if len(trained) != 1 else ''} in {wall_seconds:.0f} s of wall "
             f"time; each model's share:"]
    for t in sorted(trained, key=lambda t: -t.seconds):
        lines.append(f"  {t.seconds:6.1f} s  {t.label} ({t.how})")
    return lines
