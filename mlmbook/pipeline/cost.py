r"""What a chapter will cost with a real model, estimated before it runs.

.. math:: \text{seconds} \approx
          \underbrace{\sum_{\text{rows}} \text{tokens per row} \,/\, \text{tokens/s}}_{\text{model time}}
          \;+\; \underbrace{o_{\text{chapter, profile}}}_{\text{everything else}}

The rows are the masked-query rows a chapter will send, counted from its size settings; tokens/s
is measured on the spot; :math:`o` is measured per profile by ``make bench`` (``OVERHEAD_FILE``).
A build whose memory estimate (:func:`peak_gib`) exceeds the machine's is refused before any work.
"""
from __future__ import annotations

import ast
import contextlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..api.models import took
from ..dependencies.cpmi import cpmi_rows
from ..errors import MLMBookError, UsageError
from ..paths import repo_root
from ..queries import SPECIALS, tokens_per_second
from . import chapters as ch

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["Work", "CostRefusal", "peak_gib", "machine_gib", "announce", "chapter_constants",
           "estimate", "paragraph", "report", "rows_for", "tokens_per_second", "overhead_seconds",
           "OVERHEAD_FILE", "CALIBRATION_PIECES"]

OVERHEAD_FILE = "results/timings/overhead.json"
"""Where ``make bench`` records each chapter's time outside the model (under the root)."""
CALIBRATION_PIECES = 2000
"""The vocabulary of the model ``benchmarks/cost.py`` measures the time outside the model on."""


class CostRefusal(UsageError):
    """A build refused before any work: its estimated memory exceeds the machine's."""


@dataclass
class Work:
    """Rows of forward passes a chapter sends, by term (name -> (rows, tokens))."""

    terms: dict[str, tuple[int, int]] = field(default_factory=dict)
    note: str = ""
    rows = property(lambda self: sum(r for r, _ in self.terms.values()), doc="Rows in all.")
    tokens = property(lambda self: sum(t for _, t in self.terms.values()), doc="Tokens in all.")

    def add(self, name: str, rows: int, tokens_per_row: float) -> Work:
        """Add ``rows`` rows of ``tokens_per_row`` tokens (plus :data:`SPECIALS`) to ``name``."""
        r, t = self.terms.get(name, (0, 0))
        self.terms[name] = (r + int(rows), t + round(rows * (tokens_per_row + SPECIALS)))
        return self


