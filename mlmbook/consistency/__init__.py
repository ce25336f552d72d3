r"""Is an MLM's family of conditionals consistent with any joint? (chapters 3 and 5)

An MLM answers :math:`q(x_i \mid x_{\text{rest}})` for many masking patterns, with no guarantee
that one joint distribution produced all the answers (Young & You 2022, *On the
Inconsistencies of Conditionals Learned by Masked Language Models*). For every joint every probe
vanishes, up to float rounding. ``ids`` may be a 2-D LongTensor or a list of 1-D sentences of
different lengths. Modules: :mod:`.rectangle` (the rectangle test), :mod:`.order` (the chain rule in
two orders), :mod:`.ensemble` and :mod:`.spans` (the Ensemble of Conditionals), :mod:`.tracking`
(rank correlations), :mod:`.regime` (the regime map), :mod:`.corpus`, :mod:`.dependence`,
:mod:`.noise`, :mod:`.paper` and :mod:`.figures` (imported on its own).
"""
from . import corpus, dependence, noise, paper, regime
from .ensemble import (
                       Curve,
                       Versions,
                       combine,
                       disagreement_rate,
                       ensemble_curve,
                       ensemble_versions,
                       ensemble_versions_many,
                       harsh,
                       route_versions,
)
from .order import (
                       Flips,
                       OrderInconsistency,
                       PairProbes,
                       chain_rule_grids,
                       one_pair_per_sentence,
                       order_inconsistency,
                       pair_flips,
                       preference_flips,
                       probe_pairs,
)
from .rectangle import FLOAT32_NOISE_FLOOR, Rectangles, rectangle_delta, rectangle_deltas, top2_rectangles
from .spans import ARMS, SPANS, Targets, arms, fits_spans, span_routes, stacked
from .tracking import budget_tracking, spearman, target_budget

__all__ = [
    "rectangle_delta", "rectangle_deltas", "top2_rectangles", "Rectangles",
    "FLOAT32_NOISE_FLOOR", "order_inconsistency", "OrderInconsistency", "preference_flips", "Flips",
    "chain_rule_grids", "probe_pairs", "PairProbes", "pair_flips", "one_pair_per_sentence",
    "route_versions", "ensemble_versions", "ensemble_versions_many", "harsh", "combine",
    "ensemble_curve", "Curve", "Versions", "disagreement_rate",
    "SPANS", "ARMS", "span_routes", "fits_spans", "arms", "stacked",
    "corpus", "dependence", "noise", "paper", "regime", "target_budget", "Targets",
    "spearman", "budget_tracking",
]
