r"""Mixing against sentence length without sampling noise: exact chains on frames of growing
length, every position but the period over two words (the sentence's own and the truth's likeliest
rival): :math:`2^m` states for :math:`n = m + 1` tokens, few enough up to :math:`n \approx 11` for
exact relaxation and worst-start mixing times, set against the coupon collector's :math:`m H_m`
(the claim's :math:`n \log n`) with no meeting time censored by a cap.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..toy import N_SPECIAL
from .exact import Frame, spectral_gap, stationary
from .trajectories import truth_log_probs

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["mixing_time", "length_frames", "support_component", "scaling_curve", "exact_scaling",
           "STEP_LIMIT"]


STEP_LIMIT = 4096
"""Steps :func:`mixing_time` walks one at a time before it switches to repeated squaring."""


def mixing_time(P, eps: float = 0.25, pi=None, max_steps: int = 1 << 24, block: int = 512) -> float:
    r"""Exact worst-start mixing time :math:`t_\text{mix}(\varepsilon) = \min\{t : d(t) \le
    \varepsilon\}`, :math:`d(t) = \max_x \|P^t(x,\cdot) - \pi\|_\mathrm{TV}`, in steps.

    Each start's distance does not increase with :math:`t`, so :math:`t_\text{mix} = \max_x t_x`
    with :math:`t_x` the first time start :math:`x` is within :math:`\varepsilon`. The starts are
    walked forward ``block`` at a time, one sparse product per step, each dropped once within
    :math:`\varepsilon`. A chain still unmixed after :data:`STEP_LIMIT` steps is finished by
    squaring :math:`P^{2^k}` and bisecting (Levin & Peres, Lemma 4.11: :math:`d` does not
    increase). ``inf`` beyond ``max_steps``.
    """
    Ps = sp.csr_matrix(P)
    pi = stationary(Ps) if pi is None else np.asarray(pi, dtype=np.float64)
    S = Ps.shape[0]
    PT = Ps.T.tocsr()
    limit = min(max_steps, STEP_LIMIT)
    worst = 0
    for first in range(0, S, block):
        cols = np.arange(first, min(S, first + block))
        D = np.zeros((S, len(cols)))
        D[cols, np.arange(len(cols))] = 1.0
        t = 0
        while True:
            far = 0.5 * np.abs(D - pi[:, None]).sum(axis=0) > eps
            if not far.any():
                break
            if t >= limit:
                return float("inf") if limit >= max_steps else _mixing_time_squaring(Ps.toarray(), eps, pi, max_steps)
            D = PT @ D[:, far]
            t += 1
        worst = max(worst, t)
    return float(worst)


def _mixing_time_squaring(P: np.ndarray, eps: float, pi: np.ndarray, max_steps: int) -> float:
    """:func:`mixing_time` by repeated squaring of dense powers, then bisection (slow chains)."""
    powers = [P]                                   # powers[k] = P^(2^k)
    while 0.5 * np.abs(powers[-1] - pi).sum(axis=1).max() > eps:
        if 1 << len(powers) > max_steps:
            return float("inf")
        powers.append(powers[-1] @ powers[-1])
    k = len(powers) - 1  # >= 1: the walk found d(1) > eps
    t, current = 1 << (k - 1), powers[k - 1]  # d(current) > eps, d(current · P^(2^(k-1))) <= eps
    for j in range(k - 2, -1, -1):
        cand = current @ powers[j]
        if 0.5 * np.abs(cand - pi).sum(axis=1).max() > eps:
            t, current = t + (1 << j), cand
    return float(t + 1)


def length_frames(grammar, lengths, per_length, seed: int = 0, pool: int = 6000) -> dict:
    r"""Frames of growing length over sentences of the toy language: ``{n: [(frame, words), ...]}``.

    For each length :math:`n`, the first ``per_length`` distinct sentences of that length among
    ``pool`` samples (an int for every length, or a dict ``{n: count}``; the sentences of a smaller
    count are the first of a larger one); every position but the final token is free, over two
    candidates: the sentence's word and the word the truth finds most likely there in its place,
    :math:`\arg\max_{v \ne x_i} p(v \mid x_{\setminus i})` (exact conditionals). State 0 is the
    sentence. Token ids are the toy tokenizer's."""
    want = {int(n): int(per_length[n] if isinstance(per_length, dict) else per_length) for n in lengths}
    by_len: dict = {n: [] for n in want}
    seen = set()
    for s in grammar.sample(pool, seed=seed):
        n = len(s.words)
        if n in by_len and len(by_len[n]) < want[n] and tuple(s.words) not in seen:
            seen.add(tuple(s.words))
            by_len[n].append(list(s.words))
    out = {}
    for n, sentences in by_len.items():
        if len(sentences) < want[n]:
            raise ValueError(f"only {len(sentences)} sentences of length {n} among {pool} samples: "
                             f"raise pool or drop that length")
        frames = []
        for words in sentences:
            cond = np.asarray(grammar.conditionals(words), dtype=np.float64)        # (n, V_words)
            ids = [N_SPECIAL + grammar.word_id[w] for w in words]
            cands = []
            for i in range(n - 1):
                row = cond[i].copy()
                row[grammar.word_id[words[i]]] = -1.0
                cands.append([ids[i], N_SPECIAL + int(np.argmax(row))])
            frames.append((Frame(ids, range(n - 1), cands), words))
        out[n] = frames
    return out


