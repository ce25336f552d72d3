r"""Mixing against sentence length without sampling noise: exact chains on frames of growing length.

A frame over a sentence of :math:`n` tokens whose :math:`m = n - 1` free sites each range over two
words (the sentence's own and its most likely rival under the truth) has :math:`2^m` states, few
enough up to :math:`n \approx 11` to write the chain's transition matrix down. Then the relaxation
time :math:`t_\text{rel} = 1/\gamma_*` (:func:`~mlmbook.glauber.exact.spectral_gap`) and the
worst-start mixing time :math:`t_\text{mix}(\varepsilon)` (:func:`mixing_time`) are exact, and
their growth with :math:`n` can be set against the coupon collector's :math:`m H_m`, the
:math:`n \log n` of the claim, with no meeting time censored by a cap.

==========================  ================================================================
:func:`mixing_time`         exact :math:`t_\text{mix}(\varepsilon)` of a small chain (all starts)
:func:`length_frames`       two-candidate frames over sentences of the toy language, by length
:func:`support_component`   the truth's states reachable from the sentence by allowed moves
:func:`scaling_curve`       exact :math:`t_\text{rel}` and :math:`t_\text{mix}` per frame and temperature
:func:`exact_growth`        the growth exponent against a size, with a bootstrap over sentences
:func:`coupon_times`        :math:`m H_m`
==========================  ================================================================
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .. import stats
from ..toy import N_SPECIAL
from .exact import Frame, spectral_gap, stationary
from .trajectories import truth_log_probs

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["mixing_time", "length_frames", "support_component", "scaling_curve", "exact_growth", "coupon_times"]


def _distance(Pt: np.ndarray, pi: np.ndarray) -> float:
    """:math:`d(t) = \\max_x \\|P^t(x, \\cdot) - \\pi\\|_\\mathrm{TV}` from the dense power ``Pt``."""
    return float(0.5 * np.abs(Pt - pi[None, :]).sum(axis=1).max())


def mixing_time(P, eps: float = 0.25, pi=None, max_steps: int = 1 << 24) -> float:
    r"""Exact worst-start mixing time :math:`t_\text{mix}(\varepsilon) = \min\{t : d(t) \le \varepsilon\}`,
    :math:`d(t) = \max_x \|P^t(x,\cdot) - \pi\|_\mathrm{TV}`, in steps.

    :math:`d` does not increase with :math:`t` (Levin & Peres, Lemma 4.11), so the powers
    :math:`P^{2^k}` are squared until :math:`d \le \varepsilon`, and the time is then found by
    bisection over products of those powers: about :math:`2\log_2 t_\text{mix}` dense products of
    :math:`S \times S` matrices (a few thousand states at most). ``inf`` beyond ``max_steps``.
    """
    P = sp.csr_matrix(P).toarray() if sp.issparse(P) else np.asarray(P, dtype=np.float64)
    pi = stationary(sp.csr_matrix(P)) if pi is None else np.asarray(pi, dtype=np.float64)
    S = len(P)
    if _distance(np.eye(S), pi) <= eps:
        return 0.0
    powers = [P]                                   # powers[k] = P^(2^k)
    while _distance(powers[-1], pi) > eps:
        if 1 << len(powers) > max_steps:
            return float("inf")
        powers.append(powers[-1] @ powers[-1])
    k = len(powers) - 1
    if k == 0:
        return 1.0
    t, current = 1 << (k - 1), powers[k - 1]       # d(current) > eps, d(current · P^(2^(k-1))) <= eps
    for j in range(k - 2, -1, -1):
        cand = current @ powers[j]
        if _distance(cand, pi) > eps:
            t, current = t + (1 << j), cand
    return float(t + 1)


def coupon_times(lengths) -> np.ndarray:
    """:math:`m H_m` for sentences of the given lengths (m = n - 1 free sites): the coupon
    collector's expected number of steps to touch every site once."""
    m_free = np.asarray(lengths) - 1
    return m_free * np.array([sum(1 / k for k in range(1, m + 1)) for m in m_free])


def length_frames(grammar, lengths, per_length: int, seed: int = 0, pool: int = 6000,
                  offset: int = N_SPECIAL) -> dict:
    r"""Frames of growing length over sentences of the toy language: ``{n: [(frame, words), ...]}``.

    For each length :math:`n`, the first ``per_length`` distinct sentences of that length among
    ``pool`` samples; every position but the final token is free, over two candidates: the
    sentence's word and the word the truth finds most likely there in its place,
    :math:`\arg\max_{v \ne x_i} p(v \mid x_{\setminus i})` (exact conditionals). State 0 is the sentence.
    Token ids are ``offset`` + word ids (the toy tokenizer's).
    """
    rng_seed = seed
    by_len: dict = {int(n): [] for n in lengths}
    seen = set()
    for s in grammar.sample(pool, seed=rng_seed):
        n = len(s.words)
        if n in by_len and len(by_len[n]) < per_length and tuple(s.words) not in seen:
            seen.add(tuple(s.words))
            by_len[n].append(list(s.words))
    out = {}
    for n, sentences in by_len.items():
        if len(sentences) < per_length:
            raise ValueError(f"only {len(sentences)} sentences of length {n} among {pool} samples: "
                             f"raise pool or drop that length")
        frames = []
        for words in sentences:
            cond = np.asarray(grammar.conditionals(words), dtype=np.float64)        # (n, V_words)
            ids = [offset + grammar.word_id[w] for w in words]
            cands = []
            for i in range(n - 1):
                row = cond[i].copy()
                row[grammar.word_id[words[i]]] = -1.0
                cands.append([ids[i], offset + int(np.argmax(row))])
            frames.append((Frame(ids, range(n - 1), cands), words))
        out[n] = frames
    return out


