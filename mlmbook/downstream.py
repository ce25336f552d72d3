r"""A downstream task with an exact answer: number agreement, across attractors.

Is the sentence grammatical, or was its verb switched to the wrong number ("the dogs near the river
*barks* .")? A switched sentence is kept only if the grammar gives it probability zero, so every
error is the model's. In **attractor** sentences a noun of the *other* number stands between the
subject and the verb ("the child with the shepherds *wants*"): a classifier that reads the nearest
noun's number gets these wrong (the agreement-attraction test of Linzen et al. 2016). Each test
sentence's correctness is returned, so intervals can be taken over sentences and pretraining seeds.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .threads import using

__all__ = ["flip_agreement", "agreeing_verb", "attractor", "agreement_task", "verb_features",
           "probe_agreement", "finetune_encoder", "FinetuneSettings", "finetune_classifier"]


def _verb_forms(grammar) -> dict:
    forms = {}
    for frame in grammar.spec["verbs"].values():
        for ws in frame["words"]:
            forms[ws[0]], forms[ws[1]] = ws[1], ws[0]
    return forms


def agreeing_verb(grammar, sentence) -> int | None:
    """Index of the first present-tense verb whose other-number form differs, or None."""
    forms = _verb_forms(grammar)
    for i, (w, u, f) in enumerate(zip(sentence.words, sentence.upos, sentence.feats)):
        if u == "VERB" and "Number" in f and forms.get(w, w) != w:
            return i
    return None


def flip_agreement(grammar, sentence):
    """The sentence with its agreeing (present-tense) verb switched to the other number, or None
    ("barked" has no number)."""
    i = agreeing_verb(grammar, sentence)
    if i is None:
        return None
    return sentence.words[:i] + [_verb_forms(grammar)[sentence.words[i]]] + sentence.words[i + 1:]


def attractor(sentence, verb: int) -> bool:
    """True when a noun of the other number than the verb's subject (its ``nsubj`` dependent in the
    gold tree; without one, False) stands between the two."""
    subjects = [i for i, h in enumerate(sentence.heads) if h == verb and sentence.deprels[i] == "nsubj"]
    if not subjects:
        return False
    s = subjects[0]
    number = sentence.feats[s].get("Number")
    lo, hi = sorted((s, verb))
    return any(sentence.upos[i] == "NOUN" and sentence.feats[i].get("Number") not in (None, number)
               for i in range(lo + 1, hi))


def agreement_task(grammar, n: int, seed: int = 0, attractors: bool = False, verbs: bool = False):
    """``(sentences, labels)``: ``n`` word lists (each from a different source sentence), half
    grammatical (label 0), half with a flipped verb (label 1) that the exact grammar gives
    probability zero ("the sheep sleeps" flipped to "the sheep sleep" is still English: skipped).
    ``attractors``: only source sentences with an agreement attractor (:func:`attractor`; about one
    in twenty toy sentences). ``verbs``: also each example's agreeing verb position (an array)."""
    pool = grammar.sample((30 if attractors else 3) * n + 50, seed=seed)
    flipped = []
    for s in pool:
        v = agreeing_verb(grammar, s)
        if v is not None and (not attractors or attractor(s, v)):
            flipped.append((s.words, flip_agreement(grammar, s), v))
    sents, labels, where, start = [], [], [], 0
    while len(sents) < n and start < len(flipped):         # check only as many as needed
        batch = flipped[start:start + n - len(sents) + 16]
        start += len(batch)
        for (words, wrong, v), zero in zip(batch, _zero_probability(grammar, [f for _, f, _ in batch])):
            # each source sentence gives one example, alternately each class
            if zero and len(sents) < n:
                label = len(sents) % 2
                sents.append(wrong if label else words)
                labels.append(label)
                where.append(v)
    if len(sents) < n:
        raise ValueError(f"could not make {n} {'attractor ' if attractors else ''}agreement "
                         f"examples from {len(pool)} sampled sentences; ask for fewer")
    order = np.random.default_rng(seed).permutation(n)
    out = [sents[i] for i in order], np.array(labels)[order]
    return (*out, np.array(where)[order]) if verbs else out


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


def verb_features(lm, sentences, verb_positions) -> np.ndarray:
    """Frozen features of each example: the agreeing verb's representation at every layer of
    ``lm``'s encoder (embeddings first), concatenated — (n, (layers + 1) * d), float64. ``lm`` needs
    ``hidden_states`` and one piece per word (as the toy models)."""
    from .probes import collect_states

    rows = [lm.encode_words(list(w))[0] for w in sentences]
    if any(len(r) != len(w) for r, w in zip(rows, sentences)):
        raise ValueError("verb_features needs one piece per word (a toy model); this model splits words")
    states = collect_states(lm.hidden_states, rows)
    index = {tuple(ix): k for k, ix in enumerate(states["real_index"].tolist())}
    at = np.array([index[s, int(v)] for s, v in enumerate(verb_positions)])
    return np.concatenate([layer[at] for layer in states["real"]], axis=1)


