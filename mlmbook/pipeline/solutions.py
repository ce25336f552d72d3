"""Removing exercise solutions from a chapter, for a student edition of the book: both forms of
``docs/INTERFACES.md`` (a ``{solution} <label>`` directive in backtick or colon fences, or the cells
from ``{solution-start} <label>`` to ``{solution-end}``); plain code blocks are left alone.
"""
from __future__ import annotations

import re

__all__ = ["strip_solutions", "strip_solutions_text"]

_DIRECTIVE = re.compile(r"^\s*(?P<fence>`{3,}|:{3,}|~{3,})\s*\{(?P<name>[\w:-]+)\}")
_FENCE = re.compile(r"^\s*(?P<fence>`{3,}|~{3,})")
_OPAQUE = {"code", "code-block", "code-cell", "sourcecode", "literalinclude"}
_SOLUTION_NAMES = {"solution", "solution-start", "solution-end"}


def _closes(line: str, fence: str) -> bool:
    """Whether ``line`` closes a block opened with ``fence`` (same character, at least as long)."""
    return re.fullmatch(re.escape(fence[0]) + "{%d,}" % len(fence), line.strip()) is not None


def _closing(lines: list[str], start: int, fence: str) -> int:
    """Index of the line closing ``fence`` opened at ``start`` (last line if unterminated)."""
    return next((k for k in range(start + 1, len(lines)) if _closes(lines[k], fence)),
                len(lines) - 1)


def _strip_lines(lines: list[str], gated: bool) -> tuple[list[str], bool, int]:
    """Drop solution blocks from ``lines``; ``gated`` says whether we start inside one."""
    kept, removed, i = [], 0, 0
    open_directives: list[str] = []  # fences of enclosing non-solution directives
    while i < len(lines):
        if open_directives and _closes(lines[i], open_directives[-1]):
            open_directives.pop()
            if not gated:
                kept.append(lines[i])
            i += 1
            continue
        directive = _DIRECTIVE.match(lines[i])
        fence = _FENCE.match(lines[i])
        if directive and directive["name"] in _SOLUTION_NAMES:
            end = _closing(lines, i, directive["fence"])
            if directive["name"] == "solution-start":
                gated, removed = True, removed + 1
            elif directive["name"] == "solution-end":
                gated = False
            elif not gated:
                removed += 1
            i = end + 1
            continue
        if fence and (not directive or directive["name"] in _OPAQUE):
            end = _closing(lines, i, fence["fence"])  # a code block: copy it verbatim
            if not gated:
                kept.extend(lines[i:end + 1])
            i = end + 1
            continue
        if directive:  # another directive (note, exercise, ...): look inside it
            open_directives.append(directive["fence"])
        if not gated:
            kept.append(lines[i])
        i += 1
    return kept, gated, removed


def strip_solutions_text(text: str) -> tuple[str, int]:
    """Remove the solutions from one MyST-Markdown document: ``(text, number removed)``."""
    kept, _, removed = _strip_lines(text.splitlines(keepends=True), gated=False)
    return "".join(kept), removed


def strip_solutions(nb) -> int:
    """Remove the solutions from a notebook, in place; returns how many (a Markdown cell left
    empty is dropped)."""
    cells, gated, total = [], False, 0
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            if not gated:
                cells.append(cell)
            continue
        was_gated = gated
        kept, gated, removed = _strip_lines(cell.source.splitlines(keepends=True), gated)
        total += removed
        if not removed and not was_gated and not gated:
            cells.append(cell)
        elif "".join(kept).strip():
            cell.source = "".join(kept).rstrip("\n")
            cells.append(cell)
    nb.cells = cells
    return total
