r"""The Arnold–Gokhale (AG) joint: the joint whose conditionals are closest to the MLM's."""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .. import threads
from ..stats import kl
from .conditionals import PairConditionals, divergences

__all__ = ["AGResult", "ag_objective", "ag", "TOL_FLOOR"]

TOL_FLOOR = 1e-12
"""The smallest tolerance :func:`ag` accepts (nats): a Newton step in float64 stalls near 1e-13."""


@dataclass
class AGResult:
    """Output of :func:`ag` (see its Returns)."""

    joint: np.ndarray
    iterations: int
    objective: np.ndarray
    converged: bool
    error_bound: float = np.inf


def ag_objective(pc: PairConditionals, joint) -> float:
    r"""Arnold–Gokhale objective: :math:`J(p) = \sum_b \mathrm{KL}(q(\cdot\mid b)\,\|\,p(\cdot\mid
    b)) + \sum_a \mathrm{KL}(q(\cdot\mid a)\,\|\,p(\cdot\mid a))`, sums over the conditioning values
    whose MLM conditional is defined (unweighted, as in Arnold & Gokhale 1998). 0 iff p has the
    given conditionals; ``inf`` if p misses support of a given conditional."""
    (d_a, def_b), (d_b, def_a) = divergences(pc, PairConditionals.from_joint(joint), kl)
    return float(d_a[def_b].sum() + d_b[def_a].sum())


def ag(pc: PairConditionals, tol: float = 1e-8, max_iter: int = 200_000, method: str = "newton",
       warm: bool = True) -> AGResult:
    r"""Arnold–Gokhale joint: the p minimising :func:`ag_objective`, by the fixed point

    .. math:: p^{(t+1)}(a,b) \propto \frac{q(a\mid b) + q(b\mid a)}
              {1/p^{(t)}(a) + 1/p^{(t)}(b)}

    (a term drops where its conditional is undefined). Up to a constant,

    .. math:: J(p) = -\sum_{a,b} \big(q(a\mid b)+q(b\mid a)\big)\log p(a,b)
              + \sum_b \log p(b) + \sum_a \log p(a),

    whose stationarity condition is the fixed point; each update is a majorise–minimise step
    (:math:`J` never increases; the support becomes that of :math:`q(a\mid b)+q(b\mid a)`) on
    the two log-marginals :math:`\ell`. ``method``:

    * ``"plain"``: the update above;
    * ``"squarem"``: SQUAREM (Varadhan & Roland 2008) on :math:`\ell`, an extrapolated point kept
      only if its objective is no larger than the plain update's;
    * ``"newton"`` (default): SQUAREM until a plain step moves :math:`\ell` by less than 0.1 (or
      for 100 updates), then Newton's method on :math:`\log \mathrm{rows}(u) - \log z - \ell_A = 0`,
      :math:`\log \mathrm{cols}(u) - \log z - \ell_B = 0` in log-sum-exps (backtracking; least
      squares where exact zeros make it singular); on failure SQUAREM goes on and Newton is
      retried 200 updates later.

    Start: the uniform, or with ``warm=True``, ``method="newton"`` and both conditionals positive,
    :math:`q(a), q(b)` mixed with 1e-6 of the uniform (with exact zeros a start from :math:`q`
    would fix the block weights, :func:`~mlmbook.joints.support_blocks`).

    Stopping (a log joint moves at most twice as far as :math:`\ell`): Newton after a full step of
    max-norm :math:`\delta` with :math:`2\delta \le` ``tol``; the others when
    :math:`2\varepsilon \le` ``tol``, :math:`\varepsilon = d_2\hat\rho/(1-\hat\rho)`,
    :math:`\hat\rho = d_2/d_1` from two plain steps :math:`d_1, d_2`. A ``tol`` below
    :data:`TOL_FLOOR` is raised to it with a warning.

    Returns an :class:`AGResult`: ``iterations`` counts updates (three per SQUAREM cycle) and
    Newton steps; ``objective``: :math:`J` at the start and each accepted iterate; ``converged``:
    if the stopping rule held; ``error_bound``: the last :math:`2\varepsilon` or :math:`2\delta`.
    """
    if method not in ("newton", "squarem", "plain"):
        raise ValueError(f"unknown AG method {method!r}; use 'newton', 'squarem' or 'plain'")
    if not tol > 0:
        raise ValueError(f"AG needs a positive tolerance, got tol={tol!r}")
    if tol < TOL_FLOOR:
        warnings.warn(f"AG tolerance {tol:g} is below what float64 can reach; using {TOL_FLOOR:g}", stacklevel=2)
        tol = TOL_FLOOR
    with threads.limited():  # small linear algebra: one BLAS thread (mlmbook.threads)
        return _solve(pc, tol, max_iter, method, warm)


