r"""Exact analysis of Glauber dynamics on a small state space (a :class:`Frame`): its transition
matrix, :func:`stationary` law, :func:`spectral_gap`, mean escape times (:func:`hitting_times`) and
their law (:func:`escape_survival`); the landscape's heights are in :mod:`.landscape`.
"""
from __future__ import annotations

import inspect

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import torch

from .. import queries

__all__ = ["Frame", "hitting_times", "escape_survival", "stationary", "spectral_gap",
           "is_reversible"]


class Frame:
    r"""A small state space for exact analysis: a ``template`` sentence (token ids) whose free
    ``sites`` range over ``candidates`` (one sequence of token ids per site),

    .. math:: \mathcal X = \{x : x_i \in \mathcal C_i \text{ for } i \in \text{sites},\;
              x_j = \text{template}_j \text{ otherwise}\}, \qquad |\mathcal X| = \prod_i |\mathcal C_i| .

    States are numbered lexicographically by the index of each site's token in its candidate
    list (the last site fastest); :meth:`states` lists them in that order.
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

    def states(self) -> torch.Tensor:
        """All states (S, n), in frame order."""
        grid = np.indices(self.sizes).reshape(len(self.sites), -1)  # (L, S), last site fastest
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
        codes = np.arange(self.size).reshape(self.sizes)
        return np.moveaxis(codes, a, -1).reshape(-1, self.sizes[a])

    def conditional_logits(self, cond, mask_id: int | None = None) -> list[np.ndarray]:
        r"""The oracle's log-scores over each site's candidates, for every context of the frame.

        One masked row per family (:math:`\pi_i(\cdot \mid x_{-i})` ignores :math:`x_i`): a
        :class:`~mlmbook.models.base.MaskedLM` answers log-probabilities (through
        :func:`~mlmbook.queries.iter_log_probs`, a tqdm bar above 20,000 rows), a plain function
        with the signature of ``logits`` (then pass ``mask_id``) logits. Both differ from the
        logits by a constant per row, which :meth:`kernel` ignores: one pass serves every T.

        Returns
        -------
        list of ndarray
            One float64 array (S / m_a, m_a) per site, rows in the order of :meth:`families`.
        """
        engine = hasattr(cond, "logits") and "full_softmax" in inspect.signature(cond.logits).parameters
        mask_id = getattr(cond, "mask_id", None) if mask_id is None else mask_id
        if mask_id is None:
            raise ValueError("pass mask_id when cond is a plain function")
        states = self.states()
        queries_ = []
        for a, i in enumerate(self.sites):
            q = states[self.families(a)[:, 0]].clone()
            q[:, i] = mask_id
            queries_.append(q)
        if not engine:
            fn = cond.logits if hasattr(cond, "logits") else cond
            return [fn(q, torch.full((len(q), 1), i))[:, 0, :].detach().cpu().double()[:, c].numpy()
                    for q, i, c in zip(queries_, self.sites, self.candidates)]
        rows = torch.cat(queries_)
        positions = [[i] for q, i in zip(queries_, self.sites) for _ in range(len(q))]
        site_of = np.repeat(np.arange(len(self.sites)), [len(q) for q in queries_])
        start = np.cumsum([0] + [len(q) for q in queries_])
        out = [np.empty((len(q), len(c))) for q, c in zip(queries_, self.candidates)]
        for idx, lp in queries.iter_log_probs(cond, rows.tolist(), positions,
                                              progress=len(rows) > 20_000 and "frame conditionals"):
            idx = np.asarray(idx)
            for a in np.unique(site_of[idx]):
                sel = site_of[idx] == a
                out[a][idx[sel] - start[a]] = lp[sel, 0][:, self.candidates[a].numpy()]
        return out

    def kernel(self, site_logits, T: float = 1.0) -> sp.csr_matrix:
        r"""Random-scan Glauber kernel at temperature T from :meth:`conditional_logits`:

        .. math::
            P(x, x') = \frac1L\sum_{i} [x'_{-i} = x_{-i}]\; \pi_{i,T}(x'_i \mid x_{-i}),
            \qquad \pi_{i,T}(v \mid x_{-i}) \propto e^{\ell_i(v \mid x_{-i})/T},\; v \in \mathcal C_i .

        A context where every candidate has logit :math:`-\infty` (an exact oracle that forbids
        them all) gets the uniform law over the candidates (such states are transient).
        """
        L, S = len(self.sites), self.size
        rows, cols, vals = [], [], []
        for a, lg in enumerate(site_logits):
            probs = softmax_rows(lg, T)                                      # (F, m)
            fam = self.families(a)
            m = fam.shape[1]
            rows.append(np.repeat(fam, m, axis=1).ravel())                  # from member u ...
            cols.append(np.tile(fam, (1, m)).ravel())                       # ... to member v
            vals.append(np.repeat(probs[:, None, :], m, axis=1).ravel() / L)
        P = sp.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(S, S))
        return P.tocsr()


def softmax_rows(table, T: float) -> np.ndarray:
    """Row-wise tempered softmax of a site's table over its candidates (a row without mass:
    uniform)."""
    z = np.asarray(table, dtype=np.float64) / T
    top = z.max(axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        w = np.exp(z - np.where(np.isfinite(top), top, 0))
    w[~np.isfinite(top[:, 0])] = 1.0
    return w / w.sum(axis=1, keepdims=True)


def hitting_times(P, target) -> np.ndarray:
    r"""Exact mean hitting times :math:`k(x) = \mathbb E_x[\min\{t \ge 0 : X_t \in B\}]` of the set
    ``target`` = :math:`B`, in steps, from every state: :math:`k = 0` on :math:`B` and
    :math:`(I - P_{B^cB^c})\,k_{B^c} = \mathbf 1` (one sparse solve). States that cannot
    reach :math:`B` make the system singular; keep them out of ``P`` first.
    """
    P = sp.csr_matrix(P)
    S = P.shape[0]
    out = np.zeros(S)
    rest = np.setdiff1d(np.arange(S), np.asarray(target, dtype=np.int64))
    A = sp.identity(len(rest), format="csc") - P[rest][:, rest].tocsc()
    out[rest] = spla.spsolve(A, np.ones(len(rest)))
    return out


def escape_survival(P, start: int, target, steps: int) -> np.ndarray:
    r"""Exact law of the escape time :math:`\tau = \min\{t \ge 0 : X_t \in B\}` from ``start``:
    :math:`P_s(\tau > t)` for :math:`t = 0, \dots,` ``steps`` (``steps`` + 1 values).

    With :math:`Q = P_{B^cB^c}`, :math:`P_x(\tau > t) = (Q^t \mathbf 1)(x)`: one sparse product per
    step. The capped moments follow, e.g. :math:`\mathbb E\min(\tau, c) = \sum_{t<c} P(\tau > t)`
    and :math:`\mathbb E\min(\tau, c)^2 = \sum_{t<c} (2t+1)\,P(\tau > t)`.
    """
    P = sp.csr_matrix(P)
    tgt = np.zeros(P.shape[0], bool)
    tgt[np.asarray(target, dtype=np.int64)] = True
    if tgt[start]:
        return np.zeros(steps + 1)
    rest = np.flatnonzero(~tgt)
    Q = P[rest][:, rest].tocsr()
    s = int(np.searchsorted(rest, start))
    u, out = np.ones(len(rest)), np.empty(steps + 1)
    for t in range(steps + 1):
        out[t] = u[s]
        u = Q @ u
    return out


def stationary(P, tol: float = 1e-13, dense_below: int = 300) -> np.ndarray:
    r"""Stationary law :math:`\pi = \pi P` (assumes one closed class): below ``dense_below`` states
    a dense solve of :math:`(P^\top - I)\pi = 0` with one equation replaced by :math:`\sum\pi = 1`,
    above the Perron eigenvector of :math:`P^\top` by ARPACK (a sparse LU fills in badly on these
    Hamming-graph chains); then power steps until :math:`\|\pi P - \pi\|_1 <` ``tol`` (at most 100).
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
    r"""Detailed balance :math:`\pi(x)P(x,y) = \pi(y)P(y,x)`, to ``tol`` relative to the largest
    flow."""
    F = sp.diags(np.asarray(pi)) @ sp.csr_matrix(P)
    return bool(abs(F - F.T).max() <= tol * abs(F).max())


