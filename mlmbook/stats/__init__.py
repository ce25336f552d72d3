r"""Statistics written once for the whole book: divergences, intervals, and the one decision rule.

=====================  ================================================================
module                 what
=====================  ================================================================
``divergences``        :func:`kl`, :func:`jsd`, :func:`tv`, :func:`mutual_information`, :func:`ppl`
``intervals``          :class:`Interval` and its constructors: :func:`bootstrap` (paired,
                       hierarchical over seeds), :func:`ratio`, :func:`t_interval`,
                       :func:`proportion`, :func:`censored_median`, :func:`undefined`
``paired``             tests that fit the data: exact sign-flip and its inverted interval,
                       studentized bootstrap, t over seed means, :func:`fieller`; :func:`estimate`
                       picks the one that fits (per-unit contributions, :func:`by_unit`); each also
                       inverted at :math:`1 - 2\alpha'`, the interval its TOST reads
``power``              the units a question needs, the effect a sample detects (normal quantiles
                       over units, the noncentral t over seeds)
``study``              the study layer: :class:`Question`, :class:`Study` (≤ 6 primary
                       questions, one family), :class:`Answer`, :func:`describe`
``audit``              every answer re-derived with an independent implementation
``decide``             the reading of an interval: :func:`side`, :func:`within`, :func:`detectable_effect`
=====================  ================================================================

No chapter or module keeps a threshold or an interval rule of its own: a primary question becomes
an answer only through :meth:`Study.answer`; everything else is described (:func:`describe`).
"""
from .audit import audit, rederive, walk_answers
from .decide import POWER, SIDES, detectable_effect, side, walk_records, walk_verdicts, within
from .divergences import as_array, jsd, kl, mutual_information, ppl, tv
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
from .paired import FlipSettings, Tested, bootstrap_t, by_unit, estimate, fieller, seed_t, sign_flip
from .power import detectable, feasible_units, needed_units, unit_sd
from .study import MAX_PRIMARY, VERDICTS, Answer, Question, Study, describe

__all__ = ["kl", "jsd", "tv", "mutual_information", "ppl", "as_array",
           "Interval", "bootstrap", "ratio", "t_interval", "proportion", "censored_median",
           "undefined", "replicates_for", "unsigned_zero", "LEVEL",
           "side", "within", "detectable_effect", "walk_verdicts", "walk_records", "SIDES",
           "POWER", "FlipSettings", "Tested", "bootstrap_t", "by_unit", "estimate", "fieller", "seed_t", "sign_flip",
           "detectable", "feasible_units", "needed_units", "unit_sd", "MAX_PRIMARY", "VERDICTS",
           "Answer", "Question", "Study", "describe", "audit", "rederive", "walk_answers"]

