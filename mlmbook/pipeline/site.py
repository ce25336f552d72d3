"""Rendering the site: stage a source tree of executed notebooks, run jupyter-book on it.

The staged tree (``_build/stage/``) is the book's ``_config.yml`` and ``_toc.yml``, the
pages of ``book/`` and, in place of each chapter source, its executed notebook. Chapters
without one are dropped from the staged TOC. jupyter-book renders it with execution off
and warnings as errors into a temporary directory, which replaces ``_build/html`` only
when the rendering succeeded.

It also holds what the site needs beyond jupyter-book: a Sphinx hook (:func:`setup`, listed
in ``_config.yml``) that numbers the chapters from 0 like their files, so figures, equations
and exercises read "Figure 3.2" in chapter 3; the unlinking of cross-references to chapters a
partial build leaves out; and :func:`runnable_notebook`, which turns an executed chapter into
a notebook that runs anywhere (glue roles replaced by their values, an install cell first).
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .chapters import BuildError, Layout, find_chapters, say
from .checks import glued_values

__all__ = ["stage", "render", "write_notebooks_branch", "runnable_notebook", "repository_url",
           "INCLUDED_FILES", "setup"]

# Files outside book/ that pages include with {include}; staged when they exist.
INCLUDED_FILES = ("benchmarks/results.md",)


# --------------------------------------------------------------------------- staging

def _load_yaml(path: Path):
    import yaml

    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def _dump_yaml(data, path: Path) -> None:
    import yaml

    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def _filter_toc(node, available: set[str], dropped: list[str]):
    """Remove TOC entries whose file is not in ``available``; drop emptied parts."""
    if isinstance(node, list):
        kept = [_filter_toc(item, available, dropped) for item in node]
        return [item for item in kept if item is not None]
    if not isinstance(node, dict):
        return node
    if "file" in node and str(node["file"]).rsplit(".", 1)[0] not in available:
        dropped.append(str(node["file"]))
        return None
    out = dict(node)
    for key in ("parts", "chapters", "sections"):
        if key in out:
            out[key] = _filter_toc(out[key], available, dropped)
            if not out[key]:
                if "file" not in out and "root" not in out:
                    return None  # a part (a caption only) left without chapters
                del out[key]
    return out


def _toc_files(node) -> set[str]:
    """Every document a TOC names (root and ``file`` entries), without suffixes."""
    if isinstance(node, list):
        return set().union(*(_toc_files(item) for item in node))
    if not isinstance(node, dict):
        return set()
    found = {str(node[k]).rsplit(".", 1)[0] for k in ("root", "file") if k in node}
    return found.union(*(_toc_files(v) for v in node.values() if isinstance(v, (list, dict))))


def _copy_pages(layout: Layout, dest: Path, chapter_slugs: set[str]) -> None:
    ignore = shutil.ignore_patterns("_build", ".ipynb_checkpoints", "__pycache__", "*.pyc")
    shutil.copytree(layout.book, dest / "book", ignore=ignore)
    for slug in chapter_slugs:  # chapter sources are replaced by executed notebooks
        (dest / "book" / f"{slug}.md").unlink(missing_ok=True)
    static = layout.book / "_static"  # the site's own CSS (jupyter-book loads _static/*.css)
    if static.is_dir():
        shutil.copytree(static, dest / "_static", dirs_exist_ok=True)
    for rel in INCLUDED_FILES:
        src = layout.root / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


# {ref}`target`, {numref}`text <target>`, {doc}`../book/02_joints`, {eq}`label`
_XREF = re.compile(r"\{(ref|numref|doc|eq)\}`([^`]*)`")
_LABEL = re.compile(r"^\s*(?::label:\s*(\S+)|\((\S+)\)=)\s*$", re.M)


def _labels(text: str) -> set[str]:
    """The labels a MyST page defines: ``:label: x`` options and ``(x)=`` targets."""
    return {a or b for a, b in _LABEL.findall(text)}


def unlink_missing(text: str, labels: set[str], docs: set[str], note: str = "not in this build") -> str:
    """Turn cross-references to ``labels`` or to the documents ``docs`` (slugs) into plain text.

    A partial build leaves some chapters out of the site; a reference into one of them would
    be a broken link (an error, since warnings are errors). Other references are untouched,
    so a misspelt label still fails the build.
    """
    def plain(m: re.Match) -> str:
        role, body = m.groups()
        explicit = re.match(r"^(.*?)\s*<([^<>]+)>$", body, re.S)
        text, target = (explicit.group(1), explicit.group(2)) if explicit else (None, body)
        gone = (Path(target).name.rsplit(".", 1)[0] in docs) if role == "doc" else target in labels
        if not gone:
            return m.group(0)
        if text and "%s" not in text:                     # {numref}`Figure %s <x>` has no text of its own
            return text
        return f"`{target}` ({note})" if note == "not in this build" else note
    return _XREF.sub(plain, text)


def _rewrite_prose(dest: Path, rewrite) -> None:
    """Apply ``rewrite(text) -> text`` to every staged page and every notebook's markdown cells."""
    import nbformat

    for page in (dest / "book").rglob("*.md"):
        text = page.read_text(encoding="utf-8")
        new = rewrite(text)
        if new != text:
            page.write_text(new, encoding="utf-8")
    for path in (dest / "book").rglob("*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        changed = False
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                new = rewrite(cell.source)
                changed |= new != cell.source
                cell.source = new
        if changed:
            nbformat.write(nb, path)


def _unlink_dropped(dest: Path, layout: Layout, dropped_slugs: set[str]) -> None:
    if not dropped_slugs:
        return
    labels = set().union(*(_labels((layout.book / f"{s}.md").read_text(encoding="utf-8"))
                           for s in dropped_slugs if (layout.book / f"{s}.md").is_file()))
    _rewrite_prose(dest, lambda text: unlink_missing(text, labels, dropped_slugs))


def undrawn_figures(nb) -> set[str]:
    """Names of the figures a notebook declares (``mystnb.figure.name`` cell metadata) but did not draw.

    A chapter run on another model skips what that model cannot give, figures included; a
    ``{numref}`` to such a figure would be an undefined label (an error, since warnings are errors).
    """
    drawn, declared = set(), set()
    for cell in nb.cells:
        name = cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("name")
        if cell.cell_type != "code" or not name:
            continue
        declared.add(name)
        for out in cell.get("outputs", []):
            if any(k.startswith("image/") for k in out.get("data", {})):
                drawn.add(name)
    return declared - drawn


def _unlink_undrawn(dest: Path, labels: set[str]) -> None:
    if labels:
        note = "a figure that is not drawn for this model"
        _rewrite_prose(dest, lambda text: unlink_missing(text, labels, set(), note=note))


def stage(layout: Layout, notebooks: dict[str, Path], solutions: bool = True) -> Path:
    """Assemble the source tree jupyter-book renders, in ``_build/stage/``.

    Parameters
    ----------
    layout : Layout
    notebooks : dict
        Chapter slug → executed notebook to publish.
    solutions : bool
        Keep exercise solutions (False strips them, see :mod:`mlmbook.solutions`).

    Returns
    -------
    pathlib.Path
        The staged root.
    """
    import nbformat

    from .solutions import strip_solutions, strip_solutions_text

    dest = layout.stage
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    chapters = {c.slug for c in find_chapters(layout)}
    _copy_pages(layout, dest, chapters)
    undrawn: set[str] = set()
    for slug, path in notebooks.items():
        nb = nbformat.read(path, as_version=4)
        if not solutions:
            strip_solutions(nb)
        undrawn |= undrawn_figures(nb)
        nbformat.write(nb, dest / "book" / f"{slug}.ipynb")
    if not solutions:
        for page in (dest / "book").rglob("*.md"):
            text, removed = strip_solutions_text(page.read_text(encoding="utf-8"))
            if removed:
                page.write_text(text, encoding="utf-8")

    config = _load_yaml(layout.root / "_config.yml")
    config.setdefault("execute", {})["execute_notebooks"] = "off"
    _dump_yaml(config, dest / "_config.yml")

    available = {str(p.relative_to(dest).with_suffix("")) for p in dest.rglob("*")
                 if p.suffix in (".md", ".ipynb", ".rst")}
    toc = _load_yaml(layout.root / "_toc.yml")
    if str(toc.get("root", "")).rsplit(".", 1)[0] not in available:
        raise BuildError(f"the TOC root {toc.get('root')!r} does not exist")
    dropped: list[str] = []
    toc = _filter_toc(toc, available, dropped)
    _dump_yaml(toc, dest / "_toc.yml")
    _unlink_dropped(dest, layout, {Path(d).name for d in dropped if Path(d).name in chapters})
    _unlink_undrawn(dest, undrawn)
    in_toc = _toc_files(toc)
    for slug in notebooks:
        if f"{layout.book.name}/{slug}" not in in_toc:
            say(f"note: {slug} is not in _toc.yml, so it is not in the site")
    for docname in dropped:
        slug = Path(docname).name
        why = ("not executed yet: run python -m mlmbook build " + slug[:2]
               if slug in chapters else "no source file yet")
        say(f"note: {docname} is left out of this build ({why})")
    return dest


# --------------------------------------------------------------------------- rendering

def _swap_in(new: Path, target: Path) -> None:
    """Replace directory ``target`` by ``new`` with two renames (old copy removed after)."""
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}-old-{os.getpid()}")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(target, old)
    os.replace(new, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def render(layout: Layout, source: Path, verbose: bool = False) -> Path:
    """Render ``source`` with jupyter-book (warnings are errors) and publish ``_build/html``.

    Returns
    -------
    pathlib.Path
        ``_build/html/index.html``.

    Raises
    ------
    BuildError
        If jupyter-book fails or warns; ``_build/html`` is then left as it was and the
        log is in ``_build/render.log``.
    """
    layout.build.mkdir(parents=True, exist_ok=True)
    out = Path(tempfile.mkdtemp(prefix=".render-", dir=layout.build))
    command = [sys.executable, "-c", "import sys; from jupyter_book.cli.main import main; "
               "sys.exit(main())", "build", str(source), "--path-output", str(out),
               "-W", "-n", "--keep-going"]
    log = layout.build / "render.log"
    try:
        proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, env={**os.environ, "NO_COLOR": "1"})
        proc.stdout = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout)
        log.write_text(proc.stdout, encoding="utf-8")
        if verbose:
            say(proc.stdout)
        html = out / "_build" / "html"
        if proc.returncode != 0 or not (html / "index.html").is_file():
            problems = [line.strip() for line in proc.stdout.splitlines()
                        if "WARNING" in line or "ERROR" in line]
            for line in problems[:20]:
                say(f"  {line}")
            raise BuildError(f"rendering failed ({len(problems)} warnings/errors); the site was "
                             f"not updated; full log: {log}")
        _dedupe_inline_scripts(html)
        _runnable_downloads(html, repository_url(layout))
        _swap_in(html, layout.html)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return layout.html / "index.html"


