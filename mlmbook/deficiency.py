r"""The representation deficiency, measured like with like: effective ranks of an encoder's rows.

Meng et al. (2024) argue that an MLM spends some of its dimensions on ``[MASK]``, so that the
representations of real tokens span fewer directions than they could. Chapter 4 measures that
claim with three comparisons, each between matrices of the **same number of rows** drawn from the
**same sentences**:

1. *what the* ``[MASK]`` *rows add* — one masked input, its real-token rows against all its rows
   (real and ``[MASK]``);
2. *what* ``[MASK]`` *in the input does to the real tokens* — the same real tokens (same
   sentences, same positions), in the clean input and in the masked input;
3. *MLM against MAE-LM* — the real tokens of clean inputs, as a downstream task sees them.

A **sample** (:func:`make_sample`) fixes the sentences, one masking draw, and a partition of the
sentences into **blocks**. Each block yields one matrix of :math:`N = \rho d` rows per condition
(:func:`mlmbook.rank.rows_for`; the same :math:`N/d` at every width), and every effective rank is
taken per block (:func:`mlmbook.rank.block_ranks`). Blocks hold disjoint sentences, so their ranks
are independent replicates: a model's rank is the mean over blocks, and two models measured on
the same sample give paired per-block differences. Over several training seeds the interval is a
hierarchical bootstrap over seeds, then blocks (:func:`paired`), from :mod:`mlmbook.stats`.

This module reads a model only through the :class:`~mlmbook.models.base.MaskedLM` protocol
(``encode_words``, ``hidden_states``, ``mask_id``); an MAE-LM's encoder has no ``[MASK]`` rows,
so the conditions that need them are absent for it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import stats
from .probes import collect_states
from .rank import DEFAULT_EPS, block_ranks, mass_rank_of
from .threads import LARGE_HIDDEN, limited

__all__ = ["ROWS_PER_DIM", "Sample", "make_sample", "Geometry", "geometry", "encode", "CONDITIONS", "Truth",
           "per_seed", "mean_interval", "paired", "contrast", "slope_weights", "probe_gap", "probe_value",
           "beside_paper"]

ROWS_PER_DIM = 8
r"""Rows per dimension, :math:`\rho = N/d`, of every matrix whose effective rank is taken."""

CONDITIONS = ("clean", "masked_real", "all")
"""Row sets of :func:`geometry`: real tokens of the clean input; the same real tokens in the masked
input; all tokens (real and ``[MASK]``) of the masked input."""


@dataclass(frozen=True)
class Sample:
    """Sentences, one masking draw and the blocks of rows every model of a comparison is measured on.

    Attributes
    ----------
    rows : list of list of int
        Token ids of each sentence (no special tokens).
    masked : list of bool arrays
        Positions replaced by ``[MASK]`` in the masked input.
    kept : int array (K, n, 2)
        Per block, ``n`` (sentence, position) pairs of *unmasked* tokens: the rows of the
        ``clean`` and ``masked_real`` matrices (the same tokens in both).
    every : int array (K, n, 2)
        Per block, ``n`` (sentence, position) pairs of any token of the masked input (real or
        ``[MASK]``): the rows of the ``all`` matrix.
    blocks : list of int arrays
        The sentences of each block (disjoint).
    mask_rate : float
    n_rows : int
    """

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


def make_sample(lm, words, mask_rate: float, n_rows: int, seed: int = 0, max_blocks: int | None = None) -> Sample:
    """Token ids, one masking draw and blocks of ``n_rows`` rows for ``lm``'s tokenizer.

    Sentences are shuffled (by ``seed``) and cut into consecutive blocks, each just large enough
    to hold ``n_rows`` unmasked tokens; sentences left over are not used. Every position is
    masked independently with probability ``mask_rate`` (by ``seed``).

    Raises
    ------
    ValueError
        When the sentences cannot fill one block: the message says how many rows they hold.
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
    used = np.sort(np.concatenate(blocks))                      # keep only the sentences the blocks hold
    new = np.full(len(rows), -1)
    new[used] = np.arange(len(used))
    kept, every = np.stack(kept), np.stack(every)
    kept[..., 0], every[..., 0] = new[kept[..., 0]], new[every[..., 0]]
    return Sample([rows[i] for i in used], [masked[i] for i in used], kept, every, [new[b] for b in blocks],
                  float(mask_rate), int(n_rows))


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
    """Effective ranks of one model on one :class:`Sample`, per condition, kind, layer and block.

    Attributes
    ----------
    ranks : dict
        ``{(condition, kind): array (L, K)}`` — condition in :data:`CONDITIONS` (``all`` only for
        a model with ``[MASK]`` rows), kind in :data:`mlmbook.rank.RANK_KINDS`; layer 0 is the
        embeddings.
    overlap : dict
        ``{"mask" | "heldout": array (L, K)}`` (models with ``[MASK]`` rows): the share of the
        energy of block *b*'s ``[MASK]`` rows, and of the next block's real rows, that lies in the
        top-:math:`k` subspace of block *b*'s real rows (masked input; :math:`k` their ε-rank).
    width : int
    """

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
    """Measure one model on ``sample``: the four effective ranks of every condition, layer and block.

    Parameters
    ----------
    lm : MaskedLM
        Needs ``hidden_states(ids) -> tuple of (B, n, d)`` per layer, over content tokens.
    sample : Sample
        From :func:`make_sample` with the same tokenizer.
    overlap : bool
        Also measure where the ``[MASK]`` rows lie (:attr:`Geometry.overlap`).
    states : (dict, dict), optional
        The model's :func:`~mlmbook.probes.collect_states` of the clean and the masked input of
        ``sample``, when the caller has them already.
    masked : bool
        Also encode the masked input (conditions ``masked_real`` and ``all``); ``False``
        measures the ``clean`` condition alone, at half the cost.
    """
    if states is not None:
        clean, noisy = states
    elif masked:
        clean, noisy = encode(lm, sample)
    else:
        clean, noisy = collect_states(lm.hidden_states, sample.rows), None
    with limited(large=clean["real"][0].shape[1] >= LARGE_HIDDEN):       # mlmbook.threads' policy
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
            om, oh = [], []
            bases = _top_directions(R[idx_noisy], eps)
            for b, block in enumerate(sample.blocks):
                heldout, U = R[idx_noisy[(b + 1) % sample.n_blocks]], bases[b]
                Mb = M[np.isin(mask_sent, block)]
                om.append(_energy_share(Mb, U))
                oh.append(_energy_share(heldout, U))
            ov["mask"].append(om)
            ov["heldout"].append(oh)
    width = clean["real"][0].shape[1]
    return Geometry({k: np.asarray(v, dtype=float) for k, v in ranks.items()},
                    {k: np.asarray(v) for k, v in ov.items() if v}, width)


