"""Rendering the site: stage a source tree of executed notebooks, run jupyter-book on it.

The staged tree (``_build/stage/``) is ``book/`` with each chapter source replaced by its executed
notebook cut into pages (chapters without one leave the TOC), with what the build measured written
in (:mod:`.pages`). jupyter-book renders it (warnings are errors) into a temporary directory that
replaces ``_build/html`` only on success. :func:`setup` is the site's Sphinx hook.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from .chapters import BuildError, Layout, find_chapters, say
from .launch import _runnable_downloads, repository_url, runnable_notebook, write_notebooks_branch
from .pages import EXERCISES_MARKER, TIMINGS_MARKER, exercise_table, measured_times, prepare_chapter, timings_table
from .split import drop_other_world, split_pages

__all__ = ["stage", "render", "write_notebooks_branch", "runnable_notebook", "repository_url",
           "INCLUDED_FILES", "setup", "undrawn_figures", "unlink_missing", "UNDRAWN_NOTE"]

# Files outside book/ that pages include with {include}; staged when they exist.
INCLUDED_FILES = ("benchmarks/results.md",)


def _load_yaml(path: Path):
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


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


def _with_pages(node, book: str, sections: dict[str, list[str]]):
    """The TOC with each split chapter's later pages listed as its sections (see :mod:`.split`)."""
    if isinstance(node, list):
        return [_with_pages(item, book, sections) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _with_pages(v, book, sections) for k, v in node.items()}
    slug = str(out.get("file", "")).rsplit(".", 1)[0].rsplit("/", 1)[-1]
    if sections.get(slug):
        out["sections"] = [{"file": f"{book}/{name}"} for name in sections[slug]] + list(out.get("sections", []))
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


def unlink_missing(text: str, labels: set[str], docs: set[str], note="not in this build") -> str:
    """Turn cross-references to ``labels`` or to the documents ``docs`` (slugs) into plain text;
    ``note`` (a callable gets the target) replaces one without text of its own. Other references are
    untouched, so a misspelt label still fails the build."""
    def plain(m: re.Match) -> str:
        role, body = m.groups()
        explicit = re.match(r"^(.*?)\s*<([^<>]+)>$", body, re.S)
        text, target = (explicit.group(1), explicit.group(2)) if explicit else (None, body)
        gone = (Path(target).name.rsplit(".", 1)[0] in docs) if role == "doc" else target in labels
        if not gone:
            return m.group(0)
        if text and "%s" not in text:  # {numref}`Figure %s <x>` has no text of its own
            return text
        if callable(note):
            return note(target)
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


def undrawn_figures(nb) -> set[str]:
    """Names of the figures a notebook declares (``mystnb.figure.name`` cell metadata) but did not
    draw: no image output, nor an HTML output holding an ``<img>`` (an explorer's static figure)."""
    drawn, declared = set(), set()
    for cell in nb.cells:
        name = cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("name")
        if cell.cell_type != "code" or not name:
            continue
        declared.add(name)
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            markup = data.get("text/html", "")
            markup = "".join(markup) if isinstance(markup, list) else str(markup)
            if any(k.startswith("image/") for k in data) or re.search(r"<img\b", markup, re.I):
                drawn.add(name)
    return declared - drawn


UNDRAWN_NOTE = "a figure that is not drawn for this model"


def _undrawn_note(target: str) -> str:
    """A reference to an undrawn figure, marked with its name (check-site fails if it is drawn)."""
    return f'<span class="mlmbook-undrawn" data-figure="{target}">{UNDRAWN_NOTE}</span>'


def stage(layout: Layout, notebooks: dict[str, Path], solutions: bool = True) -> Path:
    """Assemble the source tree jupyter-book renders from ``notebooks`` (chapter slug → executed
    notebook), in ``_build/stage/``, and return it; ``solutions=False`` strips the solutions."""
    import nbformat

    from .solutions import strip_solutions, strip_solutions_text

    dest = layout.stage
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    chapters = {c.slug for c in find_chapters(layout)}
    _copy_pages(layout, dest, chapters)
    undrawn: set[str] = set()
    times = measured_times(layout.root)
    sections: dict[str, list[str]] = {}           # chapter -> its later pages (documents under it)
    for slug, path in notebooks.items():
        nb = drop_other_world(nbformat.read(path, as_version=4))
        if not solutions:
            strip_solutions(nb)
        undrawn |= undrawn_figures(nb)
        prepare_chapter(nb, times.get(slug))
        (dest / "_full").mkdir(exist_ok=True)  # the whole chapter: what a page's download holds
        nbformat.write(nb, dest / "_full" / f"{slug}.ipynb")
        pages = split_pages(nb, slug)
        for name, page in pages:
            nbformat.write(page, dest / "book" / f"{name}.ipynb")
        sections[slug] = [name for name, _ in pages[1:]]
    _write_generated_tables(layout, dest)
    if not solutions:
        for page in (dest / "book").rglob("*.md"):
            text, removed = strip_solutions_text(page.read_text(encoding="utf-8"))
            if removed:
                page.write_text(text, encoding="utf-8")

    config = _load_yaml(layout.root / "_config.yml")
    config.setdefault("execute", {})["execute_notebooks"] = "off"
    (dest / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")

    available = {str(p.relative_to(dest).with_suffix("")) for p in dest.rglob("*")
                 if p.suffix in (".md", ".ipynb", ".rst")}
    toc = _load_yaml(layout.root / "_toc.yml")
    if str(toc.get("root", "")).rsplit(".", 1)[0] not in available:
        raise BuildError(f"the TOC root {toc.get('root')!r} does not exist")
    dropped: list[str] = []
    toc = _filter_toc(_with_pages(toc, layout.book.name, sections), available, dropped)
    (dest / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False), encoding="utf-8")
    gone = {Path(d).name for d in dropped if Path(d).name in chapters}
    if gone:  # references into a chapter left out become plain text
        labels = set().union(*(_labels((layout.book / f"{s}.md").read_text(encoding="utf-8"))
                               for s in gone if (layout.book / f"{s}.md").is_file()))
        _rewrite_prose(dest, lambda text: unlink_missing(text, labels, gone))
    if undrawn:
        _rewrite_prose(dest, lambda text: unlink_missing(text, undrawn, set(), note=_undrawn_note))
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


