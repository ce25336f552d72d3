"""The package's shape: no import cycles, no module over 500 lines, science above the model protocol.

Imports are read with ``ast`` from every module, function-local imports included, so a cycle
cannot hide behind a late import.
"""
import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "mlmbook"
MAX_LINES = 500
SCIENCE = ("dependencies", "joints", "consistency", "glauber", "rank", "probes", "compare")
MODEL_IMPLEMENTATIONS = ("hf", "truth", "train", "maelm", "cache", "load")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(module: str, node: ast.ImportFrom | ast.Import) -> list[str]:
    """Absolute names of the mlmbook modules an import statement loads."""
    is_package = MODULES[module].name == "__init__.py"
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "mlmbook"]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    if target.split(".")[0] != "mlmbook":
        return []
    out = [target]
    for alias in node.names:                         # `from . import queries` imports a submodule
        if f"{target}.{alias.name}" in MODULES:
            out.append(f"{target}.{alias.name}")
    return out


def import_graph() -> dict[str, set[str]]:
    """module -> mlmbook modules it imports (anywhere in its body), with the packages they live in."""
    graph = {}
    for module, path in MODULES.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _resolve(module, node):
                    parts = target.split(".")
                    for k in range(1, len(parts) + 1):      # importing a.b.c runs a/__init__ and a/b/__init__ too
                        name = ".".join(parts[:k])
                        if name in MODULES and not module.startswith(name + ".") and name != module:
                            edges.add(name)
        graph[module] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state, stack = {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_no_import_cycles():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_function_local_imports_are_in_the_graph():
    """A late import inside a function counts (it is how cycles used to hide)."""
    graph = import_graph()
    assert "mlmbook.models.hf" in graph["mlmbook.pipeline.chapters"]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_size(module):
    lines = len(MODULES[module].read_text().splitlines())
    assert lines <= MAX_LINES, f"{MODULES[module]} has {lines} lines (limit {MAX_LINES}): split it by idea"


def test_science_uses_the_protocol_not_a_model_implementation():
    graph = import_graph()
    bad = {m: sorted(t for t in graph[m] if t.split(".")[1:2] == ["models"] and t.split(".")[-1]
                     in MODEL_IMPLEMENTATIONS)
           for m in graph if m.split(".")[1:2] and m.split(".")[1] in SCIENCE}
    assert not any(bad.values()), bad


def test_package_imports_no_chapter_or_benchmark():
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            assert not any(n.split(".")[0] in ("benchmarks", "book", "tests") for n in names), (module, names)
