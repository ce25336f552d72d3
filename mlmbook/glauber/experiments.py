r"""The analyses of chapter 5, one function per experiment, so that the chapter shows their idea.

==========================  ================================================================
function                    what it computes
==========================  ================================================================
:func:`rectangle_pairs`     random and adjacent pairs of positions for the rectangle test
:func:`truth_rectangles`    the truth's Δ on the same rectangles (the control)
:func:`real_model_frame`    a frame for a real model: single-piece words and their top rivals
:func:`frame_sweep`         stationary law, relaxation time, reversibility of a frame's
                            chain over temperatures, and (with the truth) its distances to
                            :math:`p` and :math:`p_T`
:func:`arrhenius_slope`     slope of :math:`\log t_\text{rel}` against :math:`1/T`
:func:`coupling_grid`       median meeting times and influence over lengths × temperatures
:func:`growth_exponents`    the growth exponent of meeting times against :math:`m H_m`
:func:`influence_crossing`  where the influence estimate crosses 1
:func:`threshold_verdict`   how that crossing moves with length
==========================  ================================================================

Each returns plain arrays and dicts; the chapter records the numbers its prose cites.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import torch

from .. import stats
from ..consistency import rectangle_deltas
from .exact import Frame, is_reversible, spectral_gap, stationary
from .sampler import GlauberSampler, influence
from .trajectories import SlopeFit, censored_quantile, loglog_slope, side_of

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["rectangle_pairs", "truth_rectangles", "real_model_frame", "FrameSweep", "frame_sweep",
           "arrhenius_slope", "Grid", "coupling_grid", "growth_exponents", "influence_crossing",
           "threshold_verdict"]


def rectangle_pairs(sentences, rng: np.random.Generator, per_sentence: int = 2) -> dict:
    """Pairs of positions to test, per sentence: ``per_sentence`` random and adjacent ones.

    The final token (the period) is never tested. Returns ``{"random": (k, 3), "adjacent": (k, 3)}``
    integer arrays of rows ``(sentence, i, j)`` with ``i < j``.
    """
    pairs = {"random": [], "adjacent": []}
    for k, x in enumerate(sentences):
        m = len(x) - 1
        for _ in range(per_sentence):
            i, j = sorted(rng.choice(m, 2, replace=False))
            pairs["random"].append((k, i, j))
            i = int(rng.integers(m - 1))
            pairs["adjacent"].append((k, i, i + 1))
    return {kind: np.array(p) for kind, p in pairs.items()}


def truth_rectangles(truth: MaskedLM, sentences, pairs: dict, rect: dict, n_sentences: int) -> dict:
    """The truth's Δ on the MLM's rectangles of the first ``n_sentences`` sentences.

    ``rect[kind]`` is the MLM's :class:`mlmbook.consistency.Rectangles` for ``pairs[kind]``. A
    rectangle with an impossible cell has Δ = nan for the truth. Returns ``{kind: deltas}``.
    """
    out = {}
    for kind, p in pairs.items():
        r, sub = rect[kind], p[:, 0] < n_sentences
        with np.errstate(invalid="ignore"):
            out[kind] = rectangle_deltas(truth, [sentences[k] for k in p[sub, 0]], p[sub, 1], p[sub, 2],
                                         r.a[sub], r.a2[sub], r.b[sub], r.b2[sub])
    return out


def real_model_frame(lm: MaskedLM, words: list, n_sites: int = 4, rivals: int = 5):
    """A frame for a real model: the sentence's single-piece words, each over itself and its rivals.

    Returns ``(template, sites, candidates)``: the token ids of ``words``, up to ``n_sites`` free
    positions (the first token positions when most words split into pieces), and per site the
    frame's own token followed by the model's ``rivals`` most likely other tokens there.
    """
    template, pieces = lm.encode_words(words)
    sites = [p[0] for p in pieces[:-1] if len(p) == 1][:n_sites]
    if len(sites) < 3:
        sites = list(range(min(n_sites, len(template) - 1)))
    cands = []
    for i in sites:
        row = torch.tensor(template)[None].clone()
        row[0, i] = lm.mask_id
        top = torch.argsort(lm.logits(row, [[i]])[0, 0], descending=True).tolist()
        cands.append([template[i]] + [v for v in top if v != template[i]][:rivals])
    return template, sites, cands


class FrameSweep(NamedTuple):
    """A frame's chains over temperatures (lists indexed like ``T``).

    ``pi_mlm``, ``trel_mlm``, ``reversible_mlm``: the MLM chain's stationary law, relaxation time
    (steps) and reversibility; ``net_flow``: the share of its stationary flow at T = 1 that
    circulates. With the truth (else empty lists): ``p_T`` (the tempered truth on the frame),
    ``trel_truth``, ``machinery_tv`` (TV between the truth chain's stationary law and ``p_T``,
    the check of the machinery), ``tv_T`` = TV(π, p_T), ``tv_1`` = TV(π, p), ``kl_T`` = KL(p_T‖π),
    ``ungrammatical`` (π's mass off the truth's support).
    """
    T: list
    pi_mlm: list
    trel_mlm: list
    reversible_mlm: list
    net_flow: float
    p_T: list
    trel_truth: list
    machinery_tv: list
    tv_T: list
    tv_1: list
    kl_T: list
    ungrammatical: list


def _tempered(logp: np.ndarray, support: np.ndarray, T: float) -> np.ndarray:
    p = np.where(support, np.exp((logp - logp[support].max()) / T), 0.0)
    return p / p.sum()


def frame_sweep(frame: Frame, tab_mlm, temps: list, logp=None, tab_truth=None) -> FrameSweep:
    """Exact analysis of the frame's MLM chain (and the truth's, given ``logp`` and ``tab_truth``).

    Parameters
    ----------
    frame : Frame
    tab_mlm : list of arrays
        ``frame.conditional_logits(lm)``.
    temps : list of float
        Must contain 1.0 (the net flow is read there).
    logp : (S,) array, optional
        The truth's exact log-probabilities of the frame's states (``-inf`` off its support).
    tab_truth : list of arrays, optional
        ``frame.conditional_logits(truth)``.
    """
    out = {k: [] for k in FrameSweep._fields if k not in ("T", "net_flow")}
    net = float("nan")
    if logp is not None:
        support = np.isfinite(logp)
        p1 = _tempered(logp, support, 1.0)
    for T in temps:
        P = frame.kernel(tab_mlm, T)
        pi = stationary(P)
        out["pi_mlm"].append(pi)
        out["trel_mlm"].append(1 / spectral_gap(P, pi))
        out["reversible_mlm"].append(is_reversible(P, pi))
        if T == 1.0:
            flow = (P.multiply(pi[:, None])).tocsr()
            flow.setdiag(0)
            net = float(0.5 * abs(flow - flow.T).sum() / flow.sum())
        if logp is None:
            continue
        pT = _tempered(logp, support, T)
        Pt = frame.kernel(tab_truth, T)
        out["machinery_tv"].append(stats.tv(stationary(Pt), pT))
        keep = np.flatnonzero(support)                      # the truth's chain lives on its support
        out["trel_truth"].append(1 / spectral_gap(Pt[keep][:, keep], pT[keep], reversible=True))
        out["p_T"].append(pT)
        out["tv_T"].append(stats.tv(pi, pT))
        out["tv_1"].append(stats.tv(pi, p1))
        out["kl_T"].append(stats.kl(pT, pi))
        out["ungrammatical"].append(float(pi[~support].sum()))
    return FrameSweep(T=list(temps), net_flow=net, **out)


def arrhenius_slope(temps, trel, n_low: int = 3) -> float:
    r"""Least-squares slope of :math:`\log t_\text{rel}` against :math:`1/T` over the ``n_low``
    lowest temperatures (the first ``n_low`` entries of ``temps``, which must be ascending)."""
    inv = 1 / np.asarray(temps, dtype=float)
    return float(np.polyfit(inv[:n_low], np.log(np.asarray(trel)[:n_low]), 1)[0])


class Grid(NamedTuple):
    """Coupling grid over ``lengths`` × ``temps``.

    ``tau``: median meeting time in sweeps (inf where censored); ``met_share``: share of pairs
    that met; ``pair_times[a][b]``: (steps, censored) of every pair of a cell; ``alpha``: the
    influence estimate per cell.
    """
    lengths: list
    temps: list
    tau: np.ndarray
    met_share: np.ndarray
    pair_times: list
    alpha: np.ndarray


def coupling_grid(lm: MaskedLM, by_len: dict, lengths: list, temps: list, n_pairs: int, cap: int,
                  influence_sentences: int, seed: int = 0, progress: bool = True) -> Grid:
    """Maximal couplings of pairs of sentences of each length at each temperature.

    For each length ``n`` the first ``2 n_pairs`` sentences of ``by_len[n]`` form ``n_pairs`` start
    pairs, run for at most ``cap`` sweeps (the final token stays); the influence is estimated on
    the first ``influence_sentences`` of them (random substitutes).
    """
    tau = np.full((len(lengths), len(temps)), np.inf)
    pair_times = [[None] * len(temps) for _ in lengths]
    met_share = np.zeros_like(tau)
    alpha = np.zeros_like(tau)
    for a, n in enumerate(lengths):
        pool = torch.stack(by_len[n][: 2 * n_pairs])
        A, B = pool[:n_pairs].repeat(len(temps), 1), pool[n_pairs:].repeat(len(temps), 1)
        sampler = GlauberSampler(lm, temperature=np.repeat(temps, n_pairs), frozen=[n - 1], seed=seed + n)
        res = sampler.coupled_run(A, B, max_steps=cap * (n - 1), coupling="maximal", freeze_met=True,
                                  progress=progress)
        for b in range(len(temps)):
            sl = slice(b * n_pairs, (b + 1) * n_pairs)
            tau[a, b] = censored_quantile(res.times[sl], res.censored[sl]) / (n - 1)
            met_share[a, b] = 1 - res.censored[sl].mean()
            pair_times[a][b] = (res.times[sl].astype(float), res.censored[sl])
        alpha[a] = influence(lm, pool[:influence_sentences], temps, frozen=[n - 1],
                             substitutes="random", seed=seed).mean(axis=0)
    return Grid(list(lengths), list(temps), tau, met_share, pair_times, alpha)


def coupon_times(lengths) -> np.ndarray:
    """:math:`m H_m` for sentences of the given lengths (m = n - 1 free sites): the coupon
    collector's expected number of steps to touch every site once."""
    m_free = np.array(lengths) - 1
    return m_free * np.array([sum(1 / k for k in range(1, m + 1)) for m in m_free])


