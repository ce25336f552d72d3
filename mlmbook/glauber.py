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
    "GlauberSampler", "Coupling", "hamming_autocorrelation", "basin_occupancy", "escape_times",
    "state_space", "state_index", "exact_transition_matrix", "stationary", "spectral_gap",
    "relaxation_time", "tv", "kl", "is_reversible",
]


def _bar(n: int, progress: bool | None, desc: str):
    return tqdm(range(n), disable=not (n >= 500 if progress is None else progress), desc=desc)


def _draw(logits: torch.Tensor, u: torch.Tensor, T: float) -> torch.Tensor:
    """Inverse-CDF sample of softmax(logits / T) over a fixed token order, given uniforms u."""
    p = torch.softmax(logits.to(torch.float64) / T, dim=-1)
    cdf = torch.cumsum(p, dim=-1)
    idx = torch.searchsorted(cdf, (u * cdf[:, -1]).unsqueeze(1), right=True).squeeze(1)
    return idx.clamp_(max=p.shape[1] - 1)


class Coupling(NamedTuple):
    times: np.ndarray     # (C,) first step at which the pair agrees everywhere (max_steps if censored)
    censored: np.ndarray  # (C,) True if the pair never met within max_steps
    final_a: torch.Tensor
    final_b: torch.Tensor
    traj_a: torch.Tensor | None  # (R, C, n) if record_every was given
    traj_b: torch.Tensor | None


class GlauberSampler:
    """Many Glauber chains at once, driven by a seeded ``torch.Generator``.

    Parameters
    ----------
    lm : oracle with ``logits(ids, positions)`` and ``mask_id`` (docs/INTERFACES.md)
    temperature : float > 0
    scan : ``"random"`` (site uniform over the free sites, independently per chain) or
        ``"systematic"`` (all chains visit the free sites in order, cyclically)
    frozen : positions never resampled (e.g. the final ".")
    candidates : token ids to sample from (default: the whole vocabulary)
    seed : seed of the generator; same seed, same oracle → same chains
    """

    def __init__(self, lm, temperature: float = 1.0, scan: str = "random", frozen=None,
                 candidates=None, seed: int = 0):
        if temperature <= 0:
            raise ValueError("temperature must be positive")
        if scan not in ("random", "systematic"):
            raise ValueError("scan must be 'random' or 'systematic'")
        self.lm, self.T, self.scan = lm, float(temperature), scan
        self.frozen = sorted(set(int(f) for f in (frozen or ())))
        self.candidates = None if candidates is None else torch.as_tensor(candidates, dtype=torch.long)
        self.generator = torch.Generator().manual_seed(seed)

    def sites(self, n: int) -> torch.Tensor:
        return torch.tensor([i for i in range(n) if i not in self.frozen], dtype=torch.long)

    def random_states(self, n_chains: int, template, pool=None) -> torch.Tensor:
        """(n_chains, n) states: ``template`` with free sites drawn uniformly from ``pool``
        (default: the candidates), using the sampler's generator."""
        x = torch.as_tensor(template, dtype=torch.long).repeat(n_chains, 1)
        pool = self.candidates if pool is None else torch.as_tensor(pool, dtype=torch.long)
        if pool is None:
            raise ValueError("give a pool of token ids (or construct the sampler with candidates)")
        s = self.sites(x.shape[1])
        x[:, s] = pool[torch.randint(len(pool), (n_chains, len(s)), generator=self.generator)]
        return x

    def _randomness(self, C: int, n: int, t: int):
        s = self.sites(n)
        if self.scan == "random":
            site = s[torch.randint(len(s), (C,), generator=self.generator)]
        else:
            site = s[t % len(s)].repeat(C)
        return site, torch.rand(C, generator=self.generator, dtype=torch.float64)

    def _update(self, x: torch.Tensor, site: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        rows = torch.arange(len(x))
        q = x.clone()
        q[rows, site] = self.lm.mask_id
        logits = self.lm.logits(q, site[:, None])[:, 0, :].detach().cpu()
        if self.candidates is not None:
            tok = self.candidates[_draw(logits[:, self.candidates], u, self.T)]
        else:
            tok = _draw(logits, u, self.T)
        x = x.clone()
        x[rows, site] = tok
        return x

    def step(self, x: torch.Tensor, t: int = 0) -> torch.Tensor:
        """One step of every chain in ``x`` (C, n); ``t`` is the step index (systematic scan)."""
        site, u = self._randomness(*x.shape, t)
        return self._update(x, site, u)

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
                    stop_when_met: bool = True, progress: bool | None = None) -> Coupling:
        """Grand coupling of pairs of chains: same site and same uniform for both copies.

        Each pair uses one site choice and one uniform :math:`u` per step, and each copy takes
        the token where its CDF (over a fixed token order) first exceeds :math:`u`. Each copy is
        marginally a Glauber chain (the same one ``run`` gives from the same seed); once a pair
        agrees everywhere, both copies see identical inputs and randomness and stay together
        (met pairs share one forward row, which also rules out float noise between batch rows).
        The coalescence time :math:`\\tau = \\min\\{t : a_t = b_t\\}` bounds the distance to
        stationarity: :math:`d(t) \\le \\max_{x,y} P_{x,y}(\\tau > t)` (Levin & Peres, Thm 5.4).
        Runs stop early once every pair has met (unless ``stop_when_met=False``).
        """
        a, b = (torch.as_tensor(v, dtype=torch.long) for v in (init_a, init_b))
        C, n = a.shape
        met = (a == b).all(dim=1)
        times = np.where(met.numpy(), 0, max_steps)
        ta, tb = ([a], [b]) if record_every else (None, None)
        for t in _bar(max_steps, progress, "coupling"):
            if stop_when_met and bool(met.all()):
                break
            site, u = self._randomness(C, n, t)
            apart = torch.nonzero(~met).ravel()
            both = self._update(torch.cat([a, b[apart]]), torch.cat([site, site[apart]]),
                                torch.cat([u, u[apart]]))
            a, b = both[:C], both[:C].clone()
            b[apart] = both[C:]
            now = (a == b).all(dim=1)
            times[(now & ~met).numpy()] = t + 1
            met |= now
            if record_every and (t + 1) % record_every == 0:
                ta.append(a)
                tb.append(b)
        return Coupling(times, ~met.numpy(), a, b,
                        torch.stack(ta) if ta else None, torch.stack(tb) if tb else None)


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

