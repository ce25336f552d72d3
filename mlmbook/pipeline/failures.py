"""What a failed chapter says: ``chapter NN_slug failed in cell K: Error: message``, then the
chapter file's line and the executed notebook kept with the traceback."""
from __future__ import annotations

import contextlib
from pathlib import Path

from ..errors import ChapterFailed
from .chapters import Chapter, parameters_cell_index
from .checks import last_started_cell, own_code_cells

__all__ = ["failure"]


def _failed_cell(nb, error) -> int | None:
    """The own code-cell number (from 1) of ``error.cell_index``, which counts the injected cell."""
    params = parameters_cell_index(nb)
    injected = 0 if params is None else params + 1
    index = error.cell_index - (1 if error.cell_index > injected else 0)
    if not 0 <= index < len(nb.cells):
        return None
    return sum(c.cell_type == "code" for c in nb.cells[:index + 1])


def _first_line(text: str) -> str:
    return next((line.strip() for line in str(text).splitlines() if line.strip()), "")


def failure(chapter: Chapter, nb, err: BaseException, kept: Path | None, timeout: int,
            shown: Path | None = None) -> ChapterFailed:
    """The message of a chapter that raised, timed out or lost its kernel; ``kept``: the notebook
    written up to the failure, ``shown``: where the build keeps it (default ``kept``)."""
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    from papermill.exceptions import PapermillExecutionError

    if isinstance(err, PapermillExecutionError):
        number, source = _failed_cell(nb, err), err.source
        what = f"{err.ename}: {_first_line(err.evalue)}" if err.evalue else err.ename
    elif isinstance(err, (CellTimeoutError, DeadKernelError)):
        number, source = _stopped_cell(kept)
        what = (f"the cell ran longer than {timeout} s (MLMBOOK_CELL_TIMEOUT) and was stopped"
                if isinstance(err, CellTimeoutError) else "the kernel died (out of memory?)")
    else:
        number, source, what = None, None, f"{type(err).__name__}: {_first_line(err)}"
    line, source = None, (source or "").strip()
    if source:
        with contextlib.suppress(OSError):  # a worker without the book's sources: unlocated
            text = chapter.path.read_text(encoding="utf-8")
            at = text.find(source)
            line = None if at < 0 else text.count("\n", 0, at) + 1
    detail = f"{chapter.path.name} line {line}" if line else chapter.path.name
    message = f"chapter {chapter.slug} failed{f' in cell {number}' if number else ''}: {what}"
    if kept is not None:
        message += f"\n  ({detail}; executed notebook with the traceback: {shown or kept})"
    return ChapterFailed(message)


def _stopped_cell(kept: Path | None) -> tuple[int | None, str | None]:
    """The chapter's code-cell number and source of the cell running when execution stopped."""
    import nbformat

    with contextlib.suppress(Exception):  # none kept, or unreadable: the cell stays unnamed
        nb = nbformat.read(kept, as_version=4)
        index = last_started_cell(nb)
        if index is not None and nb.cells[index].cell_type == "code":
            return len(own_code_cells(nb.cells[:index + 1])), nb.cells[index].source
    return None, None
