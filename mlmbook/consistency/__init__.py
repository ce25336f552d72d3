r"""Is an MLM's family of conditionals consistent with any joint? (chapters 3 and 5)

An MLM answers :math:`q(x_i \mid x_{\text{rest}})` for many masking patterns, with no guarantee
that one joint distribution produced all the answers (Young & You 2022, *On the Inconsistencies of
Conditionals Learned by Masked Language Models*). For every joint every probe vanishes, up to float
rounding. ``ids`` may be a 2-D LongTensor or a list of 1-D sentences of different lengths.
"""
from . import corpus, dependence, noise, paper, regime
from .ensemble import (
                       disagreement_rate,
                       ensemble_curve,
                       ensemble_versions_many,
                       harsh,
                       route_versions,
)
from .order import (
                       one_pair_per_sentence,
                       order_inconsistency,
                       probe_pairs,
)
from .rectangle import FLOAT32_NOISE_FLOOR, rectangle_delta, rectangle_deltas, top2_rectangles
from .spans import ARMS, Targets, arms, span_routes, stacked
from .tracking import budget_tracking, target_budget

__all__ = [
    "rectangle_delta", "rectangle_deltas", "top2_rectangles", "FLOAT32_NOISE_FLOOR",
    "order_inconsistency", "probe_pairs", "one_pair_per_sentence", "route_versions",
    "ensemble_versions_many", "harsh", "ensemble_curve", "disagreement_rate", "ARMS", "span_routes",
    "arms", "stacked", "corpus", "dependence", "noise", "paper", "regime", "target_budget",
    "Targets", "budget_tracking",
]
