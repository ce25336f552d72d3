r"""The study layer: a chapter's primary questions, declared once, answered by one rule.

A chapter declares at most :data:`MAX_PRIMARY` **primary questions** before any result
(:class:`Question`): the claim, the **effect of interest** :math:`\delta`, the independent unit
and, from a planning SD, the sample its power calculation asks for. Every interval behind an answer
is at level :math:`1 - \alpha/m` (Bonferroni over the :math:`m \le 6` questions); everything else
is *descriptive* (:func:`describe`: a 95 % interval, no verdict).

How a question is answered (:meth:`Study.answer`), with :math:`\alpha' = \alpha/m`:

1. rows are summed into their independent units; the test that fits them
   (:mod:`mlmbook.stats.paired`) gives an interval at :math:`1 - \alpha'` and the same test
   inverted at :math:`1 - 2\alpha'` (its TOST interval);
2. a **second method** tests the same units: a t where the primary is a sign-flip, a sign-flip *and*
   a t on the contributions :math:`d_k - r g_k` where it is a bootstrap (both must agree), each
   trained model's own test where it is a t over seeds;
3. **feasibility guard**: a direction needs *both* methods able to reach :math:`p \le \alpha'` at
   all. A sign-flip over :math:`k` units that differ cannot go below :math:`2/2^k` (7 units:
   0.0156 > :math:`0.05/6`), however large the effect; when either method cannot, the answer has no
   direction and its verdict is "cannot decide", with the units it would need;
4. the side: *above*/*below* when the :math:`1 - \alpha'` interval excludes the reference, the test
   itself rejects it (its :math:`p`, plus twice its Monte Carlo error, at most :math:`\alpha'`), the
   guard holds **and** the second method agrees; otherwise *equivalent* when the TOST at
   :math:`\alpha'` rejects :math:`|\theta - r| \ge \delta` — its :math:`1 - 2\alpha'` interval lies
   inside :math:`r \pm \delta`; otherwise *indistinguishable*;
5. power (:mod:`mlmbook.stats.power`: normal quantiles over units, the **noncentral t** over
   seeds): the question is *decidable* at this sample when the guard holds and the effect detectable
   with 80 % power is at most :math:`\delta`; an indistinguishable answer is then "inconclusive",
   else "cannot decide".

"Needs N": the **planned N** (:meth:`Question.needed`, from the planning SD) and the **N at
observed SD** (:attr:`Answer.needed`): at least the units that hold :func:`~.power.feasible_units`
differing ones at the observed share where a sign-flip is one of the two methods.

The record (:meth:`Answer.to_record`) keeps the per-row values, so :mod:`mlmbook.stats.audit`
re-derives every answer.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import t as student_t

from ..tables import Table, table
from . import paired
from .decide import side as side_of
from .decide import within
from .intervals import LEVEL, Interval
from .intervals import finite_or_text as _plain
from .power import POWER, detectable, feasible_units, needed_units, unit_sd

__all__ = ["Question", "Study", "Answer", "describe", "MAX_PRIMARY", "VERDICTS"]

MAX_PRIMARY = 6
"""The most primary questions a chapter may declare."""

VERDICTS = ("above", "below", "equivalent", "inconclusive", "cannot decide", "undefined")
"""The verdict labels an answer can carry (``above``/``below`` may be renamed per question)."""


@dataclass(frozen=True)
class Question:
    """One primary question of a chapter, declared before its data are seen.

    Attributes
    ----------
    key : str
        Short name; results are recorded as ``q_<key>``.
    claim : str
        The claim tested, as a table label ("MLM trees above the adjacent chain").
    effect : float
        The effect of interest :math:`\\delta` (> 0), in the measure's scale.
    basis : str
        Where :math:`\\delta` comes from, as a label ("5 UUAS points, the paper's gaps").
    unit : str
        The independent unit: ``"sentence"``, ``"sentence cluster"``, ``"seed"``, ...
    measure : str
        The scale of the estimate ("UUAS", "nats", "accuracy").
    reference : float
        The value tested against (0 for a difference).
    planning_sd : float, optional
        Per-unit standard deviation that sizes the sample before looking (from the pilot,
        :mod:`mlmbook.plans`).
    words : dict
        Labels for the sides, e.g. ``{"above": "MLM ahead", "below": "chain ahead"}``.
    sample : str
        Where the chapter sets this question's number of units, for the ``extended`` profile:
        ``"SIZES.<key>"`` (the chapter's ``SIZES``), ``"zoo.<NAME>"`` (a seeds table of
        :mod:`mlmbook.pipeline.zoo`) or ``"plan.<attribute>"`` (:func:`mlmbook.glauber.plan.plan`).
    """

    key: str
    claim: str
    effect: float
    basis: str
    unit: str = "sentence"
    measure: str = ""
    reference: float = 0.0
    planning_sd: float | None = None
    words: dict = field(default_factory=dict)
    sample: str = ""

    def __post_init__(self):
        if not (self.effect > 0 and math.isfinite(self.effect)):
            raise ValueError(f"question {self.key!r}: the effect of interest must be a positive number")
        if not self.key.replace("_", "").isalnum():
            raise ValueError(f"question key {self.key!r}: letters, digits and '_' only")

    def test_label(self) -> str:
        """The test, as a table label."""
        if self.unit == "seed":
            return "t over seed means; each model's own test"
        return "sign-flip (< 30 units) or studentized bootstrap; second: a t, or a sign-flip and a t"

    def needed(self, level: float) -> int | None:
        """The **planned N**: units the planning standard deviation asks for (None without one)."""
        if self.planning_sd is None:
            return None
        return needed_units(self.planning_sd, self.effect, level, unit=self.unit)


@dataclass(frozen=True)
class Answer:
    r"""A question answered: the primary test (``tested``, with its TOST interval ``tested.tost``),
    the ``second`` method (``test``, ``p``, ``side``, ``min_p``: the smallest p it can reach), the
    guard (``feasible``: both can reach :math:`p \le \alpha/m`), the effect ``detectable`` with 80 %
    power at ``level`` (``inf`` when not feasible), the **N at observed SD** (``needed``), the
    **planned N** (``needed_planned``) and the per-row data."""

    question: Question
    tested: paired.Tested
    second: dict
    side: str
    feasible: bool
    detectable: float
    needed: int
    needed_planned: int | None
    level: float
    family: str
    family_size: int
    alpha: float
    values: list
    weights: list | None
    units: list | None
    seeds: list | None
    note: str = ""

    @property
    def interval(self) -> Interval:
        return self.tested.interval

    @property
    def n(self) -> int:
        return self.tested.interval.n

    @property
    def decidable(self) -> bool:
        """The sample could have detected the effect of interest (80 % power at ``level``)."""
        return self.feasible and self.detectable <= self.question.effect

    @property
    def verdict(self) -> str:
        """The side's word, ``"inconclusive"``, ``"cannot decide"`` or ``"undefined"``."""
        if self.side == "undefined":
            return "undefined"
        if self.side in ("above", "below", "equivalent"):
            return self.question.words.get(self.side, self.side)
        return "inconclusive" if self.decidable else "cannot decide"

    def glue_fields(self, digits: int = 3, unit: str = "", percent: bool = False) -> dict:
        """Flat values for the prose: the interval's parts (:meth:`Interval.glue_fields`) and
        ``verdict``, ``side``, ``needed`` (N at observed SD), ``planned`` (planned N), ``tost_low``,
        ``tost_high`` (at ``tost_level_pct``), ..."""
        tost = self.tested.tost
        out = {"verdict": self.verdict, "side": self.side, "detectable": self.detectable,
               "effect": self.question.effect, "needed": self.needed, "planned": self.needed_planned,
               "p": self.tested.p, "level_pct": 100 * self.level, **({} if tost is None else {
                   "tost_low": tost.low, "tost_high": tost.high, "tost_level_pct": 100 * tost.level})}
        out = {k: v for k, v in out.items()
               if isinstance(v, str) or (isinstance(v, (int, float)) and math.isfinite(v))}
        return out | self.interval.glue_fields(digits, unit, percent)

    def row(self, digits: int = 3) -> list:
        """The answers table's row (see :meth:`Study.table`): question, estimate [interval],
        verdict, detectable / effect, n, planned N, N at observed SD."""
        q = self.question
        det = "∞" if not math.isfinite(self.detectable) else f"{self.detectable:.{digits}f}"
        return [q.claim, self.interval.format(digits), self.verdict, f"{det} / {q.effect:.3g}",
                self.n, self.needed_planned, self.needed]

    def to_record(self) -> dict:
        iv = self.interval.to_record()
        iv.pop("kind")
        tost = {k: v for k, v in self.tested.to_record().items() if k.startswith("tost_")}
        q = self.question
        return {"kind": "answer", "key": q.key, "claim": q.claim, "effect": q.effect,
                "basis": q.basis, "unit": q.unit, "measure": q.measure, "reference": q.reference,
                "planning_sd": q.planning_sd, "sample": q.sample,
                "side": self.side, "verdict": self.verdict, "decidable": self.decidable,
                "feasible": self.feasible, "detectable": _plain(self.detectable), "needed": self.needed,
                "needed_planned": self.needed_planned, "test": self.tested.test, "p": _plain(self.tested.p),
                "min_p": self.tested.min_p, "p_error": self.tested.p_error, "second": self.second,
                "family": self.family, "family_size": self.family_size, "alpha": self.alpha,
                "values": self.values, "weights": self.weights, "units": self.units, "seeds": self.seeds,
                "seed_se": None, "note": self.note, **{f"interval_{k}": v for k, v in iv.items()}, **tost}


