r"""Span routes: the Ensemble of Conditionals where the paper used it, on span-infilling models.

Young & You's ensemble targets T5/UL2, which fill *spans*. Their "K-offset" versions of the
distribution of a target word mask it together with the :math:`o` words before it as one span
and read the target's probability after the decoder has written those :math:`o` words back; a
model whose conditionals came from one joint gives the same distribution for every :math:`o`.

A BERT-style span model (trained with ``TrainConfig(span=...)``) has no decoder, so a span
route reads the span's other words back by the chain rule instead
(:func:`~.ensemble.route_versions`): for a span :math:`S \ni t` of length :math:`L` and
offset :math:`o` (the target is the span's :math:`(o+1)`-th word),

.. math::
    q_S(x_t = c) \propto q(x_t = c \mid x_{\setminus S}) \prod_{k \in S \setminus t,\ \text{left to right}}
                 q(x_k = o_k \mid x_t = c,\ \text{the span's earlier words},\ x_{\setminus S}),

which for a joint is :math:`p(x_t = c \mid x_{\setminus t})` for every span. The spans of length 2
are the BERT-style routes of one adjacent auxiliary word.
"""
from __future__ import annotations

from typing import Sequence

__all__ = ["SPANS", "span_routes", "fits_spans"]

SPANS = ((2, 0), (2, 1), (3, 0), (3, 1), (3, 2))
"""The (length, offset) of every span route: each span of 2 or 3 words that covers the target."""


def span_routes(t: int, positions: Sequence[int], spans=SPANS) -> list[tuple]:
    """The routes (positions masked besides ``t``, left to right) of the spans that cover ``t``.

    ``positions`` are the maskable positions of the sentence in order (its words); a span is
    ``L`` consecutive entries of it of which ``t`` is the ``offset``-th (0-based). Spans that
    would leave ``positions`` are skipped.
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
    """Whether every span of ``spans`` around ``t`` fits inside ``positions`` (all versions exist)."""
    return len(span_routes(t, positions, spans)) == len(spans)
