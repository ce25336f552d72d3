r"""What frozen and fine-tuned representations make easy: probes and a small sentence task.

Chapter 4 compares two encoders of the same size — the default MLM and MAE-LM — by what a
*linear* read-out can get from their token representations, and by how well they adapt
when fine-tuned on a small sentence-level task. Both are cheap on the toy language, and
both are repeated over several seeds so that a difference can be told from noise.

Probes
    For token representations :math:`h_t \in \mathbb{R}^d` and labels :math:`y_t` (part of
    speech, number, depth in the gold tree, offset to the head), a multinomial logistic
    regression :math:`p(y \mid h) = \operatorname{softmax}(W h + b)` is fitted on the tokens
    of some sentences and scored on the tokens of others (splits are by *sentence*, so no
    sentence contributes to both). A linear probe cannot compute new features; it measures
    what is already linearly available.

Fine-tuning
    A sentence classifier — mean-pooled last layer, then a linear layer — is trained
    together with the whole encoder on a few hundred labelled sentences. The toy task:
    tell a sentence of the language from one whose verb was flipped to the wrong number
    ("the dogs near the river *barks* ."), which is ungrammatical by construction.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from scipy.stats import t as student_t
from torch import nn

from .rank import DEFAULT_EPS, batch_singular_values, entropy_rank_of, mass_rank_of
from .stats import ratio_bootstrap, side_of_zero

if TYPE_CHECKING:
    from .models.base import MaskedLM

__all__ = ["collect_states", "token_labels", "PROBE_TASKS", "fit_probe", "probe_accuracy",
           "flip_agreement", "agreement_task", "finetune_classifier", "mean_sd",
           "LADDER_PROBES", "rung_measures", "seed_interval", "ladder_gaps", "ladder_value",
           "clear_verdict"]

UPOS_TAGS = ["DET", "ADJ", "NOUN", "PROPN", "VERB", "ADP", "ADV", "PUNCT"]

#: The probing tasks, with the class names their integer labels stand for.
PROBE_TASKS = {
    "pos": UPOS_TAGS,
    "number": ["Sing", "Plur"],
    "depth": ["0", "1", "2", "3+"],
    "head_offset": ["root", "<=-3", "-2", "-1", "+1", "+2", ">=+3"],
}


# ---------------------------------------------------------------------------- representations
def collect_states(states_fn, rows, masked=None, mask_id=None, chunk: int = 256) -> dict:
    """Per-layer representations of many sentences, split into real and ``[MASK]`` tokens.

    Parameters
    ----------
    states_fn : callable
        ``ids (B, n) -> tuple of (B, n, d)`` per layer, over content tokens — e.g.
        :meth:`mlmbook.models.HFMaskedLM.hidden_states` or
        :meth:`mlmbook.models.maelm.MAEMaskedLM.hidden_states`.
    rows : list of list of int
        Token ids of each sentence, without special tokens.
    masked : list of list of bool, optional
        Positions to replace by ``mask_id`` (default: none).
    mask_id : int
        The model's ``[MASK]`` id (needed when ``masked`` is given).
    chunk : int
        Most rows per forward pass; rows are grouped by length.

    Returns
    -------
    dict
        ``real`` / ``mask``: lists over layers of float64 arrays (N, d) of the real and masked
        positions; ``real_index`` / ``mask_index``: (N, 2) arrays of (sentence, position),
        in the same row order (sentence-major, then position).
    """
    masked = masked if masked is not None else [[False] * len(r) for r in rows]
    by_len: dict = {}
    for s, r in enumerate(rows):
        by_len.setdefault(len(r), []).append(s)
    parts = {"real": [], "mask": []}
    index = {"real": [], "mask": []}
    for n, members in sorted(by_len.items()):
        for start in range(0, len(members), chunk):
            idx = members[start:start + chunk]
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
        out[key] = [np.concatenate([p[l] for p in parts[key]])[order] if parts[key] else np.zeros((0, 0))
                    for l in range(n_layers)]
        out[f"{key}_index"] = idx[order]
    return out


# ---------------------------------------------------------------------------- labels
def _depths(heads):
    depth = []
    for i in range(len(heads)):
        d, j = 0, i
        while heads[j] >= 0:
            j, d = heads[j], d + 1
        depth.append(d)
    return depth


def token_labels(sentence) -> dict:
    """Integer labels of every token for each task in :data:`PROBE_TASKS` (-1: not applicable).

    ``pos``: the UPOS tag; ``number``: Sing/Plur where the word carries number (nouns,
    determiners, present-tense verbs); ``depth``: edges from the root of the gold tree
    (3 or more pooled); ``head_offset``: the signed distance to the head, root separate.
    """
    out = {"pos": [UPOS_TAGS.index(u) for u in sentence.upos]}
    out["number"] = [{"Sing": 0, "Plur": 1}.get(f.get("Number"), -1) for f in sentence.feats]
    out["depth"] = [min(d, 3) for d in _depths(sentence.heads)]
    offsets = []
    for i, h in enumerate(sentence.heads):
        k = h - i
        offsets.append(0 if h < 0 else 1 if k <= -3 else 2 if k == -2 else 3 if k == -1
                       else 4 if k == 1 else 5 if k == 2 else 6)
    out["head_offset"] = offsets
    return out


# ---------------------------------------------------------------------------- linear probes
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


def probe_accuracy(X, labels, sentence_of, n_classes: int, seeds=(0, 1, 2), train_frac: float = 0.5,
                   l2: float = 1e-3) -> np.ndarray:
    """Held-out accuracy of a linear probe, once per seed (a different sentence split each time).

    Parameters
    ----------
    X : array (N, d)
        Token representations.
    labels : array (N,)
        Integer labels; rows with -1 are ignored.
    sentence_of : array (N,)
        The sentence each row comes from; train and test sentences never overlap.

    Returns
    -------
    numpy.ndarray (len(seeds),)
    """
    X, labels, sentence_of = np.asarray(X), np.asarray(labels), np.asarray(sentence_of)
    use = labels >= 0
    X, labels, sentence_of = X[use], labels[use], sentence_of[use]
    sentences = np.unique(sentence_of)
    out = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        train_sents = rng.choice(sentences, size=int(train_frac * len(sentences)), replace=False)
        tr = np.isin(sentence_of, train_sents)
        probe = fit_probe(X[tr], labels[tr], n_classes, l2=l2)
        out.append(float((probe.predict(X[~tr]) == labels[~tr]).mean()))
    return np.array(out)


def mean_sd(values) -> tuple:
    """Mean and sample standard deviation (ddof=1) of repeated measurements."""
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0


# ---------------------------------------------------------------------------- the sentence task
def flip_agreement(grammar, sentence):
    """The sentence with its present-tense verb switched to the other number, or None.

    Only verbs that agree (present tense) can be flipped; "barked" has no number.
    """
    forms = {}
    for frame in grammar.spec["verbs"].values():
        for ws in frame["words"]:
            forms[ws[0]], forms[ws[1]] = ws[1], ws[0]
    for i, (w, u, f) in enumerate(zip(sentence.words, sentence.upos, sentence.feats)):
        if u == "VERB" and "Number" in f and forms.get(w, w) != w:
            return sentence.words[:i] + [forms[w]] + sentence.words[i + 1:]
    return None


def agreement_task(grammar, n: int, seed: int = 0):
    """``n`` labelled sentences, half grammatical (label 0), half with a flipped verb (label 1).

    A flipped sentence is kept only if the exact grammar gives it probability zero: "the
    sheep sleeps" flipped to "the sheep sleep" is still English, and is skipped. So the
    truth separates the two classes perfectly; the models have to learn to.

    Returns
    -------
    sentences : list of list of str
    labels : numpy.ndarray (n,)
    """
    pool = grammar.sample(3 * n + 50, seed=seed)
    flipped = [(s.words, f) for s in pool if (f := flip_agreement(grammar, s)) is not None]
    sents, labels, start = [], [], 0
    while len(sents) < n and start < len(flipped):         # check only as many as needed
        batch = flipped[start:start + n - len(sents) + 16]
        start += len(batch)
        for (words, wrong), zero in zip(batch, _zero_probability(grammar, [f for _, f in batch])):
            if zero and len(sents) < n:  # each source sentence gives one example, alternately each class
                label = len(sents) % 2
                sents.append(wrong if label else words)
                labels.append(label)
    if len(sents) < n:
        raise ValueError(f"could not make {n} agreement examples from {len(pool)} samples")
    order = np.random.default_rng(seed).permutation(n)
    return [sents[i] for i in order], np.array(labels)[order]


def _zero_probability(grammar, sentences) -> np.ndarray:
    """True where the exact grammar gives the word sequence probability 0 (batched by length)."""
    out = np.zeros(len(sentences), dtype=bool)
    by_len: dict = {}
    for k, s in enumerate(sentences):
        by_len.setdefault(len(s), []).append(k)
    for _, idx in by_len.items():
        ids = torch.stack([grammar.encode(sentences[k]) for k in idx])
        with torch.no_grad():
            z = grammar.pcfg.sentence_weight(ids)
        out[idx] = (z <= 0).numpy()
    return out


def finetune_classifier(encoder, train_rows, train_labels, test_rows, test_labels, seed: int = 0,
                        epochs: int = 5, batch: int = 32, lr: float = 1e-3, pad_id: int = 0) -> float:
    """Fine-tune a copy of ``encoder`` with a linear classifier on mean-pooled states; test accuracy.

    Parameters
    ----------
    encoder : transformers.BertModel (or any model returning ``last_hidden_state``)
        Left unchanged: a deep copy is trained.
    train_rows, test_rows : list of list of int
        Token ids *with* the model's special tokens.
    train_labels, test_labels : array of int
    seed : int
        Seeds the classifier's initialisation and the order of the training batches.
    """
    torch.manual_seed(seed)
    enc = copy.deepcopy(encoder).train()
    n_classes = int(max(np.max(train_labels), np.max(test_labels))) + 1
    clf = nn.Linear(enc.config.hidden_size, n_classes)
    params = list(enc.parameters()) + list(clf.parameters())
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)

    def pad(rows):                                # every row padded once, up front
        ids = torch.full((len(rows), max(len(r) for r in rows)), pad_id, dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, :len(r)] = torch.tensor(r)
        return ids, (ids != pad_id).long()

    def scores(ids, attn):
        n = int(attn.sum(1).max())                # the longest row of the batch: no wider
        ids, attn = ids[:, :n], attn[:, :n]
        h = enc(input_ids=ids, attention_mask=attn).last_hidden_state
        pooled = (h * attn[..., None]).sum(1) / attn.sum(1, keepdim=True)
        return clf(pooled)

    train_ids, train_attn = pad(train_rows)
    test_ids, test_attn = pad(test_rows)
    gen = torch.Generator().manual_seed(seed)
    y = torch.as_tensor(np.asarray(train_labels), dtype=torch.long)
    total = epochs * -(-len(train_rows) // batch)
    warm = max(1, total // 10)                    # linear warm-up over 10 % of the steps, then linear decay
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min((s + 1) / warm, (total - s) / (total - warm + 1)))
    for _ in range(epochs):
        for b in torch.randperm(len(train_rows), generator=gen).split(batch):
            loss = nn.functional.cross_entropy(scores(train_ids[b], train_attn[b]), y[b])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
    enc.eval()
    with torch.no_grad():
        pred = torch.cat([scores(test_ids[s:s + 256], test_attn[s:s + 256]).argmax(1)
                          for s in range(0, len(test_rows), 256)])
    return float((pred.numpy() == np.asarray(test_labels)).mean())


# ---------------------------------------------------------------------------- one rung of the ladder
#: The probes measured on every rung of the ladder (a cheap subset of :data:`PROBE_TASKS`).
LADDER_PROBES = ("number", "head_offset")


def rung_measures(lm: MaskedLM, sentences, n_rows: int, mask_rate: float = 0.15, n_boot: int = 200,
                  seed: int = 0, states: dict | None = None) -> dict:
    """Last-layer effective ranks and probe accuracies of one model, with per-replicate values.

    The same ``sentences`` and ``seed`` give the same masks, probe split and bootstrap draws
    for every model, so two models' replicates can be subtracted (a paired bootstrap).

    Parameters
    ----------
    lm : MaskedLM
        An MLM, or an MAE-LM (then its ``[MASK]`` rows come from :meth:`decoder_states`).
    sentences : list of Sentence
        Toy sentences with gold annotation.
    n_rows : int
        Rows of every matrix whose rank is taken (ranks depend on the row count).
    n_boot : int
        Bootstrap replicates over sentences.
    states : dict, optional
        The model's last-layer states of these sentences when the caller has them already (e.g.
        the chapter's own models): ``real`` / ``real_index`` (clean input) and ``mask`` /
        ``mask_index`` (masked with ``mask_rate`` by ``np.random.default_rng(seed)``, one draw per
        sentence in order, as here), in the layout of :func:`collect_states` (last layer only).

    Returns
    -------
    dict
        ``rank`` / ``boot_rank``: ``{(tokens, kind): value / array (n_boot,)}`` for tokens in
        ``real`` (clean input) and ``mask`` and kind in ``entropy`` / ``mass``;
        ``probe`` / ``probe_counts``: per task the held-out accuracy and the (correct, total)
        counts per test sentence, for :func:`mlmbook.stats.ratio_bootstrap`.
    """
    if states is None:
        rows = [lm.encode_words(s.words)[0] for s in sentences]
        rng = np.random.default_rng(seed)
        masked = [rng.random(len(r)) < mask_rate for r in rows]
        clean = collect_states(lm.hidden_states, rows)
        states_fn = getattr(lm, "decoder_states", lm.hidden_states)
        noisy = collect_states(states_fn, rows, masked, mask_id=lm.mask_id)
        states = {"real": clean["real"][-1], "real_index": clean["real_index"],
                  "mask": noisy["mask"][-1], "mask_index": noisy["mask_index"]}
    n_sents = len(sentences)
    out: dict = {"rank": {}, "boot_rank": {}, "probe": {}, "probe_counts": {}}
    draws = np.random.default_rng(seed + 1).integers(0, n_sents, size=(n_boot, n_sents))
    for tokens in ("real", "mask"):
        H, sent_of = states[tokens], states[f"{tokens}_index"][:, 0]
        by_sent = [np.flatnonzero(sent_of == s) for s in range(n_sents)]

        def rows_of(picked, by_sent=by_sent):
            idx = np.concatenate([by_sent[s] for s in picked])
            return np.random.default_rng(seed + 2).permutation(idx)[:n_rows]

        e, m = _ranks_of_rows(H, [rows_of(range(n_sents))] + [rows_of(d) for d in draws])
        out["rank"][tokens, "entropy"], out["rank"][tokens, "mass"] = float(e[0]), int(m[0])
        out["boot_rank"][tokens, "entropy"], out["boot_rank"][tokens, "mass"] = e[1:], m[1:].astype(float)
    X, where = states["real"], states["real_index"]
    train = np.random.default_rng(seed + 3).permutation(n_sents)[: n_sents // 2]
    is_train = np.isin(where[:, 0], train)
    labels = [token_labels(s) for s in sentences]
    for task in LADDER_PROBES:
        y = np.array([labels[s][task][p] for s, p in where])
        use = y >= 0
        probe = fit_probe(X[use & is_train], y[use & is_train], len(PROBE_TASKS[task]))
        test = use & ~is_train
        hit = probe.predict(X[test]) == y[test]
        test_sents = where[test, 0]
        sents = np.unique(test_sents)
        correct = np.array([hit[test_sents == s].sum() for s in sents], dtype=float)
        total = np.array([(test_sents == s).sum() for s in sents], dtype=float)
        out["probe"][task] = float(hit.mean())
        out["probe_counts"][task] = (correct, total)
    return out


def _ranks_of_rows(H, picks, chunk: int = 50) -> tuple:
    """Entropy and ε-effective rank of ``H[p]`` for every row selection ``p`` in ``picks``: one SVD
    per matrix, stacked by equal row count into few LAPACK calls."""
    e, m = np.zeros(len(picks)), np.zeros(len(picks), dtype=int)
    by_len: dict = {}
    for k, p in enumerate(picks):
        by_len.setdefault(len(p), []).append(k)
    for ks in by_len.values():
        for c in range(0, len(ks), chunk):
            part = ks[c:c + chunk]
            s = batch_singular_values(H[np.stack([picks[k] for k in part])])
            e[part], m[part] = entropy_rank_of(s), mass_rank_of(s, DEFAULT_EPS)
    return e, m


def seed_interval(values, level: float = 0.95) -> tuple:
    """Mean and Student-t interval over training seeds: ``(mean, low, high)``."""
    v = np.asarray(values, dtype=float)
    half = student_t.ppf(0.5 + level / 2, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))
    return float(v.mean()), float(v.mean() - half), float(v.mean() + half)


def clear_verdict(low: float, high: float, above: str, below: str) -> str:
    """``above`` / ``below`` when an interval excludes zero on that side, else "no clear difference"."""
    return side_of_zero(low, high, above, below, "no clear difference")


def _interval(estimate, boots, level=0.95):
    """Percentile interval of bootstrap replicates shifted so that their mean is the estimate.

    A replicate repeats some sentences, and repeated rows lower an effective rank: the raw
    replicates are biased low. The shift removes that bias; the interval is then widened, if
    need be, to contain the estimate.
    """
    a = (1 - level) / 2
    boots = np.asarray(boots, dtype=float)
    boots = boots - (boots.mean() - estimate)
    lo, hi = float(np.quantile(boots, a)), float(np.quantile(boots, 1 - a))
    return float(estimate), min(lo, float(estimate)), max(hi, float(estimate))


def _contain(est, lo, hi):
    return float(est), min(float(lo), float(est)), max(float(hi), float(est))


def ladder_gaps(a: dict, b: dict, width: int, seeds_a=None, seeds_b=None) -> dict:
    """MAE-LM minus MLM at one size: ranks (as fractions of ``width``) and probe accuracies.

    ``a`` and ``b`` are :func:`rung_measures` of the MLM and MAE-LM (same sentences and seed:
    the bootstrap is paired). With ``seeds_a`` / ``seeds_b`` (the measures of every training
    seed, in the same order) the interval is the Student-t interval over the per-seed gaps,
    widened to contain the paired bootstrap interval of the first seed.

    Returns
    -------
    dict
        ``{quantity: (estimate, low, high)}`` for ``rank_<tokens>_<kind>`` and ``probe_<task>``.
    """
    out = {}
    for key in a["rank"]:
        est = (b["rank"][key] - a["rank"][key]) / width
        out[f"rank_{key[0]}_{key[1]}"] = _interval(est, (b["boot_rank"][key] - a["boot_rank"][key]) / width)
    for task in LADDER_PROBES:
        (ca, ta), (cb, _) = a["probe_counts"][task], b["probe_counts"][task]
        out[f"probe_{task}"] = _contain(*ratio_bootstrap(cb, ta, minus=ca))
    if seeds_a is not None:
        for q, (_, lo, hi) in list(out.items()):
            per_seed = [ladder_gaps(x, y, width)[q][0] for x, y in zip(seeds_a, seeds_b)]
            mean, s_lo, s_hi = seed_interval(per_seed)
            out[q] = (mean, min(lo, s_lo), max(hi, s_hi))
    return out


def ladder_value(measures: list, quantity: str, width: int = 1) -> tuple:
    """One model's quantity with its interval: ``(estimate, low, high)``.

    ``quantity`` is ``"rank_<tokens>_<kind>"`` (divided by ``width``) or ``"probe_<task>"``.
    ``measures`` holds the :func:`rung_measures` of one or more training seeds; with several,
    the Student-t interval over seeds widened to contain the first seed's bootstrap interval.
    """
    def one(m):
        if quantity.startswith("rank_"):
            key = tuple(quantity.split("_")[1:])
            return _interval(m["rank"][key] / width, m["boot_rank"][key] / width)
        return _contain(*ratio_bootstrap(*m["probe_counts"][quantity[len("probe_"):]]))

    est, lo, hi = one(measures[0])
    if len(measures) > 1:
        est, s_lo, s_hi = seed_interval([one(m)[0] for m in measures])
        lo, hi = min(lo, s_lo), max(hi, s_hi)
    return est, lo, hi
