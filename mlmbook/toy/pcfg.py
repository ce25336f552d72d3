r"""Probabilistic context-free grammars with exact inside–outside computations.

A :class:`PCFG` holds head-marked binary rules ``A -> B C`` (a derivation is also a dependency
tree), acyclic unary rules ``A -> B`` and, per latent topic ``t``, emissions
``E_t[A, w] = p(A -> w | t)``. Sentences of a fixed length ``n`` get

.. math::  p(x) \;\propto\; \sum_t \pi_t \, Z_t(x), \qquad
           Z_t(x) = \sum_{\text{derivations } d \text{ of } x} \;\prod_{r \in d} p_t(r),

by the inside algorithm over the leaf vectors ``ell_i[A] = E_t[A, x_i]``. :math:`Z_t` is linear
in each leaf vector, so its gradient at ``ell_i`` (the outside score, by torch autograd) gives the
exact conditional at every position in one pass::

    p(x_i = w, x_{-i}) = sum_t pi_t sum_A  dZ_t/d ell_i[A] * E_t[A, w]

A masked position's leaf is the lexical mass vector (1 per preterminal): it is marginalised.
Two-site joints fix the preterminal at ``i`` to each ``A`` in a batch and read ``j``'s gradient."""
from __future__ import annotations

import random
from bisect import bisect_right
from dataclasses import dataclass, field

import numpy as np
import torch

from .. import threads
from ..errors import GrammarError

__all__ = ["BinaryRule", "PCFG"]


@dataclass(frozen=True)
class BinaryRule:
    """``lhs -> left right`` with probability ``prob``; child ``head`` (0 or 1) is the head and the
    other child's head word depends on it with relation ``deprel``."""

    lhs: int
    left: int
    right: int
    prob: float
    head: int
    deprel: str


