r"""The analyses of chapter 5, one function per experiment, so that the chapter shows their idea.

Each returns plain arrays, dicts and :class:`~mlmbook.stats.Interval`\ s; the chapter records the
numbers its prose cites (its primary questions are answered through :mod:`mlmbook.glauber.study`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import torch

from .. import stats
from .exact import Frame, is_reversible, spectral_gap, stationary
from .mh import mh_kernel, pll_energy
from .sampler import CoupleSettings, GlauberSampler, influence
from .study import coupon
from .trajectories import growth_exponent, truth_log_probs

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["rectangle_pairs", "chapter_frame", "FrameSweep", "frame_sweep", "law_quality",
           "arrhenius_slopes", "Grid", "GridRuns", "coupling_grid", "growth_exponents",
           "influence_crossing"]


def rectangle_pairs(sentences, rng: np.random.Generator) -> dict:
    """Pairs of positions to test, per sentence: two random and two adjacent ones, never the final
    token (the period). Returns ``{"random": (k, 3), "adjacent": (k, 3)}`` integer arrays of rows
    ``(sentence, i, j)`` with ``i < j``; row ``r`` of both comes from the same sentence."""
    pairs = {"random": [], "adjacent": []}
    for k, x in enumerate(sentences):
        m = len(x) - 1
        for _ in range(2):
            i, j = sorted(rng.choice(m, 2, replace=False))
            pairs["random"].append((k, i, j))
            i = int(rng.integers(m - 1))
            pairs["adjacent"].append((k, i, i + 1))
    return {kind: np.array(p) for kind, p in pairs.items()}


def chapter_frame(lm: MaskedLM, words: list, slot_words: list) -> Frame:
    """The chapter's frame over ``words`` (a five-token sentence with its period): its determiner,
    subject, verb and object (positions 0, 1, 2, 4) range over ``slot_words``, one word list per
    slot, when the model reads each of those words, and the sentence's, as one piece. Otherwise up
    to four single-piece words (the first four positions when most words split into pieces) range
    over their own token and the model's five most likely other tokens there."""
    template, pieces = lm.encode_words(words)
    enc = [lm.encode_words([w]) for ws in slot_words for w in ws]
    if len(template) == len(words) and all(len(ids) == 1 for ids, _ in enc):
        it = iter(ids[0] for ids, _ in enc)
        return Frame(template, [0, 1, 2, 4], [[next(it) for _ in ws] for ws in slot_words])
    sites = [p[0] for p in pieces[:-1] if len(p) == 1][:4]
    if len(sites) < 3:
        sites = list(range(min(4, len(template) - 1)))
    cands = []
    for i in sites:
        row = torch.tensor(template)[None].clone()
        row[0, i] = lm.mask_id
        top = torch.argsort(lm.logits(row, [[i]])[0, 0], descending=True).tolist()
        cands.append([template[i]] + [v for v in top if v != template[i]][:5])
    return Frame(template, sites, cands)


@dataclass(frozen=True)
class FrameSweep:
    """A frame's chains over temperatures (lists indexed like ``T``): ``pi_mlm``, ``trel_mlm``,
    ``reversible_mlm``: the plain MLM chain's stationary law, relaxation time (steps) and
    reversibility; ``net_flow``: the share of its stationary flow at T = 1 that circulates;
    ``residual``: :math:`\\|\\pi P - \\pi\\|_1` of its stationary law. ``pi_mh``, ``trel_mh``,
    ``mh_exact_tv``: the MH-corrected chain (energy: the MLM's pseudo-log-likelihood on the frame):
    its stationary law, :math:`e^{-E/T}/Z` exactly, its relaxation time, and :math:`\\|\\pi P -
    \\pi\\|_1` of that law under its kernel (0 when it is stationary). With the truth (else empty
    lists): ``p_T`` (the tempered truth on the frame), ``trel_truth``, ``machinery_tv`` (TV between
    the truth chain's stationary law and ``p_T``), ``mh_truth_tv`` (:math:`\\|p_T P - p_T\\|_1` for
    the MH chain of the truth, :math:`E = -\\log p`, on its support), ``tv_T`` = TV(π, p_T),
    ``tv_mh_T`` = TV(π_MH, p_T), ``ungrammatical`` (π's mass off the truth's support), and
    ``quality`` / ``quality_mh`` / ``quality_truth``: :func:`law_quality` of π, π_MH, p_T; ``logp``:
    the truth's exact log p of the states (None without the truth)."""
    T: list
    logp: np.ndarray | None
    pi_mlm: list
    trel_mlm: list
    reversible_mlm: list
    net_flow: float
    residual: list
    pi_mh: list
    trel_mh: list
    mh_exact_tv: list
    p_T: list
    trel_truth: list
    machinery_tv: list
    mh_truth_tv: list
    tv_T: list
    tv_mh_T: list
    ungrammatical: list
    quality: list
    quality_mh: list
    quality_truth: list


