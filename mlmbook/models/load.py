"""The one loader: a masked LM by name — the toy models, the exact truth, or any Hugging Face model."""
from __future__ import annotations

import os

from ..toy.grammar import Grammar
from .base import MaskedLM
from .cache import load_or_train
from .hf import HFMaskedLM
from .train import preset_for
from .truth import TruthOracle

__all__ = ["load_mlm", "TOY_MODELS", "TRUTH_MODELS"]

TOY_MODELS = ("toy", "toy_topic")
"""Names of the book's own trained models (trained on first use, then cached)."""
TRUTH_MODELS = ("truth", "truth_topic")
"""Names of the exact oracles of the same languages."""


def load_mlm(model: str | os.PathLike = "toy", profile: str = "full", seed: int = 0, *,
             name: str | None = None, device: str | None = None) -> MaskedLM:
    """Load a masked LM by name.

    Parameters
    ----------
    model : str or path
        ``"toy"`` / ``"toy_topic"``: the default tiny BERT trained on the toy language (trained
        on first use, then cached; ``profile`` picks the training preset); ``"truth"`` /
        ``"truth_topic"``: the exact oracle of the same language; anything else: a Hugging Face
        model name or a local directory written by ``save_pretrained`` (a model cache entry too).
    profile : str
        Training preset of the toy models (:data:`~mlmbook.models.train.PRESETS`).
    seed : int
        Training seed of the toy models.
    name : str, optional
        A reader-facing name for the model (default: the toy model's label, the folder's name
        or the Hub name — never an absolute path).
    device : str, optional
        Where a Hugging Face model runs (default: CUDA when available, else the CPU).

    Returns
    -------
    MaskedLM

    Raises
    ------
    mlmbook.errors.ModelLoadError
        One line with the cause and what to do (see :meth:`HFMaskedLM.from_pretrained`).

    Examples
    --------
    >>> lm = load_mlm("toy", profile="quick")          # doctest: +SKIP
    >>> truth = load_mlm("truth")
    >>> truth.is_exact
    True
    """
    if isinstance(model, str) and model in TRUTH_MODELS:
        return TruthOracle(Grammar.load("toy", topic=model.endswith("_topic")))
    if isinstance(model, str) and model in TOY_MODELS:
        entry = load_or_train(grammar=model, preset=preset_for(model, profile), seed=seed)
        return HFMaskedLM.from_pretrained(entry.path, name=name or entry.label, device=device)
    return HFMaskedLM.from_pretrained(os.fspath(model), name=name, device=device)
