r"""Chapter 4's graded exercises: the two effective ranks and principal angles, by exact linear
algebra. Every case is a matrix :math:`H = U\,\mathrm{diag}(\sigma)\,V^\top` of known geometry
(random orthonormal :math:`U, V`, chosen singular values :math:`\sigma`) or two bases at known
angles; the expected answers are computed a second way (from the eigenvalues of :math:`H^\top H =
V\,\mathrm{diag}(\sigma^2)\,V^\top`, or from the angles the case was built with).
"""
from __future__ import annotations

from functools import lru_cache, partial

import numpy as np

from . import Exercise, exercise

EPS = 0.1


def _orthonormal(rng, n, k):
    q, _ = np.linalg.qr(rng.normal(size=(n, k)))
    return q


@lru_cache(maxsize=1)
def spectrum_cases():
    """Matrices (N, d) of known singular values: flat, decaying, a dominant direction, rank 3 of
    12."""
    spectra = ([2.0] * 6, [8, 4, 2, 1, 0.5, 0.25, 0.1], [20, 1, 1, 1, 1, 1, 1, 1], [3.0, 2.0, 1.0],
               np.sqrt([5.0, 3.0, 1.0, 0.5, 0.5]))
    out = []
    for k, sigma in enumerate(spectra):
        rng = np.random.default_rng(k)
        U, V = _orthonormal(rng, 40, len(sigma)), _orthonormal(rng, 12, len(sigma))
        out.append(U @ np.diag(np.asarray(sigma, float)) @ V.T)
    return tuple(out)


def _gram_sigma(H):
    """Singular values the brute-force way: square roots of the Gram matrix's eigenvalues."""
    lam = np.clip(np.linalg.eigvalsh(H.T @ H), 0, None)[::-1]
    return np.sqrt(lam[lam > 1e-10 * lam.max()])


def _entropy_expected(H):
    s = _gram_sigma(H)
    p = s / s.sum()
    return float(np.exp(-(p * np.log(p)).sum()))


def entropy_rank(H, power: int = 1):
    """Reference: Roy & Vetterli's effective rank of the rows of ``H`` (no centring); ``power=2``
    normalises the energies σ², not σ (a wrong solution)."""
    s = np.linalg.svd(H, compute_uv=False) ** power
    p = s / s.sum()
    p = p[p > 0]
    return float(np.exp(-np.sum(p * np.log(p))))


def _entropy_centred(H):                       # wrong: centres the columns first
    return entropy_rank(H - H.mean(0))


def _entropy_bits(H):                          # wrong: 2 to the entropy in nats
    return float(2 ** np.log(entropy_rank(H)))


exercise(Exercise("ch4-erank", "warm-up", lambda: [(H,) for H in spectrum_cases()],
                  _entropy_expected, entropy_rank,
                  wrong=(partial(entropy_rank, power=2), _entropy_centred, _entropy_bits), tol=1e-8,
                  what="the entropy effective rank"))


def _eps_expected(H, eps):
    lam = _gram_sigma(H) ** 2
    k, kept = 0, 0.0
    while kept < (1 - eps) * lam.sum() * (1 - 1e-12):     # add directions until 1 - ε of the energy
        kept += lam[k]
        k += 1
    return k


def eps_rank(H, eps, power: int = 2):
    """Reference: the fewest directions holding a share 1 - ε of the energy of ``H`` (``power=1``
    thresholds σ instead of the energy σ²: a wrong solution)."""
    s2 = np.linalg.svd(H, compute_uv=False) ** power
    share = np.cumsum(s2) / s2.sum()
    return int(np.searchsorted(share, (1 - eps) * (1 - 1e-12)) + 1)


def _eps_index(H, eps):  # wrong: the index of the last direction, not the count
    return eps_rank(H, eps) - 1


def _eps_cases():
    return [(H, e) for H in spectrum_cases() for e in (EPS, 0.3)]


exercise(Exercise("ch4-epsrank", "core", _eps_cases, _eps_expected, eps_rank, tol=0,
                  wrong=(partial(eps_rank, power=1), _eps_index), what="the ε-effective rank"))


@lru_cache(maxsize=1)
def angle_cases():
    """Pairs (A, B) of representation matrices whose row spaces meet at chosen angles, with the
    cosines they were built with: ``((A, B), cosines)``."""
    out = []
    for k, (theta, extra) in enumerate((([0.0, 0.4], 0), ([0.3, 1.0, np.pi / 2], 1), ([0.2, 0.7], 2))):
        rng = np.random.default_rng(10 + k)
        d = 10
        Q = _orthonormal(rng, d, d)
        r = len(theta)
        U1 = Q[:, :r]                                             # a basis of the first subspace
        # rotated towards new directions
        U2 = np.cos(theta) * Q[:, :r] + np.sin(theta) * Q[:, r:2 * r]
        if extra:                                                 # one more direction only B has
            U2 = np.column_stack([U2, Q[:, 2 * r:2 * r + extra]])
        # rows inside span(U1)
        A = rng.normal(size=(50, r)) @ np.diag(np.arange(r, 0, -1.0) + 1) @ U1.T
        B = rng.normal(size=(60, U2.shape[1])) @ U2.T
        out.append(((A, B), np.sort(np.cos(theta))[::-1]))
    return tuple(out)


def _angles_expected(A, B):
    for (a, b), cos in angle_cases():
        if a is A and b is B:
            return cos
    raise KeyError("not one of the exercise's cases")


def principal_cosines(A, B):
    """Reference: cosines of the principal angles between the row spaces of ``A`` and ``B``
    (as many as the smaller dimension), largest first."""
    def basis(H):
        _, s, vt = np.linalg.svd(H, full_matrices=False)
        return vt[s > 1e-10 * s[0]].T                         # orthonormal basis of the row space
    U, W = basis(A), basis(B)
    return np.clip(np.linalg.svd(U.T @ W, compute_uv=False), 0, 1)[:min(U.shape[1], W.shape[1])]


def _cosines_unnormalised(A, B):  # wrong: singular values of A B^T-like products, no bases
    s = np.linalg.svd(A.T @ B, compute_uv=False)
    return (s / s.max())[:min(np.linalg.matrix_rank(A), np.linalg.matrix_rank(B))]


def _cosines_of_columns(A, B):  # wrong: the column spaces (of the N rows), not the row spaces
    n = min(len(A), len(B))
    return principal_cosines(A[:n].T, B[:n].T)


exercise(Exercise("ch4-angles", "stretch", lambda: [case for case, _ in angle_cases()],
                  _angles_expected, principal_cosines,
                  wrong=(_cosines_unnormalised, _cosines_of_columns), tol=1e-8,
                  what="the cosine of every principal angle"))
