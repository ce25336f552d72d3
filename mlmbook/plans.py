r"""Plans before data: each chapter's committed plan, written from a pilot and checked against the
references.

A chapter's primary questions (:class:`mlmbook.stats.Question`) are sized by a **planning standard
deviation** from data the references never see: the ``pilot`` profile runs the chapters on seeds
and samples of their own, and :func:`from_pilot` turns its answers into the chapter's plan,
``results/plans/<chapter>.json``, committed beside the pilot's results in ``results/pilot/``. A
plan holds ``chapter``; ``family``, ``alpha``, ``family_size`` and ``level`` (1 − α/m); ``source``
(the pilot's profile, seeds, models, date and results SHA-256, so that every SD re-derives);
``questions``, each with its declaration's fields, ``planning_sd``, ``pilot_units`` and
``planned_n`` (:func:`mlmbook.stats.needed_units` at 80 % power; None, with a ``note``, when the
pilot's units did not vary); and ``superseded``, plans replaced once a result was seen (unhashed).

**The planning SD** is the standard deviation of a question's per-unit contributions in the pilot
(:func:`mlmbook.stats.by_unit`; for a training recipe, of the seed means): for a ratio of sums
:math:`\hat R = \sum_k d_k / \sum_k g_k` a unit contributes :math:`(d_k - \hat R g_k)/\bar g`, so
that :math:`\sigma/\sqrt n` is the estimate's standard error.

Declarations take their planning SD from the plan (:func:`fill`), never from a number in the code.
After a pilot build (``python -m mlmbook build 1 --profile pilot --no-render``),
``python -m mlmbook.plans write _build/results 1 [--reason TEXT]`` writes the plan (:func:`main`).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from .paths import repo_root, write_json_atomic
from .profiles import EXTENDED, PILOT, seed_offset
from .stats import Question, by_unit, needed_units

__all__ = ["PLAN_KEY", "plan_path", "unit_sd_of", "from_pilot", "content_hash", "load",
           "save", "supersede", "planning_sds", "fill", "stamp", "check", "check_references",
           "reference", "reference_for", "reference_glue", "main"]

PLAN_KEY = "plan"
"""The results key under which a chapter records the plan it was declared under (:func:`stamp`)."""

_QUESTION_FIELDS = ("key", "claim", "effect", "basis", "unit", "measure", "reference", "sample")


def plan_path(chapter: str, root: str | Path | None = None) -> Path:
    """Where ``chapter``'s plan is committed: ``results/plans`` of ``root`` (or the repository)."""
    return Path(root or repo_root()) / "results" / "plans" / f"{chapter}.json"


def unit_sd_of(record: dict) -> tuple[float, int]:
    """The planning SD an answer record gives, and the units it comes from (see the module).

    >>> unit_sd_of({"values": [1.0, 3.0, 2.0, 6.0], "units": [0, 0, 1, 1], "unit": "sentence"})
    (3.0, 2)
    """
    groups = record.get("seeds")                # per seed for a recipe question, else per unit
    if not (record.get("unit") == "seed" and groups is not None and len(set(groups)) >= 2):
        groups = record.get("units")
    d, g = by_unit(record["values"], record.get("weights"), groups)
    n = len(d)
    if n < 2 or not np.all(g > 0):
        return float("nan"), n
    if record.get("unit") == "seed":
        return float(np.std(d / g, ddof=1)), n
    ratio = d.sum() / g.sum()
    return float(np.std((d - ratio * g) / g.mean(), ddof=1)), n


def _answers(results: dict) -> list[tuple[str, dict]]:
    """The primary answers of a results file, in the order the chapter declared them."""
    found = {k: v for k, v in results.items()
             if k.startswith("q_") and isinstance(v, dict) and v.get("kind") == "answer"}
    order = [f"q_{k}" for k in (results.get("study") or {}).get("questions", [])]
    return [(k, found[k]) for k in [*[k for k in order if k in found], *sorted(set(found) - set(order))]]


