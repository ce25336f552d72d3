r"""Tempered Glauber dynamics on a masked LM, and exact mixing analysis (chapter 5).

One Glauber step picks a site :math:`i`, masks it and resamples it from the MLM's tempered
conditional

.. math::
    x_i \sim \pi_{i,T}(\cdot \mid x_{-i}) \propto \exp\big(\ell_i(v \mid x_{-i}) / T\big),
    \qquad v \in \mathcal{C},

where :math:`\ell_i` are the MLM's logits at :math:`i` and :math:`\mathcal{C}` an optional
candidate set (renormalised over it). If the conditionals come from a joint :math:`p` and
:math:`T = 1`, this is the Gibbs sampler: :math:`p` (restricted to :math:`\mathcal{C}^n`) is
stationary and the random-scan chain is reversible. For an MLM neither is guaranteed; the
chain still has a stationary law :math:`\pi` if it is irreducible, and how fast it gets there
is what chapter 5 measures. One *step* updates one site per chain; a *sweep* is n steps.

The module has four parts:

* sampling: :class:`GlauberSampler` (many chains, one forward pass per step, per-chain
  temperatures, shared or per-site candidates), couplings (:meth:`GlauberSampler.coupled_run`,
  grand or maximal) and :func:`influence` (a sampled Dobrushin coefficient);
* trajectories: :func:`hamming_autocorrelation`, basins and :func:`escape_times`;
* exact analysis on a small :class:`Frame`: the transition matrix, :func:`stationary`,
  :func:`spectral_gap`, :func:`critical_depth` (the Arrhenius slope), :func:`tv`, :func:`kl`;
* the toy truth's view of chain states: :func:`truth_log_probs`, :func:`topic_posterior`,
  :func:`topic_log_odds`.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import torch
from tqdm.auto import tqdm

__all__ = [
    "GlauberSampler", "Coupling", "censored_quantile", "hamming_autocorrelation", "basin_occupancy",
    "escape_times", "influence", "Frame", "state_space", "state_index", "exact_transition_matrix", "critical_depth",
    "stationary", "spectral_gap", "relaxation_time", "tv", "kl", "is_reversible",
    "truth_log_probs", "topic_posterior", "topic_word_log_odds", "topic_log_odds", "hysteresis_labels",
]


def _bar(n: int, progress: bool | None, desc: str):
    return tqdm(range(n), disable=not (n >= 500 if progress is None else progress), desc=desc)


def _tempered(logits: torch.Tensor, T, allowed: torch.Tensor | None = None) -> torch.Tensor:
    """Row-wise softmax(logits / T) (float64), restricted to ``allowed`` (C, V) tokens.

    ``T`` is a float or a (C,) tensor (one temperature per row). Rows without mass (every
    allowed logit -inf) are all zero.
    """
    z = logits.to(torch.float64)
    if allowed is not None:
        z = z.masked_fill(~allowed, float("-inf"))
    T = torch.as_tensor(T, dtype=torch.float64)
    T = T[:, None] if T.dim() == 1 else T
    return torch.softmax(z / T, dim=-1).nan_to_num_(0.0)


def _inverse_cdf(p: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Token where each row's CDF (over token-id order) first exceeds u·total; -1 for rows without mass."""
    cdf = torch.cumsum(p, dim=-1)
    idx = torch.searchsorted(cdf, (u * cdf[:, -1]).unsqueeze(1), right=True).squeeze(1)
    idx = idx.clamp_(max=p.shape[1] - 1)
    return torch.where(cdf[:, -1] > 0, idx, torch.full_like(idx, -1))


def _draw(logits: torch.Tensor, u: torch.Tensor, T) -> torch.Tensor:
    """Inverse-CDF sample of softmax(logits / T) given uniforms u (-1 for rows without mass)."""
    return _inverse_cdf(_tempered(logits, T), u)


class Coupling(NamedTuple):
    times: np.ndarray     # (C,) first step at which the pair agrees everywhere (max_steps if censored)
    censored: np.ndarray  # (C,) True if the pair never met within max_steps
    final_a: torch.Tensor
    final_b: torch.Tensor
    traj_a: torch.Tensor | None  # (R, C, n) if record_every was given
    traj_b: torch.Tensor | None


