"""The package's shape: a layer order, no import cycles, no module over 500 lines, one name per
concept, short signatures.

Imports are read with ``ast`` from every module, function-local imports included, so neither a
cycle nor a wrong-way import can hide behind a late import. A name taken from the face
(``from mlmbook import record``) counts as an import of the module that defines it (the face's
``_FACE`` table); ``import mlmbook`` inside the package imports the face itself (the top layer); and
``importlib.import_module``/``__import__`` of a literal name count like ``import``. Imports under ``if TYPE_CHECKING:``
(annotations only) are exempt from the layer order, except that they may reach up no further than
the :class:`~mlmbook.models.base.MaskedLM` protocol.

Each checker is a plain function of the import graph (or of the sources), and a test feeds it a
synthetic graph holding each wrong-way import the package once had, so the checker is shown to
fail on exactly those.
"""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "mlmbook"
MAX_LINES = 500

# ---------------------------------------------------------------------------- the layer order
LAYERS = (
    ("foundation", ("errors", "paths", "profiles", "stats", "threads", "workers", "tables", "plotting", "widgets",
                    "plans")),
    ("world", ("corpus", "toy")),
    ("models", ("models",)),
    ("engine", ("queries", "compare")),
    ("science", ("dependencies", "joints", "consistency", "consistency_regime", "rank", "probes", "glauber",
                 "deficiency", "downstream", "diffusion")),
    ("uses", ("exercises", "api")),
    ("pipeline", ("pipeline",)),
    ("cli", ("__main__", "cli_research")),
    ("face", ("mlmbook",)),
)
"""Bottom to top. A module may import its own layer and the layers below it; nothing above.
``foundation``: locations, errors, statistics, threads and figures, which know no model;
``world``: the toy language and sentences; ``models``: the :class:`MaskedLM` protocol and every model;
``engine``: the one batched query engine and the model-vs-truth comparison over it; ``science``:
one package or module per chapter's idea, each independent of the others; ``uses``: the graded
exercises and the research API, which combine the science; ``pipeline``: the build;
``cli``: ``python -m mlmbook`` and the ``mlmbook`` command; ``face``: the package's ``__init__``."""

LAYER_OF = {top: rank for rank, (_, tops) in enumerate(LAYERS) for top in tops}
SCIENCE = dict(LAYERS)["science"]
CHAPTER_OF = {"dependencies": 1, "joints": 2, "consistency": 3, "consistency_regime": 3, "rank": 4, "probes": 4,
              "deficiency": 4, "downstream": 4, "glauber": 5, "diffusion": 6}
"""Whose idea each science module is: a chapter's modules may import each other, never another chapter's."""
PROTOCOL = "mlmbook.models.base"
MODEL_IMPLEMENTATIONS = ("hf", "truth", "train", "maelm", "cache", "load", "zoo", "ladder", "prepare", "corrupt")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
TREES = {m: ast.parse(p.read_text(), str(p)) for m, p in MODULES.items()}
FACE = "mlmbook"


def _face_names() -> dict[str, str]:
    """Each name the face serves -> the module that defines it (``_FACE`` in ``mlmbook/__init__.py``)."""
    for node in TREES[FACE].body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_FACE" for t in node.targets):
            return {name: f"{FACE}.{where}" for name, where in ast.literal_eval(node.value).items()}
    raise AssertionError("mlmbook/__init__.py has no _FACE table: teach the layer check where its names live")


FACE_NAMES = _face_names()


