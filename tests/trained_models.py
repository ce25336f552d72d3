"""Small WordPiece BERTs trained briefly here (a few seconds), and the texts they are trained on.

``made_up_language`` is the toy grammar's sentences respelled into an agglutinative language that is not
English: every word a new stem of two or three syllables, every content word with a suffix that marks
its head's tag (so the context tells it). A model trained on it splits its words into more pieces than
an English model splits English, yet knows the language.
"""
from __future__ import annotations

import numpy as np

SUFFIXES = ("lar", "ni", "dan", "imiz", "ta", "sek", "ung", "ovi")


def made_up_language(n: int, seed: int = 0) -> list[tuple[list[str], object]]:
    """``n`` toy sentences respelled: (words, the toy Sentence with the tags and heads)."""
    from mlmbook.toy import Grammar
    g = Grammar.load("toy")
    rng = np.random.default_rng(12345)
    stems: dict[str, str] = {}
    for w in g.vocab:
        while w not in stems:
            stem = "".join(rng.choice(list("bcdfghjklmnprstvwz")) + rng.choice(list("aeiou"))
                           for _ in range(rng.integers(2, 4)))
            if stem not in stems.values():
                stems[w] = stem
    tags = sorted({u for s in g.sample(200, seed=0) for u in s.upos} | {"ROOT"})
    out = []
    for s in g.sample(n, seed=seed):
        words = [w if u == "PUNCT" else stems[w] + SUFFIXES[tags.index(s.upos[h] if h >= 0 else "ROOT")
                                                             % len(SUFFIXES)]
                 for w, u, h in zip(s.words, s.upos, s.heads)]
        out.append((words, s))
    return out


def write_conllu(path, sentences) -> str:
    """A CoNLL-U file of ``(words, upos, heads)`` sentences (heads 0-based, -1 the root)."""
    with open(path, "w", encoding="utf-8") as f:
        for k, (words, upos, heads) in enumerate(sentences):
            f.write(f"# sent_id = {k}\n# text = {' '.join(words)}\n")
            for i, (w, u, h) in enumerate(zip(words, upos, heads)):
                f.write(f"{i + 1}\t{w}\t{w}\t{u}\t_\t_\t{h + 1}\t{'root' if h < 0 else 'dep'}\t_\t_\n")
            f.write("\n")
    return str(path)


SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def wordpiece_vocab(texts, vocab_size: int, normalizer, pre_tokenizer) -> dict:
    """A WordPiece vocabulary of ``texts``, the same on every run (the ``tokenizers`` trainer breaks ties
    between pieces in a different order each run, so the models built on it, and a random model's answers,
    changed run to run): the special tokens, every character (word-initial and as a ``##`` continuation), then
    whole words and ``##`` word endings of 2-4 characters by count (ties in alphabetical order)."""
    from collections import Counter
    words = Counter(w for t in texts for w, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(t)))
    alphabet = {c for w in words for c in w}
    chars = sorted(alphabet | {"##" + c for c in alphabet})
    pieces = Counter()
    for w, n in words.items():
        pieces[w] += n
        for k in range(2, 5):
            if len(w) > k:
                pieces["##" + w[-k:]] += n
    ranked = [p for p, _ in sorted(pieces.items(), key=lambda x: (-x[1], x[0])) if p not in chars]
    tokens = list(dict.fromkeys(SPECIALS + chars + ranked))[:max(vocab_size, len(SPECIALS) + len(chars))]
    return {t: i for i, t in enumerate(tokens)}


def train_wordpiece_bert(path, texts, vocab_size: int = 300, steps: int = 150, seed: int = 0,
                         positions: int = 64, fixed_vocab: bool = False) -> str:
    """A 2-layer BERT (hidden 32) with a WordPiece tokenizer trained on ``texts``, trained ``steps`` steps of
    masked-LM on them (batch 32, 15 % masked; none: a random-weight model), reading up to ``positions``
    tokens, saved with save_pretrained. ``fixed_vocab``: the vocabulary of :func:`wordpiece_vocab`, the
    same on every run, instead of the trainer's."""
    import torch
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast

    from mlmbook import threads
    from mlmbook.models.train import TRAIN_THREADS
    normalizer, pre_tokenizer = normalizers.BertNormalizer(lowercase=True), pre_tokenizers.BertPreTokenizer()
    vocab = wordpiece_vocab(texts, vocab_size, normalizer, pre_tokenizer) if fixed_vocab else None
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]"))
    tok.normalizer, tok.pre_tokenizer, tok.decoder = normalizer, pre_tokenizer, decoders.WordPiece()
    if not fixed_vocab:
        tok.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIALS))
    cls, sep, mask = (tok.token_to_id(t) for t in ("[CLS]", "[SEP]", "[MASK]"))
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
                                                       special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")
    torch.manual_seed(seed)
    model = BertForMaskedLM(BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2,
                                       num_attention_heads=2, intermediate_size=64, max_position_embeddings=positions))
    enc = fast(list(texts), padding=True, truncation=True, max_length=64, return_tensors="pt")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(seed)
    with threads.using(TRAIN_THREADS):           # as the book trains: one thread, the same weights everywhere
        for _ in range(steps):
            idx = torch.randint(len(texts), (32,), generator=gen)
            ids, att = enc["input_ids"][idx].clone(), enc["attention_mask"][idx]
            chosen = (torch.rand(ids.shape, generator=gen) < 0.15) & (ids != cls) & (ids != sep) & (att == 1)
            labels = torch.where(chosen, ids, torch.full_like(ids, -100))
            ids[chosen] = mask
            loss = model(input_ids=ids, attention_mask=att, labels=labels).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.save_pretrained(path)
    fast.save_pretrained(path)
    return str(path)
