"""Load a masked LM by name: the toy models, the exact truth, or any Hugging Face model."""
from __future__ import annotations

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


def load_mlm(name: str = "toy", profile: str = "full", seed: int = 0, **kw) -> MaskedLM:
    """Load a masked LM by name.

    Parameters
    ----------
    name : str
        ``"toy"`` / ``"toy_topic"``: the default tiny BERT trained on the toy language (trained
        on first use, then cached; ``profile`` picks the training preset); ``"truth"`` /
        ``"truth_topic"``: the exact oracle of the same language; anything else: a Hugging Face
        model name or a local directory written by ``save_pretrained``.
    profile : str
        Training preset of the toy models (:data:`~mlmbook.models.train.PRESETS`).
    seed : int
        Training seed of the toy models.

    Returns
    -------
    MaskedLM
    """
    if name in TRUTH_MODELS:
        return TruthOracle(Grammar.load("toy", topic=name.endswith("_topic")))
    if name in TOY_MODELS:
        entry = load_or_train(grammar=name, preset=preset_for(name, profile), seed=seed, **kw)
        return HFMaskedLM(entry.path, name=entry.label)
    return HFMaskedLM(name, **kw)
