"""Chapters as notebooks that read and run anywhere: Binder, Colab, a plain Jupyter.

The site's launch and download buttons hand out the executed chapters. Outside the site nothing
renders MyST, so :func:`runnable_notebook` turns each one into a plain notebook: every ``{glue}``
role becomes the value the run glued (formatted as on the page); every other role and directive
becomes plain Markdown with the site's numbers ("Figure 1.3", "(2.1)", "Exercise 1.2"), author–year
citations and links to the sibling notebooks; a figure's caption follows its cell; solutions are
collapsed (a ``{solution}`` as an HTML ``<details>`` block, the cells of a gated solution hidden),
or removed in a student edition; and a first code cell installs the companion package when it is
not importable.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path

from .checks import glued_values

__all__ = ["runnable_notebook", "install_source", "Context", "context_for", "myst_to_markdown",
           "PACKAGE_BRANCH"]

PACKAGE_BRANCH = "main"  # the branch the install cell installs the companion package from

_INSTALL_CELL = """\
# Install the book's companion package `mlmbook` (skipped where it is already installed,
# e.g. in a clone of the repository). Binder has it already; Colab needs this cell.
import importlib.util
import subprocess
import sys

if importlib.util.find_spec("mlmbook") is None:
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", {requirement!r}])
"""
_GLUE_ROLE = re.compile(r"\{glue(?::(\w*))?\}`([^`]+)`")
_GLUE_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\{glue(?::\w*)?\}\s+(\S+)[^\n]*\n(.*?)^\1\2\s*$\n?", re.M | re.S)
_ROLE = re.compile(r"\{([\w:+-]+)\}`([^`]*)`")
_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|:{3,}|~{3,})"
                   r"[ \t]*(?:\{(?P<name>[\w:+-]+)\})?[ \t]*(?P<arg>[^\n]*)$")
_TARGET = re.compile(r"^\s*\((?P<label>[^()\s]+)\)=\s*$")
_EQ_LABEL = re.compile(r"\$\$(?P<body>(?:(?!\$\$).)*?)\$\$[ \t]*\((?P<label>[^()\s]+)\)", re.S)
_ADMONITIONS = {"note", "tip", "warning", "important", "seealso", "hint", "caution", "attention",
                "danger", "error", "admonition"}
_GATED_HIDE = {"source_hidden": True, "outputs_hidden": True}


def install_source(url: str) -> str:
    """The pip requirement that installs the companion package from the repository."""
    return f"mlmbook @ git+{url}@{PACKAGE_BRANCH}"


# ------------------------------------------------------------------------- what the site would show

@dataclass
class Context:
    """What a plain notebook needs to write what the site renders.

    ``numbers``: label → (kind, number), e.g. ``"fig-ch1-tree": ("Figure", "1.3")``;
    ``citations``: bib key → (authors, year); ``docs``: page slug → (title, notebook file or None);
    ``sections``: label → the heading it marks.
    """

    numbers: dict = field(default_factory=dict)
    citations: dict = field(default_factory=dict)
    docs: dict = field(default_factory=dict)
    sections: dict = field(default_factory=dict)


def _fence_end(lines: list[str], i: int, fence: str) -> int:
    """The index of the line closing ``fence`` opened at line ``i`` (``len(lines)`` if none)."""
    closing = re.compile(r"[ \t]*" + re.escape(fence[0]) + "{%d,}[ \t]*" % len(fence))
    return next((k for k in range(i + 1, len(lines)) if closing.fullmatch(lines[k])), len(lines))


def _directives(text: str):
    """(name, arg, options, body, start, end) of each top-level directive in ``text`` (line
    indices)."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        end = _fence_end(lines, i, m["fence"])
        body = lines[i + 1:end]
        options = {}
        while body and re.match(r"^\s*:[\w-]+:", body[0]):
            key, _, value = body.pop(0).strip()[1:].partition(":")
            options[key] = value.strip()
        if body and body[0].strip() == "---":           # YAML options block
            close = next((k for k in range(1, len(body)) if body[k].strip() == "---"), None)
            if close is not None:
                for line in body[1:close]:
                    key, _, value = line.partition(":")
                    options[key.strip()] = value.strip()
                body = body[close + 1:]
        yield (m["name"], m["arg"].strip(), options, "\n".join(body), i, end)
        i = end + 1


