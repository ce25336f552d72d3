"""Chapters as notebooks that read and run anywhere: Binder, Colab, a plain Jupyter.

Nothing renders MyST there, so :func:`runnable_notebook` writes glued values, the site's numbers
("Figure 1.3", "(2.1)"), author–year citations, links to the sibling notebooks, captions,
collapsed solutions, and a first cell installing the companion package where it is not importable.
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


def install_source(url: str) -> str:
    """The pip requirement that installs the companion package from the repository."""
    return f"mlmbook @ git+{url}@{PACKAGE_BRANCH}"


@dataclass
class Context:
    """What a plain notebook needs to write what the site renders: by label, ``numbers`` ((kind,
    number)) and ``sections`` (heading); ``citations`` by key, ``docs`` (title, file) by slug."""

    numbers: dict = field(default_factory=dict)
    citations: dict = field(default_factory=dict)
    docs: dict = field(default_factory=dict)
    sections: dict = field(default_factory=dict)


def _fence_end(lines: list[str], i: int, fence: str) -> int:
    """The index of the line closing ``fence`` opened at line ``i`` (``len(lines)`` if none)."""
    closing = re.compile(r"[ \t]*" + re.escape(fence[0]) + "{%d,}[ \t]*" % len(fence))
    return next((k for k in range(i + 1, len(lines)) if closing.fullmatch(lines[k])), len(lines))


def _directives(text: str):
    """(name, arg, options, body, start line, end line) of each top-level directive in ``text``."""
    lines = text.split("\n")
    end = -1                                            # the last line of the previous directive
    for i, line in enumerate(lines):
        m = _OPEN.match(line) if i > end else None
        if not m:
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


def context_for(notebooks: dict, book: Path | None = None) -> Context:
    """The numbers, citations and page titles of the chapters ``notebooks`` (by slug), as the site
    shows them; ``book``: the book's source folder."""
    ctx = Context()
    for slug, nb in sorted(notebooks.items()):
        if slug[:2].isdigit():
            _number_chapter(nb, int(slug[:2]), ctx)
        title = next((re.search(r"^# (.+)$", c.source, re.M).group(1) for c in nb.cells
                      if c.cell_type == "markdown" and re.search(r"^# ", c.source, re.M)), slug)
        ctx.docs[slug] = (title.strip(), f"{slug}.ipynb")
    if book is not None:
        bib = Path(book) / "references.bib"
        if bib.is_file():                    # bib key → (authors, year)
            from pybtex.database import parse_file

            from .pages import _author_year
            entries = parse_file(str(bib)).entries.items()
            ctx.citations = {k: tuple(_author_year(e).rpartition(", ")[::2]) for k, e in entries}
        for page in Path(book).glob("*.md"):
            if page.stem not in ctx.docs:
                head = re.search(r"^# (.+)$", page.read_text(encoding="utf-8"), re.M)
                ctx.docs[page.stem] = (head.group(1).strip() if head else page.stem, None)
    return ctx


def _role(ctx: Context, name: str, body: str) -> str:
    explicit = re.match(r"^(.*?)\s*<([^<>]+)>$", body, re.S)
    text, target = (explicit.group(1), explicit.group(2)) if explicit else (None, body.strip())
    kind = name.split(":")[0]
    found = ctx.numbers.get(target)                          # for numref and eq
    if kind == "numref":
        if found is None:
            return text.replace("%s", "").strip() if text else f"`{target}`"
        return text.replace("%s", found[1]).replace("{number}", found[1]) if text else f"{found[0]} {found[1]}"
    if kind == "eq":
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
    """One MyST-Markdown cell as plain (Jupyter) Markdown, code blocks copied verbatim."""
    ctx = ctx or Context()
    lines = text.split("\n")
    parts, done = [], 0
    for name, arg, options, body, start, end in _directives(text):
        parts += _prose(lines[done:start], ctx)
        parts.append(_directive(ctx, name, arg, options, body) if name else
                     "\n".join(lines[start:end + 1]))
        done = end + 1
    return "\n".join(parts + _prose(lines[done:], ctx))