def _write_generated_tables(layout: Layout, dest: Path) -> None:
    """Replace the markers of the staged pages by what the build knows: the table of every
    chapter's exercises (teachers' page) and the measured build times (performance page)."""
    for page in (dest / "book").glob("*.md"):
        text = page.read_text(encoding="utf-8")
        new = text
        if EXERCISES_MARKER in new:
            chapters = [(c.slug, c.title, c.path.read_text(encoding="utf-8")) for c in find_chapters(layout)]
            repository = _load_yaml(layout.root / "_config.yml").get("repository")
            new = new.replace(EXERCISES_MARKER, exercise_table(chapters, repository))
        if TIMINGS_MARKER in new:
            new = new.replace(TIMINGS_MARKER, timings_table(layout.root))
        if new != text:
            page.write_text(new, encoding="utf-8")


def render(layout: Layout, source: Path, verbose: bool = False) -> Path:
    """Render ``source`` with jupyter-book into ``_build/html``; returns its ``index.html``. Raises
    BuildError if it fails or warns (``_build/html`` unchanged; the log: ``_build/render.log``)."""
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
        _runnable_downloads(html, repository_url(layout), layout.book, source / "_full")
        old = layout.html.with_name(f".{layout.html.name}-old-{os.getpid()}")  # two renames
        shutil.rmtree(old, ignore_errors=True)
        if layout.html.exists():
            os.replace(layout.html, old)
        os.replace(html, layout.html)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return layout.html / "index.html"


def _dedupe_inline_scripts(html: Path) -> None:
    """Drop repeated inline ``<script>`` lines: sphinx-thebe writes its ``const THEBE_JS_URL = ...``
    twice ("Identifier has already been declared"); Thebe is off: its CDN address is emptied."""
    for page in html.rglob("*.html"):
        seen, out, changed = set(), [], False
        for line in page.read_text(encoding="utf-8").splitlines(keepends=True):
            if "const THEBE_JS_URL = \"http" in line:
                line, changed = re.sub(r'const THEBE_JS_URL = "[^"]*"', 'const THEBE_JS_URL = ""', line), True
            key = line.strip()
            if key.startswith("<script>const ") and key.endswith("</script>"):
                if key in seen:
                    changed = True
                    continue
                seen.add(key)
            out.append(line)
        if changed:
            page.write_text("".join(out), encoding="utf-8")


def _shift_numbers(app, env) -> list:
    """Number chapters from ``mlmbook_first_chapter`` (0) once Sphinx has numbered them from 1:
    sections, figures, tables, code, equations, exercises (figures outside chapters: unnumbered)."""
    from docutils import nodes

    offset = app.config.mlmbook_first_chapter - 1
    own = {}  # a chapter file NN_slug keeps the number NN, even in a partial build
    for docname, numbers in env.toc_secnumbers.items():
        top = numbers.get("") or (min(numbers.values()) if numbers else None)
        found = re.match(r"(\d+)_", docname.rsplit("/", 1)[-1])
        if top and found:
            own[top[0]] = int(found.group(1))

    def shift(number):
        if not number:
            return number
        first, *rest = number
        return type(number)([own.get(first, first + offset), *rest])

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
    for docname in list(env.toc_fignumbers):
        if not env.toc_secnumbers.get(docname):
            env.toc_fignumbers[docname] = {}
    for figtypes in env.toc_fignumbers.values():
        for numbers in figtypes.values():
            for target, number in numbers.items():
                if len(number) > 1:
                    numbers[target] = shift(number)
    return []


def setup(app):
    """Sphinx extension entry point (``sphinx.extra_extensions`` in ``_config.yml``): chapters
    numbered from 0, the author–year bibliography style ``mlmbook`` (``bibtex_default_style``)."""
    from .pages import register_bibliography_style

    register_bibliography_style()
    app.add_config_value("mlmbook_first_chapter", 0, "env")
    app.connect("env-get-updated", _shift_numbers, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