def _number_chapter(nb, chapter: int, ctx: Context) -> None:
    counts = {"Figure": 0, "Exercise": 0, "Equation": 0, "Table": 0}

    def add(kind, label):
        counts[kind] += 1  # Sphinx numbers captioned figures, every exercise
        if label:
            ctx.numbers.setdefault(label, (kind, f"{chapter}.{counts[kind]}"))

    for cell in nb.cells:
        if cell.cell_type == "code":
            figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
            if figure.get("name") or figure.get("caption"):
                add("Figure", figure.get("name"))
            continue
        if cell.cell_type != "markdown":
            continue
        events = []
        for name, _arg, options, _body, start, *_ in _directives(cell.source):
            label = options.get("label") or options.get("name")
            kind = {"figure": "Figure", "exercise": "Exercise", "table": "Table",
                    "list-table": "Table", "math": "Equation"}.get((name or "").split(":")[0])
            if name and name.startswith("glue:figure") and label:
                kind = "Figure"
            if kind in ("Table", "Equation") and not label:
                kind = None                            # numbered only when labelled
            if kind:
                events.append((start, kind, label))
        for m in _EQ_LABEL.finditer(cell.source):  # by the line it starts on
            events.append((cell.source.count("\n", 0, m.start()), "Equation", m["label"]))
        lines = cell.source.split("\n")
        for k, line in enumerate(lines):
            t = _TARGET.match(line)
            if t:
                heading = next((re.sub(r"^#+\s*", "", h) for h in lines[k + 1:] if h.startswith("#")), t["label"])
                ctx.sections.setdefault(t["label"], heading.strip())
        for _, kind, label in sorted(events, key=lambda e: e[0]):
            add(kind, label)


def _citations(bibfile: Path) -> dict:
    """Bib key → (authors, year)."""
    from pybtex.database import parse_file

    from .pages import _author_year

    entries = parse_file(str(bibfile)).entries.items()
    return {key: tuple(_author_year(entry).rpartition(", ")[::2]) for key, entry in entries}


def context_for(notebooks: dict, book: Path | None = None) -> Context:
    """The numbers, citations and page titles of the chapters ``notebooks`` (slug → NotebookNode),
    as the site shows them; ``book`` is the book's source folder (for references.bib and pages)."""
    ctx = Context()
    for slug, nb in sorted(notebooks.items()):
        if slug[:2].isdigit():
            _number_chapter(nb, int(slug[:2]), ctx)
        title = next((re.search(r"^# (.+)$", c.source, re.M).group(1) for c in nb.cells
                      if c.cell_type == "markdown" and re.search(r"^# ", c.source, re.M)), slug)
        ctx.docs[slug] = (title.strip(), f"{slug}.ipynb")
    if book is not None:
        bib = Path(book) / "references.bib"
        if bib.is_file():
            ctx.citations = _citations(bib)
        for page in Path(book).glob("*.md"):
            if page.stem not in ctx.docs:
                head = re.search(r"^# (.+)$", page.read_text(encoding="utf-8"), re.M)
                ctx.docs[page.stem] = (head.group(1).strip() if head else page.stem, None)
    return ctx


# --------------------------------------------------------------------------- MyST -> Markdown