def top(module: str) -> str:
    """``mlmbook.joints.ag`` -> ``joints``; the package itself -> ``mlmbook``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _resolve(module: str, node: ast.ImportFrom | ast.Import) -> list[str]:
    """Absolute names of the mlmbook modules an import statement loads."""
    is_package = MODULES[module].name == "__init__.py"
    if isinstance(node, ast.Call):
        return _dynamic(module, node)
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
    out = [target] if target != FACE else []         # `from .. import x` runs the face's module, not its names
    for alias in node.names:                         # `from . import queries` imports a submodule
        if f"{target}.{alias.name}" in MODULES:
            out.append(f"{target}.{alias.name}")
        elif target == FACE:                         # a name of the face: where it is defined
            out.append(FACE_NAMES.get(alias.name, FACE))
    return out


def _dynamic(module: str, call: ast.Call) -> list[str]:
    """The mlmbook module ``importlib.import_module(name, package)`` or ``__import__(name)`` loads,
    when ``name`` is a literal (or an f-string that starts with ``.`` within its own package)."""
    fn = call.func
    called = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", None)
    if called not in ("import_module", "__import__") or not call.args:
        return []
    name, package = call.args[0], (call.args[1:] or [k.value for k in call.keywords if k.arg == "package"] or [None])[0]
    own = module if MODULES[module].name == "__init__.py" else module.rsplit(".", 1)[0]
    if isinstance(name, ast.JoinedStr) and name.values and isinstance(name.values[0], ast.Constant) \
            and str(name.values[0].value).startswith(".") and isinstance(package, ast.Name):
        return [own]                                 # f".{x}" under __name__: a module of its own package
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        return [f"{own} (computed name)"] if called == "import_module" else []
    text = name.value
    if text.startswith("."):
        base = package.value if isinstance(package, ast.Constant) else own
        level = len(text) - len(text.lstrip("."))
        parts = base.split(".")
        text = ".".join(parts[: len(parts) - (level - 1)] + ([text.lstrip(".")] if text.lstrip(".") else []))
    return [text] if text.split(".")[0] == "mlmbook" else []


def _type_only_nodes(tree: ast.AST) -> set[int]:
    """ids of the import nodes inside ``if TYPE_CHECKING:`` blocks."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return out


def import_graph(type_only: bool | None = None, trees: dict | None = None) -> dict[str, set[str]]:
    """module -> mlmbook modules it imports (anywhere in its body), with the packages they live in.

    ``type_only``: None, every import; False, the imports that run; True, those under ``TYPE_CHECKING``.
    ``trees``: the parsed modules (default: the package's).
    """
    graph = {}
    for module, tree in (TREES if trees is None else trees).items():
        edges, typed = set(), _type_only_nodes(tree)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom, ast.Call)):
                continue
            if type_only is not None and (id(node) in typed) != type_only:
                continue
            for target in _resolve(module, node):
                if target == FACE and module != FACE:   # the face itself, or a name it defines
                    edges.add(FACE)
                    continue
                parts = target.split(".")
                for k in range(2, len(parts) + 1):      # importing a.b.c runs a/b/__init__ too
                    name = ".".join(parts[:k])
                    if name in MODULES and not module.startswith(name + ".") and name != module:
                        edges.add(name)
                if target.endswith("(computed name)"):
                    edges.add(target)
        graph[module] = edges
    return graph


def _names(block: str) -> list[str]:
    """The entries of an allow-list: one per line, ``#`` comments and blank lines ignored."""
    return [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]


CROSS_SCIENCE_PENDING = _names("""
""")
"""Imports between two chapters' science that arrived while the layer order was being introduced;
their owners remove them (and their line here)."""


def wrong_way(graph: dict[str, set[str]], typed: dict[str, set[str]] | None = None) -> list[str]:
    """Every import against the layer order, as ``"importer -> imported (why)"``.

    ``graph``: imports that run; ``typed``: imports for annotations only (may reach up to the protocol).
    """
    out = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            a, b = top(module), top(target)
            if target.endswith("(computed name)"):
                out.append(f"{module} -> {target} (importlib with a name the layer check cannot read: "
                           f"import it by name)")
                continue
            if a == b:
                continue
            la, lb = LAYER_OF.get(a), LAYER_OF.get(b)
            if la is None or lb is None:
                out.append(f"{module} -> {target} (no layer for {a if la is None else b}: add it to LAYERS)")
            elif lb > la:
                out.append(f"{module} -> {target} ({LAYERS[la][0]} imports {LAYERS[lb][0]})")
            elif lb == la and a in SCIENCE and CHAPTER_OF.get(a) != CHAPTER_OF.get(b):
                out.append(f"{module} -> {target} (one chapter's science imports another's: move the shared "
                           f"part below the science layer)")
    for module, targets in sorted((typed or {}).items()):
        for target in sorted(targets):
            a, b = top(module), top(target)
            if a != b and LAYER_OF.get(b, 0) > LAYER_OF.get(a, 0) and target not in (PROTOCOL, "mlmbook.models"):
                out.append(f"{module} -> {target} (annotation of a higher layer than the MaskedLM protocol)")
    return out


