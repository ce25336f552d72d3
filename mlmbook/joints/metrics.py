r"""How good is a derived joint: divergences to the MLM and to the truth, incompatibility, and the
chapter's per-pair bookkeeping (:func:`evaluate_pair`, :func:`stack`)."""
from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import lsqr

from ..stats import jsd, kl, mutual_information, tv
from .ag import ag
from .conditionals import PairConditionals, _np, divergences
from .derive import derive_all

__all__ = ["conditional_divergence", "conditional_divergences", "compatibility",
           "nearest_compatible", "kl_joint", "tv_joint", "block_error", "truth_conditional_kl",
           "evaluate_pair", "stack"]


def kl_joint(p_true, p_derived) -> float:
    r""":math:`\mathrm{KL}(p_{\text{true}}\,\|\,p_{\text{derived}})` between two joints (nats)."""
    return float(kl(np.ravel(_np(p_true)), np.ravel(_np(p_derived))))


def tv_joint(p_true, p_derived) -> float:
    r"""Total variation :math:`\tfrac12\sum_{a,b}|p_{\text{true}}(a,b)-p_{\text{derived}}(a,b)|`
    between two joints (:func:`mlmbook.stats.tv`)."""
    return tv(_np(p_true), _np(p_derived))


def conditional_divergence(joint, pc: PairConditionals, kind: str = "kl") -> float:
    r"""Divergence between the derived joint's conditionals and the MLM's, ``kind`` ``"kl"``
    :math:`\mathrm{KL}(q_{\text{MLM}}\|p)`, ``"rkl"`` :math:`\mathrm{KL}(p\|q_{\text{MLM}})` or
    ``"jsd"``: the unweighted mean over every conditioning value whose MLM conditional is defined,
    both sides (the paper's *all* average). A conditioning value the derived joint gives probability
    0 counts as maximally divergent (``inf`` for the KLs, :math:`\log 2` for JSD)."""
    div = {"kl": kl, "rkl": lambda p, q, axis: kl(q, p, axis), "jsd": jsd}[kind]
    worst = np.log(2) if kind == "jsd" else np.inf
    (d_a, def_b), (d_b, def_a) = divergences(pc, PairConditionals.from_joint(joint), div, worst)
    return float(np.mean(np.concatenate([d_a[def_b], d_b[def_a]])))


def conditional_divergences(joint, pc: PairConditionals) -> dict[str, float]:
    r"""``{"kl", "rkl", "jsd"}`` of :func:`conditional_divergence` in one pass."""
    J = _np(joint)
    parts = {"kl": [], "rkl": [], "jsd": []}
    worst = {"kl": np.inf, "rkl": np.inf, "jsd": np.log(2)}
    with np.errstate(all="ignore"):
        for log_q, ax in ((pc.log_a_given_b, 0), (pc.log_b_given_a, 1)):
            marg = J.sum(axis=ax, keepdims=True)
            p, q = J / marg, np.exp(log_q)
            log_p = np.log(p)
            m = (p + q) / 2
            log_m = np.log(m)
            vals = {"kl": np.where(q > 0, q * (log_q - log_p), 0.0).sum(axis=ax),
                    "rkl": np.where(p > 0, p * (log_p - log_q), 0.0).sum(axis=ax),
                    "jsd": 0.5 * (np.where(q > 0, q * (log_q - log_m), 0.0)
                                  + np.where(p > 0, p * (log_p - log_m), 0.0)).sum(axis=ax)}
            defined_p, defined_q = marg.reshape(-1) > 0, np.isfinite(log_q).any(axis=ax)
            for kind, v in vals.items():
                parts[kind].append(np.where(defined_p, v, worst[kind])[defined_q])
    return {kind: float(np.mean(np.concatenate(v))) for kind, v in parts.items()}