def _role(ctx: Context, name: str, body: str) -> str:
    explicit = re.match(r"^(.*?)\s*<([^<>]+)>$", body, re.S)
    text, target = (explicit.group(1), explicit.group(2)) if explicit else (None, body.strip())
    kind = name.split(":")[0]
    if kind == "numref":
        found = ctx.numbers.get(target)
        if found is None:
            return text.replace("%s", "").strip() if text else f"`{target}`"
        return text.replace("%s", found[1]).replace("{number}", found[1]) if text else f"{found[0]} {found[1]}"
    if kind == "eq":
        found = ctx.numbers.get(target)
        return f"({found[1]})" if found else f"`{target}`"
    if kind == "cite":
        keys = [k.strip() for k in target.split(",") if k.strip()]
        refs = [ctx.citations.get(k, (k, "")) for k in keys]
        if name in ("cite:t", "cite:ts", "cite:ct"):
            return "; ".join(f"{who} ({year})" if year else who for who, year in refs)
        return "(" + "; ".join(f"{who}, {year}" if year else who for who, year in refs) + ")"
    if kind == "doc":
        slug = Path(target).name.rsplit(".", 1)[0]
        title, file = ctx.docs.get(slug, (slug, None))
        shown = text or (f"chapter {int(slug[:2])}, *{title}*" if slug[:2].isdigit() else f"*{title}*")
        return f"[{shown}]({file})" if file else f"{shown} (a page of the book's site)"
    if kind == "ref":
        return text or ctx.sections.get(target, target)
    if kind == "math":
        return f"${body}$"
    if kind in ("term", "abbr", "sub-ref", "download", "guilabel", "menuselection", "kbd", "index"):
        return text or body
    return f"`{text or body}`"


def myst_to_markdown(text: str, ctx: Context | None = None) -> str:
    """One MyST-Markdown cell as plain (Jupyter) Markdown; see the module docstring.

    Code blocks are copied verbatim (roles inside them are code, not markup)."""
    ctx = ctx or Context()
    lines = text.split("\n")
    parts: list[tuple[str, bool]] = []       # (text, is code)
    prose: list[str] = []

    def flush():
        if prose:
            parts.append(("\n".join(prose), False))
            prose.clear()

    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if not m:
            if not _TARGET.match(lines[i]):
                prose.append(lines[i])
            i += 1
            continue
        block = "\n".join(lines[i:])
        name, arg, options, body, _, end = next(_directives(block))
        i += end + 1
        flush()
        if not name or name in ("code", "code-block", "sourcecode"):
            code = "\n".join(block.split("\n")[:end + 1]) if not name else f"```{arg}\n{body}\n```"
            parts.append((code, True))
        else:
            parts.append((_directive(ctx, name, arg, options, body), True))   # converted already
    flush()
    return "\n".join(part if done else _inline(part, ctx) for part, done in parts)


def _inline(text: str, ctx: Context) -> str:
    text = _EQ_LABEL.sub(lambda e: "$$" + e["body"].rstrip() + (
        f" \\tag{{{ctx.numbers[e['label']][1]}}}" if e["label"] in ctx.numbers else "") + " $$", text)
    return _ROLE.sub(lambda r: _role(ctx, r.group(1), r.group(2)), text)


def _quote(text: str) -> str:
    return "\n".join(f"> {line}".rstrip() for line in text.split("\n"))


def _directive(ctx: Context, name: str, arg: str, options: dict, body: str) -> str:
    inner = myst_to_markdown(body, ctx).strip("\n")
    kind = name.split(":")[0]
    label = options.get("label") or options.get("name")
    if kind in _ADMONITIONS:
        title = arg if kind == "admonition" else (arg or kind.capitalize())
        return _quote(f"**{myst_to_markdown(title, ctx)}**\n\n{inner}")
    if kind == "exercise":
        number = ctx.numbers.get(label, ("Exercise", ""))[1]
        head = f"**Exercise {number}**" + (f" ({myst_to_markdown(arg, ctx)})" if arg else "")
        return f"{head}\n\n{inner}"
    if kind == "solution":
        number = ctx.numbers.get(arg, ("Exercise", ""))[1]
        return f"<details>\n<summary>Solution to Exercise {number}</summary>\n\n{inner}\n\n</details>"
    if kind in ("math",):
        return f"$$\n{body.strip()}\n$$"
    if kind in ("code", "code-block", "sourcecode"):
        return f"```{arg}\n{body}\n```"
    if kind == "figure":
        number = ctx.numbers.get(label, ("Figure", ""))[1]
        return f"![{options.get('alt', '')}]({arg})\n\n*Figure {number}: {inner}*"
    if kind in ("bibliography", "toctree", "include", "tableofcontents"):
        return ""
    return inner                           # div, dropdown, card, glossary ...: the content itself


# --------------------------------------------------------------------------- the notebook

