"""Explorers: ipywidgets controls that also leave a static figure for the printed site.

:func:`explore` draws the figure once at the default setting (so the executed notebook —
and the static site built from it — shows it), then shows the live controls, which redraw
the figure when the notebook runs in Jupyter.
"""
from __future__ import annotations

import matplotlib.pyplot as plt

__all__ = ["explore"]


def explore(draw, **controls):
    """Show ``draw(**defaults)`` as a static figure, then an interactive version.

    Parameters
    ----------
    draw : callable
        Draws one figure (creating it with ``plt.subplots``) from keyword arguments.
    **controls
        ``name=(widget or ipywidgets abbreviation, default)``; e.g.
        ``temperature=((0.2, 3.0, 0.1), 1.0)`` or ``sentence=(list_of_options, 0)``.

    Returns
    -------
    The ``ipywidgets`` container (or ``None`` if ipywidgets is unavailable).
    """
    from IPython.display import HTML, display

    defaults = {k: v[1] for k, v in controls.items()}
    draw(**defaults)
    plt.show()
    setting = ", ".join(f"{k} = {v!r}" for k, v in defaults.items())
    display(HTML(f'<p class="mlmbook-explorer-note"><i>Explorer at its default setting ({setting}). '
                 f'Run this notebook in Jupyter to move the controls below.</i></p>'))
    try:
        import ipywidgets as w
    except ImportError:                      # static only
        return None
    made = {}
    for name, (spec, default) in controls.items():
        if isinstance(spec, w.Widget):
            spec.value = default
            made[name] = spec
        elif isinstance(spec, (list, tuple)) and len(spec) == 3 and all(isinstance(x, (int, float)) for x in spec):
            cls = w.IntSlider if all(isinstance(x, int) for x in spec) else w.FloatSlider
            made[name] = cls(min=spec[0], max=spec[1], step=spec[2], value=default, description=name,
                             continuous_update=False)
        else:
            made[name] = w.Dropdown(options=list(spec), value=default, description=name)
    out = w.interactive_output(lambda **kw: (draw(**kw), plt.show()), made)
    box = w.VBox([w.HBox(list(made.values())), out])
    box.layout.display = "flex"
    display(box)
    return box