class GlauberSampler:
    r"""Many Glauber chains at once, driven by a seeded ``torch.Generator``.

    Parameters
    ----------
    lm : oracle with ``logits(ids, positions)`` and ``mask_id`` (docs/INTERFACES.md)
    temperature : float > 0, or a sequence of them, one per chain (then every state batch
        given to the sampler must have that many chains): chains at several temperatures
        share each forward pass
    scan : ``"random"`` (site uniform over the free sites, independently per chain) or
        ``"systematic"`` (all chains visit the free sites in order, cyclically)
    frozen : positions never resampled (e.g. the final ".")
    candidates : token ids to sample from (default: the whole vocabulary): one sequence shared
        by every site, or a dict ``{position: ids}`` of per-site sets (positions not in it use
        the whole vocabulary); the conditional is renormalised over the set
    seed : seed of the generator; same seed, same oracle → same chains

    Notes
    -----
    Tokens are drawn by inverse CDF over token-id order from one uniform per chain and step.
    A chain whose conditional has no mass on its candidate set (possible only for an exact
    oracle that forbids every candidate in that context) keeps its current token.
    """

    def __init__(self, lm, temperature=1.0, scan: str = "random", frozen=None,
                 candidates=None, seed: int = 0):
        T = torch.as_tensor(temperature, dtype=torch.float64)
        if T.dim() > 1 or (T <= 0).any():
            raise ValueError("temperature must be positive (a float or one per chain)")
        if scan not in ("random", "systematic"):
            raise ValueError("scan must be 'random' or 'systematic'")
        self.lm, self.scan = lm, scan
        self.T = float(T) if T.dim() == 0 else T
        self.frozen = sorted(set(int(f) for f in (frozen or ())))
        self.per_site = isinstance(candidates, dict)
        if self.per_site:
            self.candidates = {int(k): torch.as_tensor(v, dtype=torch.long) for k, v in candidates.items()}
        else:
            self.candidates = None if candidates is None else torch.as_tensor(candidates, dtype=torch.long)
        self.generator = torch.Generator().manual_seed(seed)
        self._coupling_generator = torch.Generator().manual_seed(seed + 104_729)

    def sites(self, n: int) -> torch.Tensor:
        return torch.tensor([i for i in range(n) if i not in self.frozen], dtype=torch.long)

    def temperatures(self, C: int) -> torch.Tensor:
        """(C,) temperature of each chain."""
        if isinstance(self.T, float):
            return torch.full((C,), self.T, dtype=torch.float64)
        if len(self.T) != C:
            raise ValueError(f"{len(self.T)} temperatures given for {C} chains")
        return self.T

    def random_states(self, n_chains: int, template, pool=None) -> torch.Tensor:
        """(n_chains, n) states: ``template`` with free sites drawn uniformly from ``pool``
        (default: the candidates, per site if they are per site), using the sampler's generator."""
        x = torch.as_tensor(template, dtype=torch.long).repeat(n_chains, 1)
        s = self.sites(x.shape[1])
        if pool is None and self.per_site:
            for i in s.tolist():
                if i not in self.candidates:
                    raise ValueError(f"site {i} has no candidate set; give a pool")
                p = self.candidates[i]
                x[:, i] = p[torch.randint(len(p), (n_chains,), generator=self.generator)]
            return x
        pool = self.candidates if pool is None else torch.as_tensor(pool, dtype=torch.long)
        if pool is None:
            raise ValueError("give a pool of token ids (or construct the sampler with candidates)")
        x[:, s] = pool[torch.randint(len(pool), (n_chains, len(s)), generator=self.generator)]
        return x

    def draw(self, C: int, n: int, t: int = 0):
        """The randomness of step ``t`` for C chains of length n: (sites (C,), uniforms (C,))."""
        s = self.sites(n)
        if self.scan == "random":
            site = s[torch.randint(len(s), (C,), generator=self.generator)]
        else:
            site = s[t % len(s)].repeat(C)
        return site, torch.rand(C, generator=self.generator, dtype=torch.float64)

    _randomness = draw

    def _allowed(self, site: torch.Tensor, V: int) -> torch.Tensor | None:
        if self.candidates is None:
            return None
        if not self.per_site:
            row = torch.zeros(V, dtype=torch.bool)
            row[self.candidates] = True
            return row.expand(len(site), V)
        allowed = torch.ones(len(site), V, dtype=torch.bool)
        for i, ids in self.candidates.items():
            hit = site == i
            if hit.any():
                row = torch.zeros(V, dtype=torch.bool)
                row[ids] = True
                allowed[hit] = row
        return allowed

    def probs(self, x: torch.Tensor, site: torch.Tensor, T=None) -> torch.Tensor:
        r"""(C, V) tempered conditionals :math:`\pi_{i,T}(\cdot \mid x_{-i})` at ``site[c]`` of each row.

        One ``lm.logits`` call for all rows, the LM head only at the masked site.
        """
        rows = torch.arange(len(x))
        q = x.clone()
        q[rows, site] = self.lm.mask_id
        logits = self.lm.logits(q, site[:, None])[:, 0, :].detach().cpu()
        T = self.temperatures(len(x)) if T is None else T
        return _tempered(logits, T, self._allowed(site, logits.shape[1]))

    def update(self, x: torch.Tensor, site: torch.Tensor, u: torch.Tensor, T=None) -> torch.Tensor:
        """One step with given randomness: row ``c`` resamples ``site[c]`` by inverse CDF at
        ``u[c]``; ``T``: (C,) temperatures (default :meth:`temperatures`). Returns new states."""
        tok = _inverse_cdf(self.probs(x, site, T), u)
        rows = torch.arange(len(x))
        x = x.clone()
        x[rows, site] = torch.where(tok >= 0, tok, x[rows, site])
        return x

    def step(self, x: torch.Tensor, t: int = 0) -> torch.Tensor:
        """One step of every chain in ``x`` (C, n); ``t`` is the step index (systematic scan)."""
        site, u = self.draw(*x.shape, t)
        return self.update(x, site, u)

    def run(self, init, n_steps: int, record_every: int = 1, progress: bool | None = None) -> torch.Tensor:
        """Run the chains from ``init`` (C, n) for ``n_steps`` steps.

        Returns the states at steps 0, r, 2r, ... ≤ n_steps (r = ``record_every``) as a
        LongTensor (R, C, n). ``progress`` (default: when n_steps ≥ 500) shows a tqdm bar.
        """
        x = torch.as_tensor(init, dtype=torch.long)
        x = x[None] if x.dim() == 1 else x
        out = [x]
        for t in _bar(n_steps, progress, "Glauber"):
            x = self.step(x, t)
            if (t + 1) % record_every == 0:
                out.append(x)
        return torch.stack(out)

    def coupled_run(self, init_a, init_b, max_steps: int, record_every: int | None = None,
                    stop_when_met: bool = True, freeze_met: bool = False, coupling: str = "cdf",
                    progress: bool | None = None) -> Coupling:
        r"""Couple pairs of chains: both copies of a pair update the same site at every step.

        ``coupling="cdf"`` (the grand coupling): both copies use the same uniform :math:`u`
        and take the token where their own CDF (over token-id order) first exceeds it.
        ``coupling="maximal"``: copy a draws :math:`X \sim p_a` by inverse CDF at :math:`u`
        (exactly as :meth:`run` would), and copy b keeps :math:`Y = X` with probability
        :math:`\min(1, p_b(X)/p_a(X))`, else draws from the residual
        :math:`(p_b - p_a)_+`; then :math:`P(X = Y) = 1 - \|p_a - p_b\|_\mathrm{TV}`, the most
        any coupling of the two updates can achieve (Levin & Peres, Prop. 4.7). Far better
        at coalescing over a large vocabulary, where two slightly different CDFs rarely pick
        the same token. Its extra uniforms come from a second generator, so copy a is always
        the chain :meth:`run` gives from the same seed and start.

        Either way each copy is marginally a Glauber chain and a pair that agrees everywhere
        stays together (met pairs share one forward row, which also rules out float noise
        between batch rows). The coalescence time :math:`\tau = \min\{t : a_t = b_t\}` bounds
        the distance to stationarity: :math:`d(t) \le \max_{x,y} P_{x,y}(\tau > t)` (Levin &
        Peres, Thm 5.4). Runs stop early once every pair has met (unless
        ``stop_when_met=False``). ``freeze_met=True`` stops simulating pairs once they have met
        (their randomness is still drawn, so the other pairs are unchanged): the right choice
        when only the times are wanted; ``final_a``/``final_b`` then hold each met pair's
        meeting state.
        """
        if coupling not in ("cdf", "maximal"):
            raise ValueError("coupling must be 'cdf' or 'maximal'")
        a, b = (torch.as_tensor(v, dtype=torch.long) for v in (init_a, init_b))
        C, n = a.shape
        temps = self.temperatures(C)
        met = (a == b).all(dim=1)
        times = np.where(met.numpy(), 0, max_steps)
        ta, tb = ([a], [b]) if record_every else (None, None)
        for t in _bar(max_steps, progress, "coupling"):
            if stop_when_met and bool(met.all()):
                break
            site, u = self.draw(C, n, t)
            u2 = torch.rand(2, C, generator=self._coupling_generator, dtype=torch.float64)
            apart = torch.nonzero(~met).ravel()
            run_a = apart if freeze_met else torch.arange(C)           # copy-a rows simulated
            k = len(run_a)
            p = self.probs(torch.cat([a[run_a], b[apart]]), torch.cat([site[run_a], site[apart]]),
                           torch.cat([temps[run_a], temps[apart]]))
            pa = p[:k]
            xa = _inverse_cdf(pa, u[run_a])
            if coupling == "cdf":
                xb = _inverse_cdf(p[k:], u[apart])
            else:
                pos = torch.searchsorted(run_a, apart)                  # row of each apart pair in pa
                pa_, pb = pa[pos], p[k:]
                x = xa[pos]
                xc = x.clamp(min=0)
                keep = u2[0, apart] * pa_.gather(1, xc[:, None])[:, 0] <= pb.gather(1, xc[:, None])[:, 0]
                resid = _inverse_cdf((pb - pa_).clamp_(min=0), u2[1, apart])
                xb = torch.where(keep | (resid < 0), x, resid)
                xb = torch.where(x < 0, _inverse_cdf(pb, u[apart]), xb)
            a_new, b_new = a.clone(), b.clone()
            a_new[run_a, site[run_a]] = torch.where(xa >= 0, xa, a[run_a, site[run_a]])
            if not freeze_met:
                b_new[met] = a_new[met]                                  # met pairs move together
            b_new[apart, site[apart]] = torch.where(xb >= 0, xb, b[apart, site[apart]])
            a, b = a_new, b_new
            now = (a == b).all(dim=1)
            times[(now & ~met).numpy()] = t + 1
            met |= now
            if record_every and (t + 1) % record_every == 0:
                ta.append(a)
                tb.append(b)
        return Coupling(times, ~met.numpy(), a, b,
                        torch.stack(ta) if ta else None, torch.stack(tb) if tb else None)


