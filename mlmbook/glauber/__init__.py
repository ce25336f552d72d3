r"""Glauber dynamics on masked LMs (chapter 5), one idea per module.

==================  =====================================================================
module              idea
==================  =====================================================================
``sampler``         :class:`GlauberSampler` (many tempered chains, one batched model call per
                    step), couplings (:meth:`GlauberSampler.coupled_run`), :func:`influence`
                    (a sampled Dobrushin coefficient)
``exact``           a small :class:`Frame`: exact transition matrix, :func:`stationary`,
                    :func:`spectral_gap`, :func:`hitting_times`, :func:`escape_survival`
``landscape``       heights of :math:`-\log p`: :func:`critical_depth`, :func:`basin_barrier`,
                    :func:`barrier_path` (the states over a barrier and its saddle)
``mh``              Metropolis–Hastings-corrected Glauber dynamics (Goyal et al. 2022) on a
                    frame: :func:`mh_kernel`, :func:`pll_energy`
``scaling``         exact mixing against length: :func:`mixing_time`, frames of growing
                    length, exact relaxation and mixing times, their growth exponent
``trajectories``    reading chains: autocorrelation, basins, censored escape times and rates,
                    Arrhenius and growth-exponent fits as :class:`mlmbook.stats.Interval`\ s,
                    coupling tail bounds, and the toy truth's view of states (log p, topic
                    posterior, topic probe)
``experiments``     chapter 5's analyses as functions: rectangle pairs, the chapter's frame and
                    its sweep over temperatures (plain and MH chains), the coupling grid,
                    growth exponents, the influence crossing
``basins``          chapter 5's topic basins: exact escapes in three worlds, the ladder's fit,
                    the MLM's KL on the barrier's path, a trajectory over the whole vocabulary
``study``           the rows that answer chapter 5's primary questions (declared in the chapter)
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
                    relaxation_time,
                    simulate_escapes,
                    spectral_gap,
                    state_index,
                    state_space,
                    stationary,
)
from .landscape import BarrierPath, barrier_path, basin_barrier, critical_depth
from .mh import mh_kernel, pll_energy
from .sampler import Coupling, GlauberSampler, influence
from .scaling import coupon_times, exact_scaling, length_frames, mixing_time, scaling_curve, support_component
from .trajectories import (
                    arrhenius_fit,
                    basin_occupancy,
                    censored_quantile,
                    escape_counts,
                    escape_rate,
                    escape_times,
                    growth_exponent,
                    hamming_autocorrelation,
                    hysteresis_labels,
                    tail_bound,
                    topic_log_odds,
                    topic_posterior,
                    topic_word_log_odds,
                    truth_log_probs,
                    truth_topic_scores,
)

__all__ = [
    "GlauberSampler", "Coupling", "influence",
    "Frame", "state_space", "state_index", "exact_transition_matrix", "critical_depth",
    "basin_barrier", "barrier_path", "BarrierPath",
    "hitting_times", "escape_survival", "simulate_escapes", "stationary", "spectral_gap",
    "relaxation_time", "is_reversible", "mh_kernel", "pll_energy",
    "mixing_time", "length_frames", "support_component", "scaling_curve", "exact_scaling", "coupon_times",
    "censored_quantile", "hamming_autocorrelation", "basin_occupancy", "escape_times", "hysteresis_labels",
    "truth_log_probs", "topic_posterior", "truth_topic_scores", "topic_word_log_odds", "topic_log_odds",
    "escape_counts", "escape_rate", "arrhenius_fit", "growth_exponent", "tail_bound",
]
