"""A profile's plan before anything runs: each chapter's models and samples, and the estimated wall
time of the whole graph on ``N`` workers (``python -m mlmbook cost --profile P --workers N``).

A chapter's time is its full-profile time scaled by the mean ratio of its numeric sample settings
to the full profile's (a linear guess); the wall time is :func:`mlmbook.workers.makespan`, with no
model cached. What a profile does not declare is the full profile's, and the plan says so.
"""
from __future__ import annotations

import ast
import contextlib
from dataclasses import dataclass

from ..profiles import FALLBACK
from ..workers import Task, makespan
from . import chapters as ch

__all__ = ["ChapterPlan", "Plan", "chapter_sizes", "unit_sizes", "make_plan", "plan_lines"]

DEFAULT_SECONDS = 60.0
"""A chapter's time when no build has measured it."""


@dataclass
class ChapterPlan:
    """One chapter in a profile: models, samples (each with the profile read for) and seconds."""

    slug: str
    models: list
    models_from: str
    sizes: dict
    sizes_from: str
    seconds: float


@dataclass
class Plan:
    chapters: list
    units: list
    tasks: list

    def makespan(self, workers: int) -> float:
        return makespan(self.tasks, workers)


def _profile_keyed(node) -> bool:
    return isinstance(node, ast.Dict) and {"quick", "full"} <= {
        k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}


