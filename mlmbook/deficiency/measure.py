r"""Effective ranks of an encoder's rows, measured like with like on blocks of sentences.

A **sample** (:func:`make_sample`) fixes the sentences, one masking draw, and disjoint **blocks**,
each one matrix of :math:`N = \rho d` rows per condition: independent replicates of one trained
model, and paired per-block differences between two models measured on the same sample.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..probes import collect_states
from ..rank import DEFAULT_EPS, block_ranks, mass_rank_of
from ..threads import LARGE_HIDDEN, limited

__all__ = ["ROWS_PER_DIM", "Sample", "sentences_for", "make_sample", "Geometry", "geometry", "encode", "CONDITIONS"]

ROWS_PER_DIM = 8
r"""Rows per dimension, :math:`\rho = N/d`, of every matrix whose effective rank is taken."""

CONDITIONS = ("clean", "masked_real", "all")
"""Row sets of :func:`geometry`: real tokens of the clean input; the same real tokens in the masked
input; all tokens (real and ``[MASK]``) of the masked input."""


@dataclass(frozen=True)
class Sample:
    """Sentences, one masking draw and the blocks of rows every model of a comparison reads: token
    ``rows`` of each sentence (no special tokens), the positions ``masked``, per block (``kept``,
    ``every``: int arrays (K, n, 2)) ``n`` (sentence, position) pairs of *unmasked* tokens (the
    ``clean`` and ``masked_real`` rows) and of any token (the ``all`` rows), and the ``blocks``'
    sentences."""

    rows: list
    masked: list
    kept: np.ndarray
    every: np.ndarray
    blocks: list
    mask_rate: float
    n_rows: int

    @property
    def n_blocks(self) -> int:
        return len(self.kept)

    def rows_of(self, index, block: int, condition: str = "clean") -> np.ndarray:
        """Row numbers, in a states array whose rows are ``index`` ((sentence, position) pairs, as
        :func:`~mlmbook.probes.collect_states` returns them), of one block's matrix: its unmasked
        tokens (``clean``, ``masked_real``) or any of its tokens (``all``)."""
        pairs = self.every[block] if condition == "all" else self.kept[block]
        return _lookup(np.asarray(index), pairs)


def sentences_for(lm, n: int, treebank=None, seed: int = 0, window: tuple = (2, None),
                  allow_unknown: bool = False) -> tuple:
    """The sentences a rank analysis reads, as word lists, and the treebank's front-door record.

    Without a treebank: ``n`` toy sentences and ``None``. With one: the first ``n`` of its sentences
    that ``lm`` reads whole, shuffled by ``seed``, through :func:`mlmbook.corpus.read_for_model`
    (its fit check stops with one line unless ``allow_unknown``), and its ``ModelCorpus``.

    Parameters
    ----------
    window : (min_words, max_words)
        Words per sentence (``max_words`` None: only the model's window bounds it).
    """
    if treebank is None:
        from ..toy import Grammar
        return [s.words for s in Grammar.load("toy").sample(n, seed=seed + 10_000)], None
    from ..corpus import Window, read_for_model
    corpus = read_for_model(lm, treebank, Window(*window), limit=n, seed=seed, allow_unknown=allow_unknown)
    return corpus.tokens, corpus


def make_sample(lm, words, mask_rate: float, n_rows: int, seed: int = 0, max_blocks: int | None = None) -> Sample:
    """Token ids, one masking draw and blocks of ``n_rows`` rows for ``lm``'s tokenizer.

    Sentences are shuffled (by ``seed``) and cut into consecutive blocks, each just large enough to
    hold ``n_rows`` unmasked tokens (sentences left over are not used); every position is masked
    independently with probability ``mask_rate``. ``ValueError`` when they cannot fill one block.
    """
    rows = [lm.encode_words(list(w))[0] for w in words]
    rows = [r for r in rows if 0 < len(r) <= lm.max_length]
    rng = np.random.default_rng(seed)
    masked = [rng.random(len(r)) < mask_rate for r in rows]
    order = rng.permutation(len(rows))
    blocks, kept, every, current, n_kept = [], [], [], [], 0
    for s in order:
        current.append(s)
        n_kept += int((~masked[s]).sum())
        if n_kept >= n_rows:
            real = np.array([(t, p) for t in current for p in np.flatnonzero(~masked[t])])
            anyp = np.array([(t, p) for t in current for p in range(len(rows[t]))])
            kept.append(real[np.sort(rng.choice(len(real), n_rows, replace=False))])
            every.append(anyp[np.sort(rng.choice(len(anyp), n_rows, replace=False))])
            blocks.append(np.array(sorted(current)))
            current, n_kept = [], 0
            if max_blocks and len(blocks) == max_blocks:
                break
    if not blocks:
        have = sum(int((~m).sum()) for m in masked)
        raise ValueError(f"{len(rows)} sentences hold {have} unmasked tokens, fewer than the {n_rows} rows of one "
                         f"matrix: give more sentences or fewer rows per dimension")
    used = np.sort(np.concatenate(blocks))  # keep only the sentences the blocks hold
    new = np.full(len(rows), -1)
    new[used] = np.arange(len(used))
    kept, every = np.stack(kept), np.stack(every)
    kept[..., 0], every[..., 0] = new[kept[..., 0]], new[every[..., 0]]
    return Sample([rows[i] for i in used], [masked[i] for i in used], kept, every,
                  [new[b] for b in blocks], float(mask_rate), int(n_rows))


def _lookup(index: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Row numbers of (sentence, position) ``pairs`` in a states array whose rows are ``index``."""
    width = int(max(index[:, 1].max(), pairs[..., 1].max())) + 1
    keys = index[:, 0].astype(np.int64) * width + index[:, 1]
    order = np.argsort(keys, kind="stable")
    want = pairs[..., 0].astype(np.int64) * width + pairs[..., 1]
    pos = np.searchsorted(keys[order], want)
    if np.any(keys[order][np.minimum(pos, len(keys) - 1)] != want):
        raise ValueError("a requested token is not among the collected rows")
    return order[pos]


@dataclass
class Geometry:
    """Effective ranks of one model on one :class:`Sample`: ``ranks[condition, kind]``, an array
    (L, K) over layers (0: the embeddings) and blocks; ``overlap["mask" | "heldout"]`` (L, K), the
    share of the energy of block *b*'s ``[MASK]`` rows, and of the next block's real rows, in the
    top-:math:`k` subspace of block *b*'s real rows (masked input; :math:`k` their ε-rank)."""

    ranks: dict
    overlap: dict = field(default_factory=dict)
    width: int = 0

    @property
    def n_layers(self) -> int:
        return next(iter(self.ranks.values())).shape[0]

    def last(self, condition: str, kind: str = "entropy") -> np.ndarray:
        """Per-block ranks at the last layer, shape (K,)."""
        return self.ranks[condition, kind][-1]


def geometry(lm, sample: Sample, eps: float = DEFAULT_EPS, overlap: bool = True, states=None,
             masked: bool = True) -> Geometry:
    """Measure one model on ``sample``: the effective ranks of every condition, layer and block.

    Parameters
    ----------
    lm : MaskedLM
        Needs ``hidden_states(ids) -> tuple of (B, n, d)`` per layer, over content tokens.
    sample : Sample
        From :func:`make_sample` with the same tokenizer.
    overlap : bool
        Also measure where the ``[MASK]`` rows lie (:attr:`Geometry.overlap`).
    states : (dict, dict), optional
        The model's :func:`encode` of ``sample``, when the caller has it already.
    masked : bool
        Also encode the masked input (conditions ``masked_real`` and ``all``); ``False`` measures
        the ``clean`` condition alone, at half the cost.
    """
    if states is not None:
        clean, noisy = states
    elif masked:
        clean, noisy = encode(lm, sample)
    else:
        clean, noisy = collect_states(lm.hidden_states, sample.rows), None
    with limited(large=clean["real"][0].shape[1] >= LARGE_HIDDEN):
        return _measure(clean, noisy, sample, eps, overlap)


def _measure(clean, noisy, sample, eps, overlap) -> Geometry:
    has_mask = (noisy is not None and noisy["mask"][0].shape[0] > 0
                and float(np.abs(noisy["mask"][-1]).sum()) > 0)
    ranks, ov = {}, {"mask": [], "heldout": []}
    idx_clean = _lookup(clean["real_index"], sample.kept)
    idx_noisy = _lookup(noisy["real_index"], sample.kept) if noisy is not None else None
    if has_mask:
        both = np.concatenate([noisy["real_index"], noisy["mask_index"]])
        idx_all = _lookup(both, sample.every)
        mask_sent = noisy["mask_index"][:, 0]
    for layer in range(len(clean["real"])):
        mats = {"clean": (clean["real"][layer], idx_clean)}
        if noisy is not None:
            mats["masked_real"] = (noisy["real"][layer], idx_noisy)
        if has_mask:
            mats["all"] = (np.concatenate([noisy["real"][layer], noisy["mask"][layer]]), idx_all)
        for cond, (H, idx) in mats.items():
            for kind, values in block_ranks(H, idx, eps).items():
                ranks.setdefault((cond, kind), []).append(values)
        if has_mask and overlap:
            R, M = noisy["real"][layer], noisy["mask"][layer]
            bases = _top_directions(R[idx_noisy], eps)
            ov["mask"].append([_energy_share(M[np.isin(mask_sent, block)], bases[b])
                               for b, block in enumerate(sample.blocks)])
            ov["heldout"].append([_energy_share(R[idx_noisy[(b + 1) % sample.n_blocks]], bases[b])
                                  for b in range(len(sample.blocks))])
    return Geometry({k: np.asarray(v, dtype=float) for k, v in ranks.items()},
                    {k: np.asarray(v) for k, v in ov.items() if v}, clean["real"][0].shape[1])


def encode(lm, sample: Sample) -> tuple:
    """The model's states of the sample's clean and masked inputs
    (:func:`~mlmbook.probes.collect_states`)."""
    return (collect_states(lm.hidden_states, sample.rows),
            collect_states(lm.hidden_states, sample.rows, sample.masked, mask_id=lm.mask_id))


def _top_directions(H: np.ndarray, eps: float):
    """Orthonormal bases (d, k) of the top-k right singular vectors of each matrix of a stack
    ``(K, n, d)``, k its ε-rank, from the Gram matrices in one eigensolver call."""
    lam, vec = np.linalg.eigh(np.einsum("kni,knj->kij", H, H))
    lam, vec = lam[:, ::-1], vec[:, :, ::-1]
    ks = np.maximum(1, mass_rank_of(np.sqrt(np.clip(lam, 0, None)), eps))
    return [v[:, :k] for v, k in zip(vec, np.atleast_1d(ks))]


def _energy_share(X: np.ndarray, U: np.ndarray) -> float:
    total = float((X ** 2).sum())
    return float(((X @ U) ** 2).sum() / total) if total > 0 else float("nan")
