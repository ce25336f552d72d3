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
           "POWER", "ratio_bootstrap", "side_of_zero"]


# ---- transition names: the chapters move to ratio()/decide(); these go when nothing uses them
def ratio_bootstrap(correct, total, minus=None, n_boot: int = 2000, level: float = LEVEL, seed=0) -> Interval:
    """Old name of :func:`ratio` (kept while the chapters move to the new API)."""
    return ratio(correct, total, minus=minus, level=level, n_boot=n_boot, seed=seed)


def side_of_zero(low: float, high: float, above: str = "above", below: str = "below",
                 neither: str = "indistinguishable") -> str:
    """Old spelling of :func:`side` with custom words (kept while the chapters move to :func:`decide`)."""
    s = side(low, high)
    return above if s == "above" else below if s == "below" else neither
