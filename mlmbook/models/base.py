r"""One interface for "a masked language model": conditionals at masked positions.

Every chapter asks a model, through :meth:`MaskedLM.logits`, *given a sentence with some
positions masked, what distribution does it put on the token at position i?*

.. math:: \text{logits}[b, k, :] \;\to\; q(x_{p_{bk}} = \cdot \mid x_{\text{unmasked}})

:class:`MaskedLM` is a :class:`typing.Protocol`: the science modules type against it and never
import a model implementation, so any chapter can swap the model for the exact truth.
"""
from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import torch

from .. import threads

__all__ = ["MaskedLM", "MaskedLMBase"]


@runtime_checkable
class MaskedLM(Protocol):
    """What the package needs of a masked LM: a reader-facing ``name`` (never a path or a cache
    key), ``vocab`` (id -> token), ``special_ids`` that never count as words (``[CLS]``, ``[MASK]``,
    ...) and ``max_length``, the most content tokens (without the model's own specials) of a row."""

    name: str
    vocab: Sequence[str]
    mask_id: int
    special_ids: Sequence[int]
    max_length: int

    @property
    def V(self) -> int:
        """Vocabulary size."""

    def logits(self, ids, positions, full_softmax: bool = False) -> torch.Tensor:
        """Scores (B, k, V) of every token at ``positions`` (B, k) of rows ``ids`` (B, n)."""

    def encode_words(self, words: Sequence[str]) -> tuple[list[int], list[list[int]]]:
        """Token ids of a word sequence and, for each word, the positions of its pieces."""


class MaskedLMBase:
    """What the package's masked LMs share; subclasses implement :meth:`_logits_chunk` and
    :meth:`encode_words` and set the attributes of :class:`MaskedLM`. ``hidden_size`` (0: no
    encoder) feeds the thread policy (:mod:`mlmbook.threads`); ``supports_padding``: whether
    :meth:`padded_logits` can take rows of different lengths; ``thread_safe``: whether several
    threads may call :meth:`logits` at once."""

    name: str
    vocab: list
    mask_id: int
    special_ids: list
    max_length: int
    is_exact = False
    hidden_size = 0
    supports_padding = False
    thread_safe = False
    max_tokens = 2048
    """Rows are chunked so that one forward pass holds at most this many tokens (on a CPU, larger
    chunks ran slower: their activations leave the cache; a model on a GPU raises it)."""
    _inference_mode = True              # the truth oracle needs autograd (its outside pass)

    @property
    def V(self) -> int:
        return len(self.vocab)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def logits(self, ids, positions, full_softmax: bool = False) -> torch.Tensor:
        """Scores of every token at the queried positions, in one batched call.

        Parameters
        ----------
        ids : LongTensor (B, n)
            Token ids without special tokens; masked positions hold :attr:`mask_id`.
        positions : LongTensor (B, k)
            Positions to query in each row.
        full_softmax : bool
            Keep the model's own scores of special tokens (``[CLS]``, ``[MASK]``, ...), so that a
            softmax is over the whole vocabulary (the Salazar et al. PLL). By default they get
            ``-inf``: the softmax is over words only.

        Returns
        -------
        FloatTensor (B, k, V)
        """
        ids, positions = self._check(ids, positions)
        if ids.shape[0] == 0:
            return torch.empty(0, positions.shape[1], self.V)
        return self._run((ids, positions), self.max_tokens, full_softmax)

    def padded_logits(self, ids, lengths, positions, full_softmax: bool = False,
                      max_tokens: int | None = None) -> torch.Tensor:
        """:meth:`logits` for rows of different lengths in one call: row ``b`` is ``ids[b,
        :lengths[b]]`` (models with :attr:`supports_padding`; ``max_tokens``, default
        :attr:`max_tokens`, bounds the padded tokens of one forward pass)."""
        if not self.supports_padding:
            raise NotImplementedError(f"{self.name} cannot run padded rows")
        ids, positions = self._check(ids, positions)
        lengths = torch.as_tensor(lengths, dtype=torch.long)
        if positions.numel() and (positions >= lengths[:, None]).any():
            raise ValueError("a queried position lies in a row's padding")
        return self._run((ids, positions, lengths), max_tokens or self.max_tokens, full_softmax)

    def log_probs(self, ids, positions, full_softmax: bool = False) -> torch.Tensor:
        """``log_softmax`` of :meth:`logits`: shape (B, k, V)."""
        return torch.log_softmax(self.logits(ids, positions, full_softmax), dim=-1)

    def _check(self, ids, positions) -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.as_tensor(ids, dtype=torch.long)
        positions = torch.as_tensor(positions, dtype=torch.long)
        if ids.ndim == 1:
            ids = ids[None]
        if positions.ndim == 1:
            positions = positions[:, None] if positions.shape[0] == ids.shape[0] else positions[None]
        B, n = ids.shape
        if n == 0:
            raise ValueError("empty input: a row needs at least one token")
        if n > self.max_length:
            raise ValueError(f"input of {n} tokens is longer than {self.name}'s maximum of {self.max_length}; "
                             f"shorten or filter the sentences (e.g. by length) before querying")
        if positions.shape[0] != B or (positions.numel() and (positions.min() < 0 or positions.max() >= n)):
            raise ValueError(f"positions must have one row per input row and lie in [0, {n})")
        return ids, positions

    def _run(self, tensors, max_tokens: int, full_softmax: bool) -> torch.Tensor:
        """:meth:`_logits_chunk` on chunks of rows of ``tensors`` (at most ``max_tokens`` tokens),
        concatenated, under the thread policy; specials -> -inf unless ``full_softmax``."""
        chunk = max(1, max_tokens // (tensors[0].shape[1] + 2))
        with threads.limited(threads.is_large(self)), \
                (torch.inference_mode() if self._inference_mode else torch.no_grad()):
            out = torch.cat([self._logits_chunk(*(t[s:s + chunk] for t in tensors))
                             for s in range(0, len(tensors[0]), chunk)])
            if not full_softmax:
                out[..., list(self.special_ids)] = float("-inf")
        return out.clone()  # a normal tensor, usable outside inference mode

    def encode_text(self, text: str) -> tuple[list[int], list[list[int]], list[str]]:
        """Token ids, the pieces of each word, and the words of a string split at white space."""
        words = text.split()
        ids, pieces = self.encode_words(words)
        return ids, pieces, words

    def hidden_states(self, ids) -> tuple:
        """All layers' hidden states (embeddings first) at the content positions: (B, n, H) each."""
        raise NotImplementedError(f"{self.name} has no hidden states")
