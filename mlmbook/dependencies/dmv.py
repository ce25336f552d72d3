r"""The dependency model with valence (Klein & Manning 2004), trained by EM: chapter 1's classic
unsupervised parser."""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable, NamedTuple, Sequence

import numpy as np

from .trees import _heads, _spans

__all__ = ["DMV", "Posterior", "LEFT", "RIGHT", "FIRST", "LATER", "dmv_trees"]

LEFT, RIGHT = 0, 1   # direction of a dependent from its head
FIRST, LATER = 0, 1  # valence: head has no dependent yet on that side / has at least one


class Posterior(NamedTuple):
    """Posterior expected counts of B sentences of length n (:meth:`DMV.expected_counts`)."""

    log_Z: np.ndarray  # (B,)
    root: np.ndarray   # (B, n)
    arc: np.ndarray    # (B, n, n), arc[b, h, d] = E[h -> d]
    stop: np.ndarray   # (B, n, 2, 2) by (dir, valence)
    cont: np.ndarray   # (B, n, 2, 2)


class DMV:
    r"""Dependency model with valence (Klein & Manning 2004), trained by EM.

    Generative story over symbols (POS tags, or word types) :math:`x_1..x_n`: a ROOT picks
    the head symbol with :math:`p_{\text{root}}(a)`; each head :math:`h` then, independently on
    each side :math:`\text{dir}`, repeatedly decides to stop, :math:`p_{\text{stop}}(h, \text{dir},
    v)`, or to continue and draw the next dependent (nearest first)
    :math:`p_{\text{choose}}(a \mid h, \text{dir})`, where the valence :math:`v` records whether
    :math:`h` already has a dependent on that side; each dependent recursively generates its own.
    Trees are projective.

    E-step: inside–outside on a split-head chart (spans ``[s, t]``, batched over sentences of equal
    length), each item the total probability of the partial derivations it stands for:

    * ``OR[s,t]`` open right half of head ``s`` (dependents up to ``t``, not yet stopped),
      ``OR[s,s] = 1``; ``CR = OR * stop(s, R, v)``, ``PR = OR * (1 - stop(s, R, v))`` with
      ``v = FIRST`` iff ``t == s``;
    * ``IR[s,t] = choose(t | s, R) * sum_{r=s}^{t-1} PR[s,r] * CL[r+1,t]`` (arc ``s -> t``);
    * ``OR[s,t] = sum_{d=s+1}^{t} IR[s,d] * CR[d,t]``;
    * mirror images ``OL, CL, PL, IL`` for left halves (head at ``t``);
    * :math:`Z = \sum_r p_{\text{root}}(x_r)\, CL[0,r]\, CR[r,n-1] = p(x)`.

    The outside pass propagates :math:`\partial \log Z / \partial \text{item}` back through the
    same recursions; an item's parameter's expected count is ``item * d(log Z)/d(item)``. M-step:
    normalise the expected counts (a context with zero count keeps its value). Initialiser: Klein &
    Manning's harmonic completion. In probability space (fine up to ~60 tags).
    """

    UNK = "<unk>"

    def _build_vocab(self, seqs: list[list[str]]) -> None:
        self.vocab = [self.UNK] + sorted({x for seq in seqs for x in seq})
        self.index = {x: i for i, x in enumerate(self.vocab)}
        K = len(self.vocab)
        self.root = np.full(K, 1.0 / K)
        self.choose = np.full((K, 2, K), 1.0 / K)   # [head, dir, dependent]
        self.stop = np.full((K, 2, 2), 0.5)         # [head, dir, valence]

    def _batches(self, seqs) -> dict[int, np.ndarray]:
        """Symbol ids grouped by sentence length: ``{n: array (B, n)}``."""
        groups: dict[int, list[list[int]]] = defaultdict(list)
        for seq in seqs:
            if len(seq):
                groups[len(seq)].append([self.index.get(x, 0) for x in seq])
        return {n: np.array(g, dtype=int) for n, g in sorted(groups.items())}

    def _tables(self, T: np.ndarray, floor: float = 0.0):
        """Parameters per sentence of the batch ``T`` (B, n): ``arcR[b,s,t] = choose(x_t | x_s,
        R)``, ``arcL[b,s,t] = choose(x_s | x_t, L)`` (s < t), ``stop[b,h,dir,valence]``, ``cont``,
        ``root[b,h]``; ``floor`` is added to decode sentences with unseen symbols."""
        arcR = self.choose[T[:, :, None], RIGHT, T[:, None, :]] + floor
        arcL = self.choose[T[:, None, :], LEFT, T[:, :, None]] + floor
        stop = np.clip(self.stop[T], floor, 1 - floor)  # (B, n, dir, valence)
        return arcR, arcL, stop, 1 - stop, self.root[T] + floor

    def _inside(self, T: np.ndarray, reduce=np.sum, floor: float = 0.0):
        B, n = T.shape
        arcR, arcL, stop, cont, root = self._tables(T, floor)
        ch = {k: np.zeros((B, n, n)) for k in ("OR", "OL", "CR", "CL", "PR", "PL", "IR", "IL")}
        OR, OL, CR, CL, PR, PL, IR, IL = ch.values()
        i = np.arange(n)
        OR[:, i, i] = OL[:, i, i] = 1.0
        CR[:, i, i], PR[:, i, i] = stop[:, :, RIGHT, FIRST], cont[:, :, RIGHT, FIRST]
        CL[:, i, i], PL[:, i, i] = stop[:, :, LEFT, FIRST], cont[:, :, LEFT, FIRST]
        for w in range(1, n):
            s, t, r = _spans(n, w)
            S_, T_ = s[:, None], t[:, None]
            IR[:, s, t] = arcR[:, s, t] * reduce(PR[:, S_, r] * CL[:, r + 1, T_], axis=-1)
            IL[:, s, t] = arcL[:, s, t] * reduce(CR[:, S_, r] * PL[:, r + 1, T_], axis=-1)
            OR[:, s, t] = reduce(IR[:, S_, r + 1] * CR[:, r + 1, T_], axis=-1)
            OL[:, s, t] = reduce(CL[:, S_, r] * IL[:, r, T_], axis=-1)
            CR[:, s, t] = OR[:, s, t] * stop[:, s, RIGHT, LATER]
            PR[:, s, t] = OR[:, s, t] * cont[:, s, RIGHT, LATER]
            CL[:, s, t] = OL[:, s, t] * stop[:, t, LEFT, LATER]
            PL[:, s, t] = OL[:, s, t] * cont[:, t, LEFT, LATER]
        top = root * CL[:, 0, :] * CR[:, :, n - 1]
        return ch, top

    def _outside(self, T: np.ndarray, ch: dict, top: np.ndarray) -> dict:
        """Adjoints ``g[k] = d log Z / d ch[k]`` for every item (B sentences at once)."""
        B, n = T.shape
        arcR, arcL, stop, cont, root = self._tables(T)
        OR, OL, CR, CL, PR, PL, IR, IL = ch.values()
        g = {k: np.zeros_like(v) for k, v in ch.items()}
        Z = top.sum(axis=1, keepdims=True)
        g["CL"][:, 0, :] += root * CR[:, :, n - 1] / Z
        g["CR"][:, :, n - 1] += root * CL[:, 0, :] / Z
        for w in range(n - 1, 0, -1):
            s, t, r = _spans(n, w)
            S_, T_ = s[:, None], t[:, None]
            # C = O * stop and P = O * (1 - stop), at valence LATER since t > s
            gOR = (g["CR"][:, s, t] * stop[:, s, RIGHT, LATER]
                   + g["PR"][:, s, t] * cont[:, s, RIGHT, LATER])[..., None]
            gOL = (g["CL"][:, s, t] * stop[:, t, LEFT, LATER]
                   + g["PL"][:, s, t] * cont[:, t, LEFT, LATER])[..., None]
            # O[s,t] = sum_d I * C
            g["IR"][:, S_, r + 1] += gOR * CR[:, r + 1, T_]
            g["CR"][:, r + 1, T_] += gOR * IR[:, S_, r + 1]
            g["CL"][:, S_, r] += gOL * IL[:, r, T_]
            g["IL"][:, r, T_] += gOL * CL[:, S_, r]
            # I[s,t] = arc * sum_r P * C
            a = (g["IR"][:, s, t] * arcR[:, s, t])[..., None]
            g["PR"][:, S_, r] += a * CL[:, r + 1, T_]
            g["CL"][:, r + 1, T_] += a * PR[:, S_, r]
            a = (g["IL"][:, s, t] * arcL[:, s, t])[..., None]
            g["CR"][:, S_, r] += a * PL[:, r + 1, T_]
            g["PL"][:, r + 1, T_] += a * CR[:, S_, r]
        return g

    def expected_counts(self, T: np.ndarray) -> Posterior:
        """Posterior expected counts for a batch ``T`` (B, n) of equal-length sentences."""
        ch, top = self._inside(T)
        Z = top.sum(axis=1)
        if not np.all(Z > 0):
            raise FloatingPointError("a sentence has probability 0 (underflow or impossible)")
        g = self._outside(T, ch, top)
        E = {k: ch[k] * g[k] for k in ch}
        upper = np.triu(np.ones((T.shape[1], T.shape[1])), 1)
        arc = E["IR"] + E["IL"].transpose(0, 2, 1)
        stop, cont = np.zeros(T.shape + (2, 2)), np.zeros(T.shape + (2, 2))
        for X, C in ((stop, "C"), (cont, "P")):
            X[:, :, RIGHT, FIRST] = np.diagonal(E[C + "R"], axis1=1, axis2=2)
            X[:, :, LEFT, FIRST] = np.diagonal(E[C + "L"], axis1=1, axis2=2)
            X[:, :, RIGHT, LATER] = (E[C + "R"] * upper).sum(axis=2)  # head s, over t > s
            X[:, :, LEFT, LATER] = (E[C + "L"] * upper).sum(axis=1)   # head t, over s < t
        return Posterior(np.log(Z), top / Z[:, None], arc, stop, cont)

    def _accumulate(self, counts, T, root, arc, stop, cont) -> None:
        K = len(self.vocab)
        counts["root"] += np.bincount(T.ravel(), root.ravel(), minlength=K)
        H, D = np.broadcast_arrays(T[:, :, None], T[:, None, :])
        direction = (np.arange(T.shape[1])[None, :] > np.arange(T.shape[1])[:, None]).astype(int)
        flat = (H * 2 + direction) * K + D  # index of (head, dir, dependent) in choose
        counts["choose"] += np.bincount(flat.ravel(), arc.ravel(),
                                        minlength=2 * K * K).reshape(K, 2, K)
        slots = (T[..., None] * 4 + np.arange(4)).ravel()  # index of (head, dir, valence) in stop
        for name, X in (("stop", stop), ("cont", cont)):
            counts[name] += np.bincount(slots, np.ravel(X), minlength=4 * K).reshape(K, 2, 2)

    def _zero_counts(self) -> dict:
        K = len(self.vocab)
        return {"root": np.zeros(K), "choose": np.zeros((K, 2, K)),
                "stop": np.zeros((K, 2, 2)), "cont": np.zeros((K, 2, 2))}

    def harmonic_counts(self, batches: dict) -> dict:
        r"""Klein & Manning's harmonic initial counts (an E-step with a made-up posterior).

        Each word is the root with probability :math:`1/n`, and otherwise takes head :math:`h` with
        probability proportional to :math:`1/|h-d|`. A head's expected number of dependents on one
        side, :math:`E`, sets its valence counts: continue-first :math:`\min(1,E)`, stop-first
        :math:`1-\min(1,E)`, continue-later :math:`\max(E-1, 0)`, stop-later :math:`\min(1,E)`.
        """
        counts = self._zero_counts()
        for n, T in batches.items():
            B = len(T)
            i = np.arange(n)
            dist = np.abs(i[:, None] - i[None, :]).astype(float)
            harm = np.where(dist > 0, 1.0 / np.maximum(dist, 1), 0.0)     # [h, d]
            post = (1 - 1 / n) * harm / np.maximum(harm.sum(axis=0, keepdims=True), 1e-300)
            arc = np.broadcast_to(post, (B, n, n))
            E = np.stack([np.tril(post, -1).sum(axis=1), np.triu(post, 1).sum(axis=1)], axis=-1)
            stop, cont = np.zeros((n, 2, 2)), np.zeros((n, 2, 2))
            cont[:, :, FIRST], stop[:, :, FIRST] = np.minimum(1, E), 1 - np.minimum(1, E)
            cont[:, :, LATER], stop[:, :, LATER] = np.maximum(E - 1, 0), np.minimum(1, E)
            self._accumulate(counts, T, np.full((B, n), 1 / n), arc,
                             np.broadcast_to(stop, (B, n, 2, 2)),
                             np.broadcast_to(cont, (B, n, 2, 2)))
        return counts

    def _m_step(self, counts: dict) -> None:
        def normalise(c, total, old):
            return np.where(total > 0, c / np.where(total > 0, total, 1), old)

        self.root = normalise(counts["root"], counts["root"].sum(), self.root)
        self.choose = normalise(counts["choose"], counts["choose"].sum(-1, keepdims=True),
                                self.choose)
        self.stop = normalise(counts["stop"], counts["stop"] + counts["cont"], self.stop)

    def fit(self, tag_sequences: Iterable[Sequence[str]], n_iter: int = 20) -> list[float]:
        """Harmonic initialisation, then ``n_iter`` EM iterations; returns the corpus log-likelihood
        :math:`\\sum \\log p(x)` of each E-step (before its M-step), which never decreases."""
        seqs = [list(x) for x in tag_sequences]
        self._build_vocab(seqs)
        batches = self._batches(seqs)
        self._m_step(self.harmonic_counts(batches))
        history = []
        for _ in range(n_iter):
            counts, ll = self._zero_counts(), 0.0
            for T in batches.values():
                logZ, root, arc, stop, cont = self.expected_counts(T)
                ll += float(logZ.sum())
                self._accumulate(counts, T, root, arc, stop, cont)
            history.append(ll)
            self._m_step(counts)
        return history

    def parse_many(self, tag_sequences) -> list[list[int]]:
        """Viterbi trees (heads, ``-1`` root) of many sentences, batched by length."""
        seqs = [list(x) for x in tag_sequences]
        out: list[list[int]] = [[] for _ in seqs]
        for n, T in self._batches(seqs).items():
            ks = [k for k, seq in enumerate(seqs) if len(seq) == n]
            ch, top = self._inside(T, reduce=np.max)
            if not np.all(top.max(axis=1) > 0):  # unseen symbols: decode with floored parameters
                ch, top = self._inside(T, reduce=np.max, floor=1e-12)
            for b, k in enumerate(ks):
                OR, OL, CR, CL, PR, PL, IR, IL = (v[b] for v in ch.values())
                out[k] = _heads((CR, CL, IR, IL, PR, PL), int(np.argmax(top[b])), np.multiply)
        return out


def dmv_trees(train_tags: Iterable[Sequence[str]], test_tags: Sequence[Sequence[str]], n_iter: int = 25) -> list[set]:
    """The DMV baseline of chapter 1: trained by EM on the tags of unlabelled sentences
    (``train_tags``, and the test sentences' own tags, as unsupervised parsing may), then each test
    sentence's best tree, as undirected edges ``(i, j)``, ``i < j``."""
    model = DMV()
    model.fit(list(train_tags) + list(test_tags), n_iter=n_iter)
    return [{(min(d, h), max(d, h)) for d, h in enumerate(heads) if h >= 0} for heads in model.parse_many(test_tags)]
