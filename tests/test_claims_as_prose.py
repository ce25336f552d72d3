"""Claims as prose (issue 36): the package supplies numbers, labels and tables, not English sentences.

A chapter's claims are written in its MyST source with glued numbers and verdict labels, where a
writer can edit them and a reader of the source can find them. This test reads the package's source
(an AST scan, no import, no execution) and fails on any string literal or f-string of more than
:data:`MAX_WORDS` words that a function could hand to a page: anywhere in a function body or a
module-level assignment, except

* docstrings, ``raise`` statements and exception objects (an error's one-line cause is not a claim),
* logging, progress and warnings (``say``, ``print``, ``tell``, ``notice``, ``warn``, ``log``...),
  patterns (``re.compile``), the registration of a documented object (``exercise``, ``knob``),
* ``assert`` messages, ``argparse`` ``help=``/``description=`` texts,
* the :data:`EXCEPTIONS` below, each with its reason.

Words are counted as a reader would: the runs of letters of the literal's text, and one word per
``{field}`` of an f-string. A table cell, an axis label or a verdict label stays well under the limit;
a sentence that states a result does not. The scan is per module, so the report names each module
that still builds sentences.

It also scans the chapters' code cells (``book/NN_*.md``) the same way: a hidden cell that records or
displays a sentence built in Python (``record("x_summary", f"On {n} sentences the model ...")``)
fails; that prose belongs in the Markdown, with ``{glue:text}`` roles.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mlmbook"
MAX_WORDS = 12
"""Longer than a label: a table header, an axis label or a verdict label is shorter."""

QUIET = {"say", "print", "tell", "notice", "warn", "warning", "log", "debug", "info", "error", "exception",
         "critical", "echo", "write", "progress", "set_description", "set_postfix_str", "fail", "skip", "exit",
         "compile", "match", "search", "sub", "fullmatch", "findall", "finditer", "split"}
"""Calls whose text goes to a log, a progress line or a warning, not to a page (and the ``re`` calls,
whose text is a pattern)."""

REGISTRATIONS = {"exercise", "knob"}
"""Calls that register a documented object (a graded exercise, a knob of the world): their texts are
its documentation and the grader's labels."""

EXCEPTIONS = {
    ("mlmbook/exercises/__init__.py", "check"):
        "a grader's one-line feedback to a student (✓ passed / ✗ case 3: ...), not a claim of the book",
    ("mlmbook/exercises/grading.py", "*"): "a command-line grader's messages",
    ("mlmbook/exercises/__main__.py", "*"): "a command-line tool's output",
    ("mlmbook/__main__.py", "*"): "the command line: usage and progress messages",
    ("mlmbook/cli_research.py", "*"): "the research command line: usage and progress messages",
    ("mlmbook/pipeline/sitecheck.py", "*"): "the site check's problem reports (diagnostics, like errors)",
    ("mlmbook/pipeline/sitetext.py", "*"): "the site check's problem reports (diagnostics, like errors)",
    ("mlmbook/pipeline/checks.py", "*"): "the build's checks of an executed chapter: problem reports",
    ("mlmbook/pipeline/wording.py", "*"): "the words check's problem reports (diagnostics, like errors)",
    ("mlmbook/pipeline/failures.py", "*"): "the report of a failed chapter",
    ("mlmbook/pipeline/cost.py", "*"): "the cost verb's estimate, printed in a terminal",
    ("mlmbook/pipeline/plan.py", "*"): "the build's plan, printed in a terminal",
    ("mlmbook/pipeline/runs.py", "*"): "the build's progress and training report, printed in a terminal",
    ("mlmbook/pipeline/chapter_run.py", "*"): "the build's progress lines",
    ("mlmbook/pipeline/inputs.py", "*"): "the inputs check's one-line usage errors (issue 35)",
    ("mlmbook/workers/__init__.py", "*"): "the task runner's progress and failure reports",
    ("mlmbook/workers/cluster.py", "*"): "the cluster's failure reports, and code it runs in workers",
    ("mlmbook/models/hf.py", "_damaged"): "the text of an error (a damaged model folder and what to do)",
    ("mlmbook/models/cache.py", "_cached_many"): "a warning (a corrupted cache entry is trained again)",
    ("mlmbook/corpus/conllu.py", "_DOWNLOAD_HINT"): "an error's advice (where to get a treebank)",
    ("mlmbook/corpus/for_model.py", "read_for_model"): "the text of an error (no sentence fits the model)",
    ("mlmbook/stats/audit.py", "rederive"): "the audit's problem reports (diagnostics)",
    ("mlmbook/stats/study.py", "Question.test_label"): "a table cell naming the test (13 words)",
    ("mlmbook/pipeline/site.py", "BINDER_README"): "the README file of the notebooks branch (a document)",
    ("mlmbook/pipeline/launch.py", "BINDER_README"): "the README file of the notebooks branch (a document)",
    ("mlmbook/pipeline/launch.py", "PAGE_POINTER"): "a launched notebook's pointer to its page (navigation)",
    ("mlmbook/pipeline/notebooks.py", "_INSTALL_CELL"): "code (the install cell) and its comments",
    ("mlmbook/pipeline/record.py", "not_measured"): "its docstring's example and the default label",
    ("mlmbook/corpus/fit.py", "*"): "the fit check's warning: a user-caused problem and what to do (issue 35)",
}
"""(module, function or constant) -> why its long strings are not prose of the book. ``"*"``: the
whole module is a tool whose output is diagnostics."""


