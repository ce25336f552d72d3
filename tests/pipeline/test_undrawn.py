"""A figure a model cannot draw leaves no dangling reference: references to it become a phrase."""
import nbformat

from mlmbook.pipeline.site import undrawn_figures, unlink_missing


def _figure_cell(name, outputs):
    cell = nbformat.v4.new_code_cell("plot()", metadata={"mystnb": {"figure": {"name": name, "caption": "c"}}})
    cell.outputs = outputs
    return cell


def test_undrawn_figures_and_their_references():
    image = nbformat.v4.new_output("display_data", data={"image/png": "iVBOR", "text/plain": "<Figure>"})
    text = nbformat.v4.new_output("stream", name="stdout", text="skipped: not the toy model\n")
    nb = nbformat.v4.new_notebook(cells=[_figure_cell("fig-drawn", [image]), _figure_cell("fig-skipped", [text])])
    assert undrawn_figures(nb) == {"fig-skipped"}
    prose = "{numref}`fig-skipped` shows it; {numref}`fig-drawn` too; {numref}`Figure %s <fig-skipped>`."
    out = unlink_missing(prose, {"fig-skipped"}, set(), note="a figure that is not drawn for this model")
    assert out == ("a figure that is not drawn for this model shows it; {numref}`fig-drawn` too; "
                   "a figure that is not drawn for this model.")


def test_an_explorers_html_image_counts_as_drawn():
    """The static figure an explorer leaves is an HTML <img>, not an image output: it is drawn."""
    html = nbformat.v4.new_output("display_data", data={
        "text/html": '<img src="data:image/png;base64,iVBOR" width="680"/><p class="mlmbook-explorer-note">'
                     "<i>The figure shows ...</i></p>", "text/plain": "<IPython.core.display.HTML object>"})
    note_only = nbformat.v4.new_output("display_data", data={"text/html": "<p>no figure here</p>"})
    nb = nbformat.v4.new_notebook(cells=[_figure_cell("fig-explorer", [html]), _figure_cell("fig-text", [note_only])])
    assert undrawn_figures(nb) == {"fig-text"}


def test_the_note_for_an_undrawn_figure_names_it_for_the_site_check():
    from mlmbook.pipeline.site import UNDRAWN_NOTE, _undrawn_note

    out = unlink_missing("see {numref}`fig-x`.", {"fig-x"}, set(), note=_undrawn_note)
    assert out == f'see <span class="mlmbook-undrawn" data-figure="fig-x">{UNDRAWN_NOTE}</span>.'
