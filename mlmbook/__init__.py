"""mlmbook — companion package of the book *What Masked Language Models Know*.

The research face — the book's analyses on any masked LM, one call each (:mod:`mlmbook.api`), each
first checking that the model knows the text (:func:`check_fit`;
``options=mlmbook.Options(allow_unknown=True)`` runs anyway)::

    import mlmbook
    lm = mlmbook.load_mlm("bert-base-uncased")    # or "toy", "truth", a saved model's folder
    mlmbook.pll(lm, ["The cat sat on the mat."], reduction="none")
    mlmbook.dependency_trees(lm, "en_ewt-ud-test.conllu").uuas      # UUAS with an interval
    mlmbook.derive_joint(lm, "The cat sat on the mat.", (1, 2), method=mlmbook.HCB(pivot="observed"))

and the chapters' face: ``mlmbook.Grammar.load("toy")``, ``mlmbook.record("uuas", 0.62)``. Names
and submodules are imported on first access: ``import mlmbook`` never pulls in torch, and neither it
nor the API needs the build toolchain (``pip install mlmbook[book]``). The package's map is
``docs/INTERFACES.md``; its layers, each importing only those below: ``tests/test_architecture.py``.
"""
from __future__ import annotations

import importlib

__version__ = "0.2.0"
"""The one version number (``pyproject.toml`` reads it)."""

_LAZY_SUBMODULES = {
    "api", "compare", "consistency", "corpus", "deficiency", "dependencies", "downstream", "errors",
    "exercises", "glauber", "joints", "models", "paths", "pipeline", "plotting", "probes",
    "profiles", "queries", "rank", "stats", "tables", "threads", "toy", "widgets", "workers",
}

_FACE = {
    "pll": "api", "dependency_trees": "api", "derive_joint": "api", "HCB": "api", "AG": "api",
    "rectangle_test": "api", "effective_rank": "api", "glauber_chains": "api", "Options": "api",
    "load_mlm": "models", "MaskedLM": "models",
    "Grammar": "toy", "Sentence": "corpus", "load_treebank": "corpus", "check_fit": "corpus",
    "read_for_model": "corpus",
    "record": "pipeline.record", "not_measured": "pipeline.record",
    "MLMBookError": "errors", "ModelLoadError": "errors",
}

__all__ = sorted(_FACE) + ["__version__"]


def __getattr__(name: str):
    if name in _FACE:
        return getattr(importlib.import_module(f".{_FACE[name]}", __name__), name)
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
