r"""Reading chains: autocorrelation, basins, escape times (with censoring), and the toy truth's view
of chain states (exact log-probabilities, the topic posterior and a lexical topic probe)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from scipy.optimize import brentq, minimize_scalar
from scipy.stats import chi2

from .. import stats
from ..toy import N_SPECIAL

__all__ = ["censored_quantile", "hamming_autocorrelation", "basin_occupancy", "escape_times",
           "hysteresis_labels", "truth_log_probs", "topic_posterior", "truth_topic_scores",
           "topic_word_log_odds", "topic_log_odds", "escape_counts",
           "escape_rate", "arrhenius_fit", "growth_exponent", "tail_bound"]


def censored_quantile(times, censored, q: float = 0.5) -> float:
    r"""Quantile of times some of which are right-censored (only known to exceed their value).

    Censored entries count as :math:`+\infty`, which is exact for any quantile that falls
    among the uncensored times; if it falls among the censored ones the answer is ``inf``.
    """
    t = np.where(np.asarray(censored, bool), np.inf, np.asarray(times, float))
    return float(np.quantile(t, q, method="inverted_cdf")) if len(t) else float("nan")



class Autocorrelation(NamedTuple):
    lags: np.ndarray
    overlap: np.ndarray  # mean fraction of sites equal at that lag
    rho: np.ndarray      # (overlap − overlap_∞) / (1 − overlap_∞)


def hamming_autocorrelation(traj, max_lag: int | None = None) -> Autocorrelation:
    r"""Hamming autocorrelation of trajectories (R, C, n) (in recorded steps).

    :math:`o(\ell)` is the mean over chains, times and sites of :math:`[x_{t,i} = x_{t+\ell,i}]`;
    :math:`o_\infty = \frac1n\sum_i \sum_v \hat p_i(v)^2` is its value for independent draws
    from the pooled per-site marginals, and :math:`\rho(\ell) = (o(\ell)-o_\infty)/(1-o_\infty)`
    falls from 1 to about 0 as the chain decorrelates.
    """
    x = torch.as_tensor(traj).numpy()
    R = x.shape[0]
    max_lag = R - 1 if max_lag is None else min(max_lag, R - 1)
    lags = np.arange(max_lag + 1)
    overlap = np.array([(x[: R - lag] == x[lag:]).mean() for lag in lags])
    flat = x.reshape(-1, x.shape[-1])
    freqs = [np.unique(col, return_counts=True)[1] / len(col) for col in flat.T]
    o_inf = float(np.mean([f @ f for f in freqs]))
    return Autocorrelation(lags, overlap, (overlap - o_inf) / max(1 - o_inf, 1e-300))


class Occupancy(NamedTuple):
    labels: np.ndarray     # (R, C) basin label of each recorded state
    basins: np.ndarray     # (L,) distinct labels
    fractions: np.ndarray  # (R, L) fraction of chains in each basin at each recorded time


def _labels(traj, basin_fn, vectorized: bool) -> np.ndarray:
    x = torch.as_tensor(traj)
    flat = x.reshape(-1, x.shape[-1])
    lab = np.asarray(basin_fn(flat)) if vectorized else np.array([basin_fn(s) for s in flat])
    return lab.reshape(x.shape[:2])


def basin_occupancy(traj, basin_fn, vectorized: bool = False) -> Occupancy:
    """Which basin every chain is in over time. ``basin_fn(state (n,)) -> label`` (or, with
    ``vectorized=True``, ``basin_fn(states (m, n)) -> (m,)`` labels)."""
    labels = _labels(traj, basin_fn, vectorized)
    basins = np.unique(labels)
    return Occupancy(labels, basins, (labels[..., None] == basins).mean(axis=1))


def escape_times(traj, basin_fn=None, record_every: int = 1, vectorized: bool = False):
    """Steps until each chain first leaves the basin it starts in.

    ``traj`` is (R, C, n) states with ``basin_fn``, or already the (R, C) labels (``basin_fn``
    None). Returns ``(times, censored)``: times in steps (recorded index × ``record_every``),
    and for chains that never left, the last recorded step with ``censored`` True.
    """
    labels = np.asarray(traj) if basin_fn is None else _labels(traj, basin_fn, vectorized)
    left = labels != labels[0]
    censored = ~left.any(axis=0)
    first = np.where(censored, labels.shape[0] - 1, left.argmax(axis=0))
    return first * record_every, censored


# ---------------------------------------------------------------- the truth's view of chain states

def _word_rows(grammar, states, offset: int):
    x = torch.as_tensor(states, dtype=torch.long)
    x = x.reshape(-1, x.shape[-1])
    words = x - offset
    bad = ((words < 0) | (words >= len(grammar.vocab))).any(dim=1)
    return words.clamp(0, len(grammar.vocab) - 1), bad


def _topic_inside(grammar, words: torch.Tensor, chunk: int) -> torch.Tensor:
    """(B, T) prior-weighted inside score of every row of word ids, per topic."""
    pcfg = grammar.pcfg
    E = torch.as_tensor(pcfg.emissions, dtype=torch.float64)            # (T, N, V)
    prior = torch.as_tensor(pcfg.topic_prior, dtype=torch.float64)
    n = words.shape[1]
    out = []
    for c in range(0, len(words), chunk):
        leaves = E[:, :, words[c:c + chunk]].permute(2, 0, 3, 1)         # (B, T, n, N)
        B, T = leaves.shape[:2]
        Z = pcfg.inside(leaves.reshape(B * T, n, -1))[n][:, 0, pcfg.start].reshape(B, T)
        out.append(Z * prior)
    return torch.cat(out) if out else torch.zeros(0, len(prior), dtype=torch.float64)


def truth_log_probs(grammar, states, offset: int = N_SPECIAL, chunk: int = 256) -> np.ndarray:
    r"""Exact :math:`\log p(x)` under the toy language of each state (..., n) of token ids.

    Token id = ``offset`` + word id (the toy tokenizer puts :data:`mlmbook.toy.N_SPECIAL` special
    tokens first);
    :math:`-\infty` for sentences the grammar cannot produce and for rows holding a special
    token. Batched inside passes (``chunk`` rows each); the same number as
    ``grammar.log_prob(words)``.
    """
    x = torch.as_tensor(states)
    words, bad = _word_rows(grammar, x, offset)
    n = words.shape[1]
    if n > grammar.max_length:
        return np.full(x.shape[:-1], -np.inf)
    Z = _topic_inside(grammar, words, chunk).sum(dim=1).numpy()
    with np.errstate(divide="ignore"):
        lp = np.log(Z) - np.log(grammar.length_probs.sum())
    lp[bad.numpy() | (Z <= 0)] = -np.inf
    return lp.reshape(x.shape[:-1])


def truth_topic_scores(grammar, states, offset: int = N_SPECIAL, chunk: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """:func:`truth_log_probs` and :func:`topic_posterior` of the same states from one inside
    pass."""
    x = torch.as_tensor(states)
    words, bad = _word_rows(grammar, x, offset)
    if words.shape[1] > grammar.max_length:
        return truth_log_probs(grammar, x, offset, chunk), topic_posterior(grammar, x, offset, chunk)
    Zt = _topic_inside(grammar, words, chunk).numpy()
    tot = Zt.sum(axis=1)
    bad = bad.numpy() | (tot <= 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        lp = np.log(tot) - np.log(grammar.length_probs.sum())
        post = Zt / tot[:, None]
    lp[bad], post[bad] = -np.inf, np.nan
    return lp.reshape(x.shape[:-1]), post.reshape(*x.shape[:-1], Zt.shape[1])


def topic_posterior(grammar, states, offset: int = N_SPECIAL, chunk: int = 256) -> np.ndarray:
    r"""Exact posterior of the latent topic, :math:`p(t \mid x) \propto \pi_t\, Z_t(x)`, for a
    grammar with topics (``Grammar.load("toy", topic=True)``): array (..., T).

    :math:`Z_t(x)` is the inside score of the sentence under topic :math:`t`'s emissions.
    Rows the grammar cannot produce (or holding special tokens) get NaN.
    """
    x = torch.as_tensor(states)
    words, bad = _word_rows(grammar, x, offset)
    Zt = _topic_inside(grammar, words, chunk).numpy()
    tot = Zt.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        post = Zt / tot
    post[bad.numpy() | (tot[:, 0] <= 0)] = np.nan
    return post.reshape(*x.shape[:-1], Zt.shape[1])


def topic_word_log_odds(grammar, offset: int = N_SPECIAL, V: int | None = None) -> np.ndarray:
    r"""Per-token lexical evidence for topic 0 over topic 1 (a grammar with two topics):

    .. math:: w(v) = \log \frac{\sum_A E_0(A \to v)}{\sum_A E_1(A \to v)},

    summing each word's emission probabilities over the preterminals that can emit it. Array
    over token ids (``offset`` + word id; 0 for the special tokens and beyond ``V``).
    """
    E = np.asarray(grammar.pcfg.emissions, dtype=np.float64)
    if E.shape[0] != 2:
        raise ValueError("the lexical topic probe needs a grammar with exactly two topics")
    w = np.log(E[0].sum(axis=0)) - np.log(E[1].sum(axis=0))
    out = np.zeros(max(V or 0, offset + len(w)))
    out[offset:offset + len(w)] = w
    return out


def topic_log_odds(grammar, states, offset: int = N_SPECIAL) -> np.ndarray:
    r"""Lexical topic probe :math:`\lambda(x) = \sum_i w(x_i)` (:func:`topic_word_log_odds`)
    of each state (..., n): positive leans to topic 0, negative to topic 1.

    Unlike the exact posterior (:func:`topic_posterior`) it is defined for every string,
    grammatical or not — what a probe along an MLM's chains needs. It is the posterior
    log-odds of a model that emits each word independently given the topic.
    """
    x = torch.as_tensor(states).numpy()
    w = topic_word_log_odds(grammar, offset, V=int(x.max()) + 1)
    return w[x].sum(axis=-1)


def hysteresis_labels(score, low: float, high: float) -> np.ndarray:
    r"""Basin labels along trajectories from a probe score (R, C): 1 once the score reaches
    ``high``, 0 once it falls to ``low``, unchanged in between (and where the score is NaN).

    The dead zone keeps a chain that wanders into neutral states from counting as having
    left its basin; an *escape* is a hit on the other side. The label at time 0 is taken from
    the nearer threshold when the start lies in the dead zone.
    """
    s = np.asarray(score, dtype=np.float64)
    lab = np.empty(s.shape, dtype=np.int64)
    cur = np.where(np.nan_to_num(s[0], nan=(low + high) / 2) >= (low + high) / 2, 1, 0)
    for r in range(len(s)):
        cur = np.where(s[r] >= high, 1, np.where(s[r] <= low, 0, cur))
        lab[r] = cur
    return lab


# ---------------------------------------------------------------- rates, slopes and their intervals

def escape_counts(times, censored) -> tuple[int, float]:
    r"""Escapes :math:`d` and exposure :math:`S = \sum_c t_c` (escape time, or the time watched for
    a chain that never left) of right-censored waiting times: what :func:`arrhenius_fit` needs."""
    t = np.asarray(times, dtype=np.float64)
    c = np.asarray(censored, dtype=bool)
    return int((~c).sum()), float(t.sum())


def escape_rate(times, censored, level: float = stats.LEVEL) -> stats.Interval:
    r"""Mean escape time from right-censored waiting times, assuming they are exponential (the
    metastable regime: escapes are rare, memoryless events), as an :class:`~mlmbook.stats.Interval`.

    With :math:`d` escapes and total exposure :math:`S` (:func:`escape_counts`), the
    maximum-likelihood mean is :math:`S/d`: censored chains count through the time they were
    watched, not as missing data. The interval is the exact one for time-truncated exponential data,
    :math:`[2S/\chi^2_{1-\alpha/2}(2d+2),\; 2S/\chi^2_{\alpha/2}(2d)]`. With no escape the mean is
    only bounded below: the interval's ``lower_bound`` is set and its estimate is that bound (never
    :math:`+\infty`).
    """
    d, S = escape_counts(times, censored)
    n = len(np.asarray(times))
    a = (1 - level) / 2
    low = float(2 * S / chi2.ppf(1 - a, 2 * d + 2))
    how = f"censored exponential ({d} escapes of {n} chains)"
    if d == 0:
        return stats.Interval(low, low, float("inf"), level, how, n, float("nan"), lower_bound=True,
                              note=f"none of the {n} chains escaped")
    high = float(2 * S / chi2.ppf(a, 2 * d))
    return stats.Interval(S / d, low, high, level, how, n, S / d / np.sqrt(d))


def arrhenius_fit(inv_T, events, exposure, level: float = stats.LEVEL) -> stats.Interval:
    r"""Slope :math:`b` of :math:`\log(\text{mean escape time}) = c + b/T` from censored escapes at
    several temperatures, with a profile-likelihood interval (an :class:`~mlmbook.stats.Interval`).

    At temperature :math:`T_k`, ``events[k]`` escapes were seen in ``exposure[k]`` steps of
    watching; escapes are a Poisson process of rate :math:`\lambda_k = e^{a - b/T_k}` (the censored
    exponential likelihood is the Poisson one). For fixed :math:`b` the best :math:`a` is explicit,
    so the profile log-likelihood :math:`\ell(b)` is one-dimensional (and concave); the interval is
    :math:`\{b : 2(\ell(\hat b) - \ell(b)) \le \chi^2_1(\text{level})\}`, with an infinite end where
    the data do not bound it. Undefined without any escape.
    """
    x = np.asarray(inv_T, dtype=np.float64)
    d = np.asarray(events, dtype=np.float64)
    S = np.asarray(exposure, dtype=np.float64)
    if d.sum() == 0 or len(x) < 2:
        return stats.undefined("no chain escaped at any temperature" if len(x) >= 2 else "one temperature",
                               n=int(len(x)), level=level)

    def prof(b):
        a = np.log(d.sum() / np.sum(S * np.exp(-b * x)))
        return float(np.sum(d * (a - b * x)) - d.sum())

    span = 200.0 / max(np.ptp(x), 1e-9)
    best = minimize_scalar(lambda b: -prof(b), bounds=(-span, span), method="bounded",
                           options=dict(xatol=1e-10))
    b, top = float(best.x), prof(float(best.x))
    cut = chi2.ppf(level, 1) / 2
    g = lambda v: top - prof(v) - cut                                      # noqa: E731
    low = brentq(g, -span, b) if g(-span) > 0 else -float("inf")
    high = brentq(g, b, span) if g(span) > 0 else float("inf")
    return stats.Interval(b, float(low), float(high), level,
                          f"profile likelihood of a Poisson escape rate over {len(x)} temperatures", int(d.sum()))


def growth_exponent(x, times, censored, level: float = stats.LEVEL, seed: int = 0, names=None) -> stats.Interval:
    r"""Growth exponent :math:`\beta` of the median waiting time against a size: :math:`\log
    \operatorname{median}(\tau \mid x) = c + \beta \log x` (least squares over the sizes), with a
    percentile bootstrap over the runs (:func:`mlmbook.stats.bootstrap`).

    ``times[k]`` and ``censored[k]`` are the runs at size ``x[k]``, the same number at every size;
    censoring is at the cap only, so the median is the Kaplan–Meier one
    (:func:`mlmbook.stats.censored_median`). Where the median at some size is censored (more
    than half the runs outlast the cap) only a lower bound is known, and the exponent is
    **undefined** — never :math:`+\infty` from a cap. Bootstrap replicates whose median is
    censored have no exponent and are left out. ``names`` label the sizes in that note
    (default: their values).
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
        meds = []
        for t, c in zip(arrays[0::2], arrays[1::2]):
            meds.append(np.quantile(np.where(c > 0.5, np.inf, t), 0.5, axis=-1, method="inverted_cdf"))
        with np.errstate(invalid="ignore", divide="ignore"):
            ly = np.log(np.stack(meds, axis=-1))
            slope = ((ly - ly.mean(axis=-1, keepdims=True)) * lx).sum(axis=-1) / (lx ** 2).sum()
        return np.where(np.isfinite(slope), slope, np.nan)

    pairs = [a for t, c in zip(ts, cs) for a in (t, c.astype(float))]
    return stats.bootstrap(stat, *pairs, level=level, seed=seed, what="runs")


def tail_bound(times, censored, eps: float = 0.25, level: float = stats.LEVEL) -> float | None:
    r"""The first time :math:`t` at which the upper end of the Clopper–Pearson interval
    (:func:`mlmbook.stats.proportion`) of :math:`P(\tau > t)` falls to ``eps``, from coupling
    times of the given start pairs.

    A coupling gives :math:`\|P^t(x,\cdot) - P^t(y,\cdot)\|_\mathrm{TV} \le P(\tau_{x,y} > t)`;
    averaged over start pairs drawn as the pairs were, this is an upper bound (at confidence
    ``level``) on the mean distance between two chains so started — not a worst-case mixing time.
    None if the limit never gets there within the runs (too few pairs, or pairs that never met).
    """
    t = np.asarray(times, dtype=np.float64)
    c = np.asarray(censored, dtype=bool)
    n = len(t)
    for s in np.unique(t[~c]):
        k = int(((t > s) | c).sum())
        if stats.proportion(k, n, level=level, exact=True).high <= eps:
            return float(s)
    return None