def spectral_gap(P, pi=None, reversible: bool | None = None, dense_below: int = 300) -> float:
    r"""Absolute spectral gap :math:`\gamma_* = 1 - \max\{|\lambda| : \lambda \ne 1\}`.

    For a reversible chain, :math:`P` is self-adjoint in :math:`L^2(\pi)`; its eigenvalues are
    those of the symmetric :math:`D^{1/2} P D^{-1/2}` (:math:`D=\operatorname{diag}\pi`), and
    :math:`t_\text{rel} = 1/\gamma_*` is Levin & Peres' relaxation time, with
    :math:`(t_\text{rel}-1)\log\frac1{2\varepsilon} \le t_\text{mix}(\varepsilon) \le
    t_\text{rel}\log\frac1{\varepsilon\,\pi_\min}`. For a non-reversible chain (an incoherent
    MLM), :math:`1-|\lambda_2|` with :math:`|\lambda_2|` the second-largest eigenvalue modulus of
    :math:`P` (the asymptotic rate, without two-sided bounds). Eigenvalue 1 is deflated
    (:math:`P - \mathbf 1\pi^\top`); dense below ``dense_below`` states, ARPACK above (dense
    again where ARPACK fails). Reversible chains leave out states of mass below 1e-250.
    """
    P = sp.csr_matrix(P)
    pi = stationary(P) if pi is None else np.asarray(pi, dtype=np.float64)
    if reversible is None:
        reversible = is_reversible(P, pi)
    if reversible and not (pi > 1e-250).all():
        keep = np.flatnonzero(pi > 1e-250)
        P, pi = P[keep][:, keep], pi[keep] / pi[keep].sum()
    S, ev = P.shape[0], None
    # D^{1/2} P D^{-1/2}, symmetrised against rounding; eigenvalue 1 has vector sqrt(pi)
    if reversible:
        r = np.sqrt(pi)
        A = sp.diags(r) @ P @ sp.diags(1 / r)
        A, left, right = (A + A.T) / 2, r, r
    else:  # eigenvalue 1: right vector 1, left vector pi
        A, left, right = P, np.ones(S), pi
    if S >= dense_below:
        op = spla.LinearOperator((S, S), matvec=lambda v: A @ v - left * (right @ v), dtype=np.float64)
        solve = spla.eigsh if reversible else spla.eigs
        v0 = np.random.default_rng(0).random(S) + 0.5  # ARPACK's own start is random: fix it
        for room in ({}, dict(ncv=min(S - 1, 80), maxiter=50 * S)):  # hard cases: more room
            try:
                ev = solve(op, k=1, which="LM", v0=v0, return_eigenvectors=False, **room)
                break
            except (spla.ArpackError, spla.ArpackNoConvergence):
                continue
    if ev is None:
        M = A.toarray() - np.outer(left, right)  # exactly symmetric when reversible
        ev = np.linalg.eigvalsh(M) if reversible else np.linalg.eigvals(M)
    return float(1 - np.abs(ev).max())
