"""Chapter 5's graded exercises: one Glauber step's transition row, the stationary law of a small
chain, its spectral gap — each graded against the exact chain of the tiny grammar's truth. A case is
the truth's exact :math:`\\log p` on a frame of the tiny grammar (every position but the period
ranges over two words, :func:`mlmbook.glauber.length_frames`): an array with one axis per free site.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import Exercise, exercise


@lru_cache(maxsize=1)
def frame_cases():
    """``[(logp, frame)]``: the tiny grammar's truth on three two-candidate frames (shapes
    (2,)*m)."""
    from ..glauber import length_frames, truth_log_probs
    from ..toy import Grammar
    g = Grammar.load("tiny")
    out = []
    for _n, frames in length_frames(g, [4, 5, 6], 1, seed=1, pool=800).items():
        frame = frames[0][0]
        out.append((truth_log_probs(g, frame.states()).reshape(frame.sizes), frame))
    return tuple(out)


def _row_cases():
    states = [(logp, tuple(int(v) for v in np.argwhere(np.isfinite(logp))[-1]))   # in the language
              for logp, _ in frame_cases()]
    return [(logp, x, T) for logp, x in states for T in (1.0, 0.5)]


def _kernel(logp, T):
    """The exact Glauber kernel over every state of the frame (sparse)."""
    from ..glauber import Frame
    frame = Frame(np.zeros(logp.ndim, dtype=np.int64), range(logp.ndim), [list(range(m)) for m in logp.shape])
    flat = logp.ravel()
    return frame.kernel([flat[frame.families(a)] for a in range(logp.ndim)], T)


def _row_expected(logp, x, T):
    return _kernel(logp, T)[int(np.ravel_multi_index(x, logp.shape))].toarray().reshape(logp.shape)


def glauber_row(logp, x, T):
    """Reference: P(x, ·) of random-scan Glauber dynamics at temperature T, as an array shaped like
    logp."""
    row = np.zeros(logp.shape)
    for i in range(logp.ndim):  # site i, chosen with probability 1/m
        line = list(x)
        line[i] = slice(None)
        scores = logp[tuple(line)] / T  # log p of the states along site i's line
        probs = np.exp(scores - scores.max())
        row[tuple(line)] += probs / probs.sum() / logp.ndim
    return row


def _row_untempered(logp, x, T):
    return glauber_row(logp, x, 1.0)


def _row_one_site(logp, x, T):
    line = list(x)
    line[0] = slice(None)
    row = np.zeros(logp.shape)
    s = logp[tuple(line)] / T
    row[tuple(line)] = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
    return row


exercise(Exercise("ch5-glauber-row", "warm-up", _row_cases, _row_expected, glauber_row,
                  wrong=(_row_untempered, _row_one_site), tol=1e-9,
                  what="the transition row P(x, ·)"))


def _matrix_cases():
    cases = []
    for logp, _ in frame_cases():
        keep = np.flatnonzero(np.isfinite(logp.ravel()))  # the truth's chain lives on its support
        cases += [(_kernel(logp, T)[keep][:, keep].toarray(),) for T in (1.0, 0.4)]
    return cases


def _stationary_expected(P):
    from ..glauber import stationary
    return stationary(P)


def stationary_law(P):
    """Reference: solve pi P = pi with sum(pi) = 1 (the left eigenvector for eigenvalue 1)."""
    vals, vecs = np.linalg.eig(P.T)
    v = np.real(vecs[:, np.argmin(np.abs(vals - 1))])
    return v / v.sum()


def _stationary_uniform(P):
    return np.full(len(P), 1 / len(P))


def _stationary_row(P):
    return np.linalg.matrix_power(P, 3)[0]


exercise(Exercise("ch5-stationary", "core", _matrix_cases, _stationary_expected, stationary_law,
                  wrong=(_stationary_uniform, _stationary_row), tol=1e-8,
                  what="the stationary law π"))


def _gap_expected(P):
    from ..glauber import spectral_gap
    return spectral_gap(P)


def spectral_gap_of(P):
    """Reference: one minus the largest modulus among the eigenvalues other than 1."""
    mods = np.sort(np.abs(np.linalg.eigvals(P)))[::-1]
    return float(1 - mods[1])


def _gap_second_eigenvalue(P):
    return float(np.sort(np.abs(np.linalg.eigvals(P)))[::-1][1])


def _gap_of_all(P):
    return float(1 - np.abs(np.linalg.eigvals(P)).max())


exercise(Exercise("ch5-spectral-gap", "stretch", _matrix_cases, _gap_expected, spectral_gap_of,
                  wrong=(_gap_second_eigenvalue, _gap_of_all), tol=1e-8, what="the spectral gap"))
