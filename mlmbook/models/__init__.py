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
``train``           what a toy model is: its configuration, initial weights, held-out loss
``stacked``         the one trainer: one toy model or many (MLM or MAE-LM) as one computation
``maelm``           MAE-LM: ``[MASK]`` kept out of the encoder (chapter 4)
``cache``           the atomic, locked model cache and :class:`CacheEntry`
``job``             :class:`Job`: a toy model to train (world, configuration, seed, kind)
``load``            :func:`load_mlm`, the one loader: a name, a folder, the truth
``ladder``          toy models from far from the truth to near it (their KL labels:
                    :func:`mlmbook.compare.rung_kl`)
==================  ==============================================================
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
