"""Masked LMs behind one interface (:class:`MaskedLM`): any Hugging Face model, the toy language's
exact conditionals, and the book's toy BERTs and MAE-LMs (trained, cached, loaded by
:func:`load_mlm`, and arranged in a ladder from far from the truth to near it)."""
from . import ladder
from .base import MaskedLM
from .cache import load_or_train
from .hf import HFMaskedLM
from .job import Job
from .load import load_mlm
from .train import PRESETS, TrainConfig, preset_for
from .truth import TruthOracle

__all__ = ["MaskedLM", "HFMaskedLM", "TruthOracle", "load_or_train", "load_mlm", "PRESETS",
           "TrainConfig", "preset_for", "ladder", "Job"]