def compatibility(pc: PairConditionals, weighted: bool = True) -> float:
    r"""Arnold–Press incompatibility: two positive conditionals come from one joint iff the ratio
    :math:`q(a\mid b)/q(b\mid a) = p(a)/p(b)` factorises as :math:`u_a v_b` (Arnold & Press 1989).
    With :math:`r_{ab} = \log q(a\mid b) - \log q(b\mid a)`, the weighted least-squares misfit

    .. math:: \min_{u, v}\; \frac{\sum_{(a,b)\in S} w_{ab}\,(r_{ab} - u_a - v_b)^2}{\sum_{(a,b)\in S} w_{ab}},

    over the common support S (both tables positive), in squared nats; 0 iff compatible on S.
    ``weighted``: :math:`w_{ab} = q(a)\,q(b)`, the both-masked marginals (with full support: the
    weighted double centring of r); else every cell the same."""
    la, lb = pc.log_a_given_b, pc.log_b_given_a
    support = np.isfinite(la) & np.isfinite(lb)
    wa, wb = (np.exp(pc.log_a), np.exp(pc.log_b)) if weighted else (np.ones(la.shape[0]), np.ones(la.shape[1]))
    if support.all() and wa.sum() > 0 and wb.sum() > 0:     # closed form: weighted double centring
        wa, wb = wa / wa.sum(), wb / wb.sum()
        r = la - lb
        resid = r - (r @ wb)[:, None] - (wa @ r)[None, :] + wa @ r @ wb
        return float(wa @ resid ** 2 @ wb)
    w = (wa[:, None] * wb[None, :])[support]
    i, j = np.nonzero(support)
    keep = w > 0
    if not keep.any():
        return 0.0
    i, j, w = i[keep], j[keep], w[keep] / w[keep].sum()
    r = la[i, j] - lb[i, j]
    ka, kb = pc.shape
    sw = np.sqrt(w)
    rows = np.arange(i.size)
    X = sparse.hstack([sparse.csr_matrix((sw, (rows, i)), shape=(i.size, ka)),
                       sparse.csr_matrix((sw, (rows, j)), shape=(i.size, kb))]).tocsr()
    uv = lsqr(X, sw * r, atol=1e-15, btol=1e-15, iter_lim=10 * (ka + kb))[0]
    return float(np.sum((sw * r - X @ uv) ** 2))


def nearest_compatible(pc: PairConditionals, joint=None) -> float:
    r"""How far the MLM's conditionals are from the nearest compatible joint's (``joint``, default
    AG's, :func:`~mlmbook.joints.ag`), in nats, each conditioning value weighted by its both-masked
    probability:

    .. math:: \tfrac12\Big[\sum_b q(b)\,\mathrm{KL}\big(q(\cdot\mid b)\,\|\,p(\cdot\mid b)\big)
              + \sum_a q(a)\,\mathrm{KL}\big(q(\cdot\mid a)\,\|\,p(\cdot\mid a)\big)\Big],

    0 for compatible conditionals (:func:`conditional_divergence` gives the unweighted mean)."""
    J = ag(pc).joint if joint is None else _np(joint)
    (d_a, def_b), (d_b, def_a) = divergences(pc, PairConditionals.from_joint(J), kl)
    out = 0.0
    for d, defined, log_m in ((d_a, def_b, pc.log_b), (d_b, def_a, pc.log_a)):
        w = np.where(defined, np.exp(log_m), 0.0)
        out += 0.5 * float(np.sum(w[defined] * d[defined]) / w.sum()) if w.sum() > 0 else 0.0
    return out


def block_error(p_true, joint, labels_a) -> float:
    r"""The share of the mass a joint puts in the wrong *block*: :math:`\tfrac12\sum_k
    |p(\text{block } k) - q_m(\text{block } k)|`, the blocks given by a label per row
    (``labels_a``, from :func:`~mlmbook.joints.support_blocks`; ``-1``: no block)."""
    P, Q, labels = _np(p_true), _np(joint), np.asarray(labels_a)
    blocks = np.unique(labels[labels >= 0])
    return float(0.5 * sum(abs(P[labels == k].sum() - Q[labels == k].sum()) for k in blocks))


def truth_conditional_kl(p_true, model) -> float:
    r"""How far a model's two conditionals are from the true ones, in expectation under the truth:

    .. math:: \tfrac12\Big[\mathbb{E}_{b\sim p(b)}\,\mathrm{KL}\big(p(\cdot\mid b)\,\|\,m(\cdot\mid b)\big)
              + \mathbb{E}_{a\sim p(a)}\,\mathrm{KL}\big(p(\cdot\mid a)\,\|\,m(\cdot\mid a)\big)\Big].

    ``model`` is a derived joint or a :class:`PairConditionals` (the MLM's own conditionals); for a
    joint it is at most :func:`kl_joint`. ``inf`` where the model misses the truth's support."""
    P = _np(p_true)
    P = P / P.sum()
    S = P > 0
    w = P[S]
    with np.errstate(divide="ignore", invalid="ignore"):
        lP = np.log(w)
        ia, ib = np.nonzero(S)
        true_a = lP - np.log(P.sum(axis=0))[ib]                 # log p(a | b) on the support
        true_b = lP - np.log(P.sum(axis=1))[ia]                 # log p(b | a)
        if isinstance(model, PairConditionals):
            model_a, model_b = model.log_a_given_b[S], model.log_b_given_a[S]
        else:
            M = _np(model)
            lM = np.log(M[S])
            model_a = lM - np.log(M.sum(axis=0))[ib]
            model_b = lM - np.log(M.sum(axis=1))[ia]
        out = 0.0
        for t, m in ((true_a, model_a), (true_b, model_b)):
            d = t - m
            out += 0.5 * float(np.sum(w * np.where(np.isnan(d) | np.isneginf(m), np.inf, d)))
    return out


