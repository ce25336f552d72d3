"""Masked LMs behind one interface: the :class:`MaskedLM` protocol (``base``), any Hugging Face
model (``hf``), the toy language's exact conditionals (``truth``), MAE-LM (``maelm``, chapter 4),
the toy models' configuration (``train``), their one trainer (``stacked``) and data (``corrupt``),
the model cache (``cache``, ``shipping``), a model to train (``job``), the one loader
(:func:`load_mlm`, ``load``) and the ladder of toy models from far from the truth to near it
(``ladder``).
"""
from ..errors import ModelLoadError
from . import ladder
from .base import MaskedLM, MaskedLMBase
from .cache import CacheEntry, load_or_train
from .hf import HFMaskedLM, check_masked_lm
from .job import Job
from .load import TOY_MODELS, TRUTH_MODELS, load_mlm
from .train import PRESETS, TrainConfig, preset_for
from .truth import TruthOracle

__all__ = ["MaskedLM", "MaskedLMBase", "HFMaskedLM", "TruthOracle", "CacheEntry", "load_or_train",
           "load_mlm", "check_masked_lm", "PRESETS", "TrainConfig", "preset_for", "TOY_MODELS",
           "TRUTH_MODELS", "ModelLoadError", "ladder", "Job"]
