"""Checks of an executed chapter before it is published, and clean-up after a killed run:
:func:`check_executed` fails a cell that never ran, a ``{glue:...}`` key cited but never glued, a
number slot showing ``nan`` or a placeholder, words claiming more than the answer (:mod:`.wording`).
"""

from __future__ import annotations

import ast
import copy
import math
import re
import shutil
from pathlib import Path

from .split import drop_other_world, figure_caption
from .wording import answers_from_glue, claim_problems, prose_lines

__all__ = ["glue_uses", "glued_values", "check_executed", "relax_formats", "clean_leftovers",
           "last_started_cell", "own_code_cells"]

_ROLE = re.compile(r"\{glue(?::(\w*))?\}`([^`]+)`")
_DIRECTIVE = re.compile(r"^\s*(`{3,}|~{3,})\{glue(?::(\w*))?\}\s+(\S+)")
_NUMBER_TYPES = set("bcdoxXeEfFgGn%")


def glue_uses(nb) -> list[tuple[str, str | None]]:
    """Every ``(key, format)`` the markdown and figure captions cite with a ``{glue...}`` role or
    directive (``format``: a ``{glue:text}`key:spec``` role's spec, else None), no ``path::key``."""
    uses = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            lines = figure_caption(cell).splitlines()
        elif cell.cell_type == "markdown":
            lines = list(prose_lines(cell.source))
        else:
            continue
        for line in lines:
            d = _DIRECTIVE.match(line)
            if d:
                uses.append((d.group(3), None))
                continue
            for kind, text in _ROLE.findall(line):
                key, fmt = text, None
                if kind == "text" and ":" in text.replace("::", ""):
                    key, fmt = text.rsplit(":", 1)
                if "::" not in key:
                    uses.append((key.strip(), fmt))
    return uses


def glued_values(nb) -> dict[str, str | None]:
    """Key → the ``text/plain`` of what was glued (None without a text form); the last glue wins."""
    values: dict[str, str | None] = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            if name is None:
                continue
            prefix = out["metadata"]["scrapbook"].get("mime_prefix", "")
            values[name] = out.get("data", {}).get(prefix + "text/plain")
    return values


def _formats(text: str, fmt: str) -> bool:
    """Whether a glued text/plain formats with ``fmt`` as myst-nb would, to a finite number."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = text
    try:
        value = int(value) if fmt[-1] in "bcdoxX" else float(value)
        format(value, fmt)
    except (ValueError, TypeError, OverflowError):
        return False
    return math.isfinite(value)


def own_code_cells(cells) -> list:
    """The chapter's own code cells among ``cells`` (papermill's injected parameters left out)."""
    return [c for c in cells
            if c.cell_type == "code" and "injected-parameters" not in c.metadata.get("tags", [])]


def last_started_cell(nb) -> int | None:
    """Index in ``nb.cells`` of the last cell papermill started (the one running at a stop)."""
    started = [i for i, c in enumerate(nb.cells) if c.metadata.get("papermill", {}).get("start_time")]
    return started[-1] if started else None


def check_executed(nb, not_measured: dict[str, str] | None = None) -> list[str]:
    """What is wrong with an executed chapter that papermill reported as a success, one line per
    problem (``not_measured``: the keys the chapter declared with :func:`mlmbook.not_measured`)."""
    problems = []
    unrun = []                  # the code cells (numbered from 1) that did not run to completion
    for number, cell in enumerate(own_code_cells(nb.cells), 1):
        meta = cell.metadata.get("papermill", {})
        if meta.get("start_time") is None or meta.get("status") != "completed" or meta.get("exception"):
            unrun.append(number)
    nb = drop_other_world(copy.deepcopy(nb))          # the prose the page will show
    if unrun:
        problems.append(f"code cell(s) {', '.join(map(str, unrun))} did not run to completion")
    glued = glued_values(nb)
    not_measured = not_measured or {}
    missing, unformattable = [], []
    for key, fmt in glue_uses(nb):
        if key not in glued:
            missing.append(key)
        elif fmt and fmt[-1] in _NUMBER_TYPES and key not in not_measured:
            text = glued[key]
            if text is None or not _formats(text, fmt):
                unformattable.append(f"{key} = {text} (as :{fmt})")
        elif glued[key] is not None and glued[key].strip("'\"").lower() in ("nan", "inf", "-inf", "n/a"):
            unformattable.append(f"{key} = {glued[key]}")
    if missing:
        names = ", ".join(sorted(set(missing)))
        problems.append(f"the prose cites glue key(s) never recorded: {names} "
                        "(record them, or declare them with mlmbook.not_measured)")
    if unformattable:
        problems.append("number slot(s) without a finite number: " + "; ".join(sorted(set(unformattable)))
                        + " (record a number, or declare the key with mlmbook.not_measured)")
    answers, order = answers_from_glue(glued)
    markdown = [cell.source for cell in nb.cells if cell.cell_type == "markdown"]
    problems += [f"the words claim more than the answer: {p} (write what the answer allows: its estimate, "
                 f"interval and glued verdict)" for p in claim_problems(markdown, answers, order)]
    return problems


def relax_formats(nb, keys) -> int:
    """Drop the number format of ``{glue:text}`key:fmt``` in the markdown cells for ``keys`` (they
    hold sentences); returns the number of roles changed."""
    keys, changed = set(keys), 0

    def plain(m: re.Match) -> str:
        nonlocal changed
        kind, text = m.group(1), m.group(2)
        if kind == "text" and ":" in text.replace("::", ""):
            key = text.rsplit(":", 1)[0]
            if key.strip() in keys:
                changed += 1
                return f"{{glue:text}}`{key}`"
        return m.group(0)

    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = _ROLE.sub(plain, cell.source)
    return changed


def clean_leftovers(*folders: Path) -> list[Path]:
    """Remove the dot-files and dot-folders a killed run left in ``folders`` (before an atomic
    rename: ``.NN_slug.<rand>.ipynb``, ``.tmp``, ``_build/results/.running/``); returns them."""
    removed = []
    for folder in (f for f in folders if f.is_dir()):
        for path in (p for p in folder.iterdir() if p.name.startswith(".")):
            try:
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink()
            except FileNotFoundError:
                continue
            removed.append(path)
    return removed
