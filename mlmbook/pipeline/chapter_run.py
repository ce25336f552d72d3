"""Execute one chapter on a worker and return what the build publishes, as bytes (only the build's
process publishes). A worker sharing the build folder keeps its scratch where the next build cleans
a killed one's leftovers (``_build/results/.running/``, dot-files in ``_build/exec``)."""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import os
import sys
import tempfile
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path

from .. import plans
from ..paths import env_int, repo_root, write_json_atomic
from ..workers import tell
from ..workers.cluster import kernel_argv
from .chapters import BuildError, Chapter
from .checks import check_executed, relax_formats
from .failures import failure
from .record import load_not_measured
from .split import for_execution

__all__ = ["Run", "Outcome", "run_chapter", "ensure_kernel", "cell_timeout", "stop_kernels",
           "RUNNING", "THREAD_VARIABLES", "CELL_LINE_SECONDS", "install_models"]

RUNNING = ".running"  # under _build/results: the results of chapters still executing

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")

CELL_LINE_SECONDS = 30.0
"""A chapter's ``cell K/N`` progress line is printed at most this often."""


def cell_timeout() -> int:
    """Seconds a cell may run before it fails its chapter (``$MLMBOOK_CELL_TIMEOUT``, 1200)."""
    return env_int("MLMBOOK_CELL_TIMEOUT", 1200, minimum=1)


def ensure_kernel(kernels: Path) -> str:
    """Write a ``python3`` kernelspec running *this* interpreter into the Jupyter data dir
    ``kernels`` (first on the chapters' ``JUPYTER_PATH``), a kernel that dies with its starter."""
    if importlib.util.find_spec("ipykernel") is None:
        raise BuildError(f"ipykernel is not installed for {sys.executable}; pip install ipykernel")
    spec = {"argv": kernel_argv(), "display_name": "Python 3 (ipykernel)", "language": "python",
            "metadata": {"debugger": False}}
    path = Path(kernels) / "kernels" / "python3" / "kernel.json"
    if not path.is_file() or path.read_text() != json.dumps(spec, indent=1) + "\n":
        write_json_atomic(path, spec, indent=1)
    return "python3"


@dataclass(frozen=True)
class Run:
    """What a worker needs to execute one chapter: the book's root (a worker's own where this one is
    not there), the build folder when shared, the kernel's threads (None: the build's
    ``thread_env``) unless ``$MLMBOOK_THREADS`` sets them, and papermill's per-cell bar."""

    chapter: Chapter
    notebook: str
    parameters: dict
    root: Path
    build: Path | None
    failed: Path
    threads: int | None = None
    thread_env: dict = field(default_factory=dict)
    timeout: int = 1200
    progress: bool = False


@dataclass(frozen=True)
class Outcome:
    """What a chapter's run returns to the build: the executed notebook and its results (None when
    it recorded none), or ``error`` (the message) and ``failed`` (the notebook, when written)."""

    notebook: bytes | None = None
    results: bytes | None = None
    error: str | None = None
    failed: bytes | None = None


@contextlib.contextmanager
def _environment(**values):
    """Set (or, for None, unset) environment variables, inherited by the kernel, for a block."""
    saved = {k: os.environ.get(k) for k in values}
    _put(values)
    try:
        yield
    finally:
        _put(saved)


def _put(values: dict) -> None:
    os.environ.update({k: v for k, v in values.items() if v is not None})
    for key in [k for k, v in values.items() if v is None]:
        os.environ.pop(key, None)


def _prepare_for_render(nb, chapter: Chapter, parameters: dict[str, object]) -> None:
    """Hide the injected-parameters cell; note in the ``parameters`` cell the values injected."""
    for cell in nb.cells:
        tags = cell.metadata.setdefault("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
        if "parameters" in tags and parameters:
            used = ", ".join(f"{k}={_shown(v)!r}" for k, v in parameters.items())
            cell.source = cell.source.rstrip("\n") + f"\n# this build used: {used}"
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                 "language": "python"}
    meta = nb.metadata.get("papermill", {})  # input_path holds the whole source notebook
    meta.update(input_path=f"{chapter.docname}.md",
                output_path=f"_build/exec/{chapter.slug}.ipynb")


def install_models(values: dict | None) -> None:
    """Put the models shipped with the task (``UnitDone`` s, packed entries) in this cache."""
    from ..models import shipping

    for value in (values or {}).values():
        blobs = value if isinstance(value, dict) else getattr(value, "models", {})
        for name, blob in blobs.items():
            shipping.install(name, blob)


def _cell_reporter(slug: str, total: int):
    """A papermill hook that tells the chapter's progress, ``03_x cell 12/80``."""
    t0, shown = time.perf_counter(), [time.perf_counter()]

    def on_cell(number: int) -> None:
        now = time.perf_counter()
        show = now - shown[0] >= CELL_LINE_SECONDS
        if show:
            shown[0] = now
        s = int(now - t0)
        tell(f"{slug} cell {number}/{total} ({s // 60}:{s % 60:02d} in)", show=show)

    return on_cell


_LIVE_KERNELS: weakref.WeakSet = weakref.WeakSet()
"""The kernel managers of the chapters executing in this process (:func:`stop_kernels`)."""


@functools.cache
def _tracked_kernel_manager() -> type:
    """Jupyter's kernel manager, which notes each kernel it starts in :data:`_LIVE_KERNELS`."""
    from jupyter_client.manager import AsyncKernelManager

    class TrackedKernelManager(AsyncKernelManager):
        async def start_kernel(self, **kwargs):
            await super().start_kernel(**kwargs)
            _LIVE_KERNELS.add(self)

    return TrackedKernelManager


