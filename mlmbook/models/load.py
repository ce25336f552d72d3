"""The one loader: a masked LM by name — the toy models, a chapter's trained models, a rung of the
ladder, the exact truth, or any Hugging Face model."""
from __future__ import annotations

import os

from ..toy.grammar import Grammar
from . import ladder, maelm
from .base import MaskedLM
from .cache import load_or_train
from .hf import HFMaskedLM
from .job import Job
from .train import preset_for
from .truth import TruthOracle

__all__ = ["load_mlm", "TOY_MODELS", "TRUTH_MODELS"]

TOY_MODELS = ("toy", "toy_topic")
"""Names of the book's own trained models (trained on first use, then cached)."""
TRUTH_MODELS = ("truth", "truth_topic")
"""Names of the exact oracles of the same languages."""


def load_mlm(model: str | os.PathLike | ladder.Rung | Job = "toy", profile: str = "full", seed: int = 0, *,
             name: str | None = None, device: str | None = None) -> MaskedLM:
    """Load a masked LM: by name, a trained job, a rung of the ladder, or a folder.

    Parameters
    ----------
    model : str, path, Rung or Job
        One of :data:`TOY_MODELS` or :data:`TRUTH_MODELS`; a :class:`~mlmbook.models.ladder.Rung`
        or a :class:`~mlmbook.models.job.Job` (an MAE-LM too); else a Hugging Face model name or a
        directory written by ``save_pretrained``.
    profile : str
        Training preset of the default toy models (:data:`~mlmbook.models.train.PRESETS`).
    seed : int
        Training seed of the default toy models.
    name : str, optional
        A reader-facing name (default: the toy model's label, the folder's or the Hub name).
    device : str, optional
        Where a Hugging Face model runs (default: CUDA when available, else the CPU).

    Returns
    -------
    MaskedLM

    Raises
    ------
    mlmbook.errors.ModelLoadError
        One line with the cause and what to do (see :meth:`HFMaskedLM.from_pretrained`).
    """
    if isinstance(model, (ladder.Rung, Job)):     # a trained toy model (an MAE-LM runs on the CPU)
        rung = isinstance(model, ladder.Rung)
        path = ladder.snapshot_path(model) if rung else model.entry().path
        name = name or (model.label if rung else model.name or model.describe())
        if model.kind == "maelm":
            return maelm.load(path, name=name)
        return HFMaskedLM.from_pretrained(path, name=name, device=device)
    if isinstance(model, str) and model in TRUTH_MODELS:
        return TruthOracle(Grammar.load("toy", topic=model.endswith("_topic")))
    if isinstance(model, str) and model in TOY_MODELS:
        entry = load_or_train(grammar=model, preset=preset_for(model, profile), seed=seed)
        return HFMaskedLM.from_pretrained(entry.path, name=name or entry.label, device=device)
    return HFMaskedLM.from_pretrained(os.fspath(model), name=name, device=device)