PACKAGE_BRANCH = "main"  # the branch the install cell installs the companion package from


def repository_url(layout: Layout) -> str:
    """The repository URL, defined once in ``_config.yml`` (``repository.url``)."""
    url = (_load_yaml(layout.root / "_config.yml").get("repository") or {}).get("url")
    if not url:
        raise BuildError("_config.yml names no repository.url (the install cell and launch buttons need it)")
    return str(url).rstrip("/")


def install_source(url: str) -> str:
    """The pip requirement that installs the companion package from the repository."""
    return f"mlmbook @ git+{url}@{PACKAGE_BRANCH}"


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


def runnable_notebook(nb, url: str):
    """A copy of an executed chapter that runs anywhere, outside the site.

    Every ``{glue...}`` role in the markdown is replaced by the value the run glued (formatted
    as on the page), a glued figure directive by a pointer to the output that shows it, and a
    first code cell installs the companion package from ``url`` when it is not importable.

    Parameters
    ----------
    nb : NotebookNode
        An executed chapter (with its glue outputs).
    url : str
        The repository URL (:func:`repository_url`).
    """
    import nbformat

    nb = copy.deepcopy(nb)
    values = glued_values(nb)
    for cell in nb.cells:
        if cell.cell_type != "markdown" or "{glue" not in cell.source:
            continue
        source = _GLUE_FENCE.sub(lambda m: f"{m.group(1)}*(The figure `{m.group(3)}` is the output of a code "
                                           f"cell above.)*\n", cell.source)
        cell.source = _GLUE_ROLE.sub(lambda m: _glue_text(values, m.group(1) or "", m.group(2)), source)
    install = nbformat.v4.new_code_cell(_INSTALL_CELL.format(requirement=install_source(url)))
    install.metadata["tags"] = ["mlmbook-install"]
    if (nb.nbformat, nb.nbformat_minor) < (4, 5):
        install.pop("id", None)  # cell ids exist from nbformat 4.5 on
    nb.cells.insert(0, install)
    return nb


