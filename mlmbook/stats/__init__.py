r"""Statistics written once for the whole book: divergences, intervals, and the one decision rule.

``divergences`` (:func:`kl`, :func:`jsd`, :func:`tv`, :func:`mutual_information`, :func:`ppl`);
``intervals`` (:class:`Interval` and its constructors); ``paired`` (the tests that fit the data,
each with the interval that inverts it); ``power`` (the units a question needs, the effect a sample
detects); ``study`` (:class:`Question`, :class:`Study`, :class:`Answer`, :func:`describe`);
``audit`` (every answer re-derived independently); ``decide`` (:func:`side`,
:func:`detectable_effect`).

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
    t_interval,
    undefined,
    unsigned_zero,
)
from .paired import by_unit, fieller
from .power import needed_units, unit_sd
from .study import MAX_PRIMARY, VERDICTS, Answer, Question, Study, describe

__all__ = ["kl", "jsd", "tv", "mutual_information", "ppl", "Interval", "bootstrap", "ratio",
           "t_interval", "proportion", "censored_median", "undefined", "replicates_for",
           "unsigned_zero", "LEVEL", "side", "detectable_effect", "walk_verdicts", "by_unit",
           "fieller", "needed_units", "unit_sd", "MAX_PRIMARY", "VERDICTS", "Answer", "Question",
           "Study", "describe", "audit", "rederive", "walk_answers"]
