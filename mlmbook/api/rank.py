r"""Effective rank of a model's representations: real tokens vs ``[MASK]`` (Meng et al. 2024)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .. import queries, rank
from ..corpus import check_fit
from .models import Options, Work, as_model, budget, options_of, text_of

__all__ = ["Ranks", "effective_rank"]


@dataclass(frozen=True)
class Ranks:
    r"""ε-effective ranks (:func:`mlmbook.rank.effective_rank_mass`) of one layer's rows: ``clean``,
    the real-token rows of the unmasked sentences; ``masked_real``, the real-token rows of the
    masked sentences (the same positions' tokens kept, others masked); ``masked_all``, all their
    rows, ``[MASK]`` included. ``n_rows`` counts the rows in ``clean``, ``n_mask_rows`` the
    ``[MASK]`` rows, ``n_sentences`` the sentences used, ``n_too_long`` those longer than the
    model's window."""

    clean: int
    masked_real: int
    masked_all: int
    n_rows: int
    n_mask_rows: int
    eps: float
    layer: int
    n_sentences: int = 0
    n_too_long: int = 0


def effective_rank(model, sentences, layer: int = -1, mask_rate: float = 0.15,
                   eps: float = rank.DEFAULT_EPS, *, options: Options = Options()) -> Ranks:
    r"""How many directions a layer's representations use, with and without ``[MASK]`` in the input.

    .. math:: \operatorname{rank}_\varepsilon(H) = \min\Big\{k : \frac{\sum_{i\le k}\sigma_i^2}
              {\sum_i \sigma_i^2} \ge 1-\varepsilon\Big\}

    A share ``mask_rate`` of each sentence's tokens (at least one) is masked at random; the ranks of
    the clean real-token rows, the masked input's real-token rows and all its rows are compared
    (chapter 4; Meng et al. 2024). Ranks depend on the number of rows: compare like with like.

    Parameters
    ----------
    model : MaskedLM with hidden states, model name or path
    sentences : sequence of str, of word lists or of :class:`mlmbook.Sentence`
        Sentences longer than the model's window are left out and counted (``n_too_long``).
    layer : int
        Index into the hidden states (0: embeddings, -1: the last layer).
    mask_rate : float
    eps : float
        Share of the energy that may be left out.
    options : Options
        Reads ``allow_unknown``, ``max_minutes`` and ``seed`` (of the masked positions).

    Returns
    -------
    Ranks

    Examples
    --------
    >>> import mlmbook
    >>> lm = mlmbook.load_mlm("toy")                                  # doctest: +SKIP
    >>> r = mlmbook.effective_rank(lm, ["the farmers feed the cows .", "the horses rarely sleep ."])
    >>> r.masked_real > 0 and r.masked_all > 0 and r.n_rows >= 11
    True
    """
    lm = as_model(model)
    texts = [text_of(s) for s in ([sentences] if isinstance(sentences, str) else sentences)]
    encoded = [queries.encode_sentence(lm, t)[0] for t in texts]
    fits = [k for k, e in enumerate(encoded) if 0 < len(e) <= lm.max_length]
    if not fits:
        raise ValueError(f"none of the {len(texts)} sentences fits the model's window of {lm.max_length} tokens; "
                         f"give shorter sentences")
    opts = options_of("effective_rank", options, ("allow_unknown", "max_minutes", "seed"))
    check_fit(lm, [texts[k] for k in fits], allow=opts.allow_unknown)
    work = Work(f"ranks of {len(fits)} sentences", 2 * len(fits),  # clean and masked
                sum(2 * (len(encoded[k]) + queries.SPECIALS) for k in fits))
    budget(lm, work, opts.max_minutes, "rank", "read fewer sentences")
    rng = np.random.default_rng(opts.seed)
    clean, real, everything, n_mask = [], [], [], 0
    for k in fits:
        ids = torch.tensor([encoded[k]])
        k = max(1, int(round(mask_rate * ids.shape[1])))
        masked_at = torch.as_tensor(rng.choice(ids.shape[1], k, replace=False))
        corrupted = ids.clone()
        corrupted[0, masked_at] = lm.mask_id
        keep = torch.ones(ids.shape[1], dtype=torch.bool)
        keep[masked_at] = False
        h_clean, h_masked = lm.hidden_states(ids)[layer][0], lm.hidden_states(corrupted)[layer][0]
        clean.append(h_clean), real.append(h_masked[keep]), everything.append(h_masked)
        n_mask += k
    clean, real, everything = (torch.cat(x).double().numpy() for x in (clean, real, everything))
    return Ranks(rank.effective_rank_mass(clean, eps), rank.effective_rank_mass(real, eps),
                 rank.effective_rank_mass(everything, eps), len(clean), n_mask, eps, layer,
                 len(fits), len(texts) - len(fits))