def from_pilot(chapter: str, results: dict, profile: str = PILOT, results_sha256: str | None = None,
               date: str | None = None) -> dict:
    """The plan of ``chapter`` from a pilot build's ``results`` (one chapter's results file); a
    ValueError when they hold no primary answer or were not recorded by a pilot."""
    answers = _answers(results)
    if not answers:
        raise ValueError(f"{chapter}: the results hold no primary answer; build it with --profile pilot first")
    recorded = results.get("profile", profile)       # a chapter that records its profile
    if profile != PILOT or recorded != PILOT:
        raise ValueError(f"{chapter}: a plan's SDs come from the pilot, not from the {recorded} profile")
    first = answers[0][1]
    alpha, size = float(first["alpha"]), int(first["family_size"])
    level = 1 - alpha / size
    questions, seeds = [], set()
    for _, rec in answers:
        sd, n = unit_sd_of(rec)
        if not math.isfinite(sd):
            raise ValueError(f"{chapter}: question {rec['key']!r} has fewer than two pilot units; enlarge the pilot")
        seeds |= set(rec.get("seeds") or [])
        q = {f: rec[f] for f in _QUESTION_FIELDS}
        q.update(test=Question(**q).test_label(), planning_sd=round(sd, 6), pilot_units=n,
                 planned_n=needed_units(sd, rec["effect"], level, unit=rec["unit"]))
        if sd == 0:                 # every pilot unit alike: nothing to size a sample with
            q.update(planning_sd=None, planned_n=None,
                     note=f"the pilot's {n} units did not vary: no planning SD")
        questions.append(q)
    offset = seed_offset(profile)
    source = {"profile": profile, "seed_offset": offset,
              "sampling_seed": offset, "models": "the quick profile's configurations, every training seed "
                                                 f"the references use plus {offset}",
              "recipe_seeds": sorted(int(s) + offset for s in seeds),
              "date": date or datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "results_sha256": results_sha256}
    return {"chapter": chapter, "family": first["family"], "alpha": alpha, "family_size": size,
            "level": level, "power": 0.8, "source": source, "questions": questions, "superseded": []}


def content_hash(plan: dict) -> str:
    """A hash of everything a plan decides (``superseded`` is history, not part of it)."""
    body = {k: v for k, v in plan.items() if k != "superseded"}
    blob = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def load(chapter: str, root: str | Path | None = None) -> dict | None:
    """The committed plan of ``chapter`` (None when there is none)."""
    path = plan_path(chapter, root)
    if not path.is_file():
        return None
    plan = json.loads(path.read_text())
    if plan.get("chapter") != chapter or "questions" not in plan:
        raise ValueError(f"{path}: not a plan of {chapter}; rewrite it with python -m mlmbook.plans write")
    return plan


def save(plan: dict, root: str | Path | None = None) -> Path:
    """Write ``plan`` (atomically) where :func:`load` finds it."""
    return write_json_atomic(plan_path(plan["chapter"], root), plan, indent=1)