def _solve(pc: PairConditionals, tol: float, max_iter: int, method: str, warm: bool) -> AGResult:
    qa, qb = np.exp(pc.log_a_given_b), np.exp(pc.log_b_given_a)
    num = qa + qb
    def_b, def_a = qa.sum(axis=0) > 0, qb.sum(axis=1) > 0          # defined conditionals
    neither = ~def_a[:, None] & ~def_b[None, :]                    # no conditional: p = 0 there
    with np.errstate(divide="ignore", invalid="ignore"):
        xlogx = lambda t: np.sum(np.where(t > 0, t * np.log(t), 0.0))  # noqa: E731
        entropy_part = xlogx(qa) + xlogx(qb)
        const = entropy_part - xlogx(num)
    ka, kb = num.shape
    den, u = np.empty_like(num), np.empty_like(num)
    support = num > 0

    def update(pa, pb, objective=True):
        """Marginals of p' = num / (1/pa + 1/pb) (normalised) and J(p') (None if not asked)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            np.add(np.where(def_a, 1.0 / pa, 0.0)[:, None], np.where(def_b, 1.0 / pb, 0.0)[None, :], out=den)
            np.divide(num, den, out=u)
            if neither.any():
                u[neither] = 0.0
            rows, cols = u.sum(axis=1), u.sum(axis=0)
            z = rows.sum()
            J = None
            if objective:  # J(p') = const + sum num log den + sum log(row and column sums of u)
                log_den = np.log(den, out=np.zeros_like(den), where=support)
                J = const + np.sum(num * log_den) + np.log(cols[def_b]).sum() + np.log(rows[def_a]).sum()
                J = float(J) if np.isfinite(J) else np.inf
        return rows / z, cols / z, J

    def error_bound(l0, l1, l2):
        """2 x the a-posteriori distance of l2 to the fixed point, from two plain steps."""
        ok = np.isfinite(l0) & np.isfinite(l1) & np.isfinite(l2)
        d1, d2 = np.abs(l1[ok] - l0[ok]).max(initial=0.0), np.abs(l2[ok] - l1[ok]).max(initial=0.0)
        if d2 == 0.0:
            return 0.0, 0.0
        rho = d2 / d1 if d1 > 0 else 1.0
        return (2 * d2 * rho / (1 - rho) if rho < 1 else np.inf), d2

    pa, pb = np.full(ka, 1.0 / ka), np.full(kb, 1.0 / kb)
    if warm and method == "newton" and np.all(qa > 0) and np.all(qb > 0):  # one block: see "Start"
        pa, pb = _warm(pc.log_a), _warm(pc.log_b)
    objectives = [_ag_objective_at(num, def_a, def_b, entropy_part, np.outer(pa, pb))]
    it, converged, bound = 0, False, np.inf
    next_newton = 0 if method == "newton" else np.inf
    while it < max_iter and not converged:
        pa1, pb1, _ = update(pa, pb, objective=False)
        pa2, pb2, J1 = update(pa1, pb1)
        it += 2
        objectives.append(J1)
        with np.errstate(divide="ignore"):
            l0, l1, l2 = [np.log(np.concatenate(p)) for p in ((pa, pb), (pa1, pb1), (pa2, pb2))]
        bound, step = error_bound(l0, l1, l2)
        converged = bound <= tol
        new_a, new_b = pa2, pb2
        if it >= next_newton and (step <= 1e-1 or it >= 100):  # close enough: solve directly
            next_newton = it + 200  # (retried later if it fails)
            solved = _newton(num, def_a, def_b, pa2, pb2, tol)
            if solved is not None:
                P, steps, delta = solved
                it += steps
                Jn = _ag_objective_at(num, def_a, def_b, entropy_part, P)
                if np.isfinite(Jn) and Jn <= J1 + 1e-9 * max(1.0, abs(J1)):
                    objectives.append(min(Jn, J1))
                    return AGResult(P, it, np.array(objectives), True, float(delta))
        if method != "plain" and not converged:
            ok = np.isfinite(l0) & np.isfinite(l1) & np.isfinite(l2)      # zero marginals stay zero
            l0, l1, l2 = (np.where(ok, x, 0.0) for x in (l0, l1, l2))
            r, v = l1 - l0, l2 - 2 * l1 + l0
            alpha = -np.sqrt(r @ r / (v @ v)) if v @ v > 0 else -1.0
            if alpha < -1.0:                                            # try the extrapolated point
                lx = np.where(ok, l0 - 2 * alpha * r + alpha ** 2 * v, -np.inf)
                xa, xb = np.exp(lx[:ka] - lx[:ka].max()), np.exp(lx[ka:] - lx[ka:].max())
                xa, xb = xa / xa.sum(), xb / xb.sum()
                na, nb, Jx = update(xa, xb)
                it += 1
                if Jx <= J1:                                            # never let J increase
                    objectives.append(Jx)
                    new_a, new_b = na, nb
        pa, pb = new_a, new_b
    _, _, J = update(pa, pb)
    objectives.append(J)
    return AGResult(u / u.sum(), it + 1, np.array(objectives), converged, float(bound))


def _warm(log_q, floor: float = 1e-6) -> np.ndarray:
    """The both-masked marginal mixed with a little of the uniform (a zero would stay zero)."""
    q = np.exp(np.asarray(log_q, dtype=float))
    q = q / q.sum() if q.sum() > 0 and np.all(np.isfinite(q)) else np.full(q.shape, 1.0 / q.size)
    return (1 - floor) * q + floor / q.size


def _ag_objective_at(num, def_a, def_b, entropy_part, p) -> float:
    """:func:`ag_objective` of a joint ``p`` from :func:`ag`'s precomputed pieces."""
    if np.any((num > 0) & (p == 0)):
        return np.inf
    log_p = np.log(p, out=np.zeros_like(p), where=p > 0)
    return float(entropy_part - np.sum(num * log_p)
                 + np.log(p.sum(axis=0)[def_b]).sum() + np.log(p.sum(axis=1)[def_a]).sum())