def _value(node: ast.expr):
    """A literal, ``dict(k=literal, ...)`` or ``<x>.record("key", literal)``; else ValueError."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        return {k.arg: _value(k.value) for k in node.keywords}
    if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "record" and len(node.args) == 2:
        return _value(node.args[1])
    if isinstance(node, ast.Dict):
        return {_value(k): _value(v) for k, v in zip(node.keys, node.values)}
    return ast.literal_eval(node)


def chapter_constants(chapter: ch.Chapter) -> dict[str, object]:
    """Names assigned a literal at the top level of the chapter's code cells (the first assignment
    wins); ``dict(...)`` of literals and ``mlmbook.record("key", literal)`` count as literals."""
    found: dict[str, object] = {}
    for name, value in ch.assignments(chapter):
        with contextlib.suppress(ValueError, TypeError, SyntaxError):
            found.setdefault(name, _value(value))
    return found


def _sentences(lm: MaskedLM, treebank, n: int, seed: int, min_words: int = 5, max_words: int = 14,
               drop_punct: bool = False) -> list[list[int]]:
    """Token ids of ``n`` sentences: a treebank's within the word limits, else the toy world's."""
    from ..corpus import load_treebank
    from ..toy import Grammar
    words = None                             # none read: the toy language's, as in the chapters
    with contextlib.suppress(MLMBookError, FileNotFoundError):
        if treebank is not None:
            words = [s.words for s in load_treebank(treebank, drop_punct=drop_punct,
                                                    max_len=max_words, min_len=min_words)]
            words = [words[k] for k in np.random.default_rng(seed).permutation(len(words))]
    words = words or [s.words for s in Grammar.load("toy").sample(n, seed=seed)]
    ids = (lm.encode_words(list(w))[0] for w in words)
    return [r for r in ids if 0 < len(r) <= lm.max_length][:n]


def rows_ch1(lm: MaskedLM, values: dict, c: dict) -> Work:
    """Chapter 1: the CMI grid on its first ``main`` sentences (the candidate policy of
    :func:`mlmbook.dependencies.cmi_scores`: one row per piece pair with both masked, then ``2K``,
    or ``2V'`` for the exact grid), the worked example (``1 + 2K`` rows), Gibbs (``2 x chains x
    steps`` rows per piece pair) and CPMI (:func:`cpmi_rows`), on the chapter's own corpus."""
    from ..corpus import find_treebank, read_conllu
    from ..dependencies.pieces import encode_all, non_special
    from ..dependencies.policy import sentence_candidates
    from ..toy import Grammar
    size, seed, window, treebank = c["SIZES"][values["profile"]], values["seed"], values["window"], values["treebank"]
    if treebank is None:  # as the chapter
        pool = Grammar.load("toy").sample(20 * size["corpus"], seed=seed)
    else:
        pool = read_conllu(find_treebank(treebank))
        pool = [pool[k] for k in np.random.default_rng(seed).permutation(len(pool))]
    corpus = [s for s in pool if 3 <= sum(u != "PUNCT" for u in s.upos) <= size["max_words"]
              and len(lm.encode_words(s.words)[0]) <= lm.max_length][: size["corpus"]]
    words, keep = [s.words for s in corpus], [[i for i, u in enumerate(s.upos) if u != "PUNCT"] for s in corpus]
    n_main, full = min(size["main"], len(words)), len(non_special(lm))
    share = size["grid_rows"] / max(n_main, 1)  # each sentence's share of the budget
    work = Work()
    for s, e in enumerate(encode_all(lm, words, keep)):
        pairs = len(e.piece_pairs(window))
        k = sentence_candidates(pairs, full, share)
        per_pair = 1 + 2 * (full if k is None else k)
        if s < n_main:
            work.add("CMI grid", pairs * per_pair, len(e.ids))
        if s == 0:
            work.add("worked example", per_pair, len(e.ids))
        if s < size["gibbs"]:
            work.add("Gibbs CMI", pairs * 2 * size["chains"] * size["steps"], len(e.ids))
        work.add("CPMI", cpmi_rows(lm, e), len(e.ids))
    return work


def rows_ch2(lm: MaskedLM, values: dict, c: dict) -> Work:
    """Chapter 2: two pairs per sentence, each ``1 + 2(K + 1) + 1`` rows with top-K candidates
    (``2V + 1`` on the full grid); the showcase's few pairs are left out."""
    n = c["SIZES"]["real"][values["profile"]]
    full = values["candidates"] == "full" or (values["candidates"] == "auto" and lm.V <= 1000)
    per_pair = 2 * lm.V + 1 if full else 2 * (values["top_k"] + 1) + 2
    sents = _sentences(lm, values["treebank"] or "test", n, values["seed"], drop_punct=True)
    return Work().add("pair conditionals", 2 * len(sents) * per_pair, float(np.mean([len(r) for r in sents])))


def rows_ch3(lm: MaskedLM, values: dict, c: dict) -> Work:
    """Chapter 3: 8 rows per pair of positions (top-2, rectangle, order; up to ``MAX_PAIRS`` pairs a
    sentence), 4 per random rectangle (up to 300), and ``2 + N_AUX (C + 2)`` per ensemble target
    (``C = N_CANDIDATES``): the ensemble dominates."""
    size = c["SIZES"][values["profile"]]
    sents = _sentences(lm, values["treebank"], size["sentences"] + size["eoc_items"], values["seed"])
    pairs = sum(min(math.comb(len(r), 2), c["MAX_PAIRS"]) for r in sents[: size["sentences"]])
    per_target, mean = 2 + c["N_AUX"] * (c["N_CANDIDATES"] + 2), float(np.mean([len(r) for r in sents]))
    return (Work().add("rectangle and order tests", 8 * pairs, mean).add("random rectangles", 4 * min(300, pairs), mean)
            .add("ensemble of conditionals", len(sents[size["sentences"]:]) * per_target, mean))