class Study:
    """A chapter's primary questions: at most :data:`MAX_PRIMARY`, one Bonferroni family (its use:
    docs/INTERFACES.md)."""

    def __init__(self, name: str, questions: list[Question], alpha: float = 0.05):
        if not 1 <= len(questions) <= MAX_PRIMARY:
            raise ValueError(f"{name}: a chapter declares 1 to {MAX_PRIMARY} primary questions, "
                             f"not {len(questions)}; show the others descriptively")
        keys = [q.key for q in questions]
        if len(set(keys)) != len(keys):
            raise ValueError(f"{name}: question keys must be distinct")
        if not 0 < alpha < 1:
            raise ValueError("alpha must lie in (0, 1)")
        self.name, self.questions, self.alpha = name, {q.key: q for q in questions}, alpha
        self.answers: dict[str, Answer] = {}

    @property
    def size(self) -> int:
        return len(self.questions)

    @property
    def level(self) -> float:
        """The level of every interval behind an answer: :math:`1 - \\alpha/m`."""
        return 1 - self.alpha / self.size

    def needed(self, key: str) -> int | None:
        """Units the question's planning SD asks for at the family's level (None without one)."""
        return self.questions[key].needed(self.level)

    def answer(self, key: str, values, weights=None, *, units=None, seeds=None,
               seed: int = 0) -> Answer:
        """Answer question ``key`` from per-row contributions (:func:`~.paired.by_unit`).

        Parameters
        ----------
        values, weights : array_like (N,)
            Per-row numerator and denominator contributions (``weights`` default 1: a mean).
        units : array_like (N,), optional
            The independent unit of each row (the sentence a pair was drawn from).
        seeds : array_like (N,), optional
            The training seed of each row: with two or more, the unit is the seed (a t over seed
            means), and each seed's own rows give the second method.
        seed : int
            The seed of the resampling (sign patterns, bootstrap replicates).
        """
        q = self.questions[key]
        draws = paired.Draws(seed, q.unit if q.unit.endswith("s") else q.unit + "s")
        if key in self.answers:
            raise ValueError(f"{self.name}: question {key!r} is answered twice")
        level, alpha_m = self.level, self.alpha / self.size
        v = np.asarray(values, float).ravel()
        w = None if weights is None else np.asarray(weights, float).ravel()
        s = None if seeds is None else list(np.asarray(seeds).tolist())
        many_seeds = s is not None and len(set(s)) >= 2
        one_model = q.unit == "seed" and s is not None and not many_seeds
        note = "conditional on one trained model; " if one_model else ""
        if many_seeds:
            tested = paired.seed_t(v, w, seeds=s, level=level, reference=q.reference)
        else:
            tested = paired.estimate(v, w, units=units, level=level, reference=q.reference,
                                     draws=draws)
        iv = tested.interval
        second = _second(tested, v, w, units, s if many_seeds else None, level, q.reference, draws)
        feasible = iv.defined and tested.min_p <= alpha_m and second["min_p"] <= alpha_m
        over_seeds = tested.test == "seed t"
        det = detectable(iv.se, level, POWER, iv.n - 1 if over_seeds else None) if feasible else float("inf")
        need = needed_units(unit_sd(iv.se, iv.n), q.effect, level, unit="seed" if over_seeds else q.unit)
        if not over_seeds and iv.defined:                  # a sign-flip is one of the two methods
            d, g = paired.by_unit(v, w, units)
            differ = paired._nonzero(d - q.reference * g)
            if differ:
                need = max(need, math.ceil(feasible_units(level) * len(d) / differ))
        side, why = _decide(tested, second, feasible, q, alpha_m)
        a = Answer(q, tested, second, side, bool(feasible), float(det), int(need), q.needed(level), level,
                   self.name, self.size, self.alpha, v.tolist(), None if w is None else w.tolist(),
                   None if units is None else list(np.asarray(units).tolist()), s, note + why)
        self.answers[key] = a
        return a

    def declaration(self):
        """A table of the declared questions before any result: claim, effect, unit, test, needs."""
        rows = []
        for i, q in enumerate(self.questions.values(), 1):
            need = q.needed(self.level)
            rows.append([f"Q{i}", q.claim, f"{q.effect:.3g} {q.measure}".strip() + f" ({q.basis})",
                         q.unit, q.test_label(), "—" if need is None else f"{need} {q.unit}s"])
        return table(rows, header=["", "claim", "effect of interest", "unit", "test", "planned N"])

    def table(self, digits: int = 3, beside: dict | None = None):
        """The answers: estimate [interval], verdict, detectable effect (80 % power) / effect of
        interest, n, the planned N (planning SD) and the N at the observed SD; with ``beside`` (a
        committed reference, :func:`mlmbook.plans.reference_for`), a second table puts each answer
        beside the reference's."""
        if beside:
            rows = []                            # this run's answers beside the reference's
            for i, key in enumerate(self.questions, 1):
                a, ref = self.answers.get(key), beside["answers"].get(key)
                ours = ([a.interval.format(digits), a.verdict, a.n] if a
                        else ["—", "not asked", None])
                if ref:
                    iv = Interval.from_answer(ref)
                    refs = [iv.format(digits), ref["verdict"], iv.n]
                else:
                    refs = ["—", "not in the reference", None]
                rows.append([f"Q{i}", *ours, *refs])
            theirs = table(rows, caption=f"This run beside {beside['label']}",
                           header=["", "this run", "verdict", "n", beside["label"], "verdict", "n"])
            mine = self.table(digits)
            return Table(mine._repr_html_() + theirs._repr_html_(), f"{mine!r}\n\n{theirs!r}")
        rows = []
        for i, (key, q) in enumerate(self.questions.items(), 1):
            a = self.answers.get(key)
            rows.append([f"Q{i}", *(a.row(digits) if a else [q.claim, "—", "not asked of this model",
                                                               f"— / {q.effect:.3g}", None,
                                                               q.needed(self.level), None])])
        pct = f"{100 * self.level:.4g} %"
        return table(rows, header=["", "question", f"estimate [{pct} interval]", "verdict",
                                   "detectable (80 % power) / effect of interest", "n", "planned N",
                                   "N at observed SD"])

    def to_record(self) -> dict:
        return {"kind": "study", "name": self.name, "size": self.size, "alpha": self.alpha,
                "level": self.level, "questions": [q.key for q in self.questions.values()]}