def science_imports_a_model(graph: dict[str, set[str]]) -> list[str]:
    """Science (and the layers below models) type against the protocol, never a model implementation."""
    return [f"{m} -> {t}" for m, targets in sorted(graph.items()) for t in sorted(targets)
            if top(m) in SCIENCE + ("corpus", "toy", "queries") and t.startswith("mlmbook.models.")
            and t.split(".")[-1] in MODEL_IMPLEMENTATIONS]


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


OLD_WRONG_WAY = {
    # importer -> imported: the import line it had
    ("mlmbook.models.ladder", "mlmbook.compare"): "from ..compare import kl_to_truth as _kl_to_truth",
    ("mlmbook.corpus.fit", "mlmbook.pipeline.record"): "from ..pipeline.record import notice",
    ("mlmbook.models.base", "mlmbook.queries"): "from .. import queries",
    ("mlmbook.models.train", "mlmbook.queries"): "from .. import queries, threads",
    ("mlmbook.glauber.experiments", "mlmbook.consistency"): "from ..consistency import rectangle_deltas",
}
"""The wrong-way imports of the second edition (issue 27), kept as test data for the checker."""


def test_layer_order():
    found = wrong_way(import_graph(type_only=False), import_graph(type_only=True))
    bad = [line for line in found if line.split(" (")[0] not in CROSS_SCIENCE_PENDING]
    assert not bad, "imports against the layer order (see LAYERS):\n" + "\n".join(bad)


@pytest.mark.parametrize("edge", sorted(OLD_WRONG_WAY), ids=lambda e: f"{top(e[0])}->{top(e[1])}")
def test_the_layer_check_catches_each_old_wrong_way_import(edge):
    importer, imported = edge
    tree = ast.parse(OLD_WRONG_WAY[edge])
    assert any(imported in _resolve_line(importer, n) for n in ast.walk(tree)
               if isinstance(n, (ast.Import, ast.ImportFrom))), "the test data does not import what it names"
    graph = {m: set(t) for m, t in _running_imports().items()}
    graph[importer].add(imported)
    assert any(line.startswith(f"{importer} -> {imported} ") for line in wrong_way(graph))


INJECTED = [
    # (science module, the line put into a copy of it, the module the line imports against the order)
    ("mlmbook.joints.ag", "from ..pipeline.record import record", "mlmbook.pipeline.record"),
    ("mlmbook.consistency.rectangle", "import mlmbook.api.pll", "mlmbook.api.pll"),
    ("mlmbook.glauber.sampler", "from ..joints import ag", "mlmbook.joints.ag"),
    ("mlmbook.dependencies.cmi", "from mlmbook import record", "mlmbook.pipeline.record"),
    ("mlmbook.rank", "from . import record", "mlmbook.pipeline.record"),
    ("mlmbook.deficiency.measure", "def later():\n    from mlmbook import pll", "mlmbook.api"),
    ("mlmbook.probes", "import mlmbook", "mlmbook"),
    ("mlmbook.joints.ag", "import importlib\nimportlib.import_module('mlmbook.pipeline.record')",
     "mlmbook.pipeline.record"),
    ("mlmbook.consistency.order", "from importlib import import_module\nimport_module('.record', 'mlmbook.pipeline')",
     "mlmbook.pipeline.record"),
    ("mlmbook.glauber.exact", "api = __import__('mlmbook.api')", "mlmbook.api"),
]
"""Ten wrong-way imports: direct, through the face (by name, by ``import mlmbook``) and through
``importlib``; each put into a temporary copy of a science module must fail the layer check."""