def encode(lm, sample: Sample) -> tuple:
    """The model's states of the sample's clean and masked inputs (:func:`~mlmbook.probes.collect_states`)."""
    return (collect_states(lm.hidden_states, sample.rows),
            collect_states(lm.hidden_states, sample.rows, sample.masked, mask_id=lm.mask_id))


def _top_directions(H: np.ndarray, eps: float):
    """Orthonormal bases (d, k) of the top-k right singular vectors of each matrix of a stack
    ``(K, n, d)`` (or of one matrix ``(n, d)``), k its ε-rank: :func:`mlmbook.rank.top_subspace` at
    :func:`~mlmbook.rank.effective_rank_mass`, from the Gram matrices in one eigensolver call."""
    one = H.ndim == 2
    H = H[None] if one else H
    lam, vec = np.linalg.eigh(np.einsum("kni,knj->kij", H, H))
    lam, vec = lam[:, ::-1], vec[:, :, ::-1]
    ks = np.maximum(1, mass_rank_of(np.sqrt(np.clip(lam, 0, None)), eps))
    out = [v[:, :k] for v, k in zip(vec, np.atleast_1d(ks))]
    return out[0] if one else out


def _energy_share(X: np.ndarray, U: np.ndarray) -> float:
    total = float((X ** 2).sum())
    return float(((X @ U) ** 2).sum() / total) if total > 0 else float("nan")


# ---------------------------------------------------------------------------- the fit to the truth
class Truth:
    r"""The exact single-site conditionals of some toy sentences, computed once for many models.

    :meth:`kl` gives each sentence's mean :math:`\mathrm{KL}(p(\cdot\mid x_{\setminus i})\,\|\,
    q(\cdot\mid x_{\setminus i}))` over its positions — the fit of a model to the truth, the one
    exact reference a knob of pretraining has (the truth has no representations to rank).
    Equal to :func:`mlmbook.compare.kl_to_truth` averaged per sentence.
    """

    def __init__(self, grammar, sentences, offset: int | None = None):
        from .toy.vocab import SPECIAL_TOKENS
        self.sentences = [list(getattr(s, "words", s)) for s in sentences]
        self.p = [grammar.conditionals(w) for w in self.sentences]
        self.offset = len(SPECIAL_TOKENS) if offset is None else offset

    def kl(self, lm) -> np.ndarray:
        from .compare import single_site_log_probs
        out = []
        for p, lq in zip(self.p, single_site_log_probs(lm, self.sentences)):
            lq = lq[:, self.offset:self.offset + p.shape[1]]
            with np.errstate(divide="ignore", invalid="ignore"):
                terms = np.where(p > 0, p * (np.log(np.where(p > 0, p, 1.0)) - lq), 0.0)
            out.append(terms.sum(1).mean())
        return np.asarray(out)


