"""What a build leaves behind and says about its runs (timings, reference results, the model and
parameters of each executed chapter, each model's training share) and the build folder's lock."""
from __future__ import annotations

import contextlib
import json
import logging
import os
import platform
import signal
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from ..paths import write_json_atomic
from .chapters import BuildError, Layout, say

__all__ = ["keep_timings", "update_reference_files", "previous_run", "mix_warning",
           "training_report", "write_bytes_atomic", "build_lock", "interrupt_on_sigterm",
           "run_parameters"]


def write_bytes_atomic(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` so that a reader sees the old file or the whole new one."""
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
    """Hold ``_build/.lock`` for a block: a second build of the folder fails at once, naming the
    live one's pid; the lock dies with its process (SIGKILL included)."""
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
        fh.truncate(0)                        # "a+" writes at the end: now the start
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        yield path


@contextlib.contextmanager
def interrupt_on_sigterm():
    """For a block in the main thread: SIGTERM stops the build as Ctrl-C does, not mid-write; either
    signal first kills the kernels of the chapters running here, so the build ends at once."""
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
    """Record a whole-book build's wall times in ``_build/timings/<profile>-<(un)cached>.json``."""
    state = "uncached" if trained else "cached"
    record = dict(profile=profile, cache=state, total_seconds=round(total_s, 1), render_seconds=round(render_s, 1),
                  chapters={k: round(v, 1) for k, v in chapters.items()}, trained=trained,
                  cpus=os.cpu_count(), machine=platform.machine(), when=time.strftime("%Y-%m-%d %H:%M"))
    return write_json_atomic(layout.build / "timings" / f"{profile}-{state}.json", record, indent=1)


def update_reference_files(layout: Layout, slugs: list[str], timings: Path | None,
                           profile: str = "full") -> None:
    """Copy this build's results (and timings) to the committed ``results/``, noting when."""
    written, now = [], datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    for slug in slugs:
        src = layout.results / f"{slug}.json"
        if src.is_file():
            data = {**json.loads(src.read_text()), "reference": {"profile": profile, "built": now}}
            dest = layout.root / "results" / profile / src.name
            written.append(write_json_atomic(dest, data, indent=1))
    if timings is not None and timings.is_file():
        dest = layout.root / "results" / "timings" / timings.name
        written.append(write_json_atomic(dest, json.loads(timings.read_text()), indent=1))
    for path in written:
        say(f"updated reference {path.relative_to(layout.root)}")


def run_parameters(path: Path) -> dict | None:
    """The parameters an executed notebook was run with (papermill's record); None if unreadable."""
    import nbformat

    with contextlib.suppress(Exception):
        meta = nbformat.read(path, as_version=4).metadata.get("papermill", {})
        return dict(meta.get("parameters", {}))
    return None


def previous_run(path: Path) -> str:
    """A short description of an executed notebook kept from an earlier build."""
    params = run_parameters(path) or {}  # unreadable: described by date only
    profile = params.pop("profile", "?")
    model = params.pop("model", "toy")
    rest = "".join(f", {k}={v!r}" for k, v in sorted(params.items()))
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(path.stat().st_mtime))
    return f"model {model}, profile {profile}{rest}, {when}"


def mix_warning(notebooks: dict[str, Path]) -> None:
    """Warn when a site's executed notebooks (by slug) were built with other models or profiles."""
    groups: dict[str, list[str]] = {}
    for slug, path in notebooks.items():
        params = run_parameters(path)
        built = ("model ?, profile ?" if params is None else
                 f"model {params.get('model', 'toy')}, profile {params.get('profile', '?')}")
        groups.setdefault(built, []).append(slug)
    if len(groups) > 1:
        say("warning: the site mixes chapters built differently: "
            + "; ".join(f"{k}: {', '.join(v)}" for k, v in groups.items()))


def training_report(trained: list, wall_seconds: float) -> None:
    """Say the training step's wall time and each model's share of it, longest first."""
    if not trained:
        return
    say(f"training: {len(trained)} model{'s' if len(trained) != 1 else ''} in {wall_seconds:.0f} s "
        f"of wall time; each model's share:")
    for t in sorted(trained, key=lambda t: -t.seconds):
        say(f"  {t.seconds:6.1f} s  {t.label} ({t.how})")
