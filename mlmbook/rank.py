r"""Effective rank and subspace geometry of representation matrices (chapter 4).

Meng et al. (2023), *Representation Deficiency in Masked Language Modeling*, argue that real tokens'
representations occupy a lower-rank subspace than the model width, and ``[MASK]``'s live partly
outside it. Every function takes a matrix :math:`H \in \mathbb{R}^{N\times d}` (one row per token
occurrence), singular values :math:`\sigma_1 \ge \dots \ge \sigma_r \ge 0`. ``center=False`` (the
default; as we read them, Meng et al.) analyses :math:`H` as it is; ``center=True`` subtracts the
column mean first (PCA), so that a large common offset is no direction.
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "singular_values", "cumulative_energy", "effective_rank_mass", "effective_rank_entropy",
    "top_subspace", "principal_angles", "subspace_overlap", "DEFAULT_EPS", "mass_rank_of",
    "entropy_rank_of", "RANK_KINDS", "block_ranks", "rows_for",
]

#: Default ε of :func:`effective_rank_mass`: keep 90 % of the squared singular-value mass.
DEFAULT_EPS = 0.1

#: The four effective ranks :func:`block_ranks` returns: entropy and ε-rank, uncentred and centred.
RANK_KINDS = ("entropy", "mass", "entropy_centred", "mass_centred")


def _as_matrix(H, center: bool) -> np.ndarray:
    if hasattr(H, "detach"):  # torch tensor
        H = H.detach().cpu().numpy()
    H = np.asarray(H, dtype=np.float64)
    if H.ndim != 2:
        raise ValueError(f"expected a matrix (N, d), got shape {H.shape}")
    return H - H.mean(axis=0, keepdims=True) if center else H


def singular_values(H, center: bool = False) -> np.ndarray:
    """Singular values of ``H`` (optionally column-centred), in decreasing order."""
    return np.linalg.svd(_as_matrix(H, center), compute_uv=False)


def mass_rank_of(s, eps: float = DEFAULT_EPS):
    """:func:`effective_rank_mass` from decreasing singular values ``s`` (``(..., r)``: per row)."""
    if not 0.0 <= eps < 1.0:
        raise ValueError("eps must lie in [0, 1)")
    s2 = np.asarray(s, dtype=np.float64) ** 2
    cum = np.cumsum(s2, axis=-1)
    total = s2.sum(-1, keepdims=True)
    k = (cum < (1.0 - eps) * total * (1 - 1e-12)).sum(-1) + 1   # a spectrum built to hit it counts
    k = np.where(total[..., 0] > 0, k, 0)
    return int(k) if k.ndim == 0 else k


def entropy_rank_of(s):
    """:func:`effective_rank_entropy` from singular values ``s`` (``(..., r)``: one per row)."""
    s = np.asarray(s, dtype=np.float64)
    total = s.sum(-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(s > 0, s / total, 1.0)              # p log p = 0 where s = 0
        out = np.exp(-(p * np.log(p)).sum(-1))
    out = np.where(total[..., 0] > 0, out, 0.0)
    return float(out) if out.ndim == 0 else out


def cumulative_energy(H, center: bool = False) -> np.ndarray:
    r"""Fraction of the squared singular-value mass in the top :math:`k` directions,
    :math:`c_k = \sum_{i\le k}\sigma_i^2 / \sum_i \sigma_i^2`, :math:`k = 1, 2, \dots`; the first
    :math:`k` with :math:`c_k \ge 1-\varepsilon` is :func:`effective_rank_mass`."""
    s2 = singular_values(H, center) ** 2
    total = s2.sum()
    return np.cumsum(s2) / total if total > 0 else np.zeros_like(s2)


def effective_rank_mass(H, eps: float = DEFAULT_EPS, center: bool = False) -> int:
    r"""ε-effective rank: the fewest directions holding a fraction :math:`1-\varepsilon` of the
    energy (0 for an all-zero matrix).

    .. math::
        \operatorname{rank}_\varepsilon(H) = \min\Big\{k :
            \frac{\sum_{i\le k}\sigma_i^2}{\sum_{i}\sigma_i^2} \ge 1-\varepsilon\Big\}.

    By Eckart–Young, this is the smallest rank of a matrix :math:`H_k` with
    :math:`\|H-H_k\|_F^2 \le \varepsilon\|H\|_F^2`.

    Parameters
    ----------
    H : array_like (N, d)
        Representations, one row per token.
    eps : float, default 0.1
        Fraction of energy that may be discarded. Meng et al. (2023) define the effective rank by
        such a cumulative threshold on the squared singular values; ε = 0.1 (90 % of the mass) is
        our reading of their setting.
    center : bool, default False
        Subtract the column mean first.
    """
    return mass_rank_of(singular_values(H, center), eps)


def effective_rank_entropy(H, center: bool = False) -> float:
    r"""Roy & Vetterli (2007) effective rank: the exponential of the spectral entropy.

    .. math::
        p_i = \frac{\sigma_i}{\sum_j \sigma_j}, \qquad
        \operatorname{erank}(H) = \exp\Big(-\sum_i p_i \log p_i\Big).

    It is 1 for a rank-one matrix, :math:`r` for :math:`r` equal non-zero singular values, with no
    threshold (Roy & Vetterli normalise the singular values themselves, not their squares).
    """
    return entropy_rank_of(singular_values(H, center))


def top_subspace(H, k: int, center: bool = False) -> np.ndarray:
    r"""Orthonormal basis :math:`U \in \mathbb{R}^{d\times k}` of the top-``k`` right singular
    vectors: the ``k``-dimensional subspace that keeps the most energy :math:`\|HU\|_F^2` of the
    rows of :math:`H`."""
    _, _, vt = np.linalg.svd(_as_matrix(H, center), full_matrices=False)
    if not 0 < k <= vt.shape[0]:
        raise ValueError(f"k must lie in 1..{vt.shape[0]}")
    return vt[:k].T


def _basis(A, k, center):
    if k is None:  # already a basis: orthonormalise its columns
        return np.linalg.qr(_as_matrix(A, False))[0]
    return top_subspace(A, k, center)


def principal_angles(A, B, k1: int | None = None, k2: int | None = None,
                     center: bool = False) -> np.ndarray:
    r"""Cosines of the principal angles between two subspaces of :math:`\mathbb{R}^d`, decreasing,
    clipped to [0, 1] (``np.arccos`` gives the angles).

    For orthonormal bases :math:`U_1 \in \mathbb{R}^{d\times k_1}`, :math:`U_2 \in
    \mathbb{R}^{d\times k_2}`, the cosines :math:`\cos\theta_1 \ge \dots \ge
    \cos\theta_{\min(k_1,k_2)}` are the singular values of :math:`U_1^\top U_2`
    (Björck & Golub 1973). All ones: one subspace contains the other; all zeros: orthogonal.

    Parameters
    ----------
    A, B : array_like
        If the matching ``k`` is given, a representation matrix (N, d) whose top-``k``
        subspace (:func:`top_subspace`) is used; if ``k`` is None, a basis (d, k) whose
        columns span the subspace (orthonormalised here).
    k1, k2 : int or None
        Subspace dimensions taken from ``A`` and ``B``.
    center : bool, default False
        Centre representation matrices before the SVD.
    """
    U1, U2 = _basis(A, k1, center), _basis(B, k2, center)
    if U1.shape[0] != U2.shape[0]:
        raise ValueError("the two subspaces live in spaces of different dimension")
    return np.clip(np.linalg.svd(U1.T @ U2, compute_uv=False), 0.0, 1.0)


def subspace_overlap(H_query, H_reference, k: int, center: bool = False) -> float:
    r"""Fraction of ``H_query``'s energy that lies in the top-``k`` subspace of ``H_reference``.

    .. math::
        \operatorname{overlap} = \frac{\|H_q U_k\|_F^2}{\|H_q\|_F^2},
        \qquad U_k = \text{top-}k\text{ basis of } H_{\mathrm{ref}}.

    For the ``[MASK]`` rows against the real tokens', a value well below 1 at a ``k`` that holds
    most real-token energy means the ``[MASK]`` tokens use directions the real tokens do not.
    Centring (if asked) uses each matrix's own mean.
    """
    U = top_subspace(H_reference, k, center)
    Hq = _as_matrix(H_query, center)
    total = float((Hq ** 2).sum())
    return float(((Hq @ U) ** 2).sum() / total) if total > 0 else float("nan")


def rows_for(width: int, rows_per_dim: int) -> int:
    r"""Rows of every matrix whose rank is compared: :math:`N = \rho\, d`.

    For isotropic noise in :math:`d` dimensions the sample singular values spread out
    (Marchenko–Pastur) by an amount set by :math:`d/N` alone, so matrices of the same
    :math:`N/d = \rho` are comparable across widths; matrices of the same :math:`N` are not.
    """
    if width < 1 or rows_per_dim < 1:
        raise ValueError("width and rows_per_dim must be positive integers")
    return int(width * rows_per_dim)


def block_ranks(H, blocks, eps: float = DEFAULT_EPS, chunk: int = 64) -> dict:
    r"""The four effective ranks (:data:`RANK_KINDS`) of many equal-sized row blocks of one matrix:
    for each block :math:`b` (``blocks``: an array (K, n) or K index arrays),
    :func:`effective_rank_entropy` and :func:`effective_rank_mass` at ``eps`` of :math:`H_b = H[b]`,
    as it is and column-centred, as ``{kind: array (K,)}``. The singular values come from the
    eigenvalues of the :math:`d\times d` Gram matrices, :math:`\sigma_i^2 =
    \lambda_i(H_b^\top H_b)`, in one eigensolver call: for :math:`N \gg d` many times faster than an
    SVD of each block, and equal to the SVD-based ranks to about :math:`10^{-7}` relative (the Gram
    matrix resolves singular values down to about :math:`10^{-8}\sigma_{\max}`)."""
    H = _as_matrix(H, False)
    if len({len(b) for b in blocks}) > 1 or np.ndim(blocks) != 2:
        raise ValueError("blocks must all have the same number of rows (an array (K, n))")
    idx = np.asarray(blocks, dtype=int)
    out = {k: np.zeros(len(idx)) for k in RANK_KINDS}
    for start in range(0, len(idx), chunk):
        part = slice(start, start + chunk)
        M = H[idx[part]]                                          # (k, n, d)
        for centred in (False, True):
            X = M - M.mean(axis=1, keepdims=True) if centred else M
            lam = np.linalg.eigvalsh(np.einsum("kni,knj->kij", X, X))[:, ::-1]
            s = np.sqrt(np.clip(lam, 0.0, None))  # rounding can make a zero negative
            tag = "_centred" if centred else ""
            out["entropy" + tag][part] = entropy_rank_of(s)
            out["mass" + tag][part] = mass_rank_of(s, eps)
    return out
