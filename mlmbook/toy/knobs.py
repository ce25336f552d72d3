r"""Knobs of the world: named settings of the toy grammar whose exact answers the oracle computes.

A regime map over model size shows where an effect fades as a model approaches the truth; a
**knob** changes the *language* and shows what causes the effect. A knob is a function of one
number that rewrites the grammar schema before it is compiled (``spec``) and/or the compiled
PCFG after (``pcfg``); its setting is part of the grammar's name and fingerprint, so models
trained on a knob setting are cached like any other:

>>> from mlmbook.toy import Grammar
>>> g = Grammar.load("toy[selection=0.5]")          # doctest: +SKIP
>>> g = Grammar.load("toy", knobs={"selection": 0.5})   # the same grammar   # doctest: +SKIP

A knob at its ``neutral`` value leaves the grammar unchanged (and then drops out of the name,
so ``toy[selection=1]`` *is* ``toy``). Register a knob with :func:`knob`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..errors import GrammarError

__all__ = ["Knob", "KNOBS", "knob", "parse_name", "format_name", "apply_spec", "apply_pcfg", "check"]


@dataclass(frozen=True)
class Knob:
    """One knob: its name, what it does, the value that changes nothing, and its transforms."""

    name: str
    doc: str
    neutral: float
    low: float = float("-inf")
    high: float = float("inf")
    spec: Callable[[dict, float], dict] | None = None      # schema -> new schema (do not mutate the input)
    pcfg: Callable[[object, float], object] | None = None  # compiled PCFG -> new PCFG


KNOBS: dict[str, Knob] = {}
"""Every registered knob, by name."""


def knob(name: str, doc: str, neutral: float, low: float = float("-inf"), high: float = float("inf"),
         spec=None, pcfg=None) -> Knob:
    """Register a knob (see :class:`Knob`) and return it."""
    if name in KNOBS:
        raise ValueError(f"knob {name!r} is registered twice")
    KNOBS[name] = Knob(name, doc, float(neutral), float(low), float(high), spec, pcfg)
    return KNOBS[name]


def check(knobs: dict | None) -> dict:
    """Known knobs with in-range values, neutral settings dropped, sorted by name."""
    out = {}
    for k, v in sorted((knobs or {}).items()):
        if k not in KNOBS:
            raise GrammarError(f"no grammar knob {k!r}: use one of {', '.join(sorted(KNOBS)) or '(none)'}")
        spec = KNOBS[k]
        v = float(v)
        if not spec.low <= v <= spec.high:
            raise GrammarError(f"knob {k}={v:g} is outside [{spec.low:g}, {spec.high:g}]")
        if v != spec.neutral:
            out[k] = v
    return out


def parse_name(name: str) -> tuple[str, dict]:
    """``"toy[selection=0.5,smoothing=0.01]"`` -> ``("toy", {"selection": 0.5, "smoothing": 0.01})``."""
    if not name.endswith("]") or "[" not in name:
        return name, {}
    base, _, inner = name[:-1].partition("[")
    knobs = {}
    for part in filter(None, (p.strip() for p in inner.split(","))):
        key, eq, value = part.partition("=")
        try:
            knobs[key.strip()] = float(value)
        except ValueError:
            raise GrammarError(f"cannot read the knob setting {part!r} in {name!r}: write name=number") from None
        if not eq:
            raise GrammarError(f"cannot read the knob setting {part!r} in {name!r}: write name=number")
    return base, knobs


def format_name(base: str, knobs: dict) -> str:
    """The inverse of :func:`parse_name` (``base`` alone when every knob is neutral)."""
    knobs = check(knobs)
    return base if not knobs else base + "[" + ",".join(f"{k}={v:g}" for k, v in knobs.items()) + "]"


def apply_spec(spec: dict, knobs: dict) -> dict:
    """The schema with every knob's ``spec`` transform applied (in name order)."""
    for k, v in check(knobs).items():
        if KNOBS[k].spec is not None:
            spec = KNOBS[k].spec(spec, v)
    return spec


def apply_pcfg(pcfg, knobs: dict):
    """The compiled PCFG with every knob's ``pcfg`` transform applied (in name order)."""
    for k, v in check(knobs).items():
        if KNOBS[k].pcfg is not None:
            pcfg = KNOBS[k].pcfg(pcfg, v)
    return pcfg
