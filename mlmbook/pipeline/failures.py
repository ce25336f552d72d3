"""What a failed chapter says: one line naming the chapter, the cell and the cause, and where to
look.

:func:`failure` turns papermill's error, a cell timeout or a dead kernel into a
:class:`~mlmbook.errors.ChapterFailed`: ``chapter NN_slug failed in cell K: Error: message``, then
the chapter file's line and the executed notebook kept with the traceback.
"""
from __future__ import annotations

from pathlib import Path

from .chapters import Chapter, ChapterFailed, parameters_cell_index
from .checks import last_started_cell, own_code_cells

__all__ = ["failure"]


def _failed_cell(nb, error) -> int | None:
    """The 1-based code-cell number of the cell papermill reports as failed.

    ``error.cell_index`` counts the cells of the executed notebook, which has the injected
    parameters cell; the code-cell number counts the chapter's own code cells only.
    """
    params = parameters_cell_index(nb)
    injected = 0 if params is None else params + 1
    index = error.cell_index - (1 if error.cell_index > injected else 0)
    if not 0 <= index < len(nb.cells):
        return None
    return sum(c.cell_type == "code" for c in nb.cells[:index + 1])


def _source_line(chapter: Chapter, cell_source: str) -> int | None:
    if not cell_source.strip():
        return None
    try:
        text = chapter.path.read_text(encoding="utf-8")
    except OSError:  # a worker without the book's sources: the cell stays unlocated
        return None
    at = text.find(cell_source.strip())
    return None if at < 0 else text.count("\n", 0, at) + 1


def _first_line(text: str) -> str:
    return next((line.strip() for line in str(text).splitlines() if line.strip()), "")


def failure(chapter: Chapter, nb, err: BaseException, kept: Path | None, timeout: int,
            shown: Path | None = None) -> ChapterFailed:
    """The one-line (plus where-to-look line) message of a chapter that raised or timed out.

    ``kept``: the notebook written up to the failure (read here); ``shown``: where the build keeps
    it, named in the message (default ``kept``).
    """
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
    line = _source_line(chapter, source or "")
    detail = f"{chapter.path.name} line {line}" if line else chapter.path.name
    message = f"chapter {chapter.slug} failed{f' in cell {number}' if number else ''}: {what}"
    if kept is not None:
        message += f"\n  ({detail}; executed notebook with the traceback: {shown or kept})"
    return ChapterFailed(message)


def _stopped_cell(kept: Path | None) -> tuple[int | None, str | None]:
    """The chapter's code-cell number and source of the cell running when execution stopped."""
    import nbformat

    if kept is None:
        return None, None
    try:
        nb = nbformat.read(kept, as_version=4)
    except Exception:  # an unreadable partial notebook: the cell stays unnamed
        return None, None
    index = last_started_cell(nb)
    if index is None or nb.cells[index].cell_type != "code":
        return None, None
    return len(own_code_cells(nb.cells[:index + 1])), nb.cells[index].source