def support_component(frame: Frame, logp) -> np.ndarray:
    """The states of positive probability reachable from state 0 (the sentence) by single-site
    moves between states of positive probability: where the truth's chain started at the sentence
    lives."""
    ok = np.isfinite(np.asarray(logp))
    rows, cols = [], []
    for a in range(len(frame.sites)):
        fam = frame.families(a)
        iu, iv = np.triu_indices(fam.shape[1], 1)
        u, v = fam[:, iu].ravel(), fam[:, iv].ravel()
        keep = ok[u] & ok[v]
        rows.append(u[keep]), cols.append(v[keep])
    r, c = np.concatenate(rows), np.concatenate(cols)
    A = sp.coo_matrix((np.ones(len(r)), (r, c)), shape=(frame.size, frame.size))
    _, label = connected_components(A, directed=False)
    return np.flatnonzero(ok & (label == label[0]))


def scaling_curve(grammar, frames: dict, temps, mlm: MaskedLM | None = None, eps: float = 0.25,
                  relaxation: bool = True) -> dict:
    r"""Exact relaxation and mixing times of the tempered chains on every frame of
    :func:`length_frames`.

    The truth's chain runs on :func:`support_component`, an MLM's on the whole frame. Times are
    in steps. One *unit* per frame (sentence), in the order of ``frames`` (lengths ascending).
    Without ``relaxation`` the relaxation times are NaN (they cost an eigensolver per chain).
    Returns ``length`` (U,) the sentence length of each unit; ``states_truth`` and ``states_mlm``
    (U,) the states each chain runs on; ``temps``; and for ``who`` in ("truth", "mlm"):
    ``trel_{who}`` and ``tmix_{who}``, arrays (len(temps), U).
    """
    units = [(n, frame) for n in sorted(frames) for frame, _ in frames[n]]
    U = len(units)
    out = {"length": np.array([n for n, _ in units]), "temps": list(temps),
           "states_truth": np.zeros(U, dtype=np.int64), "states_mlm": np.zeros(U, dtype=np.int64)}
    for who in ("truth", "mlm") if mlm is not None else ("truth",):
        out.update({f"{what}_{who}": np.zeros((len(temps), U)) for what in ("trel", "tmix")})
    for k, (_, frame) in enumerate(units):
        logp = truth_log_probs(grammar, frame.states(), chunk=128)
        comp = support_component(frame, logp)
        tab_truth = [logp[frame.families(s)] for s in range(len(frame.sites))]
        out["states_truth"][k], out["states_mlm"][k] = len(comp), frame.size
        tab_mlm = frame.conditional_logits(mlm) if mlm is not None else None
        for b, T in enumerate(temps):
            Pt = frame.kernel(tab_truth, T)[comp][:, comp]
            pT = np.exp((logp[comp] - logp[comp].max()) / T)
            pT /= pT.sum()
            out["trel_truth"][b, k] = 1 / spectral_gap(Pt, pT, reversible=True) if relaxation else np.nan
            out["tmix_truth"][b, k] = mixing_time(Pt, eps, pT)
            if tab_mlm is not None:
                P = frame.kernel(tab_mlm, T)
                pi = stationary(P)
                out["trel_mlm"][b, k] = 1 / spectral_gap(P, pi) if relaxation else np.nan
                out["tmix_mlm"][b, k] = mixing_time(P, eps, pi)
    return out


def exact_scaling(truth, mlm: MaskedLM, counts: dict, temps, seed: int = 0, pool: int = 6000) -> dict | None:
    """Chapter 5's exact scaling: :func:`length_frames` with ``counts`` sentences per length, then
    :func:`scaling_curve` of the truth's chain and ``mlm``'s (mixing times only), plus ``words``
    (the sentence of each unit). None without the toy language's ``truth`` oracle (it picks every
    rival word and gives the exact law)."""
    if truth is None:
        return None
    frames = length_frames(truth.grammar, list(counts), counts, seed=seed, pool=pool)
    out = scaling_curve(truth.grammar, frames, temps, mlm=mlm, relaxation=False)
    out["words"] = [words for n in sorted(frames) for _, words in frames[n]]
    return out
