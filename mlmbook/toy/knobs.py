r"""Knobs of the world: named settings of the toy grammar whose exact answers the oracle computes.

A knob changes the *language* (a regime map changes the model) to show what causes an effect: a
function of one number that rewrites the grammar schema before it is compiled (``spec``) and/or
the compiled PCFG (``pcfg``). Its setting is part of the grammar's name and fingerprint:

>>> from mlmbook.toy import Grammar
>>> g = Grammar.load("toy[selection=0.5]")          # doctest: +SKIP
>>> g = Grammar.load("toy", knobs={"selection": 0.5})   # the same grammar   # doctest: +SKIP

At its ``neutral`` value a knob drops out of the name (``toy[selection=1]`` *is* ``toy``).
Register a knob with :func:`knob`."""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import GrammarError
from .pcfg import PCFG

__all__ = ["Knob", "KNOBS", "knob", "parse_name", "format_name", "apply", "check"]


@dataclass(frozen=True)
class Knob:
    """One knob: its name, what it does, the value that changes nothing, and its transforms."""

    name: str
    doc: str
    neutral: float
    low: float = float("-inf")
    high: float = float("inf")
    # schema -> new schema (do not mutate the input)
    spec: Callable[[dict, float], dict] | None = None
    pcfg: Callable[[object, float], object] | None = None  # compiled PCFG -> new PCFG


KNOBS: dict[str, Knob] = {}
"""Every registered knob, by name."""


def knob(k: Knob) -> Knob:
    """Register a knob and return it."""
    if k.name in KNOBS:
        raise ValueError(f"knob {k.name!r} is registered twice")
    KNOBS[k.name] = k
    return k


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
    """``"toy[selection=0.5,smoothing=0]"`` -> ``("toy", {"selection": 0.5, "smoothing": 0.0})``."""
    if not name.endswith("]") or "[" not in name:
        return name, {}
    base, _, inner = name[:-1].partition("[")
    knobs = {}
    for part in filter(None, (p.strip() for p in inner.split(","))):
        key, _, value = part.partition("=")          # no "=": float("") fails
        try:
            knobs[key.strip()] = float(value)
        except ValueError:
            raise GrammarError(f"cannot read the knob setting {part!r} in {name!r}: write name=number") from None
    return base, knobs


def format_name(base: str, knobs: dict) -> str:
    """The inverse of :func:`parse_name` (``base`` alone when every knob is neutral)."""
    knobs = check(knobs)
    return base if not knobs else base + "[" + ",".join(f"{k}={v:g}" for k, v in knobs.items()) + "]"


def apply(target, knobs: dict, stage: str):
    """The schema (``stage="spec"``) or the compiled PCFG (``"pcfg"``) with every knob's transform
    of that stage applied (in name order)."""
    for k, v in check(knobs).items():
        transform = getattr(KNOBS[k], stage)
        if transform is not None:
            target = transform(target, v)
    return target


def _with_emissions(pcfg, emissions):
    """The same grammar with new emission tables (the emission knobs change nothing else)."""
    return PCFG(list(pcfg.nonterminals), pcfg.start, list(pcfg.binary), list(pcfg.unary), emissions,
                np.array(pcfg.topic_prior), list(pcfg.vocab))


def _smooth_emissions(pcfg, value: float):
    r"""The PCFG with every preterminal's emissions mixed with the uniform over its part of speech:

    .. math:: e'_A(w) = (1-\varepsilon)\, e_A(w)
              + \varepsilon\, \frac{[w \in W_{\mathrm{pos}(A)}]}{|W_{\mathrm{pos}(A)}|},

    :math:`W_{\mathrm{pos}}` the words a preterminal of that part of speech emits (in any topic)."""
    E = np.array(pcfg.emissions, dtype=float)
    groups: dict[str, list[int]] = {}
    for a in pcfg.preterminals:
        groups.setdefault(pcfg.nonterminals[a].split("_", 1)[0], []).append(int(a))  # N_human_sg: N
    for members in groups.values():
        words = E[:, members, :].sum(axis=(0, 1)) > 0
        uniform = words / words.sum()
        E[:, members, :] = (1 - value) * E[:, members, :] + value * uniform
    return _with_emissions(pcfg, E)


