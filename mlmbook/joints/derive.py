r"""Joints of two masked tokens from an MLM's conditionals (Torroba Hennigen & Kim 2023): the
independent product, two MRFs, Hammersley–Clifford–Besag (HCB), and the support blocks that exact
zeros create. Each keeps the zeros its formula implies, never returns NaN, and raises
``ValueError`` for a joint with no support."""
from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from .ag import ag
from .conditionals import NEG_INF, PairConditionals, _np, joint_from_log

__all__ = ["METHODS", "naive", "mrf", "mrf_local", "default_pivot", "hcb", "support_blocks",
           "anchor", "derive_all"]

METHODS = {"naive": "MLM (independent)", "mrf": "MRF", "mrf_local": "MRF-local", "hcb": "HCB",
           "ag": "AG", "ag_anchored": "AG anchored"}
"""The joints of :func:`derive_all` and their labels (``ag_anchored``: :func:`anchor` on AG)."""


def naive(pc: PairConditionals) -> np.ndarray:
    r"""Independent joint :math:`p(a,b) = q(a)\,q(b)` from the both-masked marginals."""
    return joint_from_log(pc.log_a[:, None] + pc.log_b[None, :])


def mrf(pc: PairConditionals) -> np.ndarray:
    r"""Pairwise MRF on raw logits: :math:`\log p(a,b) = f_A(a;b) + f_B(b;a) - \log Z`,
    :math:`f` the MLM's unnormalised logit of a token with the other position filled in."""
    return joint_from_log(pc.logit_a_given_b + pc.logit_b_given_a)


def mrf_local(pc: PairConditionals) -> np.ndarray:
    r"""MRF on locally normalised potentials: :math:`p(a,b) \propto q(a\mid b)\,q(b\mid a)`
    (for compatible conditionals :math:`p(a,b)^2/(p(a)p(b))` renormalised, not :math:`p`)."""
    return joint_from_log(pc.log_a_given_b + pc.log_b_given_a)


def default_pivot(pc: PairConditionals) -> int:
    r"""Pivot :math:`a^\star = \arg\max_a q(a)`, the both-masked mode (the paper's ``hcb-both``)."""
    return int(np.argmax(pc.log_a))


def hcb(pc: PairConditionals, pivot: int | None = None) -> np.ndarray:
    r"""Hammersley–Clifford–Besag joint with pivot :math:`(a^\star, b^\star)`.

    Besag's identity, changing B first and then A:

    .. math:: \frac{p(a,b)}{p(a^\star,b^\star)}
              = \frac{q(b\mid a^\star)}{q(b^\star\mid a^\star)}\cdot\frac{q(a\mid b)}{q(a^\star\mid b)},
       \qquad p(a,b) \propto q(b\mid a^\star)\,\frac{q(a\mid b)}{q(a^\star\mid b)}.

    ``pivot`` is the index :math:`a^\star` (default :func:`default_pivot`); to pivot on B use
    ``hcb(pc.swap(), b_star).T``. Exact for compatible conditionals whenever every b with
    :math:`p(b)>0` has :math:`p(a^\star,b)>0`; columns with :math:`q(b\mid a^\star)=0` or
    :math:`q(a^\star\mid b)=0` get zero mass."""
    a_star = default_pivot(pc) if pivot is None else int(pivot)
    lb, la_star = pc.log_b_given_a[a_star], pc.log_a_given_b[a_star]
    ok = np.isfinite(lb) & np.isfinite(la_star)
    col = np.full(lb.shape, NEG_INF)
    col[ok] = lb[ok] - la_star[ok]
    return joint_from_log(pc.log_a_given_b + col[None, :])


def support_blocks(pc: PairConditionals) -> tuple[int, np.ndarray, np.ndarray]:
    r"""Connected blocks of the conditionals' support: a and b are joined when both
    :math:`q(a\mid b) > 0` and :math:`q(b\mid a) > 0`. Even compatible conditionals fix the joint
    only up to one weight per block (Arnold & Press 1989).

    Returns
    -------
    (n_blocks, labels_a, labels_b): block index of every candidate, -1 if it has no support.
    """
    S = np.isfinite(pc.log_a_given_b) & np.isfinite(pc.log_b_given_a)
    ka, kb = S.shape
    graph = sparse.bmat([[None, sparse.csr_matrix(S)], [sparse.csr_matrix(S.T), None]])
    _, labels = connected_components(graph, directed=False)
    live = np.concatenate([S.any(axis=1), S.any(axis=0)])
    used, new = np.unique(labels[live], return_inverse=True)
    out = np.full(ka + kb, -1)
    out[live] = new
    return len(used), out[:ka], out[ka:]


def anchor(joint, pc: PairConditionals) -> np.ndarray:
    r"""A joint's conditionals, re-weighted by the MLM's own both-masked marginals:

    .. math:: q^{\mathrm{m}}(a, b) = \tfrac12\big[q(a)\, p(b \mid a) + q(b)\, p(a \mid b)\big],

    :math:`p(b\mid a)`, :math:`p(a \mid b)` the conditionals of ``joint`` and :math:`q(a)`,
    :math:`q(b)` the both-masked marginals (each half renormalised over the values where its
    conditional is defined). For the truth's own conditionals and marginals each half is the true
    joint, blocks or not (:func:`support_blocks`)."""
    J = _np(joint)
    halves = []
    for log_m, axis in ((pc.log_a, 1), (pc.log_b, 0)):
        total = J.sum(axis=axis, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            cond = np.where(total > 0, J / total, 0.0)
        weight = np.exp(log_m) * (total.reshape(-1) > 0)
        if weight.sum() <= 0:
            raise ValueError("the marginals give no mass to any value where the joint's conditional is defined")
        half = cond * (weight / weight.sum()).reshape(total.shape)
        halves.append(half / half.sum())
    return (halves[0] + halves[1]) / 2


def derive_all(pc: PairConditionals) -> dict[str, np.ndarray]:
    """Every method's joint, keyed as :data:`METHODS` (AG is solved once, and anchored)."""
    joint_ag = ag(pc).joint
    return {"naive": naive(pc), "mrf": mrf(pc), "mrf_local": mrf_local(pc),
            "hcb": hcb(pc), "ag": joint_ag, "ag_anchored": anchor(joint_ag, pc)}