def _words(node: ast.AST) -> int:
    """Words a reader would read: runs of letters outside HTML tags, one per f-string field."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
    elif isinstance(node, ast.JoinedStr):
        text = "".join(v.value if isinstance(v, ast.Constant) else " X " for v in node.values)
    else:
        return 0
    text = re.sub(r"<[^<>]*>", " ", text)                     # markup is not prose
    return len(re.findall(r"[A-Za-z]+(?:['’][a-z]+)?", text))


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _is_error(name: str) -> bool:
    return name.endswith(("Error", "Exception", "Warning", "Missing", "Failed", "Refused", "Unavailable"))


class _Scan(ast.NodeVisitor):
    """Long literals outside the exempt places, with the function (or constant) that holds them."""

    def __init__(self):
        self.found: list[tuple[str, int, int, str]] = []      # (owner, line, words, text)
        self.owner = "<module>"

    def _body(self, body):
        for stmt in body:
            value = stmt.value if isinstance(stmt, ast.Expr) else None
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                continue                                     # a docstring (of the body, or of an attribute)
            self.visit(stmt)

    def visit_Module(self, node):
        self._body(node.body)

    def visit_FunctionDef(self, node):
        outer, self.owner = self.owner, node.name if self.owner == "<module>" else f"{self.owner}.{node.name}"
        for d in node.args.defaults + node.args.kw_defaults:
            if d is not None:
                self.visit(d)
        self._body(node.body)
        self.owner = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node):
        self.visit(node.test)
        self._body(node.body)
        self._body(node.orelse)

    def visit_ClassDef(self, node):
        outer, self.owner = self.owner, node.name
        self._body(node.body)
        self.owner = outer

    def visit_Assign(self, node):
        if self.owner == "<module>":
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            outer, self.owner = self.owner, names[0] if names else "<module>"
            self.generic_visit(node)
            self.owner = outer
        else:
            self.generic_visit(node)

    def visit_Raise(self, node):
        pass

    def visit_Assert(self, node):
        self.visit(node.test)

    def visit_Call(self, node):
        name = _callee(node)
        if name in QUIET or name in REGISTRATIONS or _is_error(name):
            return
        self.visit(node.func)
        for a in node.args:
            self.visit(a)
        for k in node.keywords:
            if k.arg not in ("help", "description", "epilog", "usage"):
                self.visit(k.value)

    def visit_Constant(self, node):
        self._literal(node)

    def visit_JoinedStr(self, node):
        self._literal(node)                                  # its parts are not visited again

    def _literal(self, node):
        n = _words(node)
        if n > MAX_WORDS:
            text = node.value if isinstance(node, ast.Constant) else ast.unparse(node)
            self.found.append((self.owner, node.lineno, n, " ".join(str(text).split())[:90]))


def long_strings(source: str) -> list[tuple[str, int, int, str]]:
    """``(owner, line, words, text)`` of every long literal the rules above do not exempt."""
    scan = _Scan()
    scan.visit(ast.parse(source))
    return scan.found


def _exempt(module: str, owner: str) -> bool:
    top = owner.split(".")[0]
    return (module, "*") in EXCEPTIONS or (module, owner) in EXCEPTIONS or (module, top) in EXCEPTIONS


MODULES = sorted(p.relative_to(ROOT).as_posix() for p in PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("module", MODULES)
def test_the_package_builds_no_sentence(module):
    found = [f for f in long_strings((ROOT / module).read_text(encoding="utf-8")) if not _exempt(module, f[0])]
    assert not found, (f"{module} builds sentences (more than {MAX_WORDS} words) — write the prose in the "
                       f"chapter's Markdown with glued numbers and labels:\n"
                       + "\n".join(f"  line {line} in {owner}: {words} words: {text!r}"
                                   for owner, line, words, text in found))


CHAPTERS = sorted(p.name for p in (ROOT / "book").glob("[0-9][0-9]_*.md"))


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_chapters_code_builds_no_sentence(chapter):
    import jupytext

    nb = jupytext.read(ROOT / "book" / chapter)
    found = []
    for k, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        code = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
        try:
            found += [(k, *f) for f in long_strings(code)]
        except SyntaxError:
            continue
    assert not found, (f"{chapter}: code cells build sentences — write them in Markdown with {{glue:text}} roles:\n"
                       + "\n".join(f"  cell {k}, {owner}: {words} words: {text!r}"
                                   for k, owner, _, words, text in found))


# --------------------------------------------------------------------------- the scan itself

def test_the_scan_finds_a_sentence_and_spares_what_is_not_prose():
    source = '''
def summary(n, kl):
    """A docstring may be as long as it likes, since it documents and never reaches a page."""
    if n < 0:
        raise ValueError(f"n must be positive, and this error message can say so at whatever length {n}")
    say(f"progress: {n} sentences done so far, and the log may be chatty about what it did {kl}")
    label = f"KL {kl:.3f} nats"
    return f"On {n} held-out sentences the default MLM is on average {kl:.3f} nats from the truth per position."
'''
    found = long_strings(source)
    assert [(owner, words) for owner, _, words, _ in found] == [("summary", 18)]


def test_a_module_level_sentence_is_found_and_an_exception_is_named():
    found = long_strings('GAP = "the loss gap is indistinguishable from the KL, as the identity says it should be"\n')
    assert [owner for owner, *_ in found] == ["GAP"]
    assert _exempt("mlmbook/pipeline/site.py", "BINDER_README") and not _exempt("mlmbook/stats/study.py", "x")


# ------------------------------------------------------------------ words bound to answers (issue 43)

def _executed(markdown: list[str], sides: dict[str, tuple[str, str]]):
    """A notebook as the build sees it after execution: one code cell gluing each answer's side and
    verdict (and the study's question order), then the Markdown cells."""
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    def glue(key, value):
        return new_output("display_data", data={"text/plain": repr(value)},
                          metadata={"scrapbook": {"name": key, "mime_prefix": ""}})
    outputs = [glue("study", {"kind": "study", "questions": list(sides)})]
    for key, (side, verdict) in sides.items():
        outputs += [glue(f"q_{key}.side", side), glue(f"q_{key}.verdict", verdict),
                    glue(f"q_{key}.estimate", 0.08)]
    outputs.append(glue("truth_dose", 0.09))
    cell = new_code_cell("", outputs=outputs)
    cell.metadata["papermill"] = {"start_time": "t", "status": "completed", "exception": False}
    return new_notebook(cells=[cell, *map(new_markdown_cell, markdown)])


def _words_problems(markdown, sides):
    from mlmbook.pipeline.checks import check_executed

    return [p for p in check_executed(_executed(markdown, sides)) if "claim more than the answer" in p]


UNDECIDED = {"knob": ("indistinguishable", "cannot decide"), "gap": ("above", "MLM ahead")}
LOWERS = "Turning selection off lowers the MLMs' trees by {glue:text}`q_knob.estimate:.2f` UUAS"


def test_a_direction_word_beside_cannot_decide_fails():
    found = _words_problems([LOWERS + " (Q1: *{glue:text}`q_knob.verdict`*)."], UNDECIDED)
    assert len(found) == 1 and "'lowers'" in found[0] and "q_knob: cannot decide" in found[0], found
    by_number = _words_problems([LOWERS.replace("{glue:text}`q_knob.estimate:.2f`", "0.08") + " (Q1)."],
                                UNDECIDED)
    assert len(by_number) == 1, by_number                      # "Q1" names the study's first question


def test_the_same_words_pass_where_the_answer_has_a_direction():
    assert _words_problems([LOWERS + " (Q1: *{glue:text}`q_knob.verdict`*)."],
                           {"knob": ("below", "MLM behind")}) == []
    neutral = ("Selection on minus off: the MLMs' trees differ by {glue:text}`q_knob.estimate:+.2f` "
               "UUAS (Q1: *{glue:text}`q_knob.verdict`*). Q1 asks whether selection lowers them.")
    assert _words_problems([neutral], UNDECIDED) == []


def test_equivalence_words_need_an_equivalent_answer():
    text = "Single-word routes do about as well as span routes (Q2: {glue:text}`q_gap.verdict`)."
    assert len(_words_problems([text], UNDECIDED)) == 1          # Q2 has a direction, not equivalence
    assert _words_problems([text], {"knob": UNDECIDED["knob"], "gap": ("equivalent", "equivalent")}) == []


def test_a_bold_claim_over_an_undecided_answer_fails():
    claim = ("- **Selection makes the trees.** The MLMs' trees move by {glue:text}`q_knob.estimate:.2f` "
             "({glue:text}`q_knob.verdict`).")
    found = _words_problems([claim], UNDECIDED)
    assert len(found) == 1 and "bold claim" in found[0], found
    question = claim.replace("**Selection makes the trees.**", "**Does selection make the trees?**")
    assert _words_problems([question], UNDECIDED) == []
    assert _words_problems([claim], {"knob": ("above", "selection helps"), "gap": UNDECIDED["gap"]}) == []


def test_a_heading_over_an_undecided_answer_fails():
    found = _words_problems(["## Selection lowers the trees\n\nThe difference is "
                             "{glue:text}`q_knob.estimate:.2f` (Q1: {glue:text}`q_knob.verdict`)."], UNDECIDED)
    assert any("heading" in p for p in found), found


def test_a_descriptive_number_called_by_a_verdict_word_fails():
    found = _words_problems(["The truth's trees move by a significant {glue:text}`truth_dose:.2f` UUAS."],
                            UNDECIDED)
    assert len(found) == 1 and "descriptive number" in found[0], found
    assert _words_problems(["The truth's trees move by {glue:text}`truth_dose:.2f` UUAS."], UNDECIDED) == []


def _reference_answers(results: Path):
    import json

    data = json.loads(results.read_text())
    answers = {k[2:]: {"side": v["side"], "verdict": v["verdict"]} for k, v in data.items()
               if isinstance(v, dict) and v.get("kind") == "answer"}
    return answers, list((data.get("study") or {}).get("questions", []))


REFERENCES = sorted((ROOT / "results" / "full").glob("0[1-9]_*.json"))


@pytest.mark.parametrize("results", REFERENCES, ids=[p.stem for p in REFERENCES])
@pytest.mark.parametrize("world", ["toy", "real"])
def test_the_chapters_say_what_their_reference_answers_allow(results, world):
    """The words check on each chapter's source, with the committed full reference's answers, and again
    with every answer undecided, equivalent or with a direction: a rebuilt reference, a quick build or a
    real model may answer otherwise, and the prose takes its verdict words from the glued verdict."""
    import jupytext

    from mlmbook.pipeline.split import drop_other_world
    from mlmbook.pipeline.wording import claim_problems

    source = ROOT / "book" / f"{results.stem}.md"
    nb = drop_other_world(jupytext.read(source), world)
    markdown = [c.source for c in nb.cells if c.cell_type == "markdown"]
    answers, order = _reference_answers(results)
    assert answers, f"{results.name} records no answer"
    others = [{k: {"side": side, "verdict": side} for k in answers}
              for side in ("indistinguishable", "equivalent", "above")]
    for case in (answers, *others):
        found = claim_problems(markdown, case, order)
        assert not found, f"{source.name} ({world}):\n" + "\n".join(found)