def rows_ch4(lm: MaskedLM, values: dict, c: dict) -> Work:
    """Chapter 4 (a real model: the rank analysis only): each sentence clean and 15 % masked."""
    size = c["SIZES"][values["profile"]]
    sents = _sentences(lm, values["treebank"], size["rank_sentences"], values["seed"] + 10_000, 1, 40)
    return Work().add("hidden states", 2 * len(sents), float(np.mean([len(r) for r in sents])))


def rows_ch6(lm: MaskedLM, values: dict, c: dict) -> Work:
    """Chapter 6 (a real model: no truth): the Monte Carlo NELBO, ``orders`` random orders a
    sentence with one and two positions per step (``n + n/2`` rows), and each sampler's ``samples``
    rows of six tokens: six steps each (twelve most confident first) and its own probability of
    each draw (``2**6 - 1`` subset rows, six for most confident first)."""
    size = c["SIZES"]["real"][values["profile"]]
    sents = [r for r in _sentences(lm, None, 4 * size["sentences"], values["seed"], 2, 8) if 4 <= len(r) <= 8]
    sents = sents[: size["sentences"]]
    mean = float(np.mean([len(r) for r in sents])) if sents else 6.0
    nelbo_rows = size["orders"] * sum(len(r) + math.ceil(len(r) / 2) for r in sents)
    return (Work().add("NELBO over random orders", nelbo_rows, mean)
            .add("reveal samplers", size["samples"] * (6 + 6 + 12), 6.0)
            .add("the samplers' own probabilities", size["samples"] * (2 * 63 + 6), 6.0))


def rows_for(chapter: ch.Chapter, lm: MaskedLM, values: dict) -> Work | None:
    """The rows ``chapter`` will send to ``lm`` with the planned parameters ``values`` (others at
    their defaults); None for a chapter whose real-model path is not modelled (chapter 5)."""
    counters = {1: rows_ch1, 2: rows_ch2, 3: rows_ch3, 4: rows_ch4, 6: rows_ch6}
    if chapter.number == 0:
        return Work(note="a real model asks no masked queries here (the chapter is about the toy model)")
    if chapter.number not in counters:
        return None
    values = {**ch.parameter_defaults(ch.read_notebook(chapter)), **values}
    return counters[chapter.number](lm, values, chapter_constants(chapter))


def _overhead(root) -> dict:
    return json.loads((Path(root or repo_root()) / OVERHEAD_FILE).read_text())


def overhead_seconds(slug: str, profile: str, root=None, pieces: int | None = None) -> float | None:
    r"""The chapter's measured time outside the model in ``profile`` (None: not measured); with
    ``pieces``, :math:`o + s \, \max(0, V - V_0)`, :math:`o` on the :data:`CALIBRATION_PIECES`-piece
    model, the slope :math:`s` (where measured) on a larger one (``benchmarks.vocab calibrate``)."""
    try:
        data = _overhead(root)
        value = float(data["seconds"][profile][slug])           # None: not measured
    except (OSError, ValueError, KeyError, TypeError):
        return None
    slope = data.get("per_piece", {}).get(profile, {}).get(slug) if pieces is not None else None
    return value + (float(slope) * max(0, pieces - CALIBRATION_PIECES) if slope else 0.0)


def peak_gib(slug: str, profile: str, pieces: int, parameters: int, root=None) -> float | None:
    r"""The chapter's estimated peak resident memory in GiB on a model of ``pieces`` pieces and
    ``parameters`` weights: :math:`a + b\,\max(0, V - V_0) + 2 \cdot 4P / 2^{30}`, :math:`a` and
    :math:`b` measured by ``python -m benchmarks.vocab memory`` (the quick profile's stand for all:
    the tables that grow with the vocabulary are per query); None where not measured."""
    try:
        table = _overhead(root)["peak_gib"]
        a, b = (table.get(profile) or table["quick"])[slug]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return float(a) + float(b) * max(0, pieces - CALIBRATION_PIECES) + 2 * 4 * parameters / 2 ** 30


