"""What a build leaves behind and says about its runs: timings, reference results, which model
and parameters each executed chapter was built with, the training share per model; and the lock
that keeps two builds from writing one build folder.
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
           "training_report", "write_bytes_atomic", "build_lock", "interrupt_on_sigterm",
           "run_parameters"]


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
    path = layout.build / ".lock"  # held (flock) by the build writing the folder, its pid inside
    with open(path, "a+") as fh:
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


def keep_timings(layout: Layout, profile: str, chapters: dict, render_s: float, total_s: float,
                  trained: list) -> Path:
    """Record a whole-book build's wall times in ``_build/timings/<profile>-<cache>.json``
    (``cache``: ``uncached`` when the run trained models, else ``cached``)."""
    import platform

    state = "uncached" if trained else "cached"
    record = dict(profile=profile, cache=state, total_seconds=round(total_s, 1), render_seconds=round(render_s, 1),
                  chapters={k: round(v, 1) for k, v in chapters.items()}, trained=trained,
                  cpus=os.cpu_count(), machine=platform.machine(), when=time.strftime("%Y-%m-%d %H:%M"))
    return write_json_atomic(layout.build / "timings" / f"{profile}-{state}.json", record, indent=1)


def update_reference_files(layout: Layout, slugs: list[str], timings: Path | None,
                           profile: str = "full") -> list[Path]:
    """Copy this build's results (and whole-book timings) to the committed ``results/<profile>/``
    (the numbers the prose and the tests are written against), noting when (``reference``)."""
    from datetime import datetime, timezone

    written, now = [], datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    for slug in slugs:
        src = layout.results / f"{slug}.json"
        if src.is_file():
            dest = layout.root / "results" / profile / src.name
            data = {**json.loads(src.read_text()), "reference": {"profile": profile, "built": now}}
            write_json_atomic(dest, data, indent=1)
            written.append(dest)
    if timings is not None and timings.is_file():
        dest = layout.root / "results" / "timings" / timings.name
        write_json_atomic(dest, json.loads(timings.read_text()), indent=1)
        written.append(dest)
    return written


def run_parameters(path: Path) -> dict | None:
    """The parameters an executed notebook was run with (papermill's record); None if unreadable."""
    import nbformat

    try:
        meta = nbformat.read(path, as_version=4).metadata.get("papermill", {})
    except Exception:
        return None
    return dict(meta.get("parameters", {}))


def previous_run(path: Path) -> str:
    """A short description of an executed notebook kept from an earlier build."""
    params = run_parameters(path) or {}  # unreadable: described by date only
    profile = params.pop("profile", "?")
    model = params.pop("model", "toy")
    rest = "".join(f", {k}={v!r}" for k, v in sorted(params.items()))
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(path.stat().st_mtime))
    return f"model {model}, profile {profile}{rest}, {when}"


def built_with(path: Path) -> tuple[str, str]:
    """``(model, profile)`` an executed notebook was built with (``("?", "?")`` if unreadable)."""
    params = run_parameters(path)
    if params is None:
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