def _at_gold(joint, a, b) -> tuple[float, float]:
    r""":math:`\log p(a, b)` and :math:`\log p(a\mid b) + \log p(b\mid a)` at ``(a, b)``."""
    with np.errstate(divide="ignore"):
        lp = np.log(joint[a, b])
        return float(lp), float(2 * lp - np.log(joint[:, b].sum()) - np.log(joint[a, :].sum()))


def evaluate_pair(pc: PairConditionals, gold, truth=None, joints: dict | None = None,
                  to_mlm: bool = True) -> dict[str, float]:
    r"""Every per-pair quantity the chapter aggregates, as a flat ``{"method.metric": float}``, for
    the MLM's conditionals ``pc``, the indices ``gold`` of the observed tokens among the candidates
    (:func:`~mlmbook.joints.gold_index`), the true joint ``truth`` (toy world only) and ``joints``
    (default :func:`~mlmbook.joints.derive_all`'s). For each method ``m`` of ``joints``:

    - ``m.logp_pair`` :math:`\log q_m(a,b)` and ``m.logp_unary``
      :math:`\log q_m(a\mid b)+\log q_m(b\mid a)` at the gold pair (P-PPL and U-PPL);
    - with ``to_mlm``: ``m.kl``, ``m.rkl``, ``m.jsd`` (:func:`conditional_divergence`);
    - with ``truth``: ``m.kl_truth`` :math:`\mathrm{KL}(p\|q_m)`, ``m.tv_truth`` (:func:`tv_joint`)
      and ``m.cond_kl_truth`` (:func:`truth_conditional_kl`);

    and ``mlm.logp_unary`` (the MLM's own conditionals at the gold pair), ``compatibility``
    (weighted), ``nearest_compatible`` (when AG's joint is among ``joints``); with ``truth`` also
    ``mlm.cond_kl_truth``, ``truth.logp_pair``, ``truth.logp_unary`` and ``truth.mi``, the true
    conditional mutual information of the two positions, :math:`\mathrm{KL}(p \,\|\, p_A\, p_B)`."""
    a, b = gold
    joints = derive_all(pc) if joints is None else joints
    out = {}
    for m, J in joints.items():
        out[f"{m}.logp_pair"], out[f"{m}.logp_unary"] = _at_gold(J, a, b)
        for kind, value in (conditional_divergences(J, pc).items() if to_mlm else ()):
            out[f"{m}.{kind}"] = value
        if truth is not None:
            out[f"{m}.kl_truth"] = kl_joint(truth, J)
            out[f"{m}.tv_truth"] = tv_joint(truth, J)
            out[f"{m}.cond_kl_truth"] = truth_conditional_kl(truth, J)
    out["mlm.logp_unary"] = float(pc.log_a_given_b[a, b] + pc.log_b_given_a[a, b])
    out["compatibility"] = compatibility(pc)
    if "ag" in joints:
        out["nearest_compatible"] = nearest_compatible(pc, joints["ag"])
    if truth is not None:
        out["mlm.cond_kl_truth"] = truth_conditional_kl(truth, pc)
        out["truth.logp_pair"], out["truth.logp_unary"] = _at_gold(truth, a, b)
        out["truth.mi"] = float(mutual_information(_np(truth)))
    return out


def stack(rows: list) -> dict[str, np.ndarray]:
    """A list of :func:`evaluate_pair` dicts -> ``{key: array over pairs}`` (keys that all have)."""
    keys = [k for k in rows[0] if all(k in r for r in rows)]
    return {k: np.array([r[k] for r in rows], dtype=float) for k in keys}

