"""Fake masked LMs with known answers, for unit tests of model-independent code.

``JointOracle(logp)`` answers exactly like the truth oracle of docs/INTERFACES.md for a known
joint over ``Vw`` words and ``n`` positions: logits are exact log p(x_q | unmasked positions),
other masked positions marginalised. Token ids 0..Vw-1 are words, ``mask_id = Vw`` (-inf logit).
``PerturbedOracle`` adds a context-dependent, non-symmetric pairwise term to those logits, so
its conditionals fit no joint. Both return float64 and count their ``logits`` calls.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.special import logsumexp


def random_joint(n: int, Vw: int, seed: int = 0, spread: float = 1.0) -> np.ndarray:
    """log of a random strictly positive joint over Vw**n sentences."""
    logp = np.random.default_rng(seed).normal(scale=spread, size=(Vw,) * n)
    return logp - logsumexp(logp)


class JointOracle:
    def __init__(self, logp: np.ndarray):
        self.logp = np.asarray(logp, dtype=np.float64)
        self.n, self.Vw = self.logp.ndim, self.logp.shape[0]
        self.mask_id, self.V = self.Vw, self.Vw + 1
        self.vocab = [f"w{v}" for v in range(self.Vw)] + ["[MASK]"]
        self.calls = 0
        self._tables: dict = {}

    def _table(self, masked: tuple, q: int) -> np.ndarray:
        key = (masked, q)
        if key not in self._tables:
            others = tuple(d for d in masked if d != q)
            t = logsumexp(self.logp, axis=others, keepdims=True) if others else self.logp
            self._tables[key] = t - logsumexp(t, axis=q, keepdims=True)
        return self._tables[key]

    def exact(self, ids: np.ndarray, q: int) -> np.ndarray:
        """(B, Vw) exact log p(x_q | unmasked) for rows ``ids`` that share one mask pattern."""
        masked = tuple(int(d) for d in np.flatnonzero(ids[0] == self.mask_id))
        if q not in masked:
            raise ValueError("the fake oracle only answers masked positions")
        index = [np.zeros((len(ids), 1), np.int64) if d in masked else ids[:, d:d + 1]
                 for d in range(self.n)]
        index[q] = np.arange(self.Vw)[None, :]
        return self._table(masked, q)[tuple(index)]

    def extra(self, ids: np.ndarray, q: int) -> np.ndarray:
        return 0.0

    def logits(self, ids, positions, full_softmax: bool = False) -> torch.Tensor:
        self.calls += 1
        ids = torch.as_tensor(ids).numpy()
        positions = torch.as_tensor(positions).numpy()
        assert ids.shape[1] == self.n and positions.shape[0] == ids.shape[0]
        out = np.full(positions.shape + (self.V,), -np.inf)
        patterns = ids == self.mask_id
        for pat in np.unique(patterns, axis=0):
            same = np.flatnonzero((patterns == pat).all(axis=1))
            for c in range(positions.shape[1]):
                for q in np.unique(positions[same, c]):
                    rows = same[positions[same, c] == q]
                    out[rows, c, : self.Vw] = self.exact(ids[rows], int(q)) + self.extra(ids[rows], int(q))
        return torch.from_numpy(out)


class PerturbedOracle(JointOracle):
    """Exact logits plus sum_{d unmasked} W[q, d, x_d, v], W random and not symmetric."""

    def __init__(self, logp: np.ndarray, scale: float = 0.5, seed: int = 1):
        super().__init__(logp)
        self.W = np.random.default_rng(seed).normal(scale=scale, size=(self.n, self.n, self.Vw, self.Vw))

    def extra(self, ids: np.ndarray, q: int) -> np.ndarray:
        total = np.zeros((len(ids), self.Vw))
        for d in range(self.n):
            if d != q and ids[0, d] != self.mask_id:
                total += self.W[q, d, ids[:, d]]
        return total