def support_component(frame: Frame, logp) -> np.ndarray:
    """The states of positive probability reachable from state 0 (the sentence) by single-site moves
    between states of positive probability: where the truth's chain started at the sentence lives."""
    ok = np.isfinite(np.asarray(logp))
    rows, cols = [], []
    for a in range(len(frame.sites)):
        fam = frame.families(a)
        for u in range(fam.shape[1]):
            for v in range(fam.shape[1]):
                if u != v:
                    keep = ok[fam[:, u]] & ok[fam[:, v]]
                    rows.append(fam[keep, u]), cols.append(fam[keep, v])
    r, c = np.concatenate(rows), np.concatenate(cols)
    A = sp.coo_matrix((np.ones(len(r)), (r, c)), shape=(frame.size, frame.size))
    _, label = connected_components(A, directed=False)
    return np.flatnonzero(ok & (label == label[0]))


def _tempered(logp: np.ndarray, T: float) -> np.ndarray:
    w = np.exp((logp - logp.max()) / T)
    return w / w.sum()


def scaling_curve(grammar, frames: dict, temps, mlm: MaskedLM | None = None, eps: float = 0.25,
                  progress: bool = False) -> dict:
    r"""Exact relaxation and mixing times of the tempered chains on every frame of :func:`length_frames`.

    The truth's chain runs on :func:`support_component` (its stationary law there is
    :math:`p^{1/T}` restricted and renormalised); an MLM's chain on the whole frame (its
    conditionals give every state mass). Times are in steps.

    Returns
    -------
    dict
        ``lengths``; ``states_truth`` and ``states_mlm`` (n -> list of state counts); and for
        ``who`` in ("truth", "mlm"): ``trel_{who}`` and ``tmix_{who}``, arrays
        (len(temps), len(lengths), per_length).
    """
    lengths = sorted(frames)
    K = len(frames[lengths[0]])
    out = {"lengths": lengths, "temps": list(temps), "states_truth": {}, "states_mlm": {}}
    whos = ("truth", "mlm") if mlm is not None else ("truth",)
    for who in whos:
        for what in ("trel", "tmix"):
            out[f"{what}_{who}"] = np.zeros((len(temps), len(lengths), K))
    for a, n in enumerate(lengths):
        out["states_truth"][n], out["states_mlm"][n] = [], []
        for k, (frame, _) in enumerate(frames[n]):
            logp = truth_log_probs(grammar, frame.states())
            comp = support_component(frame, logp)
            tab_truth = [logp[frame.families(s)] for s in range(len(frame.sites))]
            out["states_truth"][n].append(len(comp))
            tab_mlm = frame.conditional_logits(mlm, progress=progress) if mlm is not None else None
            out["states_mlm"][n].append(frame.size)
            for b, T in enumerate(temps):
                Pt = frame.kernel(tab_truth, T)[comp][:, comp]
                pT = _tempered(logp[comp], T)
                out["trel_truth"][b, a, k] = 1 / spectral_gap(Pt, pT, reversible=True)
                out["tmix_truth"][b, a, k] = mixing_time(Pt, eps, pT)
                if tab_mlm is not None:
                    P = frame.kernel(tab_mlm, T)
                    pi = stationary(P)
                    out["trel_mlm"][b, a, k] = 1 / spectral_gap(P, pi)
                    out["tmix_mlm"][b, a, k] = mixing_time(P, eps, pi)
    return out


def exact_growth(x, values, level: float = stats.LEVEL, seed: int = 0) -> stats.Interval:
    r"""Growth exponent :math:`\beta` of exact times against a size, :math:`\log \bar t(x) = c + \beta\log x`
    (least squares of the log of the mean over sentences), with a percentile bootstrap over the
    sentences of each size (:func:`mlmbook.stats.bootstrap`; the units are sentences, the times
    themselves carry no noise).

    ``values`` is (sizes, sentences): the same number of sentences at every size.
    """
    v = np.asarray(values, dtype=np.float64)
    lx = np.log(np.asarray(x, dtype=np.float64))
    lx = lx - lx.mean()

    def stat(*cols):
        ly = np.log(np.stack([c.mean(axis=-1) for c in cols], axis=-1))
        return ((ly - ly.mean(axis=-1, keepdims=True)) * lx).sum(axis=-1) / (lx ** 2).sum()

    return stats.bootstrap(stat, *v, level=level, seed=seed, what="sentences per length")
