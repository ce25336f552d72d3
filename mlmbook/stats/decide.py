r"""The book's one decision rule: from an interval to a verdict, with its power stated.

A chapter states a verdict — "the MLM's trees are above the truth's", "AG is closer to the
truth than the MLM" — only when it survives what should not matter. The rule:

1. **One family per chapter.** A chapter declares up front how many verdicts it may state,
   ``m``, and a family-wise error rate :math:`\alpha` (5 %). Every interval behind a verdict
   is computed at level :math:`1 - \alpha/m` (Bonferroni): the chance that *any* of the
   chapter's verdicts is wrong in its direction is at most :math:`\alpha`.
2. **A side only when the interval excludes the reference.** With a reference :math:`r`
   (0 for a difference) and a tolerance :math:`\tau` (how far a threshold may move without
   changing the answer, e.g. one decimal of it), the verdict is *above* when
   :math:`\text{low} > r + \tau`, *below* when :math:`\text{high} < r - \tau`.
3. **Agreement only within a stated margin.** If the chapter names the smallest effect it
   cares about, :math:`\delta`, and the whole interval lies inside :math:`(r-\delta, r+\delta)`,
   the verdict is *equivalent* ("the same within δ").
4. **Otherwise indistinguishable — with its power.** The verdict then says the smallest
   effect the sample could have detected: with standard error :math:`s`,

   .. math:: d_{\min} = \big(z_{1-\alpha'/2} + z_{\text{power}}\big)\, s,
             \qquad \alpha' = \alpha/m,\ \text{power} = 0.8,

   the difference a test at the family's level would find four times out of five.
5. **No value, no verdict.** An undefined interval (0/0) gives *undefined*.

Seeds and thread counts: intervals over several training seeds are hierarchical
(:func:`mlmbook.stats.bootstrap` with ``groups``), so a verdict carries the spread between
seeds; training runs on one thread, so the thread count changes no trained weight.

>>> fam = Family("chapter 1", size=20)
>>> v = decide(bootstrap(lambda x: x.mean(-1), diffs, level=fam.level), family=fam)    # doctest: +SKIP
>>> v.side, v.detectable, v.text(unit="nats")                                           # doctest: +SKIP
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from scipy.stats import norm

from .intervals import Interval
from .power import POWER

__all__ = ["Family", "Verdict", "decide", "side", "detectable_effect", "check_record", "SIDES", "POWER",
           "walk_verdicts"]

SIDES = ("above", "below", "equivalent", "indistinguishable", "undefined")

_WORDS = {"above": "above", "below": "below", "equivalent": "the same within the margin",
          "indistinguishable": "statistically indistinguishable", "undefined": "undefined"}


@dataclass(frozen=True)
class Family:
    r"""A chapter's verdict family: at most ``size`` verdicts at family-wise error rate ``alpha``.

    Attributes
    ----------
    name : str           e.g. ``"chapter 1"``
    size : int           the most verdicts the chapter may state (all of them count, even
                         those that come out indistinguishable)
    alpha : float        family-wise error rate (default 0.05)
    """

    name: str
    size: int
    alpha: float = 0.05

    def __post_init__(self):
        if self.size < 1 or not 0 < self.alpha < 1:
            raise ValueError("a family needs size >= 1 and 0 < alpha < 1")

    @property
    def level(self) -> float:
        """The level of every interval behind a verdict of this family, :math:`1 - \\alpha/m`."""
        return 1 - self.alpha / self.size

    def statement(self) -> str:
        """The sentence a chapter prints once, where it states its rule."""
        return (f"Each verdict in this chapter is read off an interval at the {_pct(self.level)} level: "
                f"{_pct(self.alpha)} family-wise error shared by the chapter's at most {self.size} "
                f"verdict{'s' if self.size != 1 else ''} "
                f"(Bonferroni). A difference is called real only when the whole interval lies on one side of "
                f"zero; otherwise it is called indistinguishable, together with the smallest difference the "
                f"sample would have detected ({_pct(POWER)} power at that level).")

    def to_record(self) -> dict:
        return {"kind": "family", "name": self.name, "size": self.size, "alpha": self.alpha, "level": self.level}


def side(low: float, high: float, reference: float = 0.0, tolerance: float = 0.0,
         margin: float | None = None) -> str:
    """The rule itself (see the module docstring): one of :data:`SIDES`."""
    if any(isinstance(x, float) and math.isnan(x) for x in (low, high)):
        return "undefined"
    if low > reference + tolerance:
        return "above"
    if high < reference - tolerance:
        return "below"
    if margin is not None and reference - margin < low and high < reference + margin:
        return "equivalent"
    return "indistinguishable"


def detectable_effect(interval: Interval, power: float = POWER) -> float:
    r"""The smallest true difference that a test at the interval's level detects with ``power``:
    :math:`(z_{1-\alpha'/2} + z_{\text{power}})\, s`. Without a standard error, the interval's
    half-width is read as :math:`z_{1-\alpha'/2}\,s`. ``inf`` when the interval is unbounded."""
    z = float(norm.ppf(0.5 + interval.level / 2))
    se = interval.se
    if not math.isfinite(se) or se <= 0:
        half = (interval.high - interval.low) / 2
        se = half / z if math.isfinite(half) else float("inf")
    return float((z + float(norm.ppf(power))) * se)


@dataclass(frozen=True)
class Verdict:
    """An interval read by the rule: the side, the reference, the detectable effect, the family.

    ``words`` maps a side to the phrase the prose uses (e.g. ``{"above": "ahead of"}``);
    :meth:`text` adds the detectable effect to an indistinguishable verdict.
    """

    interval: Interval
    side: str
    reference: float = 0.0
    tolerance: float = 0.0
    margin: float | None = None
    detectable: float = float("nan")
    family: str = ""
    family_size: int = 0
    alpha: float = 0.05
    words: dict = field(default_factory=dict)

    @property
    def phrase(self) -> str:
        return self.words.get(self.side, _WORDS[self.side])

    @property
    def stated(self) -> bool:
        """Whether the verdict claims a direction or an agreement."""
        return self.side in ("above", "below", "equivalent")

    def power_text(self, unit: str = "", digits: int = 3) -> str:
        """``"a difference of 0.012 nats or more would have been detected, with 80 % power at the 99.8 % level"``."""
        if not math.isfinite(self.detectable):
            return "the sample bounds no difference on one side, so none can be ruled out"
        u = f" {unit}" if unit else ""
        return (f"a difference of {self.detectable:.{digits}g}{u} or more would have been detected, "
                f"with {_pct(POWER)} power at the {_pct(self.interval.level)} level")

    def text(self, unit: str = "", digits: int = 3) -> str:
        """The phrase, and for an indistinguishable verdict the detectable effect in brackets."""
        if self.side == "indistinguishable":
            return f"{self.phrase} ({self.power_text(unit, digits)})"
        if self.side == "undefined" and self.interval.note:
            return f"{self.phrase} ({self.interval.note})"
        return self.phrase

    def to_record(self) -> dict:
        iv = self.interval.to_record()
        iv.pop("kind")
        return {"kind": "verdict", "side": self.side, "phrase": self.phrase, "reference": self.reference,
                "tolerance": self.tolerance, "margin": self.margin, "detectable": _plain(self.detectable),
                "family": self.family, "family_size": self.family_size, "alpha": self.alpha, **iv}


def decide(interval: Interval, family: Family | None = None, reference: float = 0.0, tolerance: float = 0.0,
           margin: float | None = None, words: dict | None = None) -> Verdict:
    """Read ``interval`` by the book's rule.

    Parameters
    ----------
    interval : Interval
        Computed at ``family.level`` (checked).
    family : Family, optional
        The chapter's verdict family; without one the interval's own level stands alone
        (figures, exercises — not the chapter's stated verdicts).
    reference : float
        The value the verdict is about (0 for a difference; a threshold).
    tolerance : float
        How far ``reference`` may move without changing the answer (one decimal of a threshold).
    margin : float, optional
        The smallest effect the chapter cares about: inside ±margin the verdict is *equivalent*.
    words : dict, optional
        Phrases per side for :attr:`Verdict.phrase`.
    """
    if family is not None and not math.isclose(interval.level, family.level, rel_tol=0, abs_tol=1e-12):
        raise ValueError(f"the interval is at level {interval.level:.6g} but {family.name}'s verdicts use "
                         f"{family.level:.6g}: compute it with level=family.level")
    s = side(interval.low, interval.high, reference, tolerance, margin) if interval.defined else "undefined"
    return Verdict(interval, s, reference, tolerance, margin, detectable_effect(interval),
                   family.name if family else "", family.size if family else 0,
                   family.alpha if family else 1 - interval.level, dict(words or {}))


def check_record(rec: dict) -> list[str]:
    """Problems of one recorded verdict (a dict from :meth:`Verdict.to_record`): a side the rule
    would not give for its interval, a level that is not its family's, a detectable effect that
    does not follow from its standard error. Empty when it is sound."""
    problems = []
    low, high = (_float(rec[k]) for k in ("low", "high"))
    defined = not (isinstance(rec.get("estimate"), str) and rec["estimate"] == "nan" and not rec.get("lower_bound"))
    want = side(low, high, rec["reference"], rec.get("tolerance", 0.0), rec.get("margin")) if defined else "undefined"
    if rec["side"] != want:
        problems.append(f"side {rec['side']!r} but the rule gives {want!r} for [{low}, {high}]")
    if rec.get("family_size"):
        level = 1 - rec["alpha"] / rec["family_size"]
        if not math.isclose(_float(rec["level"]), level, abs_tol=1e-9):
            problems.append(f"level {rec['level']} but family {rec['family']!r} uses {level}")
    iv = Interval(**{k: _float(rec[k]) if k in ("estimate", "low", "high", "level", "se") else rec[k]
                     for k in ("estimate", "low", "high", "level", "method", "n", "se", "seeds", "lower_bound",
                               "note")})
    d = detectable_effect(iv)
    recorded = _float(rec["detectable"])
    if not (math.isclose(d, recorded, rel_tol=1e-6) or (math.isinf(d) and math.isinf(recorded))):
        problems.append(f"detectable effect {rec['detectable']} but its standard error gives {d}")
    return problems


def walk_verdicts(results: dict, path: str = ""):
    """Yield ``(key, record)`` for every recorded verdict in a results dict, nested ones included."""
    if isinstance(results, dict):
        if results.get("kind") == "verdict":
            yield path, results
            return
        for k, v in results.items():
            yield from walk_verdicts(v, f"{path}.{k}" if path else str(k))
    elif isinstance(results, list):
        for i, v in enumerate(results):
            yield from walk_verdicts(v, f"{path}[{i}]")


def _float(v) -> float:
    return float(v) if isinstance(v, str) else float(v) if v is not None else float("nan")


def _plain(x: float):
    return x if math.isfinite(x) else ("inf" if x > 0 else "nan" if math.isnan(x) else "-inf")


def _pct(level: float) -> str:
    """99.75 % -> "99.75 %", 95 % -> "95 %"."""
    p = 100 * level
    for digits in range(0, 4):
        if abs(round(p, digits) - p) < 1e-9:
            return f"{p:.{digits}f} %"
    return f"{p:.3f} %"
