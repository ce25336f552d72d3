"""What a chapter is: its source file, its parameters, and where a book's build goes.

A book root holds ``_config.yml``, ``_toc.yml`` and ``book/``; the chapters are
``book/NN_slug.md`` MyST-Markdown notebooks with one code cell tagged ``parameters``.
"""

from __future__ import annotations

import ast
import difflib
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..errors import BuildError, UsageError
from ..paths import build_dir, find_root
from ..profiles import seed_offset

__all__ = ["BuildError", "UsageError", "Chapter", "Layout", "find_chapters", "resolve_names",
           "resolve_chapters", "read_notebook", "parameters_cell_index", "parameter_defaults",
           "parse_value", "check_parameters", "plan_parameters", "assignments"]

CHAPTER_FILE = re.compile(r"^(\d\d)_[A-Za-z0-9_-]+\.md$")
_UNSET = object()  # a parameter whose default is not a literal


@dataclass(frozen=True)
class _Optional:
    """A parameter defaulting to None whose annotation names its type (``n: int | None = None``)."""

    kind: type


def say(message: str) -> None:
    """Print a progress or note line on stderr (stdout carries only results)."""
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Chapter:
    """One chapter source, ``<root>/book/NN_slug.md``."""

    path: Path

    @property
    def slug(self) -> str:
        """``"01_dependencies"``."""
        return self.path.stem

    @property
    def number(self) -> int:
        return int(self.slug[:2])

    @property
    def docname(self) -> str:
        """The name the TOC uses, ``"book/01_dependencies"``."""
        return f"{self.path.parent.name}/{self.slug}"

    @property
    def title(self) -> str:
        """The first level-1 heading of the chapter (the slug if there is none)."""
        in_code = False
        for line in self.path.read_text(encoding="utf-8").splitlines():
            if line.lstrip().startswith(("```", "~~~")):
                in_code = not in_code
            elif not in_code and line.startswith("# "):
                return line[2:].strip()
        return self.slug


@dataclass(frozen=True)
class Layout:
    """Where a book's sources and build products live."""

    root: Path

    @property
    def book(self) -> Path:
        return self.root / "book"

    @property
    def build(self) -> Path:
        """``$MLMBOOK_BUILD`` if set, else ``<root>/_build``."""
        return build_dir(self.root)

    @property
    def exec(self) -> Path:
        return self.build / "exec"

    @property
    def results(self) -> Path:
        return self.build / "results"

    @property
    def failed(self) -> Path:
        return self.build / "failed"

    @property
    def stage(self) -> Path:
        return self.build / "stage"

    @property
    def html(self) -> Path:
        return self.build / "html"

    @property
    def kernels(self) -> Path:
        """A private Jupyter data dir holding the kernelspec the build runs chapters with."""
        return self.build / "jupyter"

    @classmethod
    def find(cls, root: str | os.PathLike | None = None) -> "Layout":
        """The layout of ``root``, or of the book above the current directory."""
        if root is not None:
            root = Path(root).resolve()
            if not (root / "_toc.yml").is_file():
                raise UsageError(f"{root} is not a book: it has no _toc.yml")
            return cls(root)
        found = find_root() or find_root(Path(__file__).parent)
        if found is None:
            raise UsageError("no book found here (no _toc.yml above the current directory); "
                             "use --root")
        return cls(found)


def find_chapters(layout: Layout) -> list[Chapter]:
    """All chapter sources ``book/NN_slug.md``, in order."""
    if not layout.book.is_dir():
        return []
    return [Chapter(p) for p in sorted(layout.book.iterdir()) if CHAPTER_FILE.match(p.name)]


def resolve_names(names: list[str], slugs: list[str]) -> list[str]:
    """Map user spellings (``1``, ``01``, ``01_dependencies``, ``dependencies``, a file name) to
    chapter slugs, in order, once each; an unknown one is a :class:`UsageError`."""
    chosen = []
    for name in names:
        key = Path(name).name
        for suffix in (".md", ".ipynb", ".json"):
            key = key.removesuffix(suffix)
        if key.isdigit():
            hits = [s for s in slugs if s[:2].isdigit() and int(s[:2]) == int(key)]
        else:
            hits = [s for s in slugs if key in (s, s[3:])]
        if not hits:                        # the closest slug, with and without its number
            near = difflib.get_close_matches(key, slugs, n=1)
            bare = difflib.get_close_matches(key, [s[3:] for s in slugs], n=1)
            close = (near or [s for s in slugs if bare and s[3:] == bare[0]] or [None])[0]
            hint = f" (did you mean {close!r}?)" if close else ""
            raise UsageError(f"unknown chapter {name!r}{hint}; "
                             f"valid chapters: {', '.join(slugs) or '(none)'}")
        chosen += [h for h in hits if h not in chosen]
    return chosen


