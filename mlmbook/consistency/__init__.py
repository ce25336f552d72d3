r"""Is an MLM's family of conditionals consistent with any joint? (chapters 3 and 5)

An MLM answers :math:`q(x_i \mid x_{\text{rest}})` for many masking patterns, with no guarantee
that one joint distribution produced all the answers (Young & You 2022, *On the
Inconsistencies of Conditionals Learned by Masked Language Models*). For every joint (e.g. the
truth oracle) every probe below vanishes, up to float rounding. All functions take a
:class:`~mlmbook.models.base.MaskedLM`; ``ids`` may be a 2-D LongTensor or a list of 1-D
sentences of different lengths; queries go through :mod:`mlmbook.queries`.

==================  ==========================================================================
module              what
==================  ==========================================================================
:mod:`.rectangle`   the rectangle test :func:`rectangle_deltas` (stable public name), the
                    top-2 rectangles, the float32 rounding bound
:mod:`.order`       the chain rule in two orders: :func:`order_inconsistency` (the paper's
                    measure), :func:`preference_flips`, :func:`chain_rule_grids`;
                    :func:`probe_pairs` runs every pair probe in a few batched passes
:mod:`.ensemble`    the Ensemble of Conditionals along masking routes (:func:`route_versions`,
                    :func:`ensemble_versions_many`), combined and scored
:mod:`.spans`       the span routes of span-infilling models (the paper's setting)
:mod:`.tracking`    rank correlations: inconsistency against a pair-level quantity, an
                    incompatibility budget against the ensemble's gain across models
:mod:`.regime`      one model's measurements for the regime map, and their intervals
:mod:`.corpus`      chapter 3's sentences, their pairs and the ensemble's targets
:mod:`.dependence`  the truth's CMI of a pair; two kinds of pairs compared within sentences
:mod:`.noise`       the noise knob's exact floor and the models' fit
:mod:`.paper`       the paper's numbers and the last edition's span result
:mod:`.shown`       a descriptive interval recorded whole, its parts glued for the prose
:mod:`.figures`     chapter 3's figures (imported on its own: it needs matplotlib)
==================  ==========================================================================
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
from .rectangle import FLOAT32_NOISE_FLOOR, Rectangles, noise_floor, rectangle_delta, rectangle_deltas, top2_rectangles
from .spans import ARMS, SPANS, Targets, arms, fits_spans, span_routes, stacked
from .tracking import budget_tracking, pearson, rank_gap_interval, rank_interval, spearman, target_budget

__all__ = [
    "rectangle_delta", "rectangle_deltas", "top2_rectangles", "noise_floor", "Rectangles",
    "FLOAT32_NOISE_FLOOR", "order_inconsistency", "OrderInconsistency", "preference_flips", "Flips",
    "chain_rule_grids", "probe_pairs", "PairProbes", "pair_flips", "one_pair_per_sentence",
    "route_versions", "ensemble_versions", "ensemble_versions_many", "harsh", "combine",
    "ensemble_curve", "Curve", "Versions", "disagreement_rate",
    "SPANS", "ARMS", "span_routes", "fits_spans", "arms", "stacked",
    "corpus", "dependence", "noise", "paper", "regime", "target_budget", "Targets",
    "spearman", "pearson", "rank_interval", "rank_gap_interval", "budget_tracking",
]