def _write_runnable(source: Path, dest: Path, url: str) -> None:
    import nbformat

    nbformat.write(runnable_notebook(nbformat.read(source, as_version=4), url), dest)


def _runnable_downloads(html: Path, url: str) -> None:
    """Make the site's "download .ipynb" files (``_sources/**.ipynb``) runnable notebooks too."""
    for path in (html / "_sources").rglob("*.ipynb"):
        _write_runnable(path, path, url)


def write_notebooks_branch(layout: Layout, notebooks: dict) -> Path:
    """Lay the executed notebooks out as the launch buttons expect, in ``_build/notebooks/``.

    Binder and Colab open ``book/<slug>.ipynb`` on the repository's ``notebooks`` branch
    (``repository.branch`` in ``_config.yml``). Publishing is a copy of this folder to that
    branch: the chapters as :func:`runnable_notebook` makes them, a ``binder/requirements.txt``
    that installs the package from the main branch, and a README.
    """
    url = repository_url(layout)
    out = layout.build / "notebooks"
    tmp = layout.build / ".notebooks.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "book").mkdir(parents=True)
    (tmp / "binder").mkdir()
    for slug, path in notebooks.items():
        _write_runnable(path, tmp / "book" / f"{slug}.ipynb", url)
    (tmp / "binder" / "requirements.txt").write_text(
        "--extra-index-url https://download.pytorch.org/whl/cpu\n" + install_source(url) + "\n")
    (tmp / "README.md").write_text(
        "# What Masked Language Models Know — executed notebooks\n\n"
        "Generated by `python -m mlmbook build`; the site's Binder and Colab buttons open these.\n"
        "Each runs on its own: its first cell installs the companion package, and the numbers\n"
        "the book's prose cites are written into the text. Edit the sources on the main branch\n"
        "(`book/*.md`), not these files.\n")
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return out


