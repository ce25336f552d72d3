r"""One interface for "a masked language model": conditionals at masked positions.

Every chapter asks the same question of a model — *given a sentence with some positions
masked, what distribution does it put on the token at position i?* — and every answer goes
through :meth:`MaskedLM.logits`:

.. math:: \text{logits}[b, k, :] \;\to\; q(x_{p_{bk}} = \cdot \mid x_{\text{unmasked}})

:class:`HFMaskedLM` wraps any Hugging Face ``AutoModelForMaskedLM`` (a name or a local path);
:class:`TruthOracle` implements the same interface with the toy language's *exact*
conditionals, so any chapter can swap the model for the truth.  Use :func:`load_mlm`.

Speed: rows are batched within a token budget, the encoder runs once per row and the
output layer (the part with a vocabulary-sized matrix) only at the queried positions.
"""
from __future__ import annotations

import numpy as np
import torch

from .. import queries

__all__ = ["MaskedLM"]


class MaskedLM:
    """Common interface; subclasses implement :meth:`_logits_chunk`.

    Attributes
    ----------
    name : str
    vocab : list of str       token id -> token string
    mask_id : int
    special_ids : list of int  ids that never count as words (their logits are -inf)
    max_length : int          most content tokens a row may hold
    is_exact : bool           True for the truth oracle
    """

    name: str
    vocab: list
    mask_id: int
    special_ids: list
    max_length: int
    is_exact = False
    max_tokens = 2048
    """Rows are chunked so that one forward pass holds at most this many tokens. On a CPU, chunks
    of about 2,000 tokens ran the toy model at the bare encoder's best speed; 16,000-token
    chunks ran at 0.75-0.8 of it (their activations leave the cache). A model on a GPU raises it."""
    _inference_mode = True        # the truth oracle needs autograd (its outside pass), so it turns this off

    @property
    def V(self) -> int:
        return len(self.vocab)

    # ---------------------------------------------------------------- the core call
    def logits(self, ids, positions, keep_special: bool = False) -> torch.Tensor:
        """Scores of every token at the queried positions (one batched call; see :mod:`mlmbook.queries`).

        Parameters
        ----------
        ids : LongTensor (B, n)
            Token ids without special tokens; masked positions hold :attr:`mask_id`.
        positions : LongTensor (B, k)
            Positions to query in each row.

        keep_special : bool
            Keep the model's own scores of special tokens (``[CLS]``, ``[MASK]``, ...), so that a
            softmax is over the whole vocabulary (the Salazar et al. PLL). By default they get
            ``-inf``: the softmax is over words only.

        Returns
        -------
        FloatTensor (B, k, V)
        """
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
        if B == 0:
            return torch.empty(0, positions.shape[1], self.V)
        chunk = max(1, self.max_tokens // (n + 2))
        with (torch.inference_mode() if self._inference_mode else torch.no_grad()):
            out = torch.cat([self._logits_chunk(ids[s:s + chunk], positions[s:s + chunk]) for s in range(0, B, chunk)])
            if not keep_special:
                out[..., self.special_ids] = float("-inf")
        out = out.clone()                                  # a normal tensor, usable outside inference mode
        return out

    def log_probs(self, ids, positions, keep_special: bool = False) -> torch.Tensor:
        """``log_softmax`` of :meth:`logits`: shape (B, k, V)."""
        return torch.log_softmax(self.logits(ids, positions, keep_special), dim=-1)

    def _logits_chunk(self, ids, positions):
        raise NotImplementedError

    # ---------------------------------------------------------------- words and pieces
    def encode_words(self, words):
        """Token ids of a word sequence and, for each word, the positions of its pieces."""
        raise NotImplementedError

    def pll(self, sentences, **kw) -> np.ndarray:
        """Pseudo-log-likelihoods of word sequences: :func:`mlmbook.queries.pll` on this model."""
        return queries.pll(self, sentences, **kw)

    def hidden_states(self, ids) -> tuple:
        """All layers' hidden states at the content positions of rows ``ids`` (B, n).

        Returns a tuple of (B, n, H) float tensors, embeddings first. Models without an
        encoder (the exact oracle) raise :class:`NotImplementedError`.
        """
        raise NotImplementedError(f"{self.name} has no hidden states")
