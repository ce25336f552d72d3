"""A chapter in pages of a sitting, and prose that speaks of the model it ran.

A chapter is one source and one execution (one kernel, one results file), but the site shows it
as 2–4 pages. The source marks where a page starts with a level-1 heading: every Markdown cell
after the first whose source begins with ``# `` opens a new page. The executed notebook is cut
there (:func:`split_pages`); page *k* > 1 becomes the document ``<slug>-<k>`` under the chapter in
the table of contents, so Sphinx numbers it k−1 inside the chapter and figures, equations and
exercises keep counting across the chapter's pages.

Glued values (:func:`mlmbook.record`) are cited on any page: a page that cites a key glued on
another page gets a hidden carrier cell holding that glue output.

Prose for one kind of model: a cell tagged ``toy-only`` is dropped from the page when the chapter
ran on a model other than the toy one (a Hugging Face model), and a cell tagged ``real-only`` when
it ran on a toy model (:func:`drop_other_world`), so a real-model page never speaks of the toy
world. The build's checks see the notebook the way the page will show it.
"""
from __future__ import annotations

import copy

__all__ = ["TOY_ONLY", "REAL_ONLY", "model_kind", "drop_other_world", "split_pages", "page_name",
           "is_page_start"]

TOY_ONLY = "toy-only"
REAL_ONLY = "real-only"
_TOY_MODELS = ("toy", "truth")          # mlmbook.models.load.TOY_MODELS (kept torch-free here)


def model_kind(nb) -> str:
    """``"toy"`` or ``"real"``: the model the executed notebook ran on (papermill's parameters)."""
    params = nb.metadata.get("papermill", {}).get("parameters", {}) or {}
    return "toy" if str(params.get("model", "toy")) in _TOY_MODELS else "real"


def _dropped(cell, kind: str) -> bool:
    tags = set(cell.get("metadata", {}).get("tags", []))
    return (kind == "real" and TOY_ONLY in tags) or (kind == "toy" and REAL_ONLY in tags)


def drop_other_world(nb, kind: str | None = None):
    """Remove, in place, the cells meant for the other kind of model; returns the notebook.

    Glue outputs of a removed code cell are kept: they move to a hidden cell, so a value recorded
    in a toy-only cell stays citable.
    """
    kind = kind or model_kind(nb)
    kept, carried = [], []
    for cell in nb.cells:
        if _dropped(cell, kind):
            carried += [o for o in cell.get("outputs", []) if _is_glue(o)]
            continue
        kept.append(cell)
    if carried:
        kept.append(_carrier(carried))
    nb.cells = kept
    return nb


def is_page_start(cell) -> bool:
    """A Markdown cell that opens with a level-1 heading."""
    return cell.cell_type == "markdown" and cell.source.lstrip().startswith("# ")


def page_name(slug: str, k: int) -> str:
    """The document name of page ``k`` (1-based) of chapter ``slug``: ``slug`` itself for page 1."""
    return slug if k == 1 else f"{slug}-{k}"


def _is_glue(output) -> bool:
    return "scrapbook" in output.get("metadata", {})


def _glue_key(output) -> str:
    return output["metadata"]["scrapbook"]["name"]


def _carrier(outputs):
    from nbformat.v4 import new_code_cell

    cell = new_code_cell("# values recorded on the chapter's other pages (hidden)")
    cell.metadata["tags"] = ["remove-cell"]
    cell.outputs = [copy.deepcopy(o) for o in outputs]
    cell.execution_count = None
    return cell


def split_pages(nb, slug: str) -> list[tuple[str, object]]:
    """Cut an executed chapter into its pages: ``[(document name, notebook), ...]``.

    The first page keeps everything before the second level-1 heading (title, card, objectives,
    parameters). Each page gets a hidden carrier cell with the glue outputs it cites but does not
    itself produce (all glue outputs are carried when the citing cannot be read; a duplicate key in
    one page would be a build warning, so a key is never carried where it is glued).
    """
    from .checks import glue_uses

    starts = [k for k, c in enumerate(nb.cells) if is_page_start(c)]
    if len(starts) <= 1:
        return [(slug, nb)]
    bounds = [0] + starts[1:] + [len(nb.cells)]
    glue_outputs = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if _is_glue(out):
                glue_outputs[_glue_key(out)] = out
    pages = []
    for k in range(len(bounds) - 1):
        page = copy.copy(nb)
        page.metadata = copy.deepcopy(nb.metadata)
        cells = nb.cells[bounds[k]:bounds[k + 1]]
        page.cells = cells
        own = {_glue_key(o) for c in cells for o in c.get("outputs", []) if _is_glue(o)}
        cited = {key for key, _ in glue_uses(page)}
        carry = [glue_outputs[key] for key in sorted(cited - own) if key in glue_outputs]
        if carry:
            page.cells = [*cells[:1], _carrier(carry), *cells[1:]]
        pages.append((page_name(slug, k + 1), page))
    return pages
