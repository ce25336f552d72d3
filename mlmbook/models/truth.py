"""The toy language's exact conditionals behind the :class:`~mlmbook.models.base.MaskedLM`
interface."""
from __future__ import annotations

import torch

from ..toy.vocab import SPECIAL_TOKENS
from .base import MaskedLMBase

__all__ = ["TruthOracle"]


class TruthOracle(MaskedLMBase):
    """The toy language's exact conditionals behind the :class:`MaskedLM` interface: logits are
    exact log-probabilities given the unmasked positions (other masked positions marginalised;
    ``-inf`` for words the grammar forbids there), over the toy tokenizer's ids."""

    is_exact = True
    max_tokens = 4096
    _inference_mode = False

    def __init__(self, grammar):
        self.grammar = grammar
        self.name = f"truth[{grammar.name}]"
        self.vocab = SPECIAL_TOKENS + list(grammar.vocab)
        self.mask_id = SPECIAL_TOKENS.index("[MASK]")
        self.special_ids = list(range(len(SPECIAL_TOKENS)))
        self.max_length = grammar.max_length
        self._offset = len(SPECIAL_TOKENS)

    def _logits_chunk(self, ids, positions, lengths=None):
        masked = ids == self.mask_id
        if (ids[~masked] < self._offset).any():
            raise ValueError("the truth oracle only knows the toy vocabulary: found a special or unknown token")
        words = torch.where(masked, torch.zeros_like(ids), ids - self._offset)
        cond = self.grammar.pcfg.conditionals(words, masked)                     # (B, n, Vw)
        picked = cond.gather(1, positions[..., None].expand(-1, -1, cond.shape[-1]))
        out = torch.full((*positions.shape, self.V), float("-inf"), dtype=torch.float64)
        out[..., self._offset:] = picked.log()
        return out

    def encode_words(self, words):
        try:
            ids = [self._offset + self.grammar.word_id[w] for w in words]
        except KeyError as e:
            raise ValueError(f"word {e.args[0]!r} is not in the toy vocabulary") from None
        return ids, [[p] for p in range(len(ids))]
