"""What a build leaves behind and says about its runs: timings, reference results, which model
and parameters each executed chapter was built with, the training share per model; and the lock
that keeps two builds from writing one build folder.

Kept apart from :mod:`mlmbook.pipeline.execute` (which runs chapters) so each stays one idea.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import tempfile
import threading
import time
from pathlib import Path

from ..paths import write_json_atomic
from .chapters import BuildError, Layout

__all__ = ["keep_timings", "update_reference_files", "previous_run", "built_with", "mix_warning",
           "training_report", "write_bytes_atomic", "build_lock", "interrupt_on_sigterm", "LOCK_FILE"]

LOCK_FILE = ".lock"
"""Under the build folder: held (``flock``) by the build writing it, with its pid inside."""


def write_bytes_atomic(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` so that a reader sees the old file or the whole new one (a
    temporary dot-file beside it, renamed; the process's umask applies, as for a plain ``open``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


@contextlib.contextmanager
def build_lock(layout: Layout):
    """Hold ``_build/.lock`` for a block: a second build of the same folder fails at once, naming
    the live one's pid. The lock dies with its process (SIGKILL included), so a killed build never
    blocks the next one."""
    import fcntl

    layout.build.mkdir(parents=True, exist_ok=True)
    path = layout.build / LOCK_FILE
    fh = open(path, "a+")
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            pid = fh.read().strip() or "?"
            raise BuildError(f"another build is running in {layout.build} (pid {pid}); wait for it to end, "
                             f"or stop it, or give this one its own MLMBOOK_BUILD") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        yield path
    finally:
        fh.close()


@contextlib.contextmanager
def interrupt_on_sigterm():
    """For a block in the main thread: SIGTERM stops the build as Ctrl-C does (its workers and
    kernels stop, nothing more is published), instead of killing it mid-write. Either signal first
    kills the kernels of the chapters running in this process, so that the build ends at once
    rather than when their cells would."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    from .chapter_run import stop_kernels
    papermill_log = logging.getLogger("papermill")
    was_disabled = papermill_log.disabled

    def stop(signum, frame):
        papermill_log.disabled = True         # its "kernel died" line: the build says why it ends
        stop_kernels()
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, stop)
    old_int = signal.getsignal(signal.SIGINT)
    if old_int is signal.default_int_handler:      # not where Ctrl-C is ignored (a background job)
        signal.signal(signal.SIGINT, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
        if old_int is signal.default_int_handler:
            signal.signal(signal.SIGINT, old_int)
        papermill_log.disabled = was_disabled


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


def update_reference_files(layout: Layout, slugs: list[str], timings: Path | None,
                           profile: str = "full") -> list[Path]:
    """Copy this build's results (and whole-book timings) to the committed ``results/`` folder.

    ``results/full/<slug>.json`` holds the numbers of a default full-profile run: the chapters'
    prose was written against them and the tests assert its claims on them, so they change only by
    ``python -m mlmbook build --profile full --update-reference``; ``results/extended/`` likewise
    holds the extended profile's (``--profile extended``). The copy records when it was made
    (``reference``: profile and UTC time); the build folder's results carry no clock time.
    """
    from datetime import datetime, timezone

    written, now = [], datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    for slug in slugs:
        src = layout.results / f"{slug}.json"
        if src.is_file():
            dest = layout.root / "results" / profile / src.name
            _write_json(dest, {**json.loads(src.read_text()), "reference": {"profile": profile, "built": now}})
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
    (``trained``: :class:`mlmbook.pipeline.prepare.Trained` records), longest first."""
    if not trained:
        return []
    lines = [f"training: {len(trained)} model{'s' if len(trained) != 1 else ''} in {wall_seconds:.0f} s of wall "
             f"time; each model's share:"]
    for t in sorted(trained, key=lambda t: -t.seconds):
        lines.append(f"  {t.seconds:6.1f} s  {t.label} ({t.how})")
    return lines