def _dedupe_inline_scripts(html: Path) -> None:
    """Drop repeated identical inline ``<script>`` lines from every page.

    sphinx-thebe (pulled in by jupyter-book 1.x) writes its ``const THEBE_JS_URL = ...``
    block twice per page, which a browser reports as "Identifier has already been
    declared" on every page.
    """
    for page in html.rglob("*.html"):
        seen, out, changed = set(), [], False
        for line in page.read_text(encoding="utf-8").splitlines(keepends=True):
            key = line.strip()
            if key.startswith("<script>const ") and key.endswith("</script>"):
                if key in seen:
                    changed = True
                    continue
                seen.add(key)
            out.append(line)
        if changed:
            page.write_text("".join(out), encoding="utf-8")


# --------------------------------------------------------------------------- Sphinx hook

def _shift_numbers(app, env) -> list:
    """Number chapters from ``mlmbook_first_chapter`` (0) instead of Sphinx's 1.

    Runs after Sphinx assigned section and figure numbers (``env-get-updated``): shifts the
    chapter part of every section number (the sidebar, page titles) and of every figure,
    table, code-block, equation and exercise number, so chapter ``00_toy_world`` shows
    "0 The toy world" and its first figure "Figure 0.1".
    """
    from docutils import nodes

    offset = app.config.mlmbook_first_chapter - 1
    if not offset:
        return []

    def shift(number):
        if not number:
            return number
        first, *rest = number
        return type(number)([first + offset, *rest])

    for docname, numbers in env.toc_secnumbers.items():
        for anchor, number in numbers.items():
            numbers[anchor] = shift(number)
        if docname in env.tocs:
            for ref in env.tocs[docname].findall(nodes.reference):
                if ref.get("secnumber"):
                    ref["secnumber"] = shift(ref["secnumber"])
        title = env.titles.get(docname)
        if title is not None and title.get("secnumber"):
            title["secnumber"] = shift(title["secnumber"])
    for figtypes in env.toc_fignumbers.values():
        for numbers in figtypes.values():
            for target, number in numbers.items():
                if len(number) > 1:
                    numbers[target] = shift(number)
    return []


def setup(app):
    """Sphinx extension entry point (``sphinx.extra_extensions`` in ``_config.yml``)."""
    app.add_config_value("mlmbook_first_chapter", 0, "env")
    app.connect("env-get-updated", _shift_numbers, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