def _residual(P, pi) -> float:
    """:math:`\\|\\pi P - \\pi\\|_1`: 0 exactly when ``pi`` is stationary for ``P``."""
    return float(np.abs(P.T @ pi - pi).sum())


def law_quality(pi, logp) -> dict:
    r"""What a law on the frame writes, exactly: ``grammatical`` (its mass on the truth's support),
    ``logp`` (:math:`\mathbb E_\pi[\log p \mid \text{grammatical}]`, nats) and ``effective``
    (:math:`e^{H(\pi)}`, the effective number of distinct sentences it writes; 1 for a law stuck on
    one sentence, the frame's size for the uniform law)."""
    pi = np.asarray(pi, dtype=np.float64)
    ok = np.isfinite(logp)
    g = float(pi[ok].sum())
    nz = pi > 0
    return dict(grammatical=g, logp=float(pi[ok] @ logp[ok] / g) if g > 0 else None,
                effective=float(np.exp(-(pi[nz] * np.log(pi[nz])).sum())))


def frame_sweep(frame: Frame, tab_mlm, temps: list, truth=None) -> FrameSweep:
    r"""Exact analysis of the frame's plain and MH-corrected MLM chains (and, given the toy
    language's ``truth`` oracle, the truth's chain and the exact log-probabilities of the frame's
    states).

    Parameters
    ----------
    frame : Frame
    tab_mlm : list of arrays
        ``frame.conditional_logits(lm)`` (log-probabilities: they also give the MH energy).
    temps : list of float
        Must contain 1.0 (the net flow is read there).
    truth : TruthOracle, optional
        ``load_mlm("truth")``: its conditionals on the frame, and ``truth.grammar``'s exact
        :math:`\log p`.
    """
    out = {f.name: [] for f in fields(FrameSweep) if f.name not in ("T", "net_flow", "logp")}
    net = float("nan")
    energy = pll_energy(frame, tab_mlm)
    logp = None if truth is None else truth_log_probs(truth.grammar, frame.states())
    tab_truth = None if truth is None else frame.conditional_logits(truth)
    support = None if logp is None else np.isfinite(logp)
    for T in temps:
        P = frame.kernel(tab_mlm, T)
        pi = stationary(P)
        out["pi_mlm"].append(pi)
        out["residual"].append(_residual(P, pi))
        out["trel_mlm"].append(1 / spectral_gap(P, pi))
        out["reversible_mlm"].append(is_reversible(P, pi))
        pi_mh = np.exp(-(energy - energy.min()) / T)
        pi_mh /= pi_mh.sum()
        M = mh_kernel(frame, tab_mlm, energy, T)  # its stationary law is pi_mh exactly (checked)
        out["mh_exact_tv"].append(_residual(M, pi_mh))
        out["pi_mh"].append(pi_mh)
        gap = spectral_gap(M, pi_mh, reversible=True)
        out["trel_mh"].append(1 / gap if gap > 1e-13 else float("inf"))  # beyond double precision
        if T == 1.0:
            flow = (P.multiply(pi[:, None])).tocsr()
            flow.setdiag(0)
            net = float(0.5 * abs(flow - flow.T).sum() / flow.sum())
        if logp is None:
            continue
        pT = np.where(support, np.exp((logp - logp[support].max()) / T), 0.0)
        pT /= pT.sum()
        Pt = frame.kernel(tab_truth, T)
        out["machinery_tv"].append(stats.tv(stationary(Pt), pT))
        keep = np.flatnonzero(support)                      # the truth's chains live on its support
        Mt = mh_kernel(frame, tab_truth, -logp, T)
        out["mh_truth_tv"].append(_residual(Mt[keep][:, keep], pT[keep]))
        out["trel_truth"].append(1 / spectral_gap(Pt[keep][:, keep], pT[keep], reversible=True))
        out["p_T"].append(pT)
        out["tv_T"].append(stats.tv(pi, pT))
        out["tv_mh_T"].append(stats.tv(pi_mh, pT))
        out["ungrammatical"].append(float(pi[~support].sum()))
        out["quality"].append(law_quality(pi, logp))
        out["quality_mh"].append(law_quality(pi_mh, logp))
        out["quality_truth"].append(law_quality(pT, logp))
    return FrameSweep(T=list(temps), net_flow=net, logp=logp, **out)