def censored_quantile(times, censored, q: float = 0.5) -> float:
    r"""Quantile of times some of which are right-censored (only known to exceed their value).

    Censored entries count as :math:`+\infty`, which is exact for any quantile that falls
    among the uncensored times; if it falls among the censored ones the answer is ``inf``.
    """
    t = np.where(np.asarray(censored, bool), np.inf, np.asarray(times, float))
    return float(np.quantile(t, q, method="inverted_cdf")) if len(t) else float("nan")


def influence(lm, ids, temperatures, frozen=(), alternatives: int = 2, substitutes: str = "top",
              seed: int = 0, progress: bool = False) -> np.ndarray:
    r"""Estimated Dobrushin influence of one token on the rest of the sentence, per temperature.

    For a sentence :math:`x`, a free site :math:`j` and a substitute :math:`v` for
    :math:`x_j` (the ``alternatives`` most likely other tokens of :math:`q(\cdot \mid x_{-j})`),

    .. math::
        c_j(x, v) = \sum_{i \ne j} \big\|\pi_{i,T}(\cdot \mid x_{-i}) -
                    \pi_{i,T}(\cdot \mid x^{j \leftarrow v}_{-i})\big\|_\mathrm{TV},

    the total change that swapping one token makes to the other sites' tempered conditionals.
    If :math:`\alpha = \sup_{x, j, v} c_j(x, v) < 1` (Dobrushin's condition), path coupling
    shows that random-scan Glauber dynamics contracts the Hamming distance by a factor
    :math:`1 - (1-\alpha)/n` per step and mixes in :math:`O(n \log n)` steps
    (Levin & Peres, ch. 14). This function returns the *sampled* version,
    :math:`\hat\alpha(x) = \max_j \operatorname{mean}_v c_j(x, v)` per sentence: a
    typical-case estimate (a lower bound on the supremum), not a certificate.

    Parameters
    ----------
    ids : LongTensor (S, n) of sentences (token ids)
    temperatures : sequence of T; one oracle pass serves all of them
    frozen : positions that are never resampled (not sources or targets)

    Returns
    -------
    numpy.ndarray (S, len(temperatures))
    """
    ids = torch.as_tensor(ids, dtype=torch.long)
    S, n = ids.shape
    free = [i for i in range(n) if i not in set(frozen)]
    Ts = torch.as_tensor(np.asarray(temperatures, dtype=np.float64))
    out = np.zeros((S, len(Ts)))
    m = lm.mask_id
    gen = torch.Generator().manual_seed(seed)
    for s in tqdm(range(S), disable=not progress, desc="influence"):
        x = ids[s]
        base = x.repeat(len(free), 1)
        base[torch.arange(len(free)), torch.tensor(free)] = m
        lg0 = lm.logits(base, torch.tensor(free)[:, None])[:, 0].double()          # (F, V) at T = 1
        rows, pos, src = [], [], []
        for a, j in enumerate(free):
            if substitutes == "top":
                top = torch.argsort(lg0[a], descending=True)
            else:
                top = torch.randperm(lm.V, generator=gen)
                top = top[torch.isfinite(lg0[a, top])]
            subs = [int(v) for v in top[: alternatives + 1] if int(v) != int(x[j])][:alternatives]
            for v in subs:
                for b, i in enumerate(free):
                    if i != j:
                        r = x.clone()
                        r[j], r[i] = v, m
                        rows.append(r), pos.append(i), src.append((a, b))
        lg = lm.logits(torch.stack(rows), torch.tensor(pos)[:, None])[:, 0].double()
        a_idx = torch.tensor([a for a, _ in src])
        b_idx = torch.tensor([b for _, b in src])
        for k, T in enumerate(Ts):
            p0 = torch.softmax(lg0 / T, dim=-1).nan_to_num(0.0)
            p1 = torch.softmax(lg / T, dim=-1).nan_to_num(0.0)
            tv_ = 0.5 * (p1 - p0[b_idx]).abs().sum(dim=-1)                              # one per row
            col = torch.zeros(len(free)).double().index_add_(0, a_idx, tv_)
            cnt = torch.zeros(len(free)).double().index_add_(0, a_idx, torch.ones_like(tv_))
            c = col / cnt.clamp(min=1) * (len(free) - 1)                                   # mean over v of the sum over i
            out[s, k] = float(c.max())
    return out


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
    overlap = np.array([(x[: R - l] == x[l:]).mean() for l in lags])
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