def probe_agreement(lm, train, tests, l2: float = 1e-2) -> list:
    r"""A linear probe of agreement on frozen features (:func:`verb_features`; L2 penalty ``l2``)
    fitted on ``train`` and scored on each of ``tests`` (``(sentences, labels, verb_positions)``, as
    :func:`agreement_task` returns them with ``verbs=True``): per test set, a bool array of the
    examples classified correctly. Nothing in it is random, so the spread between pretraining seeds
    is the encoders' own, unlike fine-tuning's (:func:`finetune_encoder`)."""
    from .probes import fit_probe

    probe = fit_probe(verb_features(lm, train[0], train[2]), np.asarray(train[1]), 2, l2=l2)
    return [probe.predict(verb_features(lm, w, v)) == np.asarray(y) for w, y, v in tests]


def finetune_encoder(lm, train_words, train_labels, test_sets, seed: int = 0, epochs: int = 5) -> list:
    """:func:`finetune_classifier` on a masked LM's ``encoder`` (an MLM's Transformer body, MAE-LM's
    encoder), from word lists: ``test_sets`` is a list of ``(sentences, labels)``."""
    tok = lm.tokenizer

    def rows(sentences):
        return [[tok.cls_token_id] + lm.encode_words(list(w))[0] + [tok.sep_token_id] for w in sentences]

    return finetune_classifier(lm.encoder, rows(train_words), train_labels,
                               [(rows(w), y) for w, y in test_sets], pad_id=tok.pad_token_id or 0,
                               settings=FinetuneSettings(seed=seed, epochs=epochs))


@dataclass(frozen=True)
class FinetuneSettings:
    """How :func:`finetune_classifier` trains: ``seed`` seeds the classifier's initialisation and
    the order of the training batches; AdamW at learning rate ``lr``, ``batch`` rows a step."""

    seed: int = 0
    epochs: int = 5
    batch: int = 32
    lr: float = 1e-3


@using(1)                # training: one thread always, so a seed gives the same numbers everywhere
def finetune_classifier(encoder, train_rows, train_labels, test_sets, pad_id: int = 0, *,
                        settings: FinetuneSettings = FinetuneSettings()) -> list:
    """Fine-tune a copy of ``encoder`` (any model returning ``last_hidden_state``; left unchanged)
    with a linear classifier on mean-pooled states. ``train_rows`` and the rows of ``test_sets`` (a
    list of ``(rows, labels)``) are token ids *with* the model's special tokens. Returns, per test
    set, a bool array: whether each sentence was classified correctly."""
    seed, epochs, batch = settings.seed, settings.epochs, settings.batch
    torch.manual_seed(seed)
    enc = copy.deepcopy(encoder).train()
    clf = nn.Linear(enc.config.hidden_size, max(int(np.max(train_labels)) + 1, 2))
    params = list(enc.parameters()) + list(clf.parameters())
    opt = torch.optim.AdamW(params, lr=settings.lr, weight_decay=0.01)

    def pad(rows):                                # every row padded once, up front
        ids = torch.full((len(rows), max(len(r) for r in rows)), pad_id, dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, :len(r)] = torch.tensor(r)
        return ids, (ids != pad_id).long()

    def scores(ids, attn):
        n = int(attn.sum(1).max())                # the longest row of the batch: no wider
        ids, attn = ids[:, :n], attn[:, :n]
        h = enc(input_ids=ids, attention_mask=attn).last_hidden_state
        return clf((h * attn[..., None]).sum(1) / attn.sum(1, keepdim=True))   # mean-pooled

    train_ids, train_attn = pad(train_rows)
    gen = torch.Generator().manual_seed(seed)
    y = torch.as_tensor(np.asarray(train_labels), dtype=torch.long)
    total = epochs * -(-len(train_rows) // batch)
    warm = max(1, total // 10)  # linear warm-up over 10 % of the steps, then linear decay
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min((s + 1) / warm, (total - s) / (total - warm + 1)))
    for _ in range(epochs):
        for b in torch.randperm(len(train_rows), generator=gen).split(batch):
            loss = nn.functional.cross_entropy(scores(train_ids[b], train_attn[b]), y[b])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
    enc.eval()
    out = []
    with torch.no_grad():
        for rows, labels in test_sets:
            ids, attn = pad(rows)
            pred = torch.cat([scores(ids[s:s + 256], attn[s:s + 256]).argmax(1) for s in range(0, len(rows), 256)])
            out.append(pred.numpy() == np.asarray(labels))
    return out