@dataclass
class PCFG:
    """A PCFG (see the module): unary rules ``(lhs, child, prob)``, emissions (T, N, V) whose
    preterminal rows sum to 1 (others are 0); ``start`` indexes the start symbol."""

    nonterminals: list
    start: int
    binary: list
    unary: list
    emissions: np.ndarray
    topic_prior: np.ndarray
    vocab: list
    _t: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        N = len(self.nonterminals)
        T, N2, V = self.emissions.shape
        if not (N2 == N and V == len(self.vocab) and len(self.topic_prior) == T):
            raise GrammarError(f"emission table of shape {self.emissions.shape} does not fit {N} nonterminals, "
                               f"{len(self.vocab)} words and {len(self.topic_prior)} topics")
        U = np.zeros((N, N))
        for lhs, child, p in self.unary:
            U[lhs, child] += p
        # U* = I + U + U^2 + ... (unary chains are acyclic, so the series is finite)
        ustar, power = np.eye(N), np.eye(N)
        for _ in range(N):
            power = power @ U
            if not power.any():
                break
            ustar += power
        else:
            raise GrammarError("unary rules form a cycle; a unary chain must end in a preterminal")
        rmap = np.zeros((len(self.binary), N))
        for r, rule in enumerate(self.binary):
            rmap[r, rule.lhs] = rule.prob
        self.preterminals = np.flatnonzero(self.emissions.sum(axis=(0, 2)) > 0)
        mass = np.zeros(N)
        mass[self.preterminals] = 1.0
        f64 = dict(dtype=torch.float64)
        self._t = dict(
            UT=torch.tensor(ustar.T, **f64),
            rmap=torch.tensor(rmap, **f64),
            rl=torch.tensor([r.left for r in self.binary]),
            rr=torch.tensor([r.right for r in self.binary]),
            E=torch.tensor(self.emissions, **f64),
            mass=torch.tensor(mass, **f64),
            prior=torch.tensor(self.topic_prior, **f64),
        )
        rules = U.sum(1) + rmap.sum(0)
        bad = {self.nonterminals[a] for t in range(T)
               for a, total in enumerate(rules + self.emissions[t].sum(1)) if abs(total - 1) > 1e-9}
        if bad:
            raise GrammarError(f"rule probabilities do not sum to 1 for: {', '.join(sorted(bad)[:5])}"
                               f"{' and more' if len(bad) > 5 else ''}; fix the grammar's weights")
        self._expansions = None

    def _leaves(self, ids, masked=None) -> torch.Tensor:
        """Leaf vectors, shape (B, T, n, N): emission columns, or the lexical mass if masked."""
        ids = torch.as_tensor(ids)
        ids = ids.reshape(-1, ids.shape[-1])
        masked = (torch.zeros_like(ids, dtype=torch.bool) if masked is None
                  else torch.as_tensor(masked).reshape(ids.shape))
        leaves = self._t["E"][:, :, ids].permute(2, 0, 3, 1)      # (B, T, n, N)
        return torch.where(masked[:, None, :, None], self._t["mass"], leaves)

    def _weight(self, leaves: torch.Tensor) -> torch.Tensor:
        """Sum over topics and derivations for leaf vectors (B, T, n, N): shape (B,)."""
        B, T, n, N = leaves.shape
        Z = self.inside(leaves.reshape(B * T, n, N))[n][:, 0, self.start].reshape(B, T)
        return Z @ self._t["prior"]

    def _outside(self, leaves: torch.Tensor) -> torch.Tensor:
        """The gradient of :meth:`_weight` with respect to every leaf vector: outside scores."""
        with torch.enable_grad():
            leaves = leaves.detach().requires_grad_(True)
            (g,) = torch.autograd.grad(self._weight(leaves).sum(), leaves)
        return g

    @threads.small_work          # small tensors: one thread (mlmbook.threads)
    def inside(self, leaves: torch.Tensor) -> list:
        """Inside chart for leaf vectors (M, n, N): ``chart[w][m, i, A]`` = total weight of ``A``
        deriving the span ``[i, i+w)`` (after unary closure)."""
        t = self._t
        n = leaves.shape[1]
        chart = [None, leaves @ t["UT"]]
        for w in range(2, n + 1):
            S = n - w + 1
            left = torch.stack([chart[s][:, :S] for s in range(1, w)], dim=2)          # (M,S,w-1,N)
            right = torch.stack([chart[w - s][:, s:s + S] for s in range(1, w)], dim=2)
            acc = (left[..., t["rl"]] * right[..., t["rr"]]).sum(2)                     # (M,S,R)
            chart.append((acc @ t["rmap"]) @ t["UT"])
        return chart

    @threads.small_work
    def sentence_weight(self, ids: torch.Tensor, masked: torch.Tensor | None = None):
        """Sum over topics and derivations, shape (B,); masked positions are marginalised."""
        return self._weight(self._leaves(ids, masked))

    @threads.small_work
    def length_distribution(self, max_length: int) -> np.ndarray:
        """``out[n]``: the probability that a derivation yields ``n`` tokens (all topics)."""
        leaves = self._t["mass"].expand(1, max_length, -1)
        chart = self.inside(leaves)
        return np.array([0.0] + [chart[w][0, 0, self.start].item() for w in range(1, max_length + 1)])

    @threads.small_work
    def conditionals(self, ids, masked=None) -> torch.Tensor:
        """Exact ``p(x_i = w | x_j for unmasked j != i)`` at every position, shape (B, n, V); other
        masked positions are marginalised, a context of probability 0 gives a uniform row."""
        num = torch.einsum("btia,taw->biw", self._outside(self._leaves(ids, masked)), self._t["E"])
        total = num.sum(-1, keepdim=True)
        uniform = torch.full_like(num, 1.0 / num.shape[-1])
        return torch.where(total > 0, num / total.clamp_min(1e-300), uniform)

    @threads.small_work
    def pair_weights(self, ids, i_positions: list) -> torch.Tensor:
        """Two-site weights of one sentence, (len(i_positions), P, T, n, P): ``W[k, A, t, j, C]`` =
        pi_t * weight of derivations with preterminal A at i_k and C at j (both open), every other
        position fixed to its word; ``P`` indexes :attr:`preterminals`."""
        ids = torch.as_tensor(ids).reshape(1, -1)
        n = ids.shape[1]
        pre = torch.as_tensor(self.preterminals)
        P = len(pre)
        feasible = self._feasible_preterminals(ids[0])                              # (n, P) bool
        rows = [(k, i, a) for k, i in enumerate(i_positions) for a in feasible[i].nonzero().flatten().tolist()]
        base = self._leaves(ids)[0]                                                # (T, n, N)
        T = base.shape[0]
        leaves = base.expand(len(rows), -1, -1, -1).clone()                        # (rows, T, n, N)
        for r, (_, i, a) in enumerate(rows):
            leaves[r, :, i, :] = 0.0
            leaves[r, :, i, pre[a]] = 1.0
        g = self._outside(leaves)
        W = torch.zeros(len(i_positions), P, T, n, P, dtype=torch.float64)
        if rows:
            k_idx = torch.tensor([k for k, _, _ in rows])
            a_idx = torch.tensor([a for _, _, a in rows])
            W[k_idx, a_idx] = g[..., pre]
        return W                                                                 # (k, P, T, n, P)

    def _feasible_preterminals(self, ids: torch.Tensor) -> torch.Tensor:
        """``F[i, A]``: can preterminal A stand at position i when i and one other position are
        open? (Each j masked in turn: the outside score at i is positive exactly then.)"""
        n = len(ids)
        g = self._outside(self._leaves(ids.expand(n, n), torch.eye(n, dtype=torch.bool)))
        out = g[..., self.preterminals] > 0                                        # (j, T, i, P)
        return out.any(dim=1).any(dim=0)

    @threads.small_work
    def expand_pair(self, W_ij: torch.Tensor) -> torch.Tensor:
        """Word-level joint from preterminal weights ``W_ij`` (P, T, P): normalised (V, V)."""
        Ep = self._t["E"][:, self.preterminals, :]                                   # (T, P, V)
        joint = torch.einsum("tav,atc,tcw->vw", Ep, W_ij, Ep)
        return joint / joint.sum()

    def _tables(self):
        if self._expansions is None:
            exp = {a: [] for a in range(len(self.nonterminals))}
            for r in self.binary:
                exp[r.lhs].append((r.prob, r))
            for lhs, child, p in self.unary:
                exp[lhs].append((p, child))
            self._expansions = {a: (list(np.cumsum([p for p, _ in v])), [x for _, x in v]) for a, v in exp.items()}
            self._emit_cum = [[list(np.cumsum(self.emissions[t, a])) for a in range(len(self.nonterminals))]
                              for t in range(len(self.topic_prior))]
        return self._expansions

    def sample_derivation(self, rng: random.Random, topic: int):
        """One derivation top-down: returns (word ids, heads, deprels, preterminals)."""
        tables = self._tables()
        words, pres, heads, rels = [], [], [], []

        def expand(a):                      # returns the index of the subtree's head word
            cum, options = tables[a]
            if not options:                 # preterminal: emit a word
                ecum = self._emit_cum[topic][a]
                words.append(min(_draw(ecum, rng), len(ecum) - 1))
                pres.append(a)
                heads.append(-1)
                rels.append("root")
                return len(words) - 1
            choice = options[min(_draw(cum, rng), len(options) - 1)]
            if not isinstance(choice, BinaryRule):
                return expand(choice)
            hl, hr = expand(choice.left), expand(choice.right)
            head, dep = (hl, hr) if choice.head == 0 else (hr, hl)
            heads[dep], rels[dep] = head, choice.deprel
            return head

        expand(self.start)
        return words, heads, rels, pres

    def enumerate(self, max_length: int) -> dict:
        """``{tuple of word ids: prob}`` of every sentence of length <= max_length, by listing
        derivations (exponential: for tests on tiny grammars only)."""
        tables = self._tables()
        out: dict = {}

        def expand(stack, words, prob, t):
            if len(words) + len(stack) > max_length:
                return
            if not stack:
                out[tuple(words)] = out.get(tuple(words), 0.0) + prob
                return
            a, rest = stack[0], stack[1:]
            cum, options = tables[a]
            if not options:
                for w in np.flatnonzero(self.emissions[t, a]):
                    expand(rest, words + [w], prob * self.emissions[t, a, w], t)
                return
            probs = np.diff([0.0] + cum)
            for p, choice in zip(probs, options):
                new = [choice.left, choice.right] if isinstance(choice, BinaryRule) else [choice]
                expand(new + rest, words, prob * p, t)

        for t, pi in enumerate(self.topic_prior):
            expand([self.start], [], pi, t)
        return out


def _draw(cum, rng):
    """The first index with ``cum[i] > u``, ``u`` uniform on ``[0, cum[-1])`` (callers clamp it)."""
    return bisect_right(cum, rng.random() * cum[-1])