def resolve_chapters(chapters: list[Chapter], names: list[str]) -> list[Chapter]:
    """The chapters the user asked for (all of them when ``names`` is empty)."""
    if not chapters:
        raise UsageError("the book has no chapters (no book/NN_slug.md files)")
    if not names:
        return list(chapters)
    by_slug = {c.slug: c for c in chapters}
    return [by_slug[s] for s in resolve_names(names, list(by_slug))]


def read_notebook(chapter: Chapter):
    """Read a chapter source into a NotebookNode (jupytext)."""
    import jupytext

    return jupytext.read(chapter.path)


def _python(source: str) -> str:
    """A code cell's source without its IPython magics and shell lines."""
    return "\n".join(ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!")))


def assignments(chapter: Chapter) -> Iterator[tuple[str, ast.expr]]:
    """``(name, value)`` of each ``name = value`` at the top level of the chapter's code cells."""
    for cell in (c for c in read_notebook(chapter).cells if c.cell_type == "code"):
        try:
            body = ast.parse(_python(cell.source)).body
        except SyntaxError:
            continue
        for node in body:
            match node:
                case ast.Assign(targets=[ast.Name(id=name)], value=value):
                    yield name, value


def parameters_cell_index(nb) -> int | None:
    """Index of the first code cell tagged ``parameters`` (None if there is none)."""
    return next((i for i, c in enumerate(nb.cells)
                 if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])), None)


def parameter_defaults(nb) -> dict[str, object]:
    """The defaults assigned in the notebook's ``parameters`` cell (a non-literal accepts anything;
    ``None`` takes its annotated type, ``n: int | None = None``, or else a string)."""
    index = parameters_cell_index(nb)
    if index is None:
        return {}
    defaults = {}
    for node in ast.parse(_python(nb.cells[index].source)).body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        else:
            continue
        for name in (t.id for t in targets if isinstance(t, ast.Name)):
            try:
                defaults[name] = ast.literal_eval(node.value)
            except ValueError:
                defaults[name] = _UNSET
            kind = _annotated_type(node.annotation) if isinstance(node, ast.AnnAssign) else None
            if defaults[name] is None and kind is not None:
                defaults[name] = _Optional(kind)
    return defaults


