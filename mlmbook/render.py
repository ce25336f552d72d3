"""Rendering the site: stage a source tree of executed notebooks, run jupyter-book on it.

The staged tree (``_build/stage/``) is the book's ``_config.yml`` and ``_toc.yml``, the
pages of ``book/`` and, in place of each chapter source, its executed notebook. Chapters
without one are dropped from the staged TOC. jupyter-book renders it with execution off
and warnings as errors into a temporary directory, which replaces ``_build/html`` only
when the rendering succeeded.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .book import BuildError, Layout, find_chapters, say

__all__ = ["stage", "render", "INCLUDED_FILES"]

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
    for rel in INCLUDED_FILES:
        src = layout.root / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


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
    for slug, path in notebooks.items():
        nb = nbformat.read(path, as_version=4)
        if not solutions:
            strip_solutions(nb)
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
        _swap_in(html, layout.html)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return layout.html / "index.html"


def write_notebooks_branch(layout: Layout, notebooks: dict) -> Path:
    """Lay the executed notebooks out as the launch buttons expect, in ``_build/notebooks/``.

    Binder and Colab open ``book/<slug>.ipynb`` on the repository's ``notebooks`` branch
    (``repository.branch`` in ``_config.yml``). Publishing is a copy of this folder to that
    branch: the executed chapters, a ``binder/requirements.txt`` that installs the package
    from the main branch, and a README.
    """
    import nbformat

    out = layout.build / "notebooks"
    tmp = layout.build / ".notebooks.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "book").mkdir(parents=True)
    (tmp / "binder").mkdir()
    for slug, path in notebooks.items():
        nbformat.write(nbformat.read(path, as_version=4), tmp / "book" / f"{slug}.ipynb")
    (tmp / "binder" / "requirements.txt").write_text(
        "--extra-index-url https://download.pytorch.org/whl/cpu\n"
        "mlmbook @ git+https://github.com/mlmbook/mlmbook@main\n")
    (tmp / "README.md").write_text(
        "# What Masked Language Models Know — executed notebooks\n\n"
        "Generated by `python -m mlmbook build`; the site's Binder and Colab buttons open these.\n"
        "Edit the sources on the main branch (`book/*.md`), not these files.\n")
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