def stop_kernels() -> None:
    """Kill the kernel of every chapter executing in this process (an interrupted build)."""
    for manager in list(_LIVE_KERNELS):
        process = getattr(getattr(manager, "provisioner", None), "process", None)
        if process is not None and process.poll() is None:
            process.kill()


def _register_engine() -> str:
    """Papermill's nbclient engine with a per-code-cell hook (``on_cell``), as ``mlmbook``."""
    from papermill.engines import NBClientEngine, papermill_engines

    class _Engine(NBClientEngine):
        @classmethod
        def execute_managed_notebook(cls, nb_man, kernel_name, on_cell, **kwargs):
            start, number = nb_man.cell_start, [0]

            def cell_start(cell, cell_index=None, **kw):
                start(cell, cell_index, **kw)
                if cell.cell_type == "code" and "injected-parameters" not in cell.metadata.get("tags", []):
                    number[0] += 1
                    on_cell(number[0])

            nb_man.cell_start = cell_start
            return super().execute_managed_notebook(nb_man, kernel_name, **kwargs)

    papermill_engines.register("mlmbook", _Engine)
    return "mlmbook"


def run_chapter(run: Run, needs: dict | None = None) -> Outcome:
    """Execute ``run``'s chapter (after installing the models shipped as ``needs``) and return its
    :class:`Outcome`, a failure included; interrupted, it removes its scratch."""
    import nbformat
    import papermill

    install_models(needs)
    chapter, nb = run.chapter, nbformat.reads(run.notebook, as_version=4)
    for_execution(nb, run.parameters.get("model", "toy"), run.parameters.get("treebank"))
    shared = run.build is not None and Path(run.build).is_dir()
    with contextlib.ExitStack() as stack:
        base = Path(run.build) if shared else Path(stack.enter_context(
            tempfile.TemporaryDirectory(prefix=f"mlmbook-{chapter.slug}-")))
        running_dir = base / "results" / RUNNING if shared else base / "results"
        exec_dir, kernels = base / "exec", base / "jupyter"
        for d in (running_dir, exec_dir):
            d.mkdir(parents=True, exist_ok=True)
        kernel = ensure_kernel(kernels)
        running = running_dir / f"{chapter.slug}.json"
        running.unlink(missing_ok=True)                   # the chapter's results start empty
        fd, tmp_name = tempfile.mkstemp(prefix=f".{chapter.slug}.", suffix=".ipynb", dir=exec_dir)
        os.close(fd)
        tmp = Path(tmp_name)
        stack.callback(_remove, tmp, running, running_dir)
        root = Path(run.root) if Path(run.root).is_dir() else repo_root()
        cwd = chapter.path.parent if chapter.path.parent.is_dir() else exec_dir
        count = os.environ.get("MLMBOOK_THREADS") or (str(run.threads) if run.threads else None)
        threads = {k: count if count else run.thread_env.get(k) for k in THREAD_VARIABLES}
        env = dict(MLMBOOK_CHAPTER=chapter.slug, MLMBOOK_RESULTS=str(running_dir), MLMBOOK_ROOT=str(root),
                   JUPYTER_PATH=os.pathsep.join(p for p in (str(kernels), os.environ.get("JUPYTER_PATH")) if p),
                   PYDEVD_DISABLE_FILE_VALIDATION="1", **threads)
        code_cells = sum(c.cell_type == "code" for c in nb.cells)
        tell(f"executing {chapter.slug} ({code_cells} code cells)", show=False)
        try:
            with _environment(**env):
                papermill.execute_notebook(nb, str(tmp), parameters=run.parameters, kernel_name=kernel,
                                           language="python", cwd=str(cwd), progress_bar=run.progress,
                                           execution_timeout=run.timeout, engine_name=_register_engine(),
                                           on_cell=_cell_reporter(chapter.slug, code_cells),
                                           kernel_manager_class=_tracked_kernel_manager())
        except Exception as err:  # not KeyboardInterrupt: interrupted, the scratch goes
            kept = tmp if tmp.exists() and tmp.stat().st_size else None
            message = str(failure(chapter, nb, err, kept, run.timeout, shown=run.failed if kept else None))
            return Outcome(error=message, failed=kept.read_bytes() if kept else None)
        executed = nbformat.read(tmp, as_version=4)
        not_measured = load_not_measured(chapter.slug, running_dir)
        problems = check_executed(executed, not_measured)
        if problems:
            message = f"chapter {chapter.slug} failed its checks: " + "; ".join(problems)
            message += f"\n  ({chapter.path.name}; executed notebook: {run.failed})"
            return Outcome(error=message, failed=tmp.read_bytes())
        relax_formats(executed, not_measured)
        _prepare_for_render(executed, chapter, run.parameters)
        if running.exists():            # the plan its questions were declared under (mlmbook.plans)
            write_json_atomic(running, plans.stamp(json.loads(running.read_text()), chapter.slug, root),
                              indent=2, sort_keys=True)
        results = running.read_bytes() if running.exists() else None
        text = nbformat.writes(executed)
        text += "" if text.endswith("\n") else "\n"     # as nbformat.write ends a file
        return Outcome(notebook=text.encode(), results=results)


def _remove(tmp: Path, running: Path, running_dir: Path) -> None:
    tmp.unlink(missing_ok=True)
    running.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # left only while some chapter is still running
        running_dir.rmdir()


def _shown(value):
    """A parameter as the page shows it: a local path by its last part (``…/my_model``)."""
    if isinstance(value, str) and os.path.isabs(value):
        return "…/" + os.path.basename(value.rstrip("/"))
    return value
