r"""Training data and its corruption: every toy model reads fresh sentences sampled from the
grammar, bucketed by length (:func:`batches`), then corrupted (:func:`mask_tokens`) in four steps
that :class:`~mlmbook.models.train.TrainConfig` controls:

1. **Noise** (``noise`` :math:`=\eta`). Each content token is, independently with probability
   :math:`\eta`, replaced by a word drawn uniformly from the vocabulary (so a share
   :math:`\eta(1 - 1/V)` actually changes); the labels are the noisy tokens.
2. **Eligibility** (``mask_only``). With a non-empty tuple of UD relations or UPOS tags, only
   tokens whose gold ``deprel`` or ``upos`` is listed may be selected (cloze-like masks).
3. **Selection** of a set :math:`S` at rate :math:`r` (``mask_rate``) of the eligible tokens:
   independently per token (BERT; ``span = 0``), or as spans (``span`` :math:`=\mu \ge 1`), see
   :func:`span_selection`. With ``mask_ratio="uniform"`` the rate is drawn per sentence,
   :math:`r \sim U(0, 1)` (masked diffusion); the loss still weights every selected token alike.
4. **Replacement** (``replace`` :math:`=(a, b, c)`): each selected token becomes ``[MASK]`` with
   probability :math:`a`, a uniformly random word with probability :math:`b`, and stays with
   probability :math:`c` (BERT's 80/10/10; Meng et al.'s 100/0/0).

With :math:`\tilde x` the corrupted input, the loss is the cross-entropy at the selected positions,

.. math:: \mathcal{L} = -\frac{1}{|S|}\sum_{i\in S} \log q(x_i \mid \tilde x).
"""
from __future__ import annotations

import sys

import torch

from ..toy.vocab import MASK, SPECIAL_TOKENS

__all__ = ["batches", "eligible_mask", "add_noise", "span_selection", "mask_tokens", "check_config"]

OFFSET = len(SPECIAL_TOKENS)
"""Id of the first word: ids below are special tokens."""


def check_config(config) -> None:
    """Raise ``ValueError`` (one line: the cause and what to do) for settings that cannot work."""
    a = config.replace
    if len(a) != 3 or min(a) < 0 or abs(sum(a) - 1) > 1e-9:
        raise ValueError(f"replace={a!r} must be three non-negative shares ([MASK], random word, kept) summing to 1, "
                         f"e.g. (0.8, 0.1, 0.1) or (1.0, 0.0, 0.0)")
    if not 0 < config.mask_rate < 1:
        raise ValueError(f"mask_rate={config.mask_rate} must lie strictly between 0 and 1")
    if not 0 <= config.noise < 1:
        raise ValueError(f"noise={config.noise} must lie in [0, 1): the share of tokens replaced by a random word")
    if config.span and config.span < 1:
        raise ValueError(f"span={config.span} is a mean span length: use 0 (token masking) or a value >= 1")
    if config.span and config.mask_rate * (1 + config.span) > config.span:
        raise ValueError(f"mask_rate={config.mask_rate} is too high for spans of mean {config.span}: gaps between "
                         f"spans need a mean of at least one token, so mask_rate must be <= "
                         f"{config.span / (1 + config.span):.3f}")
    if config.span and config.mask_only:
        raise ValueError("span masking and mask_only cannot be combined (spans would cross ineligible tokens); "
                         "set one of them")
    if not all(isinstance(t, str) for t in config.mask_only):
        raise ValueError(f"mask_only={config.mask_only!r} must be a tuple of UD relations or UPOS tags, "
                         f"e.g. ('nsubj',) or ('NOUN',)")
    if config.mask_ratio not in ("fixed", "uniform"):
        raise ValueError(f"mask_ratio={config.mask_ratio!r}: use 'fixed' (mask_rate for every sentence) or "
                         f"'uniform' (a rate drawn from U(0, 1) per sentence)")
    if config.mask_ratio == "uniform" and config.span:
        raise ValueError("span masking and mask_ratio='uniform' cannot be combined; set one of them")
    if config.decoder_layers < 1:
        raise ValueError(f"decoder_layers={config.decoder_layers} must be at least 1")


def eligible_mask(sentences, n: int, tags) -> torch.Tensor:
    """(B, n) bool: True at the content tokens (after ``[CLS]``) whose deprel or UPOS is in ``tags``
    (every content token when ``tags`` is empty)."""
    out = torch.zeros(len(sentences), n, dtype=torch.bool)
    tags = set(tags)
    for r, s in enumerate(sentences):
        rels, upos = s.deprels or [None] * len(s), s.upos or [None] * len(s)
        ok = [not tags or d in tags or u in tags for d, u in zip(rels, upos)]
        out[r, 1:len(s) + 1] = torch.tensor(ok, dtype=torch.bool)
    return out


