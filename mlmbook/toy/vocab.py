"""Token ids of the toy world: the special tokens, then the grammar's words, behind a real HF
tokenizer (toy models and the exact oracle share them, so they compare position by position)."""
from __future__ import annotations

__all__ = ["SPECIAL_TOKENS", "MASK", "N_SPECIAL", "make_tokenizer"]

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
"""Ids 0–4; the grammar's words follow from id :data:`N_SPECIAL` on."""

MASK = SPECIAL_TOKENS.index("[MASK]")
N_SPECIAL = len(SPECIAL_TOKENS)


def make_tokenizer(grammar):
    """A real HF tokenizer over the grammar's words: ids = SPECIAL_TOKENS, then the vocabulary."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(SPECIAL_TOKENS + list(grammar.vocab))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