def describe(values, weights=None, *, units=None, level: float = LEVEL, seed: int = 0,
             what: str = "sentences") -> Interval:
    """A descriptive estimate with its interval (default 95 %) by the test that fits the data
    (:func:`mlmbook.stats.paired.estimate`); no verdict. ``seed``: of the resampling; ``what``:
    what a unit is, for the method's label."""
    draws = paired.Draws(seed, what, tost=False)
    return paired.estimate(values, weights, units=units, level=level, draws=draws).interval


def _decide(tested: paired.Tested, second: dict, feasible: bool, q: Question, alpha: float) -> tuple[str, str]:
    """The side (steps 3-4 of the module docstring) and, when a direction is withheld, why."""
    iv = tested.interval
    if not iv.defined:
        return "undefined", ""
    why = ""
    if not feasible:
        test, p = ((tested.test, tested.min_p) if tested.min_p > alpha
                   else (f"the second method ({second['test']})", second["min_p"]))
        why = f"{test} cannot reach p ≤ {alpha:.2g} (smallest p {p:.3g})"
    direction = side_of(iv.low, iv.high, q.reference)
    if direction in ("above", "below") and feasible:
        if tested.p is not None and tested.p + 2 * tested.p_error > alpha:
            # a discrete test's p jumps where units tie: an end found by bisection can stop a hair
            # short of the reference that the test itself does not reject
            why = f"{tested.test} gives p {tested.p:.3g} > {alpha:.2g} at the reference"
        elif second.get("side") == direction:
            return direction, ""
        else:
            why = f"the second method ({second.get('test')}) does not confirm the direction"
    tost = tested.tost
    if tost is not None and within(tost.low, tost.high, q.reference, q.effect):
        return "equivalent", why
    return "indistinguishable", why