def _prose(lines: list[str], ctx: Context) -> list[str]:
    """Prose lines as one text, targets dropped, roles and labelled equations converted."""
    kept = [line for line in lines if not _TARGET.match(line)]
    if not kept:
        return []
    text = "\n".join(kept)
    text = _EQ_LABEL.sub(lambda e: "$$" + e["body"].rstrip() + (
        f" \\tag{{{ctx.numbers[e['label']][1]}}}" if e["label"] in ctx.numbers else "") + " $$", text)
    return [_ROLE.sub(lambda r: _role(ctx, r.group(1), r.group(2)), text)]


def _directive(ctx: Context, name: str, arg: str, options: dict, body: str) -> str:
    inner = myst_to_markdown(body, ctx).strip("\n")
    kind = name.split(":")[0]
    number = ctx.numbers.get(options.get("label") or options.get("name"), ("", ""))[1]
    if kind in _ADMONITIONS:
        title = arg if kind == "admonition" else (arg or kind.capitalize())
        quoted = f"**{myst_to_markdown(title, ctx)}**\n\n{inner}"
        return "\n".join(f"> {line}".rstrip() for line in quoted.split("\n"))
    if kind == "exercise":
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
        return f"![{options.get('alt', '')}]({arg})\n\n*Figure {number}: {inner}*"
    if kind in ("bibliography", "toctree", "include", "tableofcontents"):
        return ""
    return inner                           # div, dropdown, card, glossary ...: the content itself


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
    lines, out, buf, end = source.split("\n"), [], [], -1
    for i, line in enumerate(lines):
        m = _OPEN.match(line) if i > end else None
        if m and m["name"] in ("solution-start", "solution-end"):
            out.append(("\n".join(buf), None if gated is None else ("in", gated)))
            buf = []
            if m["name"] == "solution-start":
                gated = (m["arg"].split() or [""])[0]
                out.append(("", ("head", gated)))
            else:
                gated = None
            end = _fence_end(lines, i, m["fence"])
        elif i > end:
            buf.append(line)
    out.append(("\n".join(buf), None if gated is None else ("in", gated)))
    return out, gated


def runnable_notebook(nb, url: str, ctx: Context | None = None, student: bool = False):
    """A copy of an executed chapter ``nb`` that reads and runs outside the site, installing from
    ``url``; ``ctx``: :func:`context_for` (default: its own); ``student``: no solutions."""
    import nbformat

    from .solutions import strip_solutions

    nb = copy.deepcopy(nb)
    if student:
        strip_solutions(nb)
    source = str(nb.metadata.get("papermill", {}).get("input_path") or "chapter")
    ctx = ctx or context_for({Path(source).name.rsplit(".", 1)[0]: nb})
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
            cell.metadata["jupyter"] = {"source_hidden": True, "outputs_hidden": True}
            cell.metadata["cellView"] = "form"                     # Colab: a titled, collapsed form
            cell.source = f"# @title Solution to Exercise {number}\n" + cell.source
        caption = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
        if cell.cell_type == "code" and caption.get("caption"):
            number = ctx.numbers.get(caption.get("name"), ("Figure", ""))[1]
            text = myst_to_markdown(str(caption["caption"]).strip(), ctx)
            cells.append(nbformat.v4.new_markdown_cell(f"*Figure {number}: {text}*"))
    cells.insert(0, nbformat.v4.new_code_cell(_INSTALL_CELL.format(requirement=install_source(url)),
                                              metadata={"tags": ["mlmbook-install"]}))
    for cell in cells:
        if (nb.nbformat, nb.nbformat_minor) < (4, 5):
            cell.pop("id", None)  # cell ids exist from nbformat 4.5 on
        elif "id" not in cell:
            cell["id"] = nbformat.v4.new_code_cell().id
    nb.cells = cells
    return nb