def _annotated_type(annotation: ast.expr) -> type | None:
    """The one type (bool, int, float, str) ``annotation`` names (``int | None``), else None."""
    names = {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)}
    names |= {n.value for n in ast.walk(annotation) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    kinds = [k for k in (bool, int, float, str) if k.__name__ in names]
    return kinds[0] if len(kinds) == 1 else None


_TRUE, _FALSE = {"true", "1", "yes", "on"}, {"false", "0", "no", "off"}


def parse_value(text: str, default: object) -> object:
    """Parse a command-line value with the type of ``default`` (else a ValueError naming it); a
    ``None`` default takes ``none`` as None, else text (``-p treebank 5`` is the file ``"5"``)."""
    if default is None or isinstance(default, _Optional):
        if text.strip().lower() in ("none", "null"):
            return None
        return text if default is None else parse_value(text, default.kind())
    if isinstance(default, bool):
        if text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        raise ValueError("a bool (true or false)")
    if isinstance(default, (int, float)):
        try:
            return type(default)(text)
        except ValueError:
            raise ValueError("an int" if isinstance(default, int) else "a float") from None
    if isinstance(default, str):
        return text
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        if isinstance(default, (list, tuple, dict)):
            raise ValueError(f"a {type(default).__name__} literal such as "
                             f"{default!r}") from None
        return text  # a default that is not a literal: a bare word is a string
    if isinstance(default, (list, tuple)) and isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(default, dict) and not isinstance(value, dict):
        raise ValueError(f"a dict literal such as {default!r}")
    return value


def check_parameters(where: str, defaults: dict[str, object],
                     raw: list[tuple[str, str]]) -> dict[str, object]:
    """Check ``-p NAME VALUE`` pairs against a chapter's ``defaults`` and convert them to their
    types; an unknown name or a wrong type is a :class:`UsageError` naming ``where``."""
    values = {}
    for name, text in raw:
        if name == "profile":
            raise UsageError("set the profile with --profile quick|full, not -p profile")
        if name not in defaults:
            valid = ", ".join(defaults) or "(none: no parameters cell)"
            close = difflib.get_close_matches(name, list(defaults), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UsageError(f"unknown parameter {name!r} for {where}{hint}; "
                             f"valid parameters: {valid}")
        try:
            values[name] = parse_value(text, defaults[name])
        except ValueError as err:
            raise UsageError(f"parameter {name!r} of {where} expects {err}, "
                             f"got {text!r}") from None
    return values


def plan_parameters(chapters: list[Chapter], raw: list[tuple[str, str]],
                    profile: str) -> list[tuple[Chapter, dict[str, object]]]:
    """The parameters each chapter will be executed with (with several, a ``-p`` name goes to those
    that have it); an unknown one, a wrong type, a bad parameters cell is a :class:`UsageError`."""
    defaults = {}
    for chapter in chapters:
        try:
            defaults[chapter.slug] = parameter_defaults(read_notebook(chapter))
        except SyntaxError as err:
            raise UsageError(f"chapter {chapter.slug}: its parameters cell is not valid "
                             f"Python ({err.msg}, line {err.lineno})") from None
    union: dict[str, object] = {}
    for values in defaults.values():
        union |= {name: default for name, default in values.items() if name not in union}
    if len(chapters) > 1:
        check_parameters("the selected chapters", union, list(raw))  # unknown everywhere?
    plans = []
    for chapter in chapters:
        mine = [(n, v) for n, v in raw if n in defaults[chapter.slug] or len(chapters) == 1]
        skipped = sorted({n for n, _ in raw} - {n for n, _ in mine})
        if skipped:
            say(f"note: {chapter.slug} has no parameter {', '.join(skipped)}; not passed")
        values = check_parameters(f"chapter {chapter.slug}", defaults[chapter.slug], mine)
        values = resolve_user_paths(values, defaults[chapter.slug])
        if seed_offset(profile) and "seed" in defaults[chapter.slug]:
            values["seed"] = int(values.get("seed", defaults[chapter.slug]["seed"])) + seed_offset(profile)
        plans.append((chapter, {"profile": profile, **values}))
    # imported here, not at the top, so that `python -m mlmbook chapters` does not load torch
    from ..corpus.conllu import find_treebank, read_conllu
    from ..errors import ModelLoadError, TreebankError
    from ..models.hf import check_masked_lm
    from ..models.load import TOY_MODELS, TRUTH_MODELS
    for name in sorted({v["treebank"] for _, v in plans if isinstance(v.get("treebank"), str)}):
        try:                                # a bad explicit treebank fails before any kernel starts
            path = find_treebank(name)
            sentences = read_conllu(path)
        except TreebankError as err:
            raise UsageError(str(err)) from None
        if not sentences:
            raise UsageError(f"no sentence in {path}: give a CoNLL-U file with sentences "
                             f"(e.g. -p treebank en_ewt-ud-test.conllu)")
    models = {v["model"] for _, v in plans if isinstance(v.get("model"), str)}
    for name in sorted(models - set(TOY_MODELS) - set(TRUTH_MODELS)):
        try:
            check_masked_lm(name)           # before any chapter starts: a bad model fails fast
        except ModelLoadError as err:
            raise UsageError(str(err)) from None
    return plans


def resolve_user_paths(values: dict[str, object], defaults: dict[str, object],
                       cwd: str | os.PathLike | None = None) -> dict[str, object]:
    """Make a ``treebank`` or ``model`` that exists under the caller's directory absolute; a path
    that does not is a :class:`UsageError`, a bare name (``test``, a Hugging Face model) stays."""
    here = Path(cwd or os.getcwd())
    out = dict(values)
    for name in ("model", "treebank"):
        text = out.get(name)
        if not isinstance(text, str) or not text or name not in defaults or (
                name == "treebank" and text in ("train", "dev", "test")):
            continue
        path = (here / Path(text).expanduser()).resolve()
        if path.exists():
            out[name] = str(path)
        elif text.startswith((".", "/", "~")) or (name == "treebank" and ("/" in text or os.sep in text)):
            what = "model directory" if name == "model" else "treebank file"
            raise UsageError(f"{what} {path} does not exist (-p {name} {text}, read relative to {here}); "
                             f"check the path")
    return out
