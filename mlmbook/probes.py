r"""What a linear read-out gets from frozen token representations, layer by layer.

For token representations :math:`h_t \in \mathbb{R}^d` and labels :math:`y_t` (part of speech,
number, depth in the gold tree, offset to the head), a multinomial logistic regression
:math:`p(y \mid h) = \operatorname{softmax}(W h + b)` is fitted on the tokens of some sentences and
scored on the tokens of others: it measures what is already linearly available.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .threads import using

__all__ = ["collect_states", "token_labels", "PROBE_TASKS", "UPOS_TAGS", "Probe", "fit_probe",
           "split_sentences", "probe_counts", "layer_probe_counts"]

UPOS_TAGS = ["DET", "ADJ", "NOUN", "PROPN", "VERB", "ADP", "ADV", "PUNCT"]

PROBE_TASKS = {
    "pos": UPOS_TAGS,
    "number": ["Sing", "Plur"],
    "depth": ["0", "1", "2", "3+"],
    "head_offset": ["root", "<=-3", "-2", "-1", "+1", "+2", ">=+3"],
}
"""The probing tasks, with the class names their integer labels stand for."""


def collect_states(states_fn, rows, masked=None, mask_id=None) -> dict:
    """Per-layer representations of many sentences, split into real and ``[MASK]`` tokens:
    ``real`` / ``mask``, lists over layers of float64 arrays (N, d); ``real_index`` /
    ``mask_index``, (N, 2) arrays of (sentence, position), in the same order (sentence-major).

    Parameters
    ----------
    states_fn : callable
        ``ids (B, n) -> tuple of (B, n, d)`` per layer, over content tokens (a model's
        ``hidden_states``).
    rows : list of list of int
        Token ids of each sentence, without special tokens.
    masked : list of list of bool, optional
        Positions to replace by ``mask_id`` (default: none).
    mask_id : int
        The model's ``[MASK]`` id (needed when ``masked`` is given).
    """
    masked = masked if masked is not None else [[False] * len(r) for r in rows]
    by_len: dict = {}
    for s, r in enumerate(rows):
        by_len.setdefault(len(r), []).append(s)
    parts = {"real": [], "mask": []}
    index = {"real": [], "mask": []}
    for _, members in sorted(by_len.items()):
        for start in range(0, len(members), 256):               # at most 256 rows a forward pass
            idx = members[start:start + 256]
            ids = torch.tensor([rows[s] for s in idx], dtype=torch.long)
            m = torch.tensor([list(masked[s]) for s in idx], dtype=torch.bool).reshape(ids.shape)
            if m.any():
                ids = torch.where(m, torch.full_like(ids, mask_id), ids)
            layers = states_fn(ids)
            for key, sel in (("real", ~m), ("mask", m)):
                parts[key].append([h[sel].double().numpy() for h in layers])
                b, p = sel.nonzero(as_tuple=True)
                index[key].append(np.stack([np.asarray(idx)[b.numpy()], p.numpy()], 1))
    out = {}
    for key in ("real", "mask"):
        idx = np.concatenate(index[key]) if index[key] else np.zeros((0, 2), int)
        order = np.lexsort((idx[:, 1], idx[:, 0]))                  # sentence-major, then position
        n_layers = len(parts["real"][0]) if parts["real"] else len(parts["mask"][0])
        out[key] = [np.concatenate([p[k] for p in parts[key]])[order] if parts[key] else np.zeros((0, 0))
                    for k in range(n_layers)]
        out[f"{key}_index"] = idx[order]
    return out


def token_labels(sentence) -> dict:
    """Integer labels of every token for each task in :data:`PROBE_TASKS` (-1: not applicable).

    ``pos``: the UPOS tag; ``number``: Sing/Plur where the word carries number (nouns,
    determiners, present-tense verbs); ``depth``: edges from the root of the gold tree
    (3 or more pooled); ``head_offset``: the signed distance to the head, root separate.
    """
    out = {"pos": [UPOS_TAGS.index(u) for u in sentence.upos]}
    out["number"] = [{"Sing": 0, "Plur": 1}.get(f.get("Number"), -1) for f in sentence.feats]
    out["depth"] = []
    for i in range(len(sentence.heads)):
        d, j = 0, i
        while sentence.heads[j] >= 0:
            j, d = sentence.heads[j], d + 1
        out["depth"].append(min(d, 3))
    # classes root, <=-3, -2, -1, +1, +2, >=+3: the offset clipped to [-3, 3], shifted past 0
    out["head_offset"] = [0 if h < 0 else min(max(h - i, -3), 3) + (4 if h < i else 3)
                          for i, h in enumerate(sentence.heads)]
    return out


@dataclass
class Probe:
    """A fitted multinomial logistic regression on standardised features."""

    W: torch.Tensor
    b: torch.Tensor
    mean: torch.Tensor
    scale: torch.Tensor

    def predict(self, X) -> np.ndarray:
        X = (torch.as_tensor(X, dtype=torch.float64) - self.mean) / self.scale
        return (X @ self.W + self.b).argmax(1).numpy()


def fit_probe(X, y, n_classes: int, l2: float = 1e-3, max_iter: int = 100) -> Probe:
    r"""Fit :math:`\operatorname{softmax}(W h + b)` by L-BFGS on the mean cross-entropy
    plus :math:`\lambda \|W\|^2` (features standardised first, so one :math:`\lambda` fits all)."""
    with using(1):          # an optimisation: one thread always, the same fit on every machine
        X = torch.as_tensor(X, dtype=torch.float64)
        y = torch.as_tensor(y, dtype=torch.long)
        mean, scale = X.mean(0), X.std(0).clamp_min(1e-8)
        Z = (X - mean) / scale
        W = torch.zeros(X.shape[1], n_classes, dtype=torch.float64, requires_grad=True)
        b = torch.zeros(n_classes, dtype=torch.float64, requires_grad=True)
        opt = torch.optim.LBFGS([W, b], max_iter=max_iter, line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss = nn.functional.cross_entropy(Z @ W + b, y) + l2 * (W ** 2).sum()
            loss.backward()
            return loss

        opt.step(closure)
        return Probe(W.detach(), b.detach(), mean, scale)


def split_sentences(n_sentences: int, seed: int = 0, train_frac: float = 0.5) -> tuple:
    """A random split of sentence indices ``0..n-1`` into (train, test), both sorted."""
    perm = np.random.default_rng(seed).permutation(n_sentences)
    k = int(train_frac * n_sentences)
    return np.sort(perm[:k]), np.sort(perm[k:])


def probe_counts(X, labels, sentence_of, n_classes: int, train, test) -> tuple:
    """Fit a probe on the rows of the ``train`` sentences (rows labelled -1 are ignored); return
    ``(correct, total)``, its hits and the scored tokens of each ``test`` sentence, in the order of
    ``test`` (the same for every model probed on them: ready for a paired
    :func:`mlmbook.stats.ratio`)."""
    X, labels, sentence_of = np.asarray(X), np.asarray(labels), np.asarray(sentence_of)
    use = labels >= 0
    tr = use & np.isin(sentence_of, train)
    te = use & np.isin(sentence_of, test)
    hit = fit_probe(X[tr], labels[tr], n_classes).predict(X[te]) == labels[te]
    pos = {s: k for k, s in enumerate(np.asarray(test))}
    where = np.array([pos[s] for s in sentence_of[te]], dtype=int)
    return (np.bincount(where, weights=hit.astype(float), minlength=len(test)),
            np.bincount(where, minlength=len(test)).astype(float))


def layer_probe_counts(layers, index, labels, train, test, tasks=None) -> dict:
    """:func:`probe_counts` for every task and layer of one model: ``{task: (correct, total)}``,
    ``correct`` (L, len(test)) and ``total`` (len(test),).

    Parameters
    ----------
    layers : list of arrays (N, d)
        Real-token states per layer, rows in the order of ``index`` (:func:`collect_states`).
    index : array (N, 2)
        (sentence, position) of each row.
    labels : list of dict
        :func:`token_labels` of each sentence.
    tasks : iterable of str, optional
        Keys of :data:`PROBE_TASKS` (default: all).
    """
    index = np.asarray(index)
    out = {}
    for task in tasks or PROBE_TASKS:
        y = np.array([labels[s][task][p] for s, p in index])
        runs = [probe_counts(H, y, index[:, 0], len(PROBE_TASKS[task]), train, test) for H in layers]
        out[task] = (np.stack([c for c, _ in runs]), runs[0][1])
    return out