def _second(tested: paired.Tested, v, w, units, seeds, level, reference,
            draws: paired.Draws) -> dict:
    """The second method's p-value, side and the smallest p it can reach (the module docstring)."""
    alpha = 1 - level
    iv = tested.interval
    if not iv.defined:
        return {"test": "none", "side": "undefined", "p": None, "min_p": 1.0}
    if tested.test == "sign-flip":                        # a t on the same units
        d, g = paired.by_unit(v, w, units)
        n = len(d)
        if n < 2:
            return {"test": "t", "side": "undefined", "p": None, "min_p": 1.0}
        theta = d.sum() / g.sum()
        se = paired._linearised_se(d, g, theta)
        if not se > 0:
            p = 0.0 if theta != reference else 1.0
        else:
            p = float(2 * student_t.sf(abs(theta - reference) / se, n - 1))
        return {"test": "t", "p": p, "side": _dir(theta - reference, p, alpha), "min_p": 0.0}
    if tested.test == "bootstrap-t":                     # a sign-flip and a t on the same units
        d, g = paired.by_unit(v, w, units)
        p, err, least = paired.sign_flip_p(d, g, reference=reference, seed=draws.seed)
        diff, t_p = d.sum() / g.sum() - reference, _t_at_reference(d - reference * g)
        sides = {_dir(diff, p + 2 * err, alpha), _dir(diff, t_p, alpha)}
        return {"test": "sign-flip and t", "p": p, "p_error": err, "t_p": t_p, "min_p": least,
                "side": sides.pop() if len(sides) == 1 else "indistinguishable"}
    # a t over seeds: each trained model's own test must agree (intersection-union)
    s = np.asarray(seeds)
    least, ests, ps = 0.0, [], []
    for k in paired._ordered(s):
        rows = s == k
        if rows.sum() < 2:
            return {"test": "each model", "side": "none", "p": None, "min_p": 1.0,
                    "why": "one row per seed"}
        t = paired.estimate(v[rows], None if w is None else w[rows],
                            units=None if units is None else np.asarray(units)[rows],
                            level=level, reference=reference, draws=draws)
        ests.append(t.interval.estimate)
        ps.append(t.p + 2 * t.p_error)
        least = max(least, t.min_p)  # every model's own test must be able to reach
    sides = {_dir(e - reference, p, alpha) for e, p in zip(ests, ps)}
    side = sides.pop() if len(sides) == 1 else "indistinguishable"
    return {"test": "each model", "p": max(ps), "per_seed": ests, "per_seed_p": ps, "side": side, "min_p": least}


def _t_at_reference(e: np.ndarray) -> float:
    """Two-sided p of a one-sample t that :math:`e_k = d_k - r g_k` have mean 0."""
    if len(e) < 2:
        return 1.0
    sd = e.std(ddof=1)
    if not sd > 0:
        return 0.0 if e[0] != 0 else 1.0
    return float(2 * student_t.sf(abs(e.mean()) / (sd / math.sqrt(len(e))), len(e) - 1))


def _dir(diff: float, p: float, alpha: float) -> str:
    if p is None or not p <= alpha:
        return "indistinguishable"
    return "above" if diff > 0 else "below" if diff < 0 else "indistinguishable"