def supersede(old: dict, new: dict, reason: str, answers: dict | None = None, date: str | None = None) -> dict:
    """``new`` with ``old`` kept on record: its history, then ``old`` itself with its hash, the
    answers recorded against it (``answers``: a reference's results, or None when none was seen) and
    ``reason``."""
    if not reason or not reason.strip():
        raise ValueError("a plan that replaces another needs the reason (--reason)")
    fields = ("interval_estimate", "interval_low", "interval_high", "interval_n", "verdict",
              "planning_sd", "effect")
    seen = {rec["key"]: {f: rec.get(f) for f in fields} for _, rec in _answers(answers or {})}
    entry = {"hash": content_hash(old), "plan": {k: v for k, v in old.items() if k != "superseded"},
             "answers": seen, "reason": reason.strip(),
             "date": date or datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    return {**new, "superseded": [*old.get("superseded", []), entry]}


def reference(chapter: str, profile: str = "extended", root: str | Path | None = None) -> dict | None:
    """The committed ``profile`` reference's answers of ``chapter`` (None when not built):
    ``{"label", "answers": {key: record}}``, the label naming the profile and the date the results
    became the reference (``reference.built``, else the profile's last whole-book build)."""
    base = Path(root or repo_root()) / "results"
    path = base / profile / f"{chapter}.json"
    if not path.is_file():
        return None
    results = json.loads(path.read_text())
    when = (results.get("reference") or {}).get("built") or max(
        [json.loads(t.read_text()).get("when") or "" for t in (base / "timings").glob(f"{profile}-*.json")] or [""])
    return {"label": f"the {profile} reference" + (f", built {when}" if when else ""),
            "answers": {rec["key"]: rec for _, rec in _answers(results)}}


def reference_for(chapter: str, model: str = "toy", profile: str = "full", treebank=None) -> dict | None:
    """The extended reference (:func:`reference`) to show beside a toy-language run of ``chapter``
    (:meth:`mlmbook.stats.Study.table`) of another profile; None otherwise or when not built."""
    toy_run = model == "toy" and treebank is None and profile != EXTENDED
    return reference(chapter, EXTENDED) if toy_run else None


def reference_glue(reference: dict | None, study) -> dict:
    """Values for prose that cites the extended reference's answers: ``ext_label`` (its label, or
    "this run" without one, as in the extended build itself) and per question ``ext_<key>``,
    "estimate [interval] (verdict, n = N)" of that reference, else of ``study``; for a question over
    seeds, ``ext_<key>_against`` (trained models whose own test points against the mean's direction
    at the family's level) and ``ext_<key>_unconfirmed`` (those not confirming it, the former
    included)."""
    from .stats.intervals import Interval
    out = {"ext_label": reference["label"] if reference else "this run"}
    for key in study.questions:
        if reference and key in reference["answers"]:
            rec = reference["answers"][key]
            iv = Interval.from_answer(rec)
            verdict, second, alpha = rec["verdict"], rec.get("second") or {}, rec["alpha"] / rec["family_size"]
        elif not reference and key in study.answers:
            a = study.answers[key]
            iv, verdict, second, alpha = a.interval, a.verdict, a.second, study.alpha / study.size
        else:
            out[f"ext_{key}"] = "not asked"
            continue
        out[f"ext_{key}"] = f"{iv.format(3)} ({verdict}, n = {iv.n})"
        if second.get("per_seed"):
            sign, ref = np.sign(iv.estimate - study.questions[key].reference), study.questions[key].reference
            own = list(zip(second["per_seed"], second["per_seed_p"]))
            out[f"ext_{key}_against"] = sum(1 for e, p in own if np.sign(e - ref) == -sign and p <= alpha)
            out[f"ext_{key}_unconfirmed"] = sum(1 for e, p in own if not (np.sign(e - ref) == sign and p <= alpha))
    return out


def planning_sds(chapter: str, root: str | Path | None = None) -> dict:
    """``{key: planning SD}`` of ``chapter``'s committed plan (empty without one)."""
    plan = load(chapter, root)
    return {} if plan is None else {q["key"]: q["planning_sd"] for q in plan["questions"]}


def stamp(results: dict, chapter: str, root: str | Path | None = None) -> dict:
    """``results`` with the hash of the plan ``chapter`` was declared under (:data:`PLAN_KEY`; None
    without one); no clock time, so two builds of the same code give the same bytes."""
    plan = load(chapter, root)
    return {**results, PLAN_KEY: {"chapter": chapter, "hash": None if plan is None else content_hash(plan)}}


def fill(chapter: str, questions, root: str | Path | None = None) -> list:
    """``questions`` with their planning SDs from ``chapter``'s committed plan (None for a question
    the plan lacks, or without a plan): the one way a declaration gets its SD."""
    sds = planning_sds(chapter, root)
    return [replace(q, planning_sd=sds.get(q.key)) for q in questions]


def check(chapter: str, results: dict, root: str | Path | None = None) -> list[str]:
    """Why ``chapter``'s ``results`` were not built against its committed plan (empty when they
    were): the plan's hash (:func:`stamp`) and each answer's planning SD must be the plan's."""
    answers = _answers(results)
    if not answers:
        return []
    plan = load(chapter, root)
    if plan is None:
        return [f"{chapter}: no plan; write results/plans/{chapter}.json from a pilot"]
    want, got = content_hash(plan), (results.get(PLAN_KEY) or {}).get("hash")
    if got != want:
        old = {e["hash"] for e in plan.get("superseded", [])}
        why = ("a superseded plan" if got in old else "no plan (it records no plan hash)" if got is None
               else "another plan")
        return [f"{chapter}: built against {why} ({got}), not the committed one ({want}); rebuild it"]
    sds = planning_sds(chapter, root)
    problems = []
    for key, rec in answers:
        if rec["key"] not in sds:
            problems.append(f"{chapter}: {key} is not a question of its plan")
            continue
        mine, theirs = rec.get("planning_sd"), sds[rec["key"]]
        if mine is None and theirs is None:
            continue  # the pilot's units did not vary: no SD on either side
        if mine is None or theirs is None or not math.isclose(mine, theirs, rel_tol=1e-9):
            problems.append(f"{chapter}: {key} declared planning SD {mine}, the plan's is {theirs}")
    return problems


def check_references(directory: str | Path, root: str | Path | None = None) -> list[str]:
    """:func:`check` for every chapter's results file (``0*.json``) in ``directory``."""
    problems = []
    for path in sorted(Path(directory).glob("0*.json")):
        problems += check(path.stem, json.loads(path.read_text()), root)
    return problems


def main(argv=None) -> int:
    """``python -m mlmbook.plans write RESULTS [CHAPTER ...] [--reason TEXT]`` and ``check DIR``."""
    parser = argparse.ArgumentParser(prog="python -m mlmbook.plans", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write", help="write the plans from a pilot build's results")
    w.add_argument("results", help="the pilot's results folder (e.g. _build/results)")
    w.add_argument("chapters", nargs="*")
    w.add_argument("--reason", help="why a plan a reference was built against is replaced")
    w.add_argument("--root")
    c = sub.add_parser("check", help="check results against the committed plans")
    c.add_argument("results")
    c.add_argument("--root")
    args = parser.parse_args(argv)
    if args.command == "check":
        problems = check_references(args.results, args.root)
        print("\n".join(problems) or "every chapter was built against its committed plan")
        return 1 if problems else 0
    wanted = {c.zfill(2) if c.isdigit() else c for c in args.chapters}
    files = [p for p in sorted(Path(args.results).glob("0*.json"))
             if not wanted or p.stem in wanted or p.stem[:2] in wanted]
    if not files:
        raise SystemExit(f"mlmbook.plans: no chapter results in {args.results}; build the pilot first")
    for path in files:
        data = path.read_bytes()
        new = from_pilot(path.stem, json.loads(data), results_sha256=hashlib.sha256(data).hexdigest())
        old = load(path.stem, args.root)
        if old is not None and content_hash(old) != content_hash(new):
            reference = Path(args.root or repo_root()) / "results" / "full" / path.name
            seen = json.loads(reference.read_text()) if reference.is_file() else None
            if seen is not None and (seen.get(PLAN_KEY) or {}).get("hash") == content_hash(old):
                if not args.reason:
                    raise SystemExit(f"mlmbook.plans: {path.stem}: the full reference was built against the "
                                     "committed plan; give --reason to supersede it")
                new = supersede(old, new, args.reason, seen)
            else:
                new = {**new, "superseded": old.get("superseded", [])}
        kept = plan_path(path.stem, args.root).parent.parent / "pilot" / path.name
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_bytes(data)
        print(f"{save(new, args.root)}  {content_hash(new)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
