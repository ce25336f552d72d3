"""A chapter cut into pages, and cells for one kind of model (mlmbook.pipeline.split)."""
from __future__ import annotations

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from mlmbook.pipeline.split import drop_other_world, for_execution, split_pages


def _glue(key: str, value: str):
    return new_output("display_data", data={"text/plain": value},
                      metadata={"scrapbook": {"name": key, "mime_prefix": "application/papermill.record/"}})


def _chapter(model: str = "toy"):
    code = new_code_cell("x = 1")
    code.outputs = [_glue("kl", "0.07")]
    toy_code = new_code_cell("y = 2", metadata={"tags": ["toy-only"], "mystnb": {"figure": {"name": "fig-toy"}}})
    toy_code.outputs = [_glue("ratio", "35")]
    real_code = new_code_cell("z = 3", metadata={"tags": ["real-only"]})
    nb = new_notebook(cells=[
        new_markdown_cell("# Title\n\nIntro."),
        code,
        new_markdown_cell("# Second page\n\nThe KL is {glue:text}`kl:.3f`."),
        toy_code,
        new_markdown_cell("# Last page\n\nSee {numref}`fig-toy`; ratio {glue:text}`ratio`.",
                          metadata={"tags": ["toy-only"]}),
        real_code,
    ])
    nb.metadata["papermill"] = {"parameters": {"model": model}}
    return nb


def test_a_chapter_is_cut_at_level_one_headings_and_carries_the_glue_it_cites():
    pages = split_pages(_chapter(), "00_x")
    assert [name for name, _ in pages] == ["00_x", "00_x-2", "00_x-3"]
    second = pages[1][1]
    carried = [c for c in second.cells if "remove-cell" in c.metadata.get("tags", [])]
    assert [o["metadata"]["scrapbook"]["name"] for c in carried for o in c.outputs] == ["kl"]
    assert not [c for c in pages[0][1].cells if "remove-cell" in c.metadata.get("tags", [])]


def test_a_real_model_page_drops_the_toy_cells_and_keeps_their_glue_and_figure_declared():
    nb = drop_other_world(_chapter(model="bert-base-uncased"))
    sources = [c.source for c in nb.cells]
    assert "y = 2" not in sources and "z = 3" in sources
    assert not any("See {numref}" in s for s in sources)
    glued = [o["metadata"]["scrapbook"]["name"] for c in nb.cells for o in c.get("outputs", [])]
    assert "ratio" in glued                                     # still citable from a kept page
    stubs = [c for c in nb.cells if c.metadata.get("mystnb", {}).get("figure", {}).get("name") == "fig-toy"]
    assert len(stubs) == 1 and not stubs[0].outputs and "remove-cell" in stubs[0].metadata["tags"]
    from mlmbook.pipeline.site import undrawn_figures
    assert undrawn_figures(nb) == {"fig-toy"}                   # references to it become plain words


def test_a_toy_page_drops_the_real_cells_only():
    nb = drop_other_world(_chapter(model="toy"))
    sources = [c.source for c in nb.cells]
    assert "y = 2" in sources and "z = 3" not in sources
    assert not any(c.metadata.get("mystnb") and not c.outputs for c in nb.cells)


def test_other_world_code_is_not_run():
    real = for_execution(_chapter(), "bert-base-uncased")
    sources = [c.source for c in real.cells if c.cell_type == "code"]
    assert sources[0] == "x = 1" and sources[1].startswith("# (toy-only") and sources[2] == "z = 3"
    assert "toy-only" in real.cells[3].metadata["tags"]           # the page still drops it
    toy = for_execution(_chapter(), "toy")
    code = [c.source for c in toy.cells if c.cell_type == "code"]
    assert code[1:] == ["y = 2", "# (real-only: not run with model toy)"]
    nbformat.validate(toy)


def test_a_figure_caption_on_a_later_page_gets_the_glue_it_cites():
    """A caption (``mystnb.figure.caption``) is prose too: the key it cites, glued on page 1, is carried."""
    nb = _chapter()
    fig = new_code_cell("plot()", metadata={"mystnb": {"figure": {"name": "fig-x",
                                                                  "caption": "On {glue:text}`kl:.2f` nats."}}})
    nb.cells.insert(5, fig)                                      # on the third page, whose prose cites only `ratio`
    third = dict(split_pages(nb, "00_x"))["00_x-3"]
    carried = [o["metadata"]["scrapbook"]["name"] for c in third.cells
               if "remove-cell" in c.metadata.get("tags", []) for o in c.outputs]
    assert carried == ["kl", "ratio"]
    from mlmbook.pipeline.checks import glue_uses
    assert ("kl", ".2f") in glue_uses(nb)
