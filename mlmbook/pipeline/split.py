"""A chapter in pages of a sitting (its numbers run on across them), and prose and code for the
model it ran ("Pages and worlds" in ``docs/INTERFACES.md``). A dropped figure stays *declared but
not drawn*, so a reference to it reads "a figure that is not drawn for this model".
"""
from __future__ import annotations

import copy
import re

__all__ = ["TOY_ONLY", "REAL_ONLY", "drop_other_world", "for_execution",
           "split_pages", "figure_caption"]

TOY_ONLY = "toy-only"
REAL_ONLY = "real-only"
_TOY_MODELS = ("toy", "truth")          # the book's own models (this module stays torch-free)


def kind_of(model, treebank=None) -> str:
    """``"toy"`` for the book's own models (``toy``, ``truth``) on their own language; ``"real"``
    for any other model, and for a toy model read on a treebank (no exact truth there)."""
    on_treebank = treebank not in (None, "", "None", "none")
    return "toy" if str(model) in _TOY_MODELS and not on_treebank else "real"


def _dropped(cell, kind: str) -> bool:
    tags = set(cell.get("metadata", {}).get("tags", []))
    return (kind == "real" and TOY_ONLY in tags) or (kind == "toy" and REAL_ONLY in tags)


def drop_other_world(nb, kind: str | None = None):
    """Remove, in place, the cells meant for the other kind of model than ``kind`` (default: the one
    papermill's parameters name); their glue outputs move to a hidden cell, still citable. Returns
    the notebook."""
    if not kind:
        params = nb.metadata.get("papermill", {}).get("parameters", {}) or {}
        kind = kind_of(params.get("model", "toy"), params.get("treebank"))
    kept, carried, figures = [], [], []
    for cell in nb.cells:
        if _dropped(cell, kind):
            carried += [o for o in cell.get("outputs", []) if _is_glue(o)]
            name = cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("name")
            if cell.cell_type == "code" and name:
                figures.append(name)
            continue
        kept.append(cell)
    if carried:
        kept.append(_carrier(carried))
    for name in figures:  # declared, drawn nothing
        cell = _hidden_cell(f"# figure {name}: drawn only on the other kind of model (hidden)")
        cell.metadata["mystnb"] = {"figure": {"name": name}}
        kept.append(cell)
    nb.cells = kept
    return nb


def _hidden_cell(source: str):
    """A code cell tagged ``remove-cell``, never run."""
    from nbformat.v4 import new_code_cell

    cell = new_code_cell(source)
    cell.metadata["tags"] = ["remove-cell"]
    cell.execution_count = None
    return cell


def for_execution(nb, model, treebank=None):
    """The chapter as it runs on ``model`` (and ``treebank``), in place: the other world's code
    cells become one comment line each (tags and metadata kept, so the page drops them as usual)."""
    kind = kind_of(model, treebank)
    for cell in nb.cells:
        if cell.cell_type == "code" and _dropped(cell, kind):
            tag = TOY_ONLY if kind == "real" else REAL_ONLY
            cell.source = f"# ({tag}: not run with model {model!s})"
    return nb


def _is_glue(output) -> bool:
    return "scrapbook" in output.get("metadata", {})


def _glue_key(output) -> str:
    return output["metadata"]["scrapbook"]["name"]


_GLUE_KEY = re.compile(r"\{glue(?::\w*)?\}`([^`]+)`|^\s*(?:`{3,}|~{3,})\{glue(?::\w*)?\}\s+(\S+)", re.M)


def figure_caption(cell) -> str:
    """A code cell's figure caption (``mystnb.figure.caption``; ``""`` when it has none)."""
    return str(cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("caption", "") or "")


def _cited(cells) -> set[str]:
    """Glue keys the Markdown cells and figure captions cite, inside code fences too (carrying a
    value a page does not show is harmless); keys of another document (``doc::key``) left out."""
    found = set()
    for cell in cells:
        text = cell.source if cell.cell_type == "markdown" else figure_caption(cell)
        for role, directive in _GLUE_KEY.findall(text):
            text = (role or directive).strip()
            if "::" not in text:
                found.add(text.rsplit(":", 1)[0] if role and ":" in text else text)
    return found


def _carrier(outputs):
    cell = _hidden_cell("# values recorded on the chapter's other pages (hidden)")
    cell.outputs = [copy.deepcopy(o) for o in outputs]
    return cell


def split_pages(nb, slug: str) -> list[tuple[str, object]]:
    """Cut an executed chapter into its pages: ``[(document name, notebook), ...]``; each page
    carries (hidden) the glue outputs it cites but does not itself produce."""
    starts = [k for k, c in enumerate(nb.cells)
              if c.cell_type == "markdown" and c.source.lstrip().startswith("# ")]
    if len(starts) <= 1:
        return [(slug, nb)]
    bounds = [0] + starts[1:] + [len(nb.cells)]
    glue_outputs = {_glue_key(o): o for c in nb.cells for o in c.get("outputs", []) if _is_glue(o)}
    pages = []
    for k in range(len(bounds) - 1):
        page = copy.copy(nb)
        page.metadata = copy.deepcopy(nb.metadata)
        cells = nb.cells[bounds[k]:bounds[k + 1]]
        own = {_glue_key(o) for c in cells for o in c.get("outputs", []) if _is_glue(o)}
        carry = [glue_outputs[key] for key in sorted(_cited(cells) - own) if key in glue_outputs]
        page.cells = [*cells[:1], _carrier(carry), *cells[1:]] if carry else cells
        pages.append((slug if k == 0 else f"{slug}-{k + 1}", page))
    return pages
