"""What the research API accepts as a model: a :class:`~mlmbook.models.base.MaskedLM`, or a name or a
path loaded once with :func:`~mlmbook.models.load.load_mlm`."""
from __future__ import annotations

import os
from functools import lru_cache

from ..models.base import MaskedLM
from ..models.load import load_mlm

__all__ = ["as_model", "tokens_of"]


@lru_cache(maxsize=4)
def _loaded(name: str) -> MaskedLM:
    return load_mlm(name)


def as_model(model) -> MaskedLM:
    """``model`` itself when it is a masked LM, else ``load_mlm(model)`` (loaded once per process)."""
    if isinstance(model, (str, os.PathLike)):
        return _loaded(os.fspath(model))
    if not isinstance(model, MaskedLM):
        raise TypeError(f"expected a masked LM, a model name or a path, got {type(model).__name__}; "
                        f"load one with mlmbook.load_mlm(...)")
    return model


def tokens_of(lm: MaskedLM, ids) -> list[str]:
    """The token strings of ids."""
    return [lm.vocab[int(t)] for t in ids]
