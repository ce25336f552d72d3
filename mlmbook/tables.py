"""Tables a chapter shows: HTML, never Markdown pipes (which the site would print as raw text).

Strings are escaped, except that ``**bold**`` and ``*italic*`` become ``<b>``/``<i>``. A table wider
than the page's column scrolls sideways in its own box (``book/_static/mlmbook.{js,css}``); keep
tables to what a reader compares (about six columns).
"""
from __future__ import annotations

import html
import numbers
import re
from typing import Sequence

__all__ = ["table", "Table"]


def _cell(value, digits: int) -> str:
    if isinstance(value, bool) or value is None:
        return "—" if value is None else ("yes" if value else "no")
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    if isinstance(value, numbers.Real):
        return f"{float(value):.{digits}f}"
    text = html.escape(str(value))
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    return re.sub(r"\*(.+?)\*", r"<i>\1</i>", text)


class Table:
    """A displayable table: renders as HTML in a notebook and on the site, as text in a terminal."""

    def __init__(self, html_text: str, text: str):
        self._html, self._text = html_text, text

    def _repr_html_(self) -> str:
        return self._html

    def __repr__(self) -> str:
        return self._text


def table(rows: Sequence[Sequence], header: Sequence[str] | None = None, caption: str | None = None,
          digits: int = 3) -> Table:
    """A table to display (the last expression of a cell, or ``display(table(...))``).

    Parameters
    ----------
    rows : sequence of sequences
        Cells: numbers (formatted with ``digits`` decimals; integers with thousands separators),
        strings, bools (yes/no) or None (—).
    caption : str, optional
        Say what the table shows and on how many sentences.
    """
    out = ["<div class='mlmbook-table-wrap mlmbook-scroll'><table class='table mlmbook-table'>"]
    if caption:
        out.append(f"<caption>{_cell(caption, digits)}</caption>")
    if header:
        out.append("<thead><tr>" + "".join(f"<th>{_cell(h, digits)}</th>" for h in header) + "</tr></thead>")
    out.append("<tbody>")
    right = " style='text-align:right'"                        # numbers
    for row in rows:
        cells = [f"<td{right if isinstance(v, numbers.Real) and not isinstance(v, bool) else ''}>"
                 f"{_cell(v, digits)}</td>" for v in row]
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    plain = [list(header)] if header else []
    plain += [[_cell(v, digits) for v in r] for r in rows]
    text = re.sub(r"</?[bi]>", "", "\n".join(" | ".join(map(str, r)) for r in plain))
    return Table("".join(out), (caption + "\n" if caption else "") + text)
