"""mlmbook — companion package of the book *What Masked Language Models Know*.

Importing the package is cheap: submodules (``mlmbook.oracle``, ``mlmbook.language``, ...)
are imported on first attribute access, so ``import mlmbook`` never pulls in torch.
"""

from __future__ import annotations

import importlib

from .record import record

__version__ = "0.1.0"
__all__ = ["record", "__version__"]

_LAZY_SUBMODULES = {
    "build", "compare", "consistency", "dependencies", "glauber", "joints", "language", "maelm",
    "oracle", "paths", "pcfg", "plotting", "probes", "rank", "sitecheck", "train", "treebank", "widgets",
}


def __getattr__(name: str):
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