@pytest.mark.parametrize("importer, line, imported", INJECTED, ids=[f"{i}-{t}" for i, _, t in INJECTED])
def test_each_injected_wrong_way_import_fails_the_layer_check(importer, line, imported, tmp_path):
    copy = tmp_path / MODULES[importer].name
    copy.write_text(MODULES[importer].read_text() + "\n\n" + line + "\n")
    package = _running_imports()
    assert imported not in package[importer]                          # the module as it is does not
    injected = import_graph(type_only=False, trees={importer: ast.parse(copy.read_text(), str(copy))})
    found = wrong_way({**package, **injected})
    assert any(line.startswith(f"{importer} -> {imported} ") for line in found), found


@functools.cache
def _running_imports() -> dict[str, frozenset]:
    return {m: frozenset(t) for m, t in import_graph(type_only=False).items()}


def test_a_computed_importlib_name_fails_the_layer_check():
    trees = {"mlmbook.joints.ag": ast.parse("import importlib\nname = 'x'\nimportlib.import_module(name)")}
    assert wrong_way(import_graph(type_only=False, trees=trees)) == [
        "mlmbook.joints.ag -> mlmbook.joints (computed name) (importlib with a name the layer check cannot read: "
        "import it by name)"]


def _resolve_line(module: str, node) -> list[str]:
    """:func:`_resolve` for a module that may no longer exist (old test data)."""
    if module not in MODULES:
        return _resolve(next(m for m in MODULES if m.startswith(module.rsplit(".", 1)[0])), node)
    return _resolve(module, node)


def test_annotations_may_reach_up_to_the_protocol_only():
    typed = {"mlmbook.corpus.fit": {PROTOCOL}, "mlmbook.toy.grammar": {"mlmbook.models.hf"}}
    assert wrong_way({}, typed) == ["mlmbook.toy.grammar -> mlmbook.models.hf (annotation of a higher layer "
                                    "than the MaskedLM protocol)"]


def test_every_module_has_a_layer():
    assert not sorted({top(m) for m in MODULES} - set(LAYER_OF)), "add new top-level modules to LAYERS"
    assert set(SCIENCE) == set(CHAPTER_OF), "give every science module its chapter in CHAPTER_OF"


def test_no_import_cycles():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_function_local_imports_are_in_the_graph():
    """A late import inside a function counts (it is how cycles used to hide)."""
    graph = import_graph()
    assert "mlmbook.models.load" in graph["mlmbook.pipeline.chapters"]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_size(module):
    lines = len(MODULES[module].read_text().splitlines())
    assert lines <= MAX_LINES, f"{MODULES[module]} has {lines} lines (limit {MAX_LINES}): split it by idea"


MAX_WIDTH = 100
LONG_LINES = 790
"""Lines over ``MAX_WIDTH`` characters the package may hold (issue 42 asks for at most 1,100). A
ratchet: lower it when a change shortens lines; it never goes up."""


def test_the_package_keeps_its_lines_short():
    long = [f"{path.relative_to(PACKAGE.parent)}:{n}" for path in sorted(PACKAGE.rglob("*.py"))
            for n, line in enumerate(path.read_text().splitlines(), 1) if len(line) > MAX_WIDTH]
    assert len(long) <= LONG_LINES, (f"{len(long)} lines over {MAX_WIDTH} characters (at most {LONG_LINES}); "
                                     f"for example {long[-3:]}")


PACKAGE_LINES = 24_140
"""Lines of the package apart from the newest chapter's room (``diffusion/``, issue 42's "a new
chapter's module apart"; its goal is 25,000). A ratchet: lower it when a change shrinks the package; a
change that must grow it says why in its commit."""
NEW_CHAPTER_ROOM = PACKAGE / "diffusion"


def test_the_package_does_not_grow():
    n = sum(len(path.read_text().splitlines()) for path in PACKAGE.rglob("*.py")
            if NEW_CHAPTER_ROOM not in path.parents)
    assert n <= PACKAGE_LINES, f"the package has {n:,} lines (at most {PACKAGE_LINES:,}): remove before adding"

