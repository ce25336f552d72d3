"""Explorers: ipywidgets controls that also leave a static figure for the printed site.

:func:`explore` shows the figure at the default setting as *one* output, labelled with what it shows
at which setting (a chapter captions it through the cell's ``mystnb: figure:`` metadata); under the
book build (``$MLMBOOK_CHAPTER`` set) no controls follow: a second output would be a second figure.
"""
from __future__ import annotations

import base64
import html
from typing import Callable

import matplotlib.pyplot as plt

from .paths import env_str

__all__ = ["explore", "static_note"]


def static_note(setting: dict, shows: str | None = None) -> str:
    """The label under an explorer's static figure: what it ``shows``, at which ``setting`` (the
    controls' defaults), and the controls a reader can move in Jupyter, in words, not Python.

    >>> static_note({"model_name": "toy", "centred": True}, "the spectrum")
    'The spectrum, at model name toy, centred on. Controls in Jupyter: model name, centred.'
    """
    at = ", ".join(f"{_words(k)} {_value(v)}" for k, v in setting.items())
    what = f"{shows[:1].upper()}{shows[1:]}, at {at}" if shows else f"Static figure at {at}"
    return f"{what}. Controls in Jupyter: {', '.join(_words(k) for k in setting)}."


def _words(name: str) -> str:
    return str(name).replace("_", " ")


def _value(v) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def explore(draw: Callable, shows: str | None = None, **controls):
    """Show ``draw(**defaults)`` as a static figure, then (in Jupyter) an interactive version: the
    ``ipywidgets`` container, or None under the book build or without ipywidgets.

    Parameters
    ----------
    draw : callable
        Draws one figure (creating it with ``plt.subplots``) from keyword arguments.
    shows : str, optional
        What the static figure shows, for the sentence under it (:func:`static_note`).
    **controls
        ``name=(widget or ipywidgets abbreviation, default)``; e.g.
        ``temperature=((0.2, 3.0, 0.1), 1.0)`` or ``sentence=(list_of_options, 0)``.
    """
    from IPython.display import HTML, display

    from .plotting import figure_png

    defaults = {k: v[1] for k, v in controls.items()}
    draw(**defaults)
    fig = plt.gcf()
    note = html.escape(static_note(defaults, shows))
    data, width = figure_png(fig)
    png = base64.b64encode(data).decode("ascii")
    display(HTML(f'<img src="data:image/png;base64,{png}" alt="{note}" width="{width}" '
                 f'class="mlmbook-explorer-figure" style="max-width:100%;height:auto"/>'
                 f'<p class="mlmbook-explorer-note"><i>{note}</i></p>'))
    plt.close(fig)
    if env_str("MLMBOOK_CHAPTER") is not None:             # the book build: a static page
        return None
    try:
        import ipywidgets as w
    except ImportError:                      # static only
        return None
    made = {}
    for name, (spec, default) in controls.items():
        if isinstance(spec, w.Widget):
            spec.value = default
            made[name] = spec
        elif (isinstance(spec, (list, tuple)) and len(spec) == 3
              and all(isinstance(x, (int, float)) for x in spec)):
            cls = w.IntSlider if all(isinstance(x, int) for x in spec) else w.FloatSlider
            made[name] = cls(min=spec[0], max=spec[1], step=spec[2], value=default,
                             description=name, continuous_update=False)
        else:
            made[name] = w.Dropdown(options=list(spec), value=default, description=name)
    out = w.interactive_output(lambda **kw: (draw(**kw), plt.show()), made)
    box = w.VBox([w.HBox(list(made.values())), out])
    box.layout.display = "flex"
    display(box)
    return box
