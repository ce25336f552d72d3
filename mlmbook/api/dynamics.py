r"""Is the family of conditionals consistent (the rectangle test), and where does resampling take a
sentence (tempered Glauber dynamics)?"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .. import consistency, queries
from ..glauber import GlauberSampler
from ..workers.cluster import map_blocks
from .models import PROGRESS_SECONDS, Options, Work, budget, on_text, tokens_of

__all__ = ["Rectangles", "rectangle_test", "GlauberRun", "glauber_chains"]

PAIR_BLOCK = 256
"""Pairs per block of :func:`rectangle_test` (every pair of a 23-token sentence in one)."""


@dataclass(frozen=True)
class Rectangles:
    r"""The rectangle test on pairs of positions of one text: per pair of token positions
    (``pairs``, (P, 2)), ``delta`` (P,), :math:`\Delta` of its most plausible rectangle (its top two
    tokens at each position, both masked; 0 for any joint distribution), and ``corners``, the
    rectangle's tokens ``(a, a', b, b')``; :math:`|\Delta|` below ``noise_floor`` is float
    rounding."""

    pairs: np.ndarray
    delta: np.ndarray
    corners: list
    noise_floor: float

    @property
    def inconsistent(self) -> np.ndarray:
        """Per pair: :math:`|\\Delta|` above the noise floor: no joint gave these conditionals."""
        return np.abs(self.delta) > self.noise_floor


def rectangle_test(model, text, pairs=None, *, options: Options = Options()) -> Rectangles:
    r"""Young & You's rectangle test: can one joint have produced the model's conditionals at two
    positions?

    For positions :math:`i, j`, the top two tokens :math:`a, a'` at :math:`i` and :math:`b, b'` at
    :math:`j` (both masked) span a rectangle, and

    .. math:: \Delta = \log\frac{q(a\mid b)\,q(a'\mid b')}{q(a'\mid b)\,q(a\mid b')}
                     - \log\frac{q(b\mid a)\,q(b'\mid a')}{q(b'\mid a)\,q(b\mid a')}

    vanishes for every joint distribution (:mod:`mlmbook.consistency`).

    Parameters
    ----------
    model : MaskedLM, model name or path
    text : str or list of words
    pairs : sequence of (i, j), optional
        Token positions; default every pair.
    options : Options
        Reads ``allow_unknown``, ``max_minutes`` and ``scheduler`` (pairs in blocks of
        :data:`PAIR_BLOCK`, here too: the same numbers).

    Returns
    -------
    Rectangles

    Examples
    --------
    >>> import mlmbook
    >>> lm = mlmbook.load_mlm("toy")                                  # doctest: +SKIP
    >>> res = mlmbook.rectangle_test(lm, "the farmers feed the cows .", pairs=[(1, 2), (0, 4)])
    >>> res.delta.shape, res.inconsistent.dtype == bool, len(res.corners[0])
    ((2,), True, 4)
    """
    lm, ids, opts = on_text("rectangle_test", model, text, options,
                            ("allow_unknown", "max_minutes", "scheduler"))
    if pairs is None:
        pairs = [(i, j) for i in range(len(ids)) for j in range(i + 1, len(ids))]
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    rows = 5 * len(pairs)      # both masked, then each position given each of the other's top two
    work = Work(f"rectangles of {len(pairs)} pairs", rows, rows * (len(ids) + queries.SPECIALS))
    long = budget(lm, work, opts.max_minutes, "rectangle",
                  "name fewer pairs (--pair I J) or give a shorter text") > PROGRESS_SECONDS
    rows = map_blocks(_rectangle_block, list(pairs), lm, ids, long, scheduler=opts.scheduler,
                      size=PAIR_BLOCK)
    corners = [tuple(tokens_of(lm, r[:4])) for r in rows]
    delta = np.array([r[4] for r in rows], dtype=np.float64)
    return Rectangles(pairs, delta, corners, consistency.FLOAT32_NOISE_FLOOR)


def _rectangle_block(pairs, lm, ids, progress=False) -> list:
    """``(a, a', b, b', delta)`` of each pair of one block (on a worker, or here)."""
    rect = consistency.top2_rectangles(lm, ids, np.asarray(pairs, dtype=np.int64).reshape(-1, 2), progress=progress)
    return list(zip(rect.a, rect.a2, rect.b, rect.b2, np.asarray(rect.delta, dtype=np.float64)))


@dataclass(frozen=True)
class GlauberRun:
    """Chains of tempered Glauber dynamics from one text: ``states`` (steps + 1, chains, n), the
    token ids after every step, the start first; ``texts``, each chain's final state as tokens
    joined by spaces."""

    states: torch.Tensor
    texts: list
    temperature: float

    @property
    def changed(self) -> np.ndarray:
        """Per chain, the share of positions whose token differs from the start at the end."""
        return (self.states[-1] != self.states[0]).double().mean(-1).numpy()


def glauber_chains(model, text, steps: int = 100, temperature: float = 1.0, chains: int = 4, *,
                   options: Options = Options()) -> GlauberRun:
    r"""Run tempered Glauber dynamics: at each step one position per chain is resampled from
    :math:`q(x_i \mid x_{\setminus i})^{1/T}`, renormalised (frozen positions, per-site candidates,
    couplings: :class:`mlmbook.glauber.GlauberSampler`).

    Parameters
    ----------
    model : MaskedLM, model name or path
    text : str or list of words
        The start of every chain.
    steps, chains : int
    temperature : float
    options : Options
        Reads ``allow_unknown``, ``max_minutes`` and ``seed`` (same seed, same model: same chains).

    Returns
    -------
    GlauberRun

    Examples
    --------
    >>> import mlmbook
    >>> lm = mlmbook.load_mlm("toy")                                  # doctest: +SKIP
    >>> run = mlmbook.glauber_chains(lm, "the farmers feed the cows .", steps=20, chains=3)
    >>> tuple(run.states.shape[:2]), len(run.texts)
    ((21, 3), 3)
    """
    lm, ids, opts = on_text("glauber_chains", model, text, options,
                            ("allow_unknown", "max_minutes", "seed"))
    rows = steps * chains
    work = Work(f"{chains} chains of {steps} steps", rows, rows * (len(ids) + queries.SPECIALS))
    long = budget(lm, work, opts.max_minutes, "glauber", "run fewer steps or chains (--steps, --chains)")
    sampler = GlauberSampler(lm, temperature=temperature, seed=opts.seed)
    states = sampler.run(torch.tensor([ids] * chains), steps, progress=long > PROGRESS_SECONDS)
    texts = [" ".join(tokens_of(lm, row)) for row in states[-1]]
    return GlauberRun(states, texts, float(temperature))
