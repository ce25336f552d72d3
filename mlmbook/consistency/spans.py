r"""Span routes: the Ensemble of Conditionals where the paper used it, on span-infilling models.

Young & You's ensemble targets T5/UL2, which fill *spans*: their "K-offset" versions mask a
target with the :math:`o` words before it and read it after the decoder wrote them back. A
BERT-style span model (``TrainConfig(span=...)``) reads the span's other words back by the chain
rule instead (:func:`~.ensemble.route_versions`): for a span :math:`S \ni t`,

.. math::
    q_S(x_t = c) \propto q(x_t = c \mid x_{\setminus S}) \prod_{k \in S \setminus t,\ \text{left to right}}
                 q(x_k = o_k \mid x_t = c,\ \text{the span's earlier words},\ x_{\setminus S}),

which for a joint is :math:`p(x_t = c \mid x_{\setminus t})` for every span.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

__all__ = ["SPANS", "ARMS", "Targets", "span_routes", "fits_spans", "arms", "stacked", "seed_table"]

SPANS = ((2, 0), (2, 1), (3, 0), (3, 1), (3, 2))
"""The (length, offset) of every span route: each span of 2 or 3 words that covers the target."""


def span_routes(t: int, positions: Sequence[int], spans=SPANS) -> list[tuple]:
    """The routes (positions masked besides ``t``, left to right) of the spans that cover ``t``.

    ``positions`` are the maskable positions of the sentence in order; a span is ``length``
    consecutive entries of it of which ``t`` is the ``offset``-th (0-based). Spans that would leave
    ``positions`` are skipped.
    """
    where = list(positions).index(t)
    out = []
    for length, offset in spans:
        start = where - offset
        if start < 0 or start + length > len(positions):
            continue
        span = [int(positions[k]) for k in range(start, start + length)]
        out.append(tuple(k for k in span if k != t))
    return out


def fits_spans(t: int, positions: Sequence[int], spans=SPANS) -> bool:
    """Whether every span of ``spans`` around ``t`` fits inside ``positions``."""
    return len(span_routes(t, positions, spans)) == len(spans)


ARMS = (("span", "span routes, span model"), ("token", "single-word routes, span model"),
        ("twin", "span routes, token-masked twin"))
"""The span comparison's arms: ``(key, label)``; ``"token"`` is the control (routes of one nearest
word instead of spans)."""


class Targets(NamedTuple):
    """The targets the span comparison predicts, the same for every model: ``ids`` (sentences),
    ``targets``, ``positions`` (each sentence's maskable positions), ``aux`` (each target's nearest
    positions), ``gold`` (observed words) and ``truth_p`` (the truth's conditionals)."""

    ids: list
    targets: list
    positions: list
    aux: list
    gold: np.ndarray
    truth_p: list


def arms(span_lm, twin_lm, items: Targets, candidates: int = 8) -> dict:
    """Per-target scores (:func:`~.regime.ensemble_scores`) of each arm of :data:`ARMS` for one
    seed: ``span_lm`` a span-trained model, ``twin_lm`` its token-masked twin; the single-word arm
    has as many routes as the span arm."""
    from .ensemble import route_versions
    from .regime import ensemble_scores
    spans = [span_routes(t, p) for t, p in zip(items.targets, items.positions)]
    words = [[(int(k),) for k in a[:len(s)]] for a, s in zip(items.aux, spans)]
    out = {}
    for key, lm, routes in (("span", span_lm, spans), ("token", span_lm, words), ("twin", twin_lm, spans)):
        versions = route_versions(lm, items.ids, items.targets, routes, candidates=candidates)
        out[key] = ensemble_scores(versions, items.gold, items.truth_p)
    return out


def stacked(per_seed: dict, value) -> tuple:
    """``(values, seeds)``: ``value(scores)`` of every seed's targets, one after another, with each
    row's seed (for :meth:`mlmbook.stats.Study.answer` with ``seeds=``)."""
    rows = [np.asarray(value(scores), dtype=float) for scores in per_seed.values()]
    return np.concatenate(rows), np.concatenate([np.full(len(r), s) for s, r in zip(per_seed, rows)])


def seed_table(per_seed: dict):
    """Each seed's log-loss gains of the three :data:`ARMS` and the span model's and the twin's
    headroom (an HTML table)."""
    from .. import stats
    from ..tables import table

    def gain(sc, arm):
        return stats.describe(sc[arm]["single"] - sc[arm]["ens"]).format()

    def head(sc, arm):
        return f"{(sc[arm]['single'] - sc[arm]['bayes']).mean():.2f}"

    rows = [[f"seed {s}", f"{head(sc, 'span')} / {head(sc, 'twin')}", *(gain(sc, arm) for arm, _ in ARMS)]
            for s, sc in per_seed.items()]
    return table(rows, header=["", "headroom: span / twin", "span routes", "single-word routes", "twin, span routes"],
                 caption="Per seed: log-loss gain (nats, 95 %) and headroom (nats)")