# ---------------------------------------------------------------------------- intervals
def per_seed(values) -> tuple:
    """Flatten per-seed unit values ``[array (K,), ...]`` (one per training seed, the same units
    for every seed) into ``(values (S·K,), seed label of each)``."""
    arrays = [np.asarray(v, dtype=float).ravel() for v in values]
    if len({len(a) for a in arrays}) != 1:
        raise ValueError("every seed needs the same units (the same blocks or sentences)")
    return np.concatenate(arrays), np.repeat(np.arange(len(arrays)), len(arrays[0]))


def _groups(labels):
    return labels if len(np.unique(labels)) > 1 else None


def mean_interval(values, level: float = stats.LEVEL, what: str = "blocks of sentences") -> stats.Interval:
    """Mean of per-seed unit values with a (hierarchical, over several seeds) bootstrap interval."""
    x, g = per_seed(values)
    return stats.bootstrap(lambda v: v.mean(-1), x, level=level, groups=_groups(g), what=what)


def paired(a, b, level: float = stats.LEVEL, what: str = "blocks of sentences") -> stats.Interval:
    """Mean of ``b - a`` over seeds and units, paired unit by unit (the same blocks or sentences),
    with a bootstrap interval — hierarchical (seeds, then units) when there are several seeds."""
    xa, g = per_seed(a)
    xb, _ = per_seed(b)
    return stats.bootstrap(lambda u, v: v.mean(-1) - u.mean(-1), xa, xb, level=level, groups=_groups(g), what=what)


def slope_weights(x) -> np.ndarray:
    r"""Weights :math:`c_s` with :math:`\sum_s c_s\,\bar g_s` the least-squares slope of
    :math:`\bar g_s` on :math:`x_s`: :math:`c_s = (x_s - \bar x)/\sum_t (x_t - \bar x)^2`."""
    x = np.asarray(x, dtype=float)
    c = x - x.mean()
    if not np.any(c):
        raise ValueError("a slope needs at least two different settings")
    return c / (c ** 2).sum()


def contrast(series, weights, level: float = stats.LEVEL, what: str = "blocks of sentences") -> stats.Interval:
    r"""A linear contrast :math:`\sum_s w_s \bar g_s` of the means of several settings.

    ``series[s]`` holds setting *s*'s per-seed unit values (as for :func:`paired`; the same seeds
    and units in every setting, so the bootstrap draws them jointly). With
    :func:`slope_weights` this is the slope of a dose–response curve.
    """
    flat = [per_seed(v) for v in series]
    g = flat[0][1]
    w = np.asarray(weights, dtype=float)

    def stat(*xs):
        return sum(wk * x.mean(-1) for wk, x in zip(w, xs))
    return stats.bootstrap(stat, *[x for x, _ in flat], level=level, groups=_groups(g), what=what)


def probe_gap(a, b, level: float = stats.LEVEL) -> stats.Interval:
    """Accuracy of probe ``b`` minus probe ``a`` on the same test sentences, over seeds and sentences.

    ``a`` and ``b`` are lists (one per training seed) of ``(correct, total)`` per test sentence
    (:func:`mlmbook.probes.probe_counts`).
    """
    ca, g = per_seed([c for c, _ in a])
    cb, _ = per_seed([c for c, _ in b])
    total, _ = per_seed([t for _, t in a])
    return stats.ratio(cb, total, minus=ca, level=level, groups=_groups(g))



def probe_value(runs, level: float = stats.LEVEL) -> stats.Interval:
    """Accuracy of one probe over seeds and sentences; ``runs`` as for :func:`probe_gap`."""
    c, g = per_seed([c for c, _ in runs])
    total, _ = per_seed([t for _, t in runs])
    return stats.ratio(c, total, level=level, groups=_groups(g))


def beside_paper(sides) -> str:
    """How verdicts on MAE-LM minus MLM stand beside the paper, whose direction is "above".

    ``"agrees"`` when at least one verdict is above and none below; ``"runs against"`` when at least
    one is below and none above; ``"mixed"`` when both occur; ``"inconclusive"`` when none has a
    side. A point estimate never counts: only a verdict's side does.
    """
    sides = list(sides)
    up, down = "above" in sides, "below" in sides
    return "mixed" if up and down else "agrees" if up else "runs against" if down else "inconclusive"