def batches(grammar, config, seed: int, pool: int = 16, eligible: bool = False, order_seed: int | None = None):
    """Endless length-bucketed batches ``(ids, attention)`` (B, n), ids with ``[CLS]``/``[SEP]``
    (with ``eligible``, also :func:`eligible_mask`): each round samples ``pool * config.batch``
    fresh sentences (seeded by ``seed`` and the round), sorts them by length, cuts them into
    batches of ``config.batch`` and yields those in a random order seeded by ``order_seed`` (or
    ``seed``)."""
    gen = torch.Generator().manual_seed(seed if order_seed is None else order_seed)
    for k in range(sys.maxsize):
        sents = grammar.sample(pool * config.batch, seed=(seed * 1_000_003 + k) % (2**31))
        sents.sort(key=len)
        groups = [sents[i:i + config.batch] for i in range(0, len(sents), config.batch)]
        for g in torch.randperm(len(groups), generator=gen).tolist():
            group = groups[g]
            n = max(len(s) for s in group) + 2
            ids = torch.zeros(len(group), n, dtype=torch.long)
            for r, s in enumerate(group):
                ids[r, : len(s) + 2] = torch.tensor([2] + [OFFSET + grammar.word_id[w] for w in s.words] + [3])
            extra = (eligible_mask(group, n, config.mask_only),) if eligible else ()
            yield ids, (ids != 0).long(), *extra


def add_noise(ids, rate: float, vocab_size: int, gen: torch.Generator):
    """A copy of ``ids``, each content token replaced with probability ``rate`` by a random word."""
    flip = (torch.rand(ids.shape, generator=gen) < rate) & (ids >= OFFSET)
    out = ids.clone()
    out[flip] = torch.randint(OFFSET, vocab_size, (int(flip.sum()),), generator=gen)
    return out


def span_selection(allowed, rate: float, mean: float, gen: torch.Generator):
    r"""Select spans among the (B, n) ``allowed`` tokens: runs of geometric length with mean
    ``mean`` covering a share ``rate`` of tokens.

    Along each row, selected/unselected is a two-state Markov chain. A selected run ends after
    each token with probability :math:`1/\mu`, so run lengths are geometric with mean
    :math:`\mu`; an unselected gap ends with probability :math:`1/\mu_g`,
    :math:`\mu_g = \mu(1-r)/r`. The chain starts in its stationary law (selected with probability
    :math:`\mu/(\mu+\mu_g) = r`), so *every* token is selected with probability exactly
    :math:`r` (the rate holds per token, not only on average over a sentence), and by the
    geometric law's lack of memory every run is geometric with mean :math:`\mu` until a
    sentence's end cuts it short. Needs :math:`\mu_g \ge 1`, i.e. :math:`r \le \mu/(1+\mu)`.
    """
    p_end, p_start = 1.0 / mean, rate / (mean * (1.0 - rate))
    u = torch.rand(allowed.shape, generator=gen)
    out = torch.empty(allowed.shape, dtype=torch.bool)
    state = u[:, 0] < rate
    out[:, 0] = state
    for j in range(1, allowed.shape[1]):
        state = torch.where(state, u[:, j] >= p_end, u[:, j] < p_start)
        out[:, j] = state
    return out & allowed


def mask_tokens(ids, config, vocab_size: int, gen: torch.Generator, eligible=None):
    """Corrupt clean ``ids`` (B, n) as ``config`` says (see the module), with ``gen`` the only
    source of randomness and random words drawn from ids ``[5, vocab_size)``: the (B, n) ``inputs``
    and ``labels`` (the noisy token at selected positions, -100 elsewhere). ``eligible``, the tokens
    ``config.mask_only`` allows, is required when it is set."""
    if config.noise:
        ids = add_noise(ids, config.noise, vocab_size, gen)
    allowed = ids >= OFFSET
    if config.mask_only:
        if eligible is None:
            raise ValueError("this configuration masks only some tags (mask_only): pass eligible= from "
                             "batches(grammar, config, seed, eligible=True)")
        allowed = allowed & eligible
    if config.span:
        selected = span_selection(allowed, config.mask_rate, config.span, gen)
    else:
        uniform = config.mask_ratio == "uniform"          # masked diffusion: a rate per sentence
        rate = torch.rand(ids.shape[0], 1, generator=gen) if uniform else config.mask_rate
        selected = (torch.rand(ids.shape, generator=gen) < rate) & allowed
    labels = torch.where(selected, ids, torch.full_like(ids, -100))
    to_mask, to_random = config.replace[0], config.replace[0] + config.replace[1]
    roll = torch.rand(ids.shape, generator=gen)
    inputs = ids.clone()
    inputs[selected & (roll < to_mask)] = MASK
    rand = selected & (roll >= to_mask) & (roll < to_random)
    inputs[rand] = torch.randint(OFFSET, vocab_size, (int(rand.sum()),), generator=gen)
    return inputs, labels
