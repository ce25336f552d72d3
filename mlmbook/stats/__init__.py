"""Statistics written once for the whole book: divergences, intervals, and the one decision rule.

No chapter or module keeps a threshold or an interval rule of its own: a primary question becomes
an answer only through :meth:`Study.answer`; everything else is described (:func:`describe`).
"""
from .audit import audit, rederive, walk_answers
from .decide import detectable_effect, side, walk_verdicts
from .divergences import jsd, kl, mutual_information, ppl, tv
from .intervals import (
    LEVEL,
    Interval,
    bootstrap,
    censored_median,
    proportion,
    ratio,
    replicates_for,
    undefined,
    unsigned_zero,
)
from .paired import by_unit, fieller
from .power import needed_units, unit_sd
from .study import MAX_PRIMARY, VERDICTS, Answer, Question, Study, describe

__all__ = ["kl", "jsd", "tv", "mutual_information", "ppl", "Interval", "bootstrap", "ratio",
           "proportion", "censored_median", "undefined", "replicates_for",
           "unsigned_zero", "LEVEL", "side", "detectable_effect", "walk_verdicts", "by_unit",
           "fieller", "needed_units", "unit_sd", "MAX_PRIMARY", "VERDICTS", "Answer", "Question",
           "Study", "describe", "audit", "rederive", "walk_answers"]