knob(Knob("smoothing",
          "Share ε of each preterminal's emissions spread uniformly over the words of its part of "
          "speech: every lexical zero (a verb's unselected noun class, a disagreeing number) "
          "becomes a soft zero; trees and part-of-speech sequences are unchanged. 0 = the toy "
          "language (chapter 2).",
          neutral=0.0, low=0.0, high=1.0, pcfg=_smooth_emissions))


def _select(spec: dict, value: float) -> dict:
    r"""The schema with every selectional preference mixed with a head-blind choice:

    .. math:: p_s(c \mid h) = s\, p(c \mid h) + (1 - s)\, \bar p(c),

    for a verb's frame given its subject's class (:math:`\bar p` the frames' own weights), an
    object's class given the frame, an adjective given its noun's class and the class of the
    object of *with* (:math:`\bar p` uniform over the classes, resp. adjectives)."""
    s = float(value)
    spec = copy.deepcopy(spec)
    classes = list(spec["nouns"])
    frames = spec["verbs"]
    weight = {f: float(fr["weight"]) for f, fr in frames.items()}
    prior = {f: w / sum(weight.values()) for f, w in weight.items()}
    subjects = list(spec["subject"])
    given = {}
    for c in subjects:                                   # p(frame | subject class) at s = 1
        w = {f: weight[f] * fr["subject"].get(c, 0) for f, fr in frames.items()}
        total = sum(w.values())
        given[c] = {f: x / total for f, x in w.items()} if total else dict(prior)
    for f, fr in frames.items():
        fr["subject"] = {c: (s * given[c][f] + (1 - s) * prior[f]) / weight[f] for c in subjects}
        if fr.get("object"):
            total = sum(fr["object"].values())
            fr["object"] = {c: s * fr["object"].get(c, 0) / total + (1 - s) / len(classes) for c in classes}
    adjectives = spec["adjectives"]
    per_class = {c: sum(likes.get(c, 0) for likes in adjectives.values()) for c in classes}
    for likes in adjectives.values():
        for c in classes:
            own = likes.get(c, 0) / per_class[c] if per_class[c] else 1 / len(adjectives)
            likes[c] = s * own + (1 - s) / len(adjectives)
    if spec.get("with_objects"):
        total = sum(spec["with_objects"].values())
        spec["with_objects"] = {c: s * spec["with_objects"].get(c, 0) / total + (1 - s) / len(classes)
                                for c in classes}
    return spec


knob(Knob("selection",
          "How strongly heads select the classes of their dependents (a verb its subject's and "
          "object's noun class, an adjective its noun's, 'with' its object's): each choice is mixed"
          " with a head-blind one, p_s(c | h) = s p(c | h) + (1 - s) p̄(c). 1 = the toy language, 0"
          " = no selection; number agreement stays (chapter 1).",
          neutral=1.0, low=0.0, high=1.0, spec=_select))


def _word_noise(pcfg, value: float):
    r"""The PCFG whose sentences are the toy language's with each word replaced, with probability
    :math:`\eta`, by a uniformly random word of the vocabulary :math:`W` (a coherent joint that is
    not the toy language: headroom to the truth, no inconsistency):

    .. math:: e'_A(w) = (1-\eta)\, e_A(w) + \frac{\eta}{|W|} \quad \text{for every preterminal } A.

    (Replacing ``x_i`` by a uniform word :math:`u` gives :math:`\tilde x_i = w` with probability
    :math:`(1-\eta)[x_i = w] + \eta/|W|`, independently per position, so the emissions mix.)"""
    E = np.array(pcfg.emissions, dtype=float)
    pre = np.asarray(pcfg.preterminals)
    E[:, pre, :] = (1 - value) * E[:, pre, :] + value / E.shape[2]
    return _with_emissions(pcfg, E)


knob(Knob("word_noise",
          "Share η of the words replaced by a uniformly random word of the vocabulary: the noisier "
          "language that TrainConfig(noise=η) trains on (emissions (1-η) e_A(w) + η/|W|; rules "
          "unchanged). 0 = the toy language (chapter 3).",
          neutral=0.0, low=0.0, high=1.0, pcfg=_word_noise))