def machine_gib() -> float:
    """The memory a build may use, in GiB: ``$MLMBOOK_MEMORY_GIB``, else the physical memory."""
    import os
    if os.environ.get("MLMBOOK_MEMORY_GIB"):
        try:
            return float(os.environ["MLMBOOK_MEMORY_GIB"])
        except ValueError:
            raise UsageError(f"MLMBOOK_MEMORY_GIB={os.environ['MLMBOOK_MEMORY_GIB']!r} is not a number of GiB; "
                             f"unset it or give one, e.g. 24") from None
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30


def paragraph(slug: str, model: str, work: Work | None, rate: float, overhead: float | None = None) -> str:
    """The printed estimate for one chapter (``rate`` in tokens/s, ``overhead`` in seconds)."""
    outside = ("" if overhead is None else
               f" Work outside the model, measured for this chapter by `make bench`: about {overhead:.0f} s.")
    if work is None and overhead is not None:
        return (f"{slug} with {model}: its masked queries are not counted one by one; measured in all on "
                f"calibration models by `make bench`, at this vocabulary: about {took(overhead)} "
                f"({overhead:.1f} s in all).")
    if work is None:
        return (f"{slug} with {model}: no estimate of its model time (this chapter's real-model path is not "
                f"modelled).{outside}")
    if not work.rows:
        return f"{slug} with {model}: {work.note or 'no masked queries'}.{outside}"
    s = work.tokens / rate
    terms = sorted(work.terms.items(), key=lambda kv: -kv[1][1])
    parts = ", ".join(f"{name} {r:,} rows ({t / work.tokens:.0%})" for name, (r, t) in terms)
    text = (f"{slug} with {model}: estimate {work.rows:,} masked-query rows x {work.tokens / work.rows:.1f} "
            f"tokens per row / {rate:,.0f} tokens/s (measured just now) = about {took(s)} of model time "
            f"({s:.1f} s); by share of tokens: {parts}.")
    if overhead is None:
        return text + " Work outside the model is not counted (run `make bench` to measure it)."
    return text + f"{outside} In all: about {took(s + overhead)} ({s + overhead:.1f} s in all)."


def report(plans: list[tuple[ch.Chapter, dict]]) -> list[str]:
    """One estimate paragraph per planned chapter whose model is not a toy model or oracle."""
    from ..models.load import TOY_MODELS, TRUTH_MODELS, load_mlm
    out, loaded, have = [], {}, machine_gib()
    for chapter, values in plans:
        model = values.get("model")
        if not isinstance(model, str) or model in TOY_MODELS or model in TRUTH_MODELS:
            continue
        if model not in loaded:
            lm = load_mlm(model)
            loaded[model] = (lm, tokens_per_second(lm))
        lm, rate = loaded[model]
        profile, root = values.get("profile", "full"), chapter.path.parent.parent
        text = paragraph(chapter.slug, model, rows_for(chapter, lm, values), rate,
                         overhead_seconds(chapter.slug, profile, root, pieces=lm.V))
        peak = peak_gib(chapter.slug, profile, lm.V, getattr(lm, "n_parameters", 0), root)
        if peak is not None and peak > have:
            raise CostRefusal(f"{chapter.slug} with {model} needs about {peak:.1f} GiB of memory (estimated for its "
                              f"{lm.V:,} pieces), more than the {have:.1f} GiB here; run it where there is more "
                              f"(a cluster's workers: --scheduler with MLMBOOK_MEMORY_GIB set to theirs)")
        out.append(text + ("" if peak is None else f" Peak memory: about {peak:.1f} GiB of the {have:.0f} GiB here."))
    return out


def announce(plans: list[tuple[ch.Chapter, dict]]) -> None:
    """Print :func:`report` on stderr before a build; a failure to estimate only prints why."""
    try:
        lines = report(plans)
    except CostRefusal:
        raise
    except (MLMBookError, OSError, ValueError, KeyError, TypeError, RuntimeError) as err:
        lines = [f"no cost estimate ({type(err).__name__}: {err})"]
    for line in lines:
        ch.say(line)


def estimate(root, chapters: list[str], profile: str, parameters: list[tuple[str, str]]) -> list[str]:
    """:func:`report` for ``python -m mlmbook cost``, its arguments checked as ``build`` does."""
    selected = ch.resolve_chapters(ch.find_chapters(ch.Layout.find(root)), list(chapters))
    return report(ch.plan_parameters(selected, list(parameters), profile))
