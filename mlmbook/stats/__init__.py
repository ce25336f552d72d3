r"""Statistics written once for the whole book: divergences, intervals, and the one decision rule.

=====================  ================================================================
module                 what
=====================  ================================================================
``divergences``        :func:`kl`, :func:`jsd`, :func:`tv`, :func:`mutual_information`, :func:`ppl`
``intervals``          :class:`Interval` and its constructors: :func:`bootstrap` (paired,
                       hierarchical over seeds), :func:`ratio`, :func:`t_interval`,
                       :func:`proportion`, :func:`censored_median`, :func:`undefined`
``decide``             the decision rule: :class:`Family` (one per chapter, Bonferroni),
                       :func:`decide` → :class:`Verdict` with its detectable effect
=====================  ================================================================

No chapter or module keeps a threshold or an interval rule of its own: an estimate becomes
an :class:`Interval` here, and an interval becomes a verdict only through :func:`decide`.
"""
from .decide import POWER, SIDES, Family, Verdict, check_record, decide, detectable_effect, side, walk_verdicts
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
)

__all__ = ["kl", "jsd", "tv", "mutual_information", "ppl", "as_array",
           "Interval", "bootstrap", "ratio", "t_interval", "proportion", "censored_median", "undefined",
           "replicates_for", "LEVEL",
           "Family", "Verdict", "decide", "side", "detectable_effect", "check_record", "walk_verdicts", "SIDES",
           "POWER"]