def test_science_uses_the_protocol_not_a_model_implementation():
    bad = science_imports_a_model(import_graph())
    assert not bad, bad


def test_the_protocol_check_sees_every_science_module():
    """It once matched names by prefix and missed ``consistency_regime`` and ``corpus``."""
    graph = {"mlmbook.consistency_regime": {"mlmbook.models.hf"}, "mlmbook.corpus.fit": {"mlmbook.models.load"},
             "mlmbook.joints.ag": {"mlmbook.models.base"}}
    assert science_imports_a_model(graph) == ["mlmbook.consistency_regime -> mlmbook.models.hf",
                                              "mlmbook.corpus.fit -> mlmbook.models.load"]


def test_package_imports_no_chapter_or_benchmark():
    for module, tree in TREES.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            assert not any(n.split(".")[0] in ("benchmarks", "book", "tests") for n in names), (module, names)


# ---------------------------------------------------------------------------- one name per concept, short signatures
MAX_PARAMETERS = 6


def public_functions():
    """``(qualified name, ast node)`` of every public function and public method of a public class."""
    for module, tree in TREES.items():
        if any(p.startswith("_") for p in module.split(".")[1:]) and not module.endswith("__main__"):
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                yield f"{module}.{node.name}", node
            elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                            (not item.name.startswith("_") or item.name == "__init__"):
                        yield f"{module}.{node.name}.{item.name}", item


def n_parameters(fn: ast.FunctionDef) -> int:
    """Named parameters, ``self``/``cls`` and ``*args``/``**kwargs`` not counted."""
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    return len([n for n in names if n not in ("self", "cls")])


def long_signatures() -> set[str]:
    return {name for name, fn in public_functions() if n_parameters(fn) > MAX_PARAMETERS}


LONG_SIGNATURES_ALLOWED = _names("")
"""Public functions allowed more than MAX_PARAMETERS parameters: none (the 24 there were when the
check arrived, issue 27, take a keyword-only settings object or lost the parameters no caller passed)."""


def test_public_functions_take_at_most_six_parameters():
    new = sorted(long_signatures() - set(LONG_SIGNATURES_ALLOWED))
    assert not new, (f"public functions with more than {MAX_PARAMETERS} parameters (group the rest in a "
                     f"config dataclass):\n" + "\n".join(new))


