"""docs/INTERFACES.md against the code: every function and method it shows called exists, and every
keyword it passes is a parameter of that function.

A call ``recv.name(...)`` is looked up on what ``recv`` stands for (:data:`RECEIVERS`); a bare
``name(...)`` in the section's module (its heading names it, e.g. ``## The query engine
(`mlmbook.queries`)``), then in :data:`BARE`.
"""
from __future__ import annotations

import builtins
import importlib
import inspect
import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "INTERFACES.md"

RECEIVERS = {
    "lm": ("mlmbook.models.base:MaskedLMBase", "mlmbook.models.hf:HFMaskedLM", "mlmbook.models.truth:TruthOracle"),
    "HFMaskedLM": ("mlmbook.models.hf:HFMaskedLM",),
    "g": ("mlmbook.toy:Grammar",), "Grammar": ("mlmbook.toy:Grammar",),
    "s": ("mlmbook.corpus:Sentence",),
    "entry": ("mlmbook.models.cache:CacheEntry",),
    "rung": ("mlmbook.models.ladder:Rung",),
    "study": ("mlmbook.stats.study:Study",),
    "stats": ("mlmbook.stats",), "mlmbook": ("mlmbook",), "plotting": ("mlmbook.plotting",),
    "zoo": ("mlmbook.pipeline.zoo",),
}
"""What a receiver in the document stands for."""

NOT_OURS = {"plt", "np", "torch"}
NOTEBOOK = {"display"}
"""Bare names a notebook has without an import."""

BARE = ("mlmbook", "mlmbook.paths", "mlmbook.pipeline.record", "mlmbook.models", "mlmbook.models.train",
        "mlmbook.queries")
"""Where a bare name is looked up after its section's module."""

CALL = re.compile(r"(?<![\w.])((?:[A-Za-z_]\w*\.)*)([A-Za-z_]\w*)\(")
INNERMOST = re.compile(r"(?<![\w.])((?:[A-Za-z_]\w*\.)*)([A-Za-z_]\w*)\(([^()]*)\)")
KEYWORD = re.compile(r"(?:^|[,(]\s*)([A-Za-z_]\w*)=(?!=)")


def _load(path: str):
    module, _, attr = path.partition(":")
    obj = importlib.import_module(module)
    for part in filter(None, attr.split(".")):
        obj = getattr(obj, part)
    return obj


def _code(text: str) -> list[tuple[str, str]]:
    """``(section's module or "", code)`` for every inline code span and python block."""
    out, module = [], ""
    blocks = re.split(r"^```python\n(.*?)^```", text, flags=re.S | re.M)
    for k, part in enumerate(blocks):
        if k % 2:
            out.append((module, part))
            continue
        for line in part.splitlines():
            heading = re.match(r"#+ .*\(`(mlmbook[\w.]*)`\)", line)
            if line.startswith("#"):
                module = heading.group(1) if heading else ""
            out += [(module, span) for span in re.findall(r"`([^`\n]+)`", line)]
    return out


def _targets(receiver: str, module: str) -> list:
    if receiver.startswith("mlmbook."):              # a module named in full
        return [importlib.import_module(receiver)]
    if receiver:
        return [_load(p) for p in RECEIVERS[receiver]]
    return [importlib.import_module(m) for m in ((module,) if module else ()) + BARE]


def named_calls(text: str) -> list[tuple[str, str, str, list[str]]]:
    """``(receiver, name, section module, keywords)`` of every call the document ``text`` shows."""
    out = []
    for module, code in _code(text):
        keywords = {(m.group(1), m.group(2)): KEYWORD.findall(m.group(3)) for m in INNERMOST.finditer(code)}
        for m in CALL.finditer(code):
            dotted = m.group(1).rstrip(".")
            receiver = dotted if dotted.startswith("mlmbook.") else dotted.split(".")[-1]
            if receiver in NOT_OURS or (not receiver and (m.group(2) in NOTEBOOK or hasattr(builtins, m.group(2)))):
                continue
            out.append((receiver, m.group(2), module, keywords.get((m.group(1), m.group(2)), [])))
    return out


def wrong_names(text: str) -> list[str]:
    """One line per call of ``text`` that names a missing function or keyword."""
    bad = []
    for receiver, name, module, keywords in named_calls(text):
        if receiver and receiver not in RECEIVERS and not receiver.startswith("mlmbook."):
            bad.append(f"{receiver}.{name}: what is {receiver!r}? (add it to RECEIVERS)")
            continue
        found = [getattr(t, name) for t in _targets(receiver, module) if hasattr(t, name)]
        shown = f"{receiver}.{name}" if receiver else name
        if not found:
            bad.append(f"{shown}: no such function" + (f" in {module}" if module and not receiver else ""))
            continue
        try:
            params = inspect.signature(found[0]).parameters
        except (TypeError, ValueError):
            continue
        if any(p.kind is p.VAR_KEYWORD for p in params.values()):
            continue
        bad += [f"{shown}: no parameter {k!r}" for k in keywords if k not in params]
    return bad


def test_every_call_in_interfaces_md_exists_with_its_keywords():
    text = DOC.read_text()
    assert len(named_calls(text)) >= 30                                # the document's calls were read
    bad = wrong_names(text)
    assert not bad, "docs/INTERFACES.md names what the code lacks:\n" + "\n".join(bad)


def test_the_check_catches_a_misnamed_function_and_keyword():
    wrong = "## The query engine again (`mlmbook.queries`)\n`pll_of(lm, x)`, `pll(lm, rows, dedupe=True)`, " \
            "`lm.pseudo_ll(x)`, `mlmbook.record(key, value, glue=False)`, `pll(lm, rows, variant='token')`\n"
    assert set(wrong_names(wrong)) == {"pll_of: no such function in mlmbook.queries", "pll: no parameter 'dedupe'",
                                       "lm.pseudo_ll: no such function", "mlmbook.record: no parameter 'glue'"}