def _pick(node, profile: str, used: set):
    """The literal ``node``, each profile-keyed dict replaced by its ``profile`` (or fallback's)."""
    if _profile_keyed(node):
        entries = {k.value: v for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant)}
        which = profile if profile in entries else FALLBACK.get(profile, "full")
        used.add(which)
        return _pick(entries[which], profile, used)
    if isinstance(node, ast.Dict):
        return {_literal(k): _pick(v, profile, used) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "dict" and not node.args:
        return {k.arg: _pick(k.value, profile, used) for k in node.keywords}
    return _literal(node)


def _literal(node):
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        return ast.unparse(node)


def chapter_sizes(chapter: ch.Chapter, profile: str) -> tuple[dict, str]:
    """The chapter's sample settings in ``profile`` (``name.key -> value``) and the profile they
    were read for (its fallback where the chapter does not declare ``profile`` everywhere)."""
    found, used = {}, set()
    for name, value in ch.assignments(chapter):
        if isinstance(value, ast.Subscript) and _profile_keyed(value.value):
            value = value.value                       # n = {"quick": 60, "full": 300}[profile]
        nested = isinstance(value, ast.Dict) and any(map(_profile_keyed, value.values))
        if _profile_keyed(value) or nested:
            found[name] = _pick(value, profile, used)
    flat, todo = {}, list(found.items())
    while todo:                                       # depth first, in order
        name, value = todo.pop(0)
        if isinstance(value, dict):
            todo[:0] = [(f"{name}.{k}", x) for k, x in value.items()]
        else:
            flat[name] = value
    return flat, (profile if used <= {profile} else FALLBACK.get(profile, "full"))


def unit_sizes(number: int, profile: str) -> dict:
    """The units (seeds, chapter 5's plan) a chapter's time grows with, outside its ``SIZES``."""
    from . import zoo
    tables = {f"zoo.{name}": getattr(zoo, name) for name in zoo.SEED_TABLES.get(number, ())}
    out = {key: t[profile] if isinstance(t[profile], int) else len(t[profile])
           for key, t in tables.items() if profile in t}
    if number == 4:  # the arms a profile trains on fewer seeds than the pair (else every seed)
        arms = zoo.CH4_ARMS.get(profile)
        out["zoo.CH4_ARMS"] = min(arms.values()) if arms else out.get("zoo.CH4_SEEDS", 0)
    if number == 5:
        from ..glauber.plan import PROFILES as GLAUBER
        if profile in GLAUBER:
            p = GLAUBER[profile]
            out.update({"plan.scaling_units": p.scaling_units, "plan.rect_sentences": p.rect_sentences})
    return out


def _models(number: int, profile: str) -> tuple[list, str]:
    from ..models import ladder
    from ..models.train import PRESETS
    from . import prepare

    if all(profile in table for table in (PRESETS, ladder.LADDERS, ladder.VERDICT_SEEDS)):
        with contextlib.suppress(KeyError, ValueError):  # a model list without the profile
            return prepare.needed(profile, [number]), profile
    fallback = FALLBACK.get(profile, "full")
    return prepare.needed(fallback, [number]), fallback


def _scale(sizes: dict, base: dict) -> float:
    ratios = [sizes[k] / base[k] for k in sizes if isinstance(sizes[k], (int, float)) and not isinstance(
        sizes[k], bool) and isinstance(base.get(k), (int, float)) and base[k]]
    return sum(ratios) / len(ratios) if ratios else 1.0


def make_plan(root, chapters: list[str], profile: str, workers: int) -> Plan:
    """The plan of ``chapters`` (all when empty) in ``profile``, with its graph of tasks."""
    from . import prepare
    from .pages import measured_times

    layout = ch.Layout.find(root)
    selected = ch.resolve_chapters(ch.find_chapters(layout), list(chapters))
    known = measured_times(layout.root)
    plans = []
    for chapter in selected:
        models, models_from = _models(chapter.number, profile)
        sizes, sizes_from = chapter_sizes(chapter, profile)
        base_profile = profile if profile in ("quick", "full") else FALLBACK.get(profile, "full")
        base = known.get(chapter.slug, {}).get(base_profile, DEFAULT_SECONDS)
        units, base_units = unit_sizes(chapter.number, profile), unit_sizes(chapter.number, base_profile)
        scale = 1.0 if base_profile == profile else (
            _scale(sizes, chapter_sizes(chapter, base_profile)[0]) * _scale(units, base_units))
        plans.append(ChapterPlan(chapter.slug, models, models_from, {**sizes, **units}, sizes_from, base * scale))
    every = list(dict.fromkeys(j for p in plans for j in p.models))
    units = prepare.plan(every, workers)
    tasks = [Task(f"train {i}", abs, seconds=prepare.estimated_seconds(u)) for i, u in enumerate(units)]
    for p in plans:
        wanted = set(p.models)
        needs = tuple(t.key for t, u in zip(tasks, units) if wanted.intersection(u))
        tasks.append(Task(p.slug, abs, needs=needs, seconds=p.seconds))
    return Plan(plans, units, tasks)


def plan_lines(root, chapters: list[str], profile: str, workers: int) -> list[str]:
    """What ``python -m mlmbook cost --profile P --workers N`` prints."""
    from ..api.models import took as _took

    if workers < 1:
        raise ch.UsageError(f"--workers {workers}: give 1 or more")
    plan = make_plan(root, chapters, profile, workers)
    lines = [f"the {profile} profile's plan on {workers} worker{'s' if workers != 1 else ''}:"]
    for p in plan.chapters:
        models = f"{len(p.models)} model{'s' if len(p.models) != 1 else ''}" + (
            "" if p.models_from == profile else f" (the {p.models_from} profile's: none declared for {profile} yet)")
        shown = ", ".join(f"{k}={v}" for k, v in p.sizes.items()) or "none declared"
        sizes = shown + ("" if p.sizes_from == profile or not p.sizes else
                         f" (the {p.sizes_from} profile's where none are declared for {profile} yet)")
        lines.append(f"  {p.slug}: {models}; samples: {sizes}; about {_took(p.seconds)}")
    train = sum(t.seconds for t in plan.tasks if t.key.startswith("train "))
    n_models = sum(len(u) for u in plan.units)
    lines.append(f"  training: {n_models} models in {len(plan.units)} units, about {_took(train)} of one core "
                 f"(estimated per unit, mlmbook.pipeline.prepare.estimated_seconds)")
    one, many = plan.makespan(1), plan.makespan(workers)
    lines.append(f"estimated wall time on {workers} worker{'s' if workers != 1 else ''}: about {_took(many)} "
                 f"({many:.0f} s; on 1 worker {_took(one)}), list scheduling by upward rank of these estimates, "
                 f"models not cached")
    return lines
