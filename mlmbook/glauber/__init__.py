r"""Glauber dynamics on masked LMs (chapter 5), one idea per module: the tempered ``sampler``, the
``exact`` analysis of a small frame, the ``landscape`` of :math:`-\log p`, Metropolis–Hastings
correction (``mh``), exact ``scaling`` with length, ``trajectories`` read by the toy truth, and the
chapter's ``experiments``, topic ``basins``, ``study`` rows, ``plan`` and ``figures``. Divergences
(``kl``, ``tv``) live in :mod:`mlmbook.stats`.
"""
from .exact import (
                    Frame,
                    escape_survival,
                    hitting_times,
                    is_reversible,
                    spectral_gap,
                    stationary,
)
from .landscape import barrier_path, critical_depth
from .mh import mh_kernel, pll_energy
from .sampler import CoupleSettings, GlauberSampler, influence
from .scaling import exact_scaling, length_frames, mixing_time, scaling_curve, support_component
from .trajectories import (
                    escape_rate,
                    growth_exponent,
                    hysteresis_labels,
                    topic_log_odds,
                    topic_posterior,
                    truth_log_probs,
)

__all__ = [
    "GlauberSampler", "CoupleSettings", "influence", "Frame", "critical_depth", "barrier_path",
    "hitting_times", "escape_survival", "stationary", "spectral_gap", "is_reversible", "mh_kernel",
    "pll_energy", "mixing_time", "length_frames", "support_component", "scaling_curve",
    "exact_scaling", "hysteresis_labels", "truth_log_probs", "topic_posterior", "topic_log_odds",
    "escape_rate", "growth_exponent",
]