def _glue_text(values: dict, kind: str, body: str) -> str:
    from myst_nb.core.variables import format_plain_text

    key, fmt = body, ""
    if kind == "text" and ":" in body.replace("::", ""):
        key, fmt = body.rsplit(":", 1)
    key = key.strip()
    text = values.get(key)
    if text is None:
        return f"`{key}`"  # not glued in this notebook: say which number, never a raw role
    try:
        return format_plain_text(text, fmt)
    except (ValueError, TypeError):
        return format_plain_text(text, "")


def _segments(source: str, gated):
    """Split a markdown cell at gated-solution markers: ``([(text, state)], gated)``, ``state``
    None, ``("head", label)`` or ``("in", label)``, and ``gated`` the solution still open."""
    lines, out, buf, i = source.split("\n"), [], [], 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if m and m["name"] in ("solution-start", "solution-end"):
            out.append(("\n".join(buf), None if gated is None else ("in", gated)))
            buf = []
            if m["name"] == "solution-start":
                gated = (m["arg"].split() or [""])[0]
                out.append(("", ("head", gated)))
            else:
                gated = None
            i = _fence_end(lines, i, m["fence"]) + 1
            continue
        buf.append(lines[i])
        i += 1
    out.append(("\n".join(buf), None if gated is None else ("in", gated)))
    return out, gated


def _slug_of(nb) -> str:
    source = str(nb.metadata.get("papermill", {}).get("input_path") or "chapter")
    return Path(source).name.rsplit(".", 1)[0]


def runnable_notebook(nb, url: str, ctx: Context | None = None, student: bool = False):
    """A copy of an executed chapter ``nb`` that reads and runs anywhere, outside the site.

    ``url`` is the repository the install cell installs from; ``ctx`` the whole book's numbers,
    citations and titles (:func:`context_for`; default: this notebook's own); ``student`` removes
    the solutions instead of collapsing them.
    """
    import nbformat

    from .solutions import strip_solutions

    nb = copy.deepcopy(nb)
    if student:
        strip_solutions(nb)
    ctx = ctx or context_for({_slug_of(nb): nb})
    values = glued_values(nb)
    cells, gated = [], None
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            source = _GLUE_FENCE.sub(lambda m: f"{m.group(1)}*(The figure `{m.group(3)}` is the output of a "
                                               f"code cell above.)*\n", cell.source)
            source = _GLUE_ROLE.sub(lambda m: _glue_text(values, m.group(1) or "", m.group(2)), source)
            segments, gated = _segments(source, gated)
            for text, state in segments:
                if state and state[0] == "head":
                    number = ctx.numbers.get(state[1], ("Exercise", ""))[1]
                    text = f"**Solution to Exercise {number}** (collapsed cells: click the bar at their left)"
                else:
                    text = myst_to_markdown(text, ctx).strip("\n")
                    if text.strip() and state:
                        text = f"<details>\n<summary>Solution (continued)</summary>\n\n{text}\n\n</details>"
                if text.strip():
                    new = copy.deepcopy(cell)
                    new.source = text
                    new.pop("id", None)
                    cells.append(new)
            continue
        cells.append(cell)
        if cell.cell_type == "code" and gated is not None:
            number = ctx.numbers.get(gated, ("Exercise", ""))[1]
            cell.metadata["jupyter"] = dict(_GATED_HIDE)
            cell.metadata["cellView"] = "form"                     # Colab: a titled, collapsed form
            cell.source = f"# @title Solution to Exercise {number}\n" + cell.source
        caption = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
        if cell.cell_type == "code" and caption.get("caption"):
            number = ctx.numbers.get(caption.get("name"), ("Figure", ""))[1]
            text = myst_to_markdown(str(caption["caption"]).strip(), ctx)
            cells.append(nbformat.v4.new_markdown_cell(f"*Figure {number}: {text}*"))
    install = nbformat.v4.new_code_cell(_INSTALL_CELL.format(requirement=install_source(url)))
    install.metadata["tags"] = ["mlmbook-install"]
    cells.insert(0, install)
    if (nb.nbformat, nb.nbformat_minor) < (4, 5):
        for cell in cells:
            cell.pop("id", None)  # cell ids exist from nbformat 4.5 on
    else:
        for cell in cells:
            if "id" not in cell:
                cell["id"] = nbformat.v4.new_code_cell().id
    nb.cells = cells
    return nb
