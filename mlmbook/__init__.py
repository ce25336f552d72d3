"""mlmbook — companion package of the book *What Masked Language Models Know*.

The research face — the book's analyses on any masked LM, one call each (:mod:`mlmbook.api`)::

    import mlmbook
    lm = mlmbook.load_mlm("bert-base-uncased")    # or "toy", "truth", a saved model's folder
    mlmbook.pll(lm, ["The cat sat on the mat."], per_token=True)
    mlmbook.dependency_trees(lm, "en_ewt-ud-test.conllu").uuas      # UUAS with an interval
    mlmbook.derive_joint(lm, "The cat sat on the mat.", 1, 2, method=mlmbook.HCB(pivot="observed"))
    mlmbook.rectangle_test(lm, "The cat sat on the mat.")
    mlmbook.effective_rank(lm, ["The cat sat on the mat."])
    mlmbook.glauber_chains(lm, "The cat sat on the mat.", steps=200, temperature=0.8)

Every call first checks that the model knows the text (:func:`check_fit`: unknown pieces,
predictions no better than chance or made worse by the context) and stops with one line when it does
not (``allow_unknown=True`` runs anyway); ``read_for_model`` is the same front door from a treebank
to a model (length window, surface tokens, fit).

and the chapters' face::

    g = mlmbook.Grammar.load("toy")
    mlmbook.record("uuas", 0.62)

Importing the package is cheap: names and submodules are imported on first access, so
``import mlmbook`` never pulls in torch; neither it nor the research API needs the book's build
toolchain (``pip install mlmbook[book]``).

================  =====================================================================
where             what
================  =====================================================================
``api``           the research API above
``paths``         every location and ``MLMBOOK_*`` variable, in one table
``errors``        :class:`MLMBookError` and its one-line errors
``stats``         kl, jsd, tv, mutual information, intervals, the decision rule
``threads``       the one thread policy, applied per call
``workers``       tasks that wait on one another, on a Dask cluster (the build's schedule)
``queries``       the one batched engine for masked queries (PLL, single-site, grids)
``compare``       a model's single-site KL to the truth; the ladder's labels
``toy/``          the toy language: vocab, PCFG (inside–outside), grammar
``corpus/``       one :class:`Sentence` type, CoNLL-U treebanks
``models/``       :class:`MaskedLM`, Hugging Face wrapper, the exact truth, MAE-LM, training, cache
``dependencies/`` chapter 1: CMI/CPMI scores, trees, UUAS, DMV
``joints/``       chapter 2: pair conditionals, MRF/HCB/AG, metrics
``consistency/``  chapter 3: rectangle test, order inconsistency, Ensemble of Conditionals
``rank``, ``probes``, ``deficiency``, ``downstream``  chapter 4: effective rank, probes, fine-tuning
``glauber/``      chapter 5: tempered Glauber dynamics, exact small-state analysis, basins
``exercises/``    graded exercises
``pipeline/``     the build: chapters, execution, site, solutions, site check, recorded numbers
``plotting``, ``widgets``, ``tables``  figures in one style, explorers, HTML tables
================  =====================================================================

The layer order of the package (each layer imports only itself and the layers below;
``tests/test_architecture.py`` enforces it): foundation (errors, paths, stats, threads, workers,
figures) → world (toy, corpus) → models → engine (queries, compare) → science (one idea per chapter)
→ uses (exercises, api) → pipeline → command line → this face.
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
    "rectangle_test": "api", "effective_rank": "api", "glauber_chains": "api",
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