def state_space(n: int, V_subset, template=None, sites=None) -> torch.Tensor:
    """All |V_subset|^|sites| states (S, n), in the order of :func:`exact_transition_matrix`
    (lexicographic in the order of ``V_subset``, last free site fastest)."""
    V_subset = torch.as_tensor(V_subset, dtype=torch.long)
    sites = list(range(n)) if sites is None else [int(s) for s in sites]
    if template is None and len(sites) < n:
        raise ValueError("a template is needed to fix the positions outside `sites`")
    x = (torch.zeros(n, dtype=torch.long) if template is None else torch.as_tensor(template, dtype=torch.long)).clone()
    grid = torch.tensor(list(itertools.product(range(len(V_subset)), repeat=len(sites))), dtype=torch.long)
    states = x.repeat(len(grid), 1)
    states[:, sites] = V_subset[grid]
    return states


def state_index(states, V_subset, sites=None) -> np.ndarray:
    """Index in :func:`state_space` of each state (..., n); -1 if a free site is outside V_subset."""
    x = torch.as_tensor(states).numpy()
    sites = list(range(x.shape[-1])) if sites is None else list(sites)
    V_subset = np.asarray(V_subset, dtype=np.int64)
    table = np.full(max(V_subset.max(), x.max()) + 1, -1, dtype=np.int64)
    table[V_subset] = np.arange(len(V_subset))
    digits = table[x[..., sites]]
    idx = np.zeros(x.shape[:-1], dtype=np.int64)
    for d in range(len(sites)):
        idx = idx * len(V_subset) + digits[..., d]
    return np.where((digits < 0).any(axis=-1), -1, idx)


def exact_transition_matrix(cond, n: int, V_subset, T: float = 1.0, scan: str = "random",
                            template=None, sites=None, mask_id: int | None = None,
                            chunk: int = 8192, progress: bool | None = None) -> sp.csr_matrix:
    r"""Exact random-scan Glauber kernel on :math:`\mathcal{C}^{|\text{sites}|}`, as a sparse matrix.

    .. math::
        P(x, x') = \frac1{|\text{sites}|}\sum_{i \in \text{sites}} [x'_{-i} = x_{-i}]\,
                   \pi_{i,T}(x'_i \mid x_{-i}),

    with :math:`\pi_{i,T}` the tempered conditional restricted to ``V_subset`` (renormalised).
    ``cond`` is an oracle (``.logits``, ``.mask_id``) or a function with the signature of
    ``logits`` (then pass ``mask_id``). ``template`` fixes the non-free positions. Since
    :math:`\pi_{i,T}` ignores :math:`x_i`, only :math:`|\text{sites}|\cdot m^{|\text{sites}|-1}`
    rows are queried, in chunks of ``chunk`` (a tqdm bar over the chunks when there are more
    than 10, or as ``progress`` says). States are ordered as :func:`state_space`.
    Only random scan is built (a systematic sweep is the product of the site kernels and
    fills in); ``scan`` is there to say so.
    """
    if scan != "random":
        raise NotImplementedError("only the random-scan kernel is built exactly")
    logits_fn = cond.logits if hasattr(cond, "logits") else cond
    mask_id = getattr(cond, "mask_id", None) if mask_id is None else mask_id
    if mask_id is None:
        raise ValueError("pass mask_id when cond is a plain function")
    V_subset = torch.as_tensor(V_subset, dtype=torch.long)
    sites = list(range(n)) if sites is None else [int(s) for s in sites]
    states = state_space(n, V_subset, template, sites)
    m, L, S = len(V_subset), len(sites), len(states)
    codes = np.arange(S).reshape((m,) * L)  # state index by digits
    rows, cols, vals = [], [], []
    n_chunks = L * -(-(S // m) // chunk)
    bar = tqdm(total=n_chunks, disable=not (n_chunks > 10 if progress is None else progress),
               desc="transition matrix")
    for a, i in enumerate(sites):
        base = np.moveaxis(codes, a, -1)[..., 0].ravel()  # states with digit a = 0
        q = states[base].clone()
        q[:, i] = mask_id
        probs = []
        for c in range(0, len(q), chunk):
            lg = logits_fn(q[c:c + chunk], torch.full((len(q[c:c + chunk]), 1), i))[:, 0, :]
            bar.update()
            probs.append(torch.softmax(lg.detach().cpu().double()[:, V_subset] / T, dim=-1).numpy())
        probs = np.concatenate(probs)  # (S/m, m): pi_i(v | x_-i)
        fam = np.moveaxis(codes, a, -1).reshape(-1, m)  # the m states of each family
        for v in range(m):  # every state of a family jumps to member v with prob probs[:, v] / L
            rows.append(fam.ravel())
            cols.append(np.repeat(fam[:, v], m))
            vals.append(np.repeat(probs[:, v], m) / L)
    bar.close()
    P = sp.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(S, S))
    return P.tocsr()


def stationary(P, tol: float = 1e-13, dense_below: int = 2000) -> np.ndarray:
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


def spectral_gap(P, pi=None, reversible: bool | None = None, dense_below: int = 2000) -> float:
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
