"""mlmbook — companion package of the book *What Masked Language Models Know*.

The flat face a chapter imports::

    import mlmbook
    lm = mlmbook.load_mlm("toy")                 # or "truth", or a Hugging Face name / path
    g = mlmbook.Grammar.load("toy")
    mlmbook.record("uuas", 0.62)

Importing the package is cheap: names and submodules are imported on first access, so
``import mlmbook`` never pulls in torch.

================  =====================================================================
where             what
================  =====================================================================
``paths``         every location and ``MLMBOOK_*`` variable, in one table
``errors``        :class:`MLMBookError` and its one-line errors
``stats``         kl, jsd, tv, mutual information, bootstrap intervals
``threads``       the one thread policy
``queries``       the one batched engine for masked queries (PLL, single-site, grids)
``toy/``          the toy language: vocab, PCFG (inside–outside), grammar
``corpus/``       one :class:`Sentence` type, CoNLL-U treebanks
``models/``       :class:`MaskedLM`, Hugging Face wrapper, the exact truth, MAE-LM, training, cache
``dependencies/`` chapter 1: CMI/CPMI scores, trees, UUAS, DMV
``joints/``       chapter 2: pair conditionals, MRF/HCB/AG, metrics
``consistency``   chapter 3: rectangle test, order inconsistency, Ensemble of Conditionals
``rank``, ``probes``  chapter 4: effective rank, probes and fine-tuning
``glauber/``      chapter 5: tempered Glauber dynamics, exact small-state analysis, basins
``pipeline/``     the build: chapters, execution, site, solutions, site check, recorded numbers
``plotting``, ``widgets``  figures in one style, explorers with static fallbacks
================  =====================================================================
"""

from __future__ import annotations

import importlib

__version__ = "0.2.0"

_LAZY_SUBMODULES = {
    "compare", "consistency", "corpus", "dependencies", "errors", "glauber", "joints", "models", "paths",
    "pipeline", "plotting", "probes", "profiles", "queries", "rank", "stats", "tables", "threads", "toy", "widgets",
}

_FACE = {
    "record": "pipeline.record", "not_measured": "pipeline.record", "load_results": "pipeline.record",
    "load_mlm": "models", "MaskedLM": "models", "load_or_train": "models",
    "Grammar": "toy", "Sentence": "corpus", "load_treebank": "corpus",
    "MLMBookError": "errors",
}

__all__ = sorted(_FACE) + ["__version__"]


def __getattr__(name: str):
    if name in _FACE:
        return getattr(importlib.import_module(f".{_FACE[name]}", __name__), name)
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
