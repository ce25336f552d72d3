"""Masked LMs behind one interface: the protocol, a Hugging Face wrapper, the exact truth, MAE-LM,
training and the cache.

==================  ==============================================================
module              idea
==================  ==============================================================
``base``            :class:`MaskedLM` (a ``typing.Protocol``: ``logits(ids, positions)`` at masked
                    positions) and :class:`MaskedLMBase`, the behaviour the package's models share
``hf``              :class:`HFMaskedLM` (any ``AutoModelForMaskedLM``; ``HFMaskedLM.from_pretrained``),
                    :func:`check_masked_lm`
``truth``           :class:`TruthOracle`: the toy language's exact conditionals
``train``           training the toy BERTs (one loop for MLM and MAE-LM)
``maelm``           MAE-LM: ``[MASK]`` kept out of the encoder (chapter 4)
``cache``           the atomic, locked model cache and :class:`CacheEntry`
``load``            :func:`load_mlm`, the one loader: a name, a folder, the truth
``ladder``          toy models from far from the truth to near it (their KL labels: :func:`mlmbook.compare.rung_kl`)
``prepare``         the toy models a build needs, as training tasks (small ones stacked)
==================  ==============================================================
"""
from ..errors import ModelLoadError
from . import ladder, prepare
from .base import MaskedLM, MaskedLMBase
from .cache import CacheEntry, load_or_train
from .hf import HFMaskedLM, check_masked_lm
from .load import TOY_MODELS, TRUTH_MODELS, load_mlm
from .train import PRESETS, TrainConfig, preset_for
from .truth import TruthOracle

__all__ = ["MaskedLM", "MaskedLMBase", "HFMaskedLM", "TruthOracle", "CacheEntry", "load_or_train",
           "load_mlm", "check_masked_lm", "PRESETS", "TrainConfig", "preset_for", "TOY_MODELS",
           "TRUTH_MODELS", "ModelLoadError", "ladder", "prepare"]