def growth_exponents(grid: Grid, cutoff: float, n_boot: int = 500, seed: int = 0):
    r"""Growth exponent β of the median meeting time against :math:`m H_m`, per temperature.

    Returns ``(fits, sides, ratio)``: a :class:`SlopeFit` per temperature (bootstrap interval
    over the pairs), its side of ``cutoff`` ("below", "above" or "indistinguishable"), and the
    meeting time in steps divided by :math:`m H_m` per cell (flat in n for n log n mixing).
    """
    coupon = coupon_times(grid.lengths)
    m_free = np.array(grid.lengths) - 1
    ratio = grid.tau * m_free[:, None] / coupon[:, None]
    fits: list[SlopeFit] = []
    for b in range(len(grid.temps)):
        cells = [grid.pair_times[a][b] for a in range(len(grid.lengths))]
        fits.append(loglog_slope(coupon, [c[0] for c in cells], [c[1] for c in cells],
                                 n_boot=n_boot, seed=seed))
    return fits, [side_of(f, cutoff) for f in fits], ratio


def influence_crossing(row, temps) -> float | None:
    """Lowest temperature above which the influence stays below 1 (log-interpolated).

    None when it is below 1 on the whole grid (no crossing seen); inf when it is not below 1
    even at the hottest temperature.
    """
    below = np.asarray(row) < 1
    if below.all():
        return None
    if not below[-1]:
        return float("inf")
    k = len(row) - 1
    while k > 0 and below[k - 1]:
        k -= 1
    t0, t1, y0, y1 = math.log(temps[k - 1]), math.log(temps[k]), row[k - 1], row[k]
    return float(math.exp(t0 + (1 - y0) * (t1 - t0) / (y1 - y0)))


def threshold_verdict(crossings) -> tuple[str, str]:
    """How the influence threshold moves with length: ``(kind, sentence)``.

    kind is "unseen" (crossed at fewer than two lengths), "stable" (all crossings within a
    factor 1.25), "levelling" (the two longest lengths within a factor 1.2) or "rising".
    """
    seen = [t for t in crossings if t is not None and np.isfinite(t)]
    if len(seen) < 2:
        return "unseen", "is crossed at too few lengths to say how it moves"
    if max(seen) / min(seen) <= 1.25:
        return "stable", "stays put as the sentences grow, which is what a phase transition would do"
    if seen[-1] / seen[-2] <= 1.2:
        return "levelling", (f"rises with length, from T ≈ {seen[0]:.1f} to T ≈ {seen[-1]:.1f}, but by "
                             f"less than a factor 1.2 between the two longest lengths: a threshold that "
                             f"may settle as sentences grow, as a phase transition's would, though "
                             f"lengths this short cannot tell")
    return "rising", ("keeps rising with length, which looks more like a smooth crossover than a "
                      "phase transition")