def _target(module: str, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` statement reads from."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if MODULES[module].name == "__init__.py" else module.split(".")[:-1]
    return ".".join(base[: len(base) - (node.level - 1)] + ([node.module] if node.module else []))


def borrowed_private_functions() -> dict[str, ast.FunctionDef]:
    """Private functions (and private classes' ``__init__``) that another module imports
    (``from .trees import _spans``) or reads through an imported module (``paired._ordered``):
    ``"module._name" -> node``. Used outside their module, they are public in all but name."""
    out = {}
    for module, tree in TREES.items():
        modules, borrowed = {}, []
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and _target(module, node).startswith(FACE):
                target = _target(module, node)
                for a in node.names:
                    if f"{target}.{a.name}" in MODULES:
                        modules[a.asname or a.name] = f"{target}.{a.name}"
                    elif a.name.startswith("_") and not a.name.startswith("__"):
                        borrowed.append((target, a.name))
        borrowed += [(modules[n.value.id], n.attr) for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                     and isinstance(n.value, ast.Name) and n.value.id in modules
                     and n.attr.startswith("_") and not n.attr.startswith("__")]
        for target, name in borrowed:
            for node in TREES.get(target, ast.Module(body=[])).body:
                if isinstance(node, ast.ClassDef) and node.name == name:
                    node = next((i for i in node.body if isinstance(i, ast.FunctionDef) and i.name == "__init__"),
                                None)
                if isinstance(node, ast.FunctionDef) and (node.name == name or node.name == "__init__"):
                    out[f"{target}.{name}"] = node
    return out


def test_a_private_function_used_by_another_module_keeps_the_cap():
    """The cap is not dodged by a leading underscore: a helper another module calls takes at most
    :data:`MAX_PARAMETERS` parameters too."""
    borrowed = borrowed_private_functions()
    assert "mlmbook.stats.paired._ordered" in borrowed, "the check no longer sees a known borrowed helper"
    long = sorted(name for name, fn in borrowed.items() if n_parameters(fn) > MAX_PARAMETERS)
    assert not long, f"private helpers used across modules with more than {MAX_PARAMETERS} parameters: {long}"


def test_the_signature_check_counts_keyword_only_parameters():
    fn = ast.parse("def f(self, a, b, /, c, *args, d=1, e=2, f=3, g=4, **kw): pass").body[0]
    assert n_parameters(fn) == 7


def reads_its_keyword_dict(fn: ast.FunctionDef) -> bool:
    """Whether ``fn`` takes ``**kw`` and reads parameters of its own out of it (``kw.pop("n")``, ``kw["df"]``,
    the dict handed to a checker) and never passes it on as ``g(**kw)``. Parameters hidden so are the cap's
    dodge; a wrapper that passes its ``**kw`` to the function it wraps is not, nor a function that takes any
    names and only walks them (``kw.items()``: ``explore(draw, **controls)``)."""
    name = fn.args.kwarg.arg if fn.args.kwarg else None
    passed, walked = set(), set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            passed |= {id(k.value) for k in node.keywords if k.arg is None}
        elif isinstance(node, ast.Attribute) and node.attr in ("items", "keys", "values"):
            walked.add(id(node.value))
    uses = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
    forwarded = any(id(n) in passed for n in uses)
    return not forwarded and any(id(n) not in walked for n in uses)


def test_no_public_function_hides_parameters_in_its_keyword_dict():
    hidden = sorted(name for name, fn in public_functions() if reads_its_keyword_dict(fn))
    assert not hidden, ("public functions that read named options out of **kwargs (take a keyword-only settings "
                        "object instead):\n" + "\n".join(hidden))


@pytest.mark.parametrize("source, hides", [
    ("def f(a, **options):\n    n = options.pop('n', None)\n    return a", True),
    ("def f(a, **options):\n    return check('f', options)", True),
    ("def f(a, **kw):\n    kw.setdefault('x', 1)\n    return g(a, **kw)", False),
    ("def f(a, **kw):\n    return g(a, **kw)", False),
    ("def f(a):\n    return a", False),
    ("def f(a, **options):\n    return check({'what': a, **options})", True),
    ("def f(draw, **controls):\n    return draw(**{k: v[1] for k, v in controls.items()})", False),
])
def test_the_keyword_dict_check_tells_a_hidden_parameter_from_a_wrapper(source, hides):
    assert reads_its_keyword_dict(ast.parse(source).body[0]) is hides


RESEARCH_FACING = (*SCIENCE, "queries", "compare")
"""Where a reader meets functions side by side in the chapters: one name, one meaning. (The research
API's functions are wrappers named after what they wrap, e.g. ``mlmbook.pll`` over ``queries.pll``.)"""


def signatures_by_name() -> dict[str, set[tuple[str, ...]]]:
    """Public function name -> its distinct parameter lists across the research-facing modules."""
    out: dict[str, set] = {}
    for qualified, fn in public_functions():
        if top(qualified) not in RESEARCH_FACING or (qualified.count(".") > 2
                                                     and qualified.split(".")[-2][0].isupper()):
            continue                                   # methods: their class is the namespace
        a = fn.args
        out.setdefault(fn.name, set()).add(tuple(x.arg for x in a.posonlyargs + a.args + a.kwonlyargs))
    return {name: sigs for name, sigs in out.items() if len(sigs) > 1}


SAME_NAME_ALLOWED = _names("""
uuas          # chapter 1: dependencies.trees.uuas(pred, gold) -> float; dependencies.evaluate.uuas(c, ...) -> Interval
""")
"""Public function names defined in several research-facing modules with different parameters (one
name, several meanings) when the check arrived. Owners rename or unify them and delete their line."""


def test_one_public_name_one_signature():
    found = signatures_by_name()
    new = sorted(set(found) - set(SAME_NAME_ALLOWED))
    assert not new, "one name with different signatures in different modules:\n" + "\n".join(
        f"{n}: {sorted(found[n])}" for n in new)


def _spelling(name: str) -> str:
    return re.sub(r"is(e|ing|ed|ation)", r"iz\1", name).replace("our", "or")


def test_one_spelling_per_name():
    """``summarize`` and ``summarise`` (``normalise``/``normalize``, ``colour``/``color``) are one name."""
    names = {fn.name for _, fn in public_functions()}
    clashes = {}
    for n in names:
        clashes.setdefault(_spelling(n), set()).add(n)
    bad = sorted(" / ".join(sorted(v)) for v in clashes.values() if len(v) > 1)
    assert not bad, "one concept, two spellings:\n" + "\n".join(bad)


def test_the_spelling_check_sees_british_and_american():
    assert _spelling("summarise") == _spelling("summarize") and _spelling("colour") == "color"


MAX_TUPLE = 4
"""A public function returns at most this many values as a bare tuple; more get a dataclass."""


def long_tuples() -> set[str]:
    """Public functions that return a tuple literal of more than :data:`MAX_TUPLE` values, and public
    NamedTuples with more than 2 × :data:`MAX_TUPLE` fields."""
    out = set()
    for qualified, fn in public_functions():
        for node in ast.walk(fn):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple) and \
                    len(node.value.elts) > MAX_TUPLE:
                out.add(qualified)
    for module, tree in TREES.items():
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and any("NamedTuple" in ast.unparse(b) for b in node.bases):
                fields = [s for s in node.body if isinstance(s, ast.AnnAssign)]
                if len(fields) > 2 * MAX_TUPLE:
                    out.add(f"{module}.{node.name}")
    return out


LONG_TUPLES_ALLOWED = _names("")
"""Long bare tuples allowed in the public API: none (the four there were are dataclasses now)."""


def test_results_are_typed_not_long_tuples():
    new = sorted(long_tuples() - set(LONG_TUPLES_ALLOWED))
    assert not new, f"return a dataclass, not a tuple of more than {MAX_TUPLE} values:\n" + "\n".join(new)


def test_allow_lists_hold_no_stale_entries():
    """An entry whose offence is gone is deleted, so the lists only shrink."""
    edges = {line.split(" (")[0] for line in wrong_way(import_graph(type_only=False))}
    stale = [f"CROSS_SCIENCE_PENDING: {n}" for n in sorted(set(CROSS_SCIENCE_PENDING) - edges)]
    stale += [f"LONG_SIGNATURES_ALLOWED: {n}" for n in sorted(set(LONG_SIGNATURES_ALLOWED) - long_signatures())]
    stale += [f"SAME_NAME_ALLOWED: {n}" for n in sorted(set(SAME_NAME_ALLOWED) - set(signatures_by_name()))]
    stale += [f"LONG_TUPLES_ALLOWED: {n}" for n in sorted(set(LONG_TUPLES_ALLOWED) - long_tuples())]
    assert not stale, "fixed: delete these entries:\n" + "\n".join(stale)


def test_token_offsets_are_named_not_literal():
    """A default such as ``offset=5`` silently breaks on any tokenizer but the toy one: use
    :data:`mlmbook.toy.N_SPECIAL` (or ask the model)."""
    bad = []
    for qualified, fn in public_functions():
        a = fn.args
        params = a.posonlyargs + a.args
        defaults = [None] * (len(params) - len(a.defaults)) + list(a.defaults)
        for p, d in [*zip(params, defaults), *zip(a.kwonlyargs, a.kw_defaults)]:
            if "offset" in p.arg and isinstance(d, ast.Constant) and isinstance(d.value, int) and d.value:
                bad.append(f"{qualified}({p.arg}={d.value})")
    assert not bad, bad