def arrhenius_slopes(temps, trel) -> np.ndarray:
    r"""Local Arrhenius slopes :math:`\Delta \log t_\text{rel} / \Delta(1/T)` between successive
    temperatures (``temps`` ascending): entry ``k`` is the slope between ``temps[k]`` and
    ``temps[k + 1]``. As :math:`T \to 0` they tend to the critical depth :math:`\Gamma`."""
    inv = 1 / np.asarray(temps, dtype=float)
    lt = np.log(np.asarray(trel, dtype=float))
    return (lt[:-1] - lt[1:]) / (inv[:-1] - inv[1:])


class Grid(NamedTuple):
    """Coupling grid over ``lengths`` × ``temps``: ``tau``, the Kaplan–Meier median meeting time in
    sweeps per cell (an :class:`~mlmbook.stats.Interval`; a lower bound, "more than the cap", where
    more than half the pairs had not met); ``pair_times[a][b]``: (steps, censored) of every pair of
    a cell; ``alpha``: the influence estimate per cell."""
    lengths: list
    temps: list
    tau: list
    pair_times: list
    alpha: np.ndarray


@dataclass(frozen=True)
class GridRuns:
    """What :func:`coupling_grid` runs per cell: ``pairs`` start pairs, each for at most ``cap``
    sweeps, the influence on ``influence_sentences`` sentences, from ``seed``."""
    pairs: int
    cap: int
    influence_sentences: int
    seed: int = 0


def coupling_grid(lm: MaskedLM, by_len: dict, lengths: list, temps: list, runs: GridRuns,
                  level: float = stats.LEVEL) -> Grid:
    """Maximal couplings of pairs of sentences of each length at each temperature.

    For each length ``n`` the first ``2 runs.pairs`` sentences of ``by_len[n]`` form
    ``runs.pairs`` start pairs (the final token stays); the influence is estimated on the first
    ``runs.influence_sentences`` of them (random substitutes).
    """
    n_pairs, cap, seed = runs.pairs, runs.cap, runs.seed
    tau = [[None] * len(temps) for _ in lengths]
    pair_times = [[None] * len(temps) for _ in lengths]
    alpha = np.zeros((len(lengths), len(temps)))
    for a, n in enumerate(lengths):
        pool = torch.stack(by_len[n][: 2 * n_pairs])
        A, B = pool[:n_pairs].repeat(len(temps), 1), pool[n_pairs:].repeat(len(temps), 1)
        sampler = GlauberSampler(lm, temperature=np.repeat(temps, n_pairs), frozen=[n - 1], seed=seed + n)
        res = sampler.coupled_run(A, B, max_steps=cap * (n - 1), coupling="maximal",
                                  settings=CoupleSettings(freeze_met=True), progress=True)
        for b in range(len(temps)):
            sl = slice(b * n_pairs, (b + 1) * n_pairs)
            t, c = res.times[sl].astype(float), res.censored[sl]
            tau[a][b] = stats.censored_median(t / (n - 1), c, level=level, cap=cap)
            pair_times[a][b] = (t, c)
        alpha[a] = influence(lm, pool[:runs.influence_sentences], temps, frozen=[n - 1],
                             substitutes="random", seed=seed).mean(axis=0)
    return Grid(list(lengths), list(temps), tau, pair_times, alpha)


def growth_exponents(grid: Grid, level: float = stats.LEVEL, seed: int = 0):
    r"""Growth exponent β of the median meeting time against :math:`m H_m`, per temperature.

    Returns ``(intervals, ratio)``: an :class:`~mlmbook.stats.Interval` per temperature
    (:func:`~mlmbook.glauber.trajectories.growth_exponent`: undefined where a median is censored),
    and the median meeting time in steps divided by :math:`m H_m` per cell (flat in n for
    n log n mixing; NaN where the median is censored).
    """
    m_free = np.array(grid.lengths) - 1
    mh = coupon(m_free)
    med = np.array([[np.nan if iv.lower_bound else iv.estimate for iv in row] for row in grid.tau])
    ratio = med * m_free[:, None] / mh[:, None]
    names = [f"n = {n}" for n in grid.lengths]
    fits = [growth_exponent(mh, [c[0] for c in cells], [c[1] for c in cells], level=level,
                            seed=seed, names=names) for cells in zip(*grid.pair_times)]  # per T
    return fits, ratio


def influence_crossing(row, temps) -> float | None:
    """Lowest temperature above which the influence stays below 1 (log-interpolated); None when it
    is below 1 on the whole grid (no crossing seen), inf when not even at the hottest one."""
    below = np.asarray(row) < 1
    if below.all():
        return None
    if not below[-1]:
        return float("inf")
    k = len(row) - int(np.argmin(below[::-1]))  # the start of the last run below 1
    t0, t1, y0, y1 = math.log(temps[k - 1]), math.log(temps[k]), row[k - 1], row[k]
    return float(math.exp(t0 + (1 - y0) * (t1 - t0) / (y1 - y0)))