# ---------------------------------------------------------------- exact small-state analysis

class Frame:
    r"""A small state space for exact analysis: a template sentence whose free sites range
    over candidate sets,

    .. math:: \mathcal X = \{x : x_i \in \mathcal C_i \text{ for } i \in \text{sites},\;
              x_j = \text{template}_j \text{ otherwise}\}, \qquad |\mathcal X| = \prod_i |\mathcal C_i| .

    States are numbered lexicographically by the index of each site's token in its candidate
    list (the last site fastest); :meth:`states` lists them in that order.

    Parameters
    ----------
    template : sequence of token ids (n,)
    sites : the free positions
    candidates : one sequence of token ids per site
    """

    def __init__(self, template, sites, candidates):
        self.template = torch.as_tensor(template, dtype=torch.long).clone()
        self.sites = [int(s) for s in sites]
        self.candidates = [torch.as_tensor(c, dtype=torch.long) for c in candidates]
        if len(self.candidates) != len(self.sites) or len(set(self.sites)) != len(self.sites):
            raise ValueError("give one candidate set per distinct site")
        if any(len(set(c.tolist())) != len(c) or len(c) == 0 for c in self.candidates):
            raise ValueError("candidate sets must be non-empty and without repeats")

    @classmethod
    def shared(cls, n: int, V_subset, template=None, sites=None) -> "Frame":
        """Every site ranges over the same ``V_subset`` (all n positions free by default)."""
        sites = list(range(n)) if sites is None else [int(s) for s in sites]
        if template is None and len(sites) < n:
            raise ValueError("a template is needed to fix the positions outside `sites`")
        template = torch.zeros(n, dtype=torch.long) if template is None else template
        return cls(template, sites, [V_subset] * len(sites))

    @property
    def sizes(self) -> tuple:
        return tuple(len(c) for c in self.candidates)

    @property
    def size(self) -> int:
        return int(np.prod(self.sizes))

    def _codes(self) -> np.ndarray:
        return np.arange(self.size).reshape(self.sizes)

    def states(self) -> torch.Tensor:
        """All states (S, n), in frame order."""
        grid = np.indices(self.sizes).reshape(len(self.sites), -1)        # (L, S), last site fastest
        x = self.template.repeat(self.size, 1)
        for a, (i, c) in enumerate(zip(self.sites, self.candidates)):
            x[:, i] = c[torch.as_tensor(grid[a])]
        return x

    def index(self, states) -> np.ndarray:
        """Frame index of each state (..., n); -1 where a site holds a non-candidate
        (positions outside ``sites`` are not checked)."""
        x = torch.as_tensor(states).numpy()
        idx = np.zeros(x.shape[:-1], dtype=np.int64)
        bad = np.zeros(x.shape[:-1], dtype=bool)
        for i, c in zip(self.sites, self.candidates):
            c = c.numpy()
            table = np.full(max(c.max(), x[..., i].max()) + 1, -1, dtype=np.int64)
            table[c] = np.arange(len(c))
            d = table[x[..., i]]
            bad |= d < 0
            idx = idx * len(c) + d
        return np.where(bad, -1, idx)

    def families(self, a: int) -> np.ndarray:
        """(S / m_a, m_a): the states that differ only at site number ``a`` — the "lines"
        through which a Glauber update of that site moves."""
        return np.moveaxis(self._codes(), a, -1).reshape(-1, self.sizes[a])

    def conditional_logits(self, cond, mask_id: int | None = None, chunk: int = 8192,
                           progress: bool | None = None) -> list:
        r"""The oracle's logits over each site's candidates, for every context of the frame.

        Since :math:`\pi_i(\cdot \mid x_{-i})` ignores :math:`x_i`, one masked row per family
        suffices: :math:`\sum_a S/m_a` rows in all, in chunks of ``chunk`` rows (a tqdm bar
        when there are more than 10 chunks, or as ``progress`` says). Returns one float64
        array (S / m_a, m_a) per site, rows in the order of :meth:`families`. Temperature is
        applied later (:meth:`kernel`), so one pass serves every temperature.
        """
        logits_fn = cond.logits if hasattr(cond, "logits") else cond
        mask_id = getattr(cond, "mask_id", None) if mask_id is None else mask_id
        if mask_id is None:
            raise ValueError("pass mask_id when cond is a plain function")
        states = self.states()
        n_chunks = sum(-(-(self.size // m) // chunk) for m in self.sizes)
        bar = tqdm(total=n_chunks, disable=not (n_chunks > 10 if progress is None else progress),
                   desc="frame conditionals")
        out = []
        for a, (i, cand) in enumerate(zip(self.sites, self.candidates)):
            q = states[self.families(a)[:, 0]].clone()
            q[:, i] = mask_id
            parts = []
            for c in range(0, len(q), chunk):
                rows = q[c:c + chunk]
                lg = logits_fn(rows, torch.full((len(rows), 1), i))[:, 0, :]
                parts.append(lg.detach().cpu().double()[:, cand].numpy())
                bar.update()
            out.append(np.concatenate(parts))
        bar.close()
        return out

    def kernel(self, site_logits, T: float = 1.0) -> sp.csr_matrix:
        r"""Random-scan Glauber kernel at temperature T from :meth:`conditional_logits`:

        .. math::
            P(x, x') = \frac1L\sum_{i} [x'_{-i} = x_{-i}]\; \pi_{i,T}(x'_i \mid x_{-i}),
            \qquad \pi_{i,T}(v \mid x_{-i}) \propto e^{\ell_i(v \mid x_{-i})/T},\; v \in \mathcal C_i .

        A context where every candidate has logit :math:`-\infty` (an exact oracle that forbids
        them all) gets the uniform distribution over the candidates; such states have
        probability 0 under any coherent joint and are transient.
        """
        L, S = len(self.sites), self.size
        rows, cols, vals = [], [], []
        for a, lg in enumerate(site_logits):
            z = lg / T
            top = z.max(axis=1, keepdims=True)
            with np.errstate(invalid="ignore"):
                w = np.exp(z - np.where(np.isfinite(top), top, 0))
            w[~np.isfinite(top[:, 0])] = 1.0
            probs = w / w.sum(axis=1, keepdims=True)                        # (F, m)
            fam = self.families(a)
            m = fam.shape[1]
            rows.append(np.repeat(fam, m, axis=1).ravel())                  # from member u ...
            cols.append(np.tile(fam, (1, m)).ravel())                       # ... to member v
            vals.append(np.repeat(probs[:, None, :], m, axis=1).ravel() / L)
        P = sp.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(S, S))
        return P.tocsr()


def state_space(n: int, V_subset, template=None, sites=None) -> torch.Tensor:
    """All |V_subset|^|sites| states (S, n), in the order of :func:`exact_transition_matrix`
    (lexicographic in the order of ``V_subset``, last free site fastest)."""
    return Frame.shared(n, V_subset, template, sites).states()


def state_index(states, V_subset, sites=None) -> np.ndarray:
    """Index in :func:`state_space` of each state (..., n); -1 if a free site is outside V_subset."""
    x = torch.as_tensor(states)
    return Frame.shared(x.shape[-1], V_subset, x.reshape(-1, x.shape[-1])[0], sites).index(x)


def exact_transition_matrix(cond, n: int, V_subset, T: float = 1.0, scan: str = "random",
                            template=None, sites=None, mask_id: int | None = None,
                            chunk: int = 8192, progress: bool | None = None) -> sp.csr_matrix:
    r"""Exact random-scan Glauber kernel on :math:`\mathcal{C}^{|\text{sites}|}`, as a sparse matrix.

    .. math::
        P(x, x') = \frac1{|\text{sites}|}\sum_{i \in \text{sites}} [x'_{-i} = x_{-i}]\,
                   \pi_{i,T}(x'_i \mid x_{-i}),

    with :math:`\pi_{i,T}` the tempered conditional restricted to ``V_subset`` (renormalised).
    ``cond`` is an oracle (``.logits``, ``.mask_id``) or a function with the signature of
    ``logits`` (then pass ``mask_id``). ``template`` fixes the non-free positions. States are
    ordered as :func:`state_space`. A shortcut for
    ``Frame.shared(...).kernel(frame.conditional_logits(cond), T)``; use :class:`Frame` for
    per-site candidate sets, or to reuse one oracle pass across temperatures.
    Only random scan is built (a systematic sweep is the product of the site kernels and
    fills in); ``scan`` is there to say so.
    """
    if scan != "random":
        raise NotImplementedError("only the random-scan kernel is built exactly")
    frame = Frame.shared(n, V_subset, template, sites)
    return frame.kernel(frame.conditional_logits(cond, mask_id, chunk, progress), T)


def critical_depth(log_p, frame: Frame, return_trap: bool = False):
    r"""Critical depth :math:`\Gamma` of the energy landscape :math:`E = -\log p` for heat-bath
    Glauber dynamics on a :class:`Frame`.

    At temperature :math:`T` the Gibbs sampler of :math:`p^{1/T}` moves between neighbours
    :math:`x, y` (one site apart, on the line :math:`\ell` of states that differ only there)
    with flow :math:`\pi_T(x)P(x,y) \asymp e^{-h(x,y)/T}`, where
    :math:`h(x, y) = E(x) + E(y) - \min_{z \in \ell} E(z)`. The depth of a local minimum
    is the least possible maximum of :math:`h` along a path to a state of lower energy, minus
    its own energy; :math:`\Gamma` is the largest depth over all minima but the ground state.
    As :math:`T \to 0` the spectral gap behaves like :math:`e^{-\Gamma/T}` (Holley & Stroock;
    Catoni), so :math:`\log t_\text{rel} \approx \Gamma / T`: the Arrhenius law. Computed by
    Kruskal's algorithm over the moves sorted by height; states with :math:`p = 0` are left out.

    Parameters
    ----------
    log_p : (S,) log-probabilities of the frame's states, in frame order
    frame : :class:`Frame` (or any object with ``sites`` and ``families(a)``)
    return_trap : also return the deepest trap: the index of its minimum and the move
        ``(x, y)`` (state indices) at the top of its cheapest way out

    Returns
    -------
    float, or ``(depth, minimum, (x, y))`` with ``return_trap`` (``minimum`` is -1 when
    there is a single well)
    """
    E = -np.asarray(log_p, dtype=np.float64)
    hs, us, vs = [], [], []
    for a in range(len(frame.sites)):
        fam = frame.families(a)
        e = E[fam]                                                          # (F, m)
        low = e.min(axis=1, keepdims=True)
        iu, iv = np.triu_indices(fam.shape[1], 1)
        with np.errstate(invalid="ignore"):                                # inf - inf on forbidden lines
            h = e[:, iu] + e[:, iv] - low
        ok = np.isfinite(h)
        hs.append(h[ok]), us.append(fam[:, iu][ok]), vs.append(fam[:, iv][ok])
    h, u, v = (np.concatenate(z) for z in (hs, us, vs))
    parent = np.arange(len(E))
    bottom = np.arange(len(E))                                             # each component's lowest state

    def root(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    depth, trap = 0.0, (-1, (-1, -1))
    for k in np.argsort(h, kind="stable"):
        ru, rv = root(u[k]), root(v[k])
        if ru == rv:
            continue
        if E[bottom[ru]] > E[bottom[rv]]:
            ru, rv = rv, ru                                                # ru holds the lower minimum
        if h[k] - E[bottom[rv]] > depth:
            depth, trap = float(h[k] - E[bottom[rv]]), (int(bottom[rv]), (int(u[k]), int(v[k])))
        parent[rv] = ru
    return (depth, *trap) if return_trap else depth


def stationary(P, tol: float = 1e-13, dense_below: int = 300) -> np.ndarray:
    r"""Stationary law :math:`\pi = \pi P` (assumes one closed class).

    Below ``dense_below`` states: a dense solve of :math:`(P^\top - I)\pi = 0` with one
    equation replaced by :math:`\sum\pi = 1`. Above: the Perron eigenvector of :math:`P^\top`
    by ARPACK (a sparse LU fills in badly on these Hamming-graph chains). Either way it is then
    polished by power steps until :math:`\|\pi P - \pi\|_1 <` ``tol`` (at most 100).
    """
    P = sp.csr_matrix(P)
    S = P.shape[0]
    if S < dense_below:
        A = P.T.toarray() - np.eye(S)
        A[0] = 1.0
        pi = np.linalg.solve(A, np.eye(S)[0])
    else:
        _, vec = spla.eigs(P.T, k=1, which="LM", v0=np.full(S, 1.0 / S), tol=1e-14)
        pi = np.real(vec[:, 0])
        pi = pi * np.sign(pi.sum())
    pi = np.clip(pi, 0, None)
    pi /= pi.sum()
    for _ in range(100):
        nxt = P.T @ pi
        done = np.abs(nxt - pi).sum() < tol
        pi = nxt / nxt.sum()
        if done:
            break
    return pi


def is_reversible(P, pi, tol: float = 1e-9) -> bool:
    r"""Detailed balance :math:`\pi(x)P(x,y) = \pi(y)P(y,x)`, to ``tol`` relative to the largest flow."""
    F = sp.diags(np.asarray(pi)) @ sp.csr_matrix(P)
    return bool(abs(F - F.T).max() <= tol * abs(F).max())


def spectral_gap(P, pi=None, reversible: bool | None = None, dense_below: int = 300) -> float:
    r"""Absolute spectral gap :math:`\gamma_* = 1 - \max\{|\lambda| : \lambda \ne 1\}`.

    For a reversible chain, :math:`P` is self-adjoint in :math:`L^2(\pi)`; its eigenvalues are
    those of the symmetric :math:`D^{1/2} P D^{-1/2}` (:math:`D=\operatorname{diag}\pi`), and
    :math:`t_\text{rel} = 1/\gamma_*` is Levin & Peres' relaxation time, with
    :math:`(t_\text{rel}-1)\log\frac1{2\varepsilon} \le t_\text{mix}(\varepsilon) \le
    t_\text{rel}\log\frac1{\varepsilon\,\pi_\min}`. (Random-scan Gibbs has eigenvalues in
    [0, 1], so :math:`\gamma_* = 1-\lambda_2`.) For a non-reversible chain (an incoherent MLM),
    :math:`1-|\lambda_2|` with :math:`|\lambda_2|` the second-largest eigenvalue modulus of
    :math:`P`: it gives the asymptotic rate :math:`\|\mu P^t - \pi\| \approx |\lambda_2|^t` but
    no longer two-sided mixing-time bounds. Eigenvalue 1 is deflated
    (:math:`P - \mathbf 1\pi^\top`), so the answer is the top modulus of what remains; dense
    below ``dense_below`` states, ARPACK above.
    """
    P = sp.csr_matrix(P)
    pi = stationary(P) if pi is None else np.asarray(pi, dtype=np.float64)
    if reversible is None:
        reversible = is_reversible(P, pi)
    S = P.shape[0]
    if reversible:  # D^{1/2} P D^{-1/2}, symmetrised against rounding; eigenvalue 1 has vector sqrt(pi)
        r = np.sqrt(pi)
        A = sp.diags(r) @ P @ sp.diags(1 / r)
        A, left, right = (A + A.T) / 2, r, r
    else:  # eigenvalue 1: right vector 1, left vector pi
        A, left, right = P, np.ones(S), pi
    if S < dense_below:
        M = A.toarray() - np.outer(left, right)
        ev = np.linalg.eigvalsh(M) if reversible else np.linalg.eigvals(M)
    else:
        op = spla.LinearOperator((S, S), matvec=lambda v: A @ v - left * (right @ v), dtype=np.float64)
        ev = (spla.eigsh if reversible else spla.eigs)(op, k=1, which="LM", return_eigenvectors=False)
    return float(1 - np.abs(ev).max())


def relaxation_time(P, pi=None) -> float:
    """:math:`1/\\gamma_*` with :math:`\\gamma_*` from :func:`spectral_gap` (inf if the gap is 0)."""
    gap = spectral_gap(P, pi)
    return float("inf") if gap <= 0 else 1.0 / gap


def tv(p, q) -> float:
    r"""Total variation :math:`\tfrac12\sum_x |p(x) - q(x)|`."""
    return 0.5 * float(np.abs(np.asarray(p, float) - np.asarray(q, float)).sum())


def kl(p, q) -> float:
    r""":math:`\mathrm{KL}(p\|q) = \sum_x p(x)\log\frac{p(x)}{q(x)}` (0 log 0 = 0; inf if q = 0 < p)."""
    p, q = np.asarray(p, float), np.asarray(q, float)
    s = p > 0
    if np.any(q[s] <= 0):
        return float("inf")
    return float((p[s] * np.log(p[s] / q[s])).sum())


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


def truth_log_probs(grammar, states, offset: int = 5, chunk: int = 256) -> np.ndarray:
    r"""Exact :math:`\log p(x)` under the toy language of each state (..., n) of token ids.

    Token id = ``offset`` + word id (the toy tokenizer puts 5 special tokens first);
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


def topic_posterior(grammar, states, offset: int = 5, chunk: int = 256) -> np.ndarray:
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


def topic_word_log_odds(grammar, offset: int = 5, V: int | None = None) -> np.ndarray:
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


def topic_log_odds(grammar, states, offset: int = 5) -> np.ndarray:
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
