r"""Glauber dynamics on masked LMs (chapter 5), one idea per module.

==================  =====================================================================
module              idea
==================  =====================================================================
``sampler``         :class:`GlauberSampler` (tempered chains, one batched model call per step),
                    couplings, :func:`influence` (a sampled Dobrushin coefficient)
``exact``           a small :class:`Frame`: exact transition matrix, stationary law, spectral
                    gap, hitting times and the law of escape times
``landscape``       heights of :math:`-\log p`: critical depth, barriers and the path over them
``mh``              Metropolis–Hastings-corrected Glauber dynamics (Goyal et al. 2022) on a frame
``scaling``         exact mixing times on frames of growing length
``trajectories``    the toy truth's view of states (log p, topic posterior, topic probe),
                    basins by hysteresis, censored escape rates, growth exponents
``experiments``     chapter 5's analyses as functions (the frame, its temperature sweep, the
                    coupling grid)
``basins``          chapter 5's topic basins: exact escapes in three worlds, the ladder's fit
``study``           the rows that answer chapter 5's primary questions
``plan``            how much chapter 5 measures in each profile
``figures``         chapter 5's figures
==================  =====================================================================

Divergences (``kl``, ``tv``) live in :mod:`mlmbook.stats`.
"""
from .exact import (
                    Frame,
                    escape_survival,
                    exact_transition_matrix,
                    hitting_times,
                    is_reversible,
                    spectral_gap,
                    stationary,
)
from .landscape import BarrierPath, barrier_path, critical_depth
from .mh import mh_kernel, pll_energy
from .sampler import CoupleSettings, Coupling, GlauberSampler, influence
from .scaling import exact_scaling, length_frames, mixing_time, scaling_curve, support_component
from .trajectories import (
                    escape_rate,
                    growth_exponent,
                    hysteresis_labels,
                    topic_log_odds,
                    topic_posterior,
                    truth_log_probs,
                    truth_topic_scores,
)

__all__ = [
    "GlauberSampler", "Coupling", "CoupleSettings", "influence",
    "Frame", "exact_transition_matrix", "critical_depth",
    "barrier_path", "BarrierPath",
    "hitting_times", "escape_survival", "stationary", "spectral_gap",
    "is_reversible", "mh_kernel", "pll_energy",
    "mixing_time", "length_frames", "support_component", "scaling_curve", "exact_scaling",
    "hysteresis_labels", "truth_log_probs", "topic_posterior", "truth_topic_scores",
    "topic_log_odds", "escape_rate", "growth_exponent",
]
