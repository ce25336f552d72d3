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
