"""Grade a student's notebook (or Python file) from a terminal, without running the chapter.

Only the file's imports and the functions it defines are run, then every check call it contains,
as the check cells do; so grading takes seconds, and a function that uses a name the chapter
defines elsewhere fails its first case with that name in the message.
"""
from __future__ import annotations

import ast
import json
from pathlib import Path

from . import Grade, check, registry

__all__ = ["code_of", "grade_file"]


def code_of(path: str | Path) -> str:
    """The Python code of a notebook's code cells (or a ``.py`` / ``.md`` file's code), IPython
    magics and shell lines left out."""
    path = Path(path)
    if path.suffix == ".ipynb":
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                 for c in nb.get("cells", []) if c.get("cell_type") == "code"]
    elif path.suffix == ".md":
        import jupytext
        cells = [c.source for c in jupytext.read(path).cells if c.cell_type == "code"]
    else:
        cells = [path.read_text(encoding="utf-8")]
    keep = []
    for cell in cells:
        lines = [line for line in cell.splitlines() if not line.lstrip().startswith(("%", "!"))]
        text = "\n".join(lines)
        try:
            ast.parse(text)
        except SyntaxError:
            continue  # an unfinished cell: the others still grade
        keep.append(text)
    return "\n\n".join(keep)


def grade_file(path: str | Path) -> list[Grade]:
    """Grade every exercise the file checks, with the functions it defines (the last definition of
    a name wins, as in a notebook run top to bottom)."""
    calls = []  # (exercise name, function name) of every check("name", function) call, in order
    tree = ast.parse(code_of(path))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or len(node.args) < 2:
            continue
        f = node.func
        called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        name, fn = node.args[0], node.args[1]
        if called == "check" and isinstance(name, ast.Constant) and name.value in registry() \
                and isinstance(fn, ast.Name):
            calls.append((name.value, fn.id))
    kept = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef))]
    namespace: dict = {"__name__": "mlmbook_graded"}
    for node in kept:
        module = ast.Module(body=[node], type_ignores=[])
        try:
            exec(compile(module, str(path), "exec"), namespace)          # noqa: S102 - the student's own file
        except Exception:  # noqa: BLE001 - an import that fails here fails the exercises that need it
            continue
    grades = []
    for name, fn in dict.fromkeys(calls):
        candidate = namespace.get(fn)
        if candidate is None:
            grades.append(Grade(name, False, False, 0, f"{name}: no function {fn} in the file"))
            continue
        grades.append(check(name, candidate))
    return grades
