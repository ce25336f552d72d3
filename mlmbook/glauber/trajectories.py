r"""Reading chains: the toy truth's view of chain states (exact log-probabilities, the topic
posterior and a lexical topic probe), basins by hysteresis, censored escape rates and growth
exponents."""
from __future__ import annotations

import numpy as np
import torch
from scipy.stats import chi2

from .. import stats
from ..toy import N_SPECIAL

__all__ = ["hysteresis_labels", "truth_log_probs", "topic_posterior", "truth_topic_scores",
           "topic_log_odds", "escape_rate", "growth_exponent"]


def truth_log_probs(grammar, states, chunk: int = 256) -> np.ndarray:
    r"""Exact :math:`\log p(x)` under the toy language of each state (..., n) of token ids (the toy
    tokenizer's: :data:`mlmbook.toy.N_SPECIAL` + word id); :math:`-\infty` for sentences the
    grammar cannot produce and for rows holding a special token. Batched inside passes (``chunk``
    rows each); the same number as ``grammar.log_prob(words)``.
    """
    x = torch.as_tensor(states)
    if x.shape[-1] > grammar.max_length:
        return np.full(x.shape[:-1], -np.inf)
    return truth_topic_scores(grammar, x, chunk)[0]


def truth_topic_scores(grammar, states, chunk: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """:func:`truth_log_probs` and :func:`topic_posterior` of the same states from one inside
    pass."""
    x = torch.as_tensor(states)
    words = x.to(torch.long).reshape(-1, x.shape[-1]) - N_SPECIAL
    bad = ((words < 0) | (words >= len(grammar.vocab))).any(dim=1)
    words = words.clamp(0, len(grammar.vocab) - 1)
    pcfg, n = grammar.pcfg, words.shape[1]
    E = torch.as_tensor(pcfg.emissions, dtype=torch.float64)            # (T, N, V)
    prior = torch.as_tensor(pcfg.topic_prior, dtype=torch.float64)
    Zt = np.zeros((0, len(prior)))
    for c in range(0, len(words), chunk):  # prior-weighted inside score per topic
        leaves = E[:, :, words[c:c + chunk]].permute(2, 0, 3, 1)         # (B, T, n, N)
        B, T = leaves.shape[:2]
        Z = pcfg.inside(leaves.reshape(B * T, n, -1))[n][:, 0, pcfg.start].reshape(B, T)
        Zt = np.concatenate([Zt, (Z * prior).numpy()])
    tot = Zt.sum(axis=1)
    bad = bad.numpy() | (tot <= 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        lp = np.log(tot) - np.log(grammar.length_probs.sum())
        post = Zt / tot[:, None]
    lp[bad], post[bad] = -np.inf, np.nan
    if n > grammar.max_length:
        lp[:] = -np.inf
    return lp.reshape(x.shape[:-1]), post.reshape(*x.shape[:-1], Zt.shape[1])


def topic_posterior(grammar, states, chunk: int = 256) -> np.ndarray:
    r"""Exact posterior of the latent topic, :math:`p(t \mid x) \propto \pi_t\, Z_t(x)` with
    :math:`Z_t(x)` the inside score of the sentence under topic :math:`t`'s emissions, for a grammar
    with topics (``Grammar.load("toy", topic=True)``): array (..., T). NaN for rows the grammar
    cannot produce (or holding special tokens).
    """
    return truth_topic_scores(grammar, states, chunk)[1]


def topic_log_odds(grammar, states) -> np.ndarray:
    r"""Lexical topic probe :math:`\lambda(x) = \sum_i w(x_i)` of each state (..., n), from the
    per-token evidence for topic 0 over topic 1 (a grammar with two topics)

    .. math:: w(v) = \log \frac{\sum_A E_0(A \to v)}{\sum_A E_1(A \to v)}

    over the preterminals :math:`A` that can emit :math:`v` (0 for the special tokens): positive
    leans to topic 0, negative to topic 1. Unlike the exact posterior (:func:`topic_posterior`) it
    is defined for every string, grammatical or not — what a probe along an MLM's chains needs. It
    is the posterior log-odds of a model that emits each word independently given the topic.
    """
    x = torch.as_tensor(states).numpy()
    E = np.asarray(grammar.pcfg.emissions, dtype=np.float64)
    if E.shape[0] != 2:
        raise ValueError("the lexical topic probe needs a grammar with exactly two topics")
    w = np.log(E[0].sum(axis=0)) - np.log(E[1].sum(axis=0))
    out = np.zeros(max(int(x.max()) + 1, N_SPECIAL + len(w)))
    out[N_SPECIAL:N_SPECIAL + len(w)] = w
    return out[x].sum(axis=-1)


def hysteresis_labels(score, low: float, high: float) -> np.ndarray:
    r"""Basin labels along trajectories from a probe score (R, C): 1 once the score reaches
    ``high``, 0 once it falls to ``low``, unchanged in the dead zone between (and where the score is
    NaN), so that a chain wandering into neutral states has not left its basin; an *escape* is a hit
    on the other side. At time 0 a start in the dead zone takes the nearer threshold's label."""
    s = np.asarray(score, dtype=np.float64)
    lab = np.empty(s.shape, dtype=np.int64)
    cur = np.where(np.nan_to_num(s[0], nan=(low + high) / 2) >= (low + high) / 2, 1, 0)
    for r in range(len(s)):
        cur = np.where(s[r] >= high, 1, np.where(s[r] <= low, 0, cur))
        lab[r] = cur
    return lab


def escape_rate(times, censored, level: float = stats.LEVEL) -> stats.Interval:
    r"""Mean escape time from right-censored waiting times, assuming they are exponential (the
    metastable regime: escapes are rare, memoryless events), as an :class:`~mlmbook.stats.Interval`.

    With :math:`d` escapes and total exposure :math:`S = \sum_c t_c` (escape time, or the time
    watched for a chain that never left), the maximum-likelihood mean is :math:`S/d`. The interval
    is the exact one for time-truncated exponential data, :math:`[2S/\chi^2_{1-\alpha/2}(2d+2),\;
    2S/\chi^2_{\alpha/2}(2d)]`. With no escape the mean is only bounded below: the interval's
    ``lower_bound`` is set and its estimate is that bound (never :math:`+\infty`).
    """
    t = np.asarray(times, dtype=np.float64)
    d, S = int((~np.asarray(censored, dtype=bool)).sum()), float(t.sum())
    n = len(t)
    a = (1 - level) / 2
    low = float(2 * S / chi2.ppf(1 - a, 2 * d + 2))
    how = f"censored exponential ({d} escapes of {n} chains)"
    if d == 0:
        return stats.Interval(low, low, float("inf"), level, how, n, float("nan"), lower_bound=True,
                              note=f"none of the {n} chains escaped")
    high = float(2 * S / chi2.ppf(a, 2 * d))
    return stats.Interval(S / d, low, high, level, how, n, S / d / np.sqrt(d))


def growth_exponent(x, times, censored, level: float = stats.LEVEL, seed: int = 0, names=None) -> stats.Interval:
    r"""Growth exponent :math:`\beta` of the median waiting time against a size: :math:`\log
    \operatorname{median}(\tau \mid x) = c + \beta \log x` (least squares over the sizes), with a
    percentile bootstrap over the runs (:func:`mlmbook.stats.bootstrap`).

    ``times[k]`` and ``censored[k]`` are the runs at size ``x[k]``, the same number at every size;
    censoring is at the cap only, so the median is the Kaplan–Meier one
    (:func:`mlmbook.stats.censored_median`). Where the median at some size is censored (more than
    half the runs outlast the cap) only a lower bound is known, and the exponent is **undefined** —
    never :math:`+\infty` from a cap. Bootstrap replicates whose median is censored have no
    exponent and are left out. ``names`` label the sizes in that note (default: their values).
    """
    ts = [np.asarray(t, dtype=np.float64) for t in times]
    cs = [np.asarray(c, dtype=bool) for c in censored]
    if len({len(t) for t in ts}) != 1:
        raise ValueError("growth_exponent needs the same number of runs at every size")
    names = [f"size {v:g}" for v in x] if names is None else list(names)
    for name, t, c in zip(names, ts, cs):
        med = stats.censored_median(t, c, level=level)
        if med.lower_bound:
            return stats.undefined(f"at {name} {med.note}", n=len(t), level=level)
    lx = np.log(np.asarray(x, dtype=np.float64))
    lx = lx - lx.mean()

    def stat(*arrays):
        meds = [np.quantile(np.where(c > 0.5, np.inf, t), 0.5, axis=-1, method="inverted_cdf")
                for t, c in zip(arrays[0::2], arrays[1::2])]
        with np.errstate(invalid="ignore", divide="ignore"):
            ly = np.log(np.stack(meds, axis=-1))
            slope = ((ly - ly.mean(axis=-1, keepdims=True)) * lx).sum(axis=-1) / (lx ** 2).sum()
        return np.where(np.isfinite(slope), slope, np.nan)

    pairs = [a for t, c in zip(ts, cs) for a in (t, c.astype(float))]
    return stats.bootstrap(stat, *pairs, level=level, seed=seed, what="runs")