def _normalise(lx, axis):
    """``exp(lx)`` normalised along ``axis`` (0 where all ``-inf``) and the log normaliser."""
    m = np.max(lx, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(lx - m)
    total = E.sum(axis=axis, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_total = np.squeeze(np.log(total) + m, axis=axis)
        return np.where(total > 0, E / total, 0.0), log_total


def _newton(num, def_a, def_b, pa, pb, tol: float, max_steps: int = 50):
    """Newton's method on the AG stationarity equations in log space, from marginals ``pa, pb``:
    ``(joint, steps, 2 * last step)`` on convergence, ``None`` otherwise."""
    with np.errstate(divide="ignore"):
        ln, x, y = np.log(num), np.log(pa), np.log(pb)
    ls, lt = np.where(def_a, 0.0, -np.inf), np.where(def_b, 0.0, -np.inf)
    ia = np.flatnonzero(np.isfinite(x) & (num.sum(1) > 0))
    ib = np.flatnonzero(np.isfinite(y) & (num.sum(0) > 0))
    if len(ia) == 0 or len(ib) == 0:
        return None
    ln, ls, lt = ln[np.ix_(ia, ib)], ls[ia], lt[ib]
    na = len(ia)

    def pieces(xa, yb):
        """log u, the logistic weights w = d log u / d x and 1 - w, the row- and column-normalised
        u (R, C), u / z, log rows, log cols, log z and the residual F."""
        e1, e2 = ls[:, None] - xa[:, None], lt[None, :] - yb[None, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            lden = np.logaddexp(e1, e2)
            lu = ln - lden
            w = np.where(np.isfinite(e1), np.exp(e1 - lden), 0.0)
            w1 = np.where(np.isfinite(e2), np.exp(e2 - lden), 0.0)     # 1 - w, without cancellation
            (R, lr), (C, lc) = _normalise(lu, 1), _normalise(lu, 0)
        lz = float(_normalise(lr, 0)[1])
        u = R * np.exp(lr - lz)[:, None]
        return lu, w, w1, R, C, u, lr, lc, lz, np.concatenate([lr - lz - xa, lc - lz - yb])

    xa, yb = x[ia], y[ib]
    state = pieces(xa, yb)
    for step in range(1, max_steps + 1):
        lu, w, w1, R, C, u, lr, lc, lz, F = state
        if not np.all(np.isfinite(F)):
            return None
        Rw1, Cw = R * w1, C * w
        da, db = -Rw1.sum(1), -Cw.sum(0)  # no cancellation: 1 - w directly
        g = np.concatenate([(u * w).sum(1), (u * w1).sum(0)])            # d log z
        d = _newton_step(Rw1, Cw, da, db, g, F)
        t, f0 = 1.0, np.abs(F).max()
        while True:                                                      # backtrack on the residual
            new = pieces(xa + t * d[:na], yb + t * d[na:])
            if np.abs(new[-1]).max() <= f0 or t < 1e-4:
                break
            t /= 2
        xa, yb, state = xa + t * d[:na], yb + t * d[na:], new
        delta = 2 * float(np.abs(d).max())
        if t == 1.0 and delta <= tol:
            P = np.zeros_like(num)
            P[np.ix_(ia, ib)] = np.exp(state[0] - state[8])
            return P, step, delta
    return None


def _newton_step(B, Cw, da, db, g, F) -> np.ndarray:
    r"""Solve :math:`J d = -F` for the Jacobian of :func:`_newton`,

    .. math:: J = A - \mathbf 1\, g^\top, \qquad
              A = \begin{pmatrix} D_a & B \\ C_w^\top & D_b \end{pmatrix},

    :math:`D_a, D_b` diagonal. :math:`A\mathbf 1 = 0`, so the solve uses :math:`A' = A + \mathbf 1
    q^\top` (:math:`q` uniform on B's side, :math:`A'\mathbf 1 = \mathbf 1`): a Schur complement
    of side :math:`K_B`, then Sherman–Morrison for :math:`J = A' - \mathbf 1 (g + q)^\top`. If the
    answer fails a check against :math:`J`, the dense system is solved (lstsq if singular)."""
    na, nb = len(da), len(db)
    n = na + nb
    with np.errstate(all="ignore"):
        if np.all(np.abs(da) > 1e-300):
            Ct = Cw.T
            q = np.full(nb, 1.0 / nb)
            Bq = B + q[None, :]  # A' = A + 1 q^T, q on B's side
            Dbq = np.diag(db) + q[None, :]
            v = -F
            Dinv_va = v[:na] / da
            S = Dbq - Ct @ (Bq / da[:, None])
            try:
                zb = np.linalg.solve(S, v[na:] - Ct @ Dinv_va)
                z = np.concatenate([Dinv_va - (Bq @ zb) / da, zb])  # A'^{-1} (-F); A'^{-1} 1 = 1
                h = np.concatenate([g[:na], g[na:] + q])
                d = z + (h @ z) / (1.0 - h.sum())
                Jd = np.concatenate([da * d[:na] + B @ d[na:], Ct @ d[:na] + db * d[na:]]) - g @ d
                if np.all(np.isfinite(d)) and np.abs(Jd + F).max() <= 1e-9 * np.abs(F).max():
                    return d
            except np.linalg.LinAlgError:
                pass
        jac = np.zeros((n, n))                                            # the dense system
        jac[:na, na:], jac[na:, :na] = B, Cw.T
        np.fill_diagonal(jac, np.concatenate([da, db]))
        jac -= g[None, :]
        try:
            d = np.linalg.solve(jac, -F)
            if not np.all(np.isfinite(d)):
                raise np.linalg.LinAlgError
        except np.linalg.LinAlgError:
            d = np.linalg.lstsq(jac, -F, rcond=1e-12)[0]
    return d
