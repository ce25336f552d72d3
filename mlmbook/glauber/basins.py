r"""Chapter 5's basin and sample-quality experiments, as functions the chapter calls.

:func:`topic_frame` builds the frame of the topic experiment; :func:`escape_experiment` measures
the mean time to escape from the farm basin into the town basin of one topic world, exactly
(mean hitting times of the frame's transition matrix) and by simulation (censored escape
times, a Poisson fit of the Arrhenius slope); :func:`sample_quality` runs chains from random
strings and scores where they arrive with the truth.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from .exact import Frame, basin_barrier, hitting_times, simulate_escapes
from .sampler import GlauberSampler
from .trajectories import arrhenius_fit, escape_rate, escape_times, topic_posterior, truth_log_probs

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["topic_frame", "escape_experiment", "sample_quality"]

TOPIC_SENTENCE = "the farmer feeds the cow in the barn ."
TOPIC_SITES = [1, 2, 4, 7]


def topic_frame(lm: MaskedLM, slot_words: list) -> Frame:
    """The topic experiment's frame: *the farmer feeds the cow in the barn .* with its subject,
    verb, object and place ranging over ``slot_words`` (word-level tokenizer)."""
    enc = lambda w: lm.encode_words([w])[0][0]                          # noqa: E731
    return Frame([enc(w) for w in TOPIC_SENTENCE.split()], TOPIC_SITES,
                 [[enc(w) for w in ws] for ws in slot_words])


def _sim_mlm(mlm, frame, start, target, temps, n_chains, cap, seed):
    frozen = [i for i in range(len(frame.template)) if i not in frame.sites]
    samp = GlauberSampler(mlm, temperature=np.repeat(temps, n_chains), seed=seed, frozen=frozen,
                          candidates=dict(zip(frame.sites, frame.candidates)))
    traj = samp.run(frame.states()[start].repeat(len(temps) * n_chains, 1), cap, progress=True)
    inside = np.isin(frame.index(traj), target).astype(int)
    t_all, c_all = escape_times(inside)
    return [(t_all[k * n_chains:(k + 1) * n_chains].astype(float), c_all[k * n_chains:(k + 1) * n_chains])
            for k in range(len(temps))]


def escape_experiment(grammar, frame: Frame, exact_T: list, sim_T: list, n_chains: int, cap: int,
                      mlm: MaskedLM | None = None, seed: int = 0, vocab=None) -> dict:
    r"""Escape from the farm basin into the town basin of one topic world.

    The start :math:`s` is the most probable frame sentence whose exact topic posterior of farm
    is at least 0.95; the target :math:`B` the sentences with posterior of town at least 0.95.

    Parameters
    ----------
    grammar : Grammar
        A topic variant (``Grammar.load("toy", topic=knob)``).
    frame : Frame
        From :func:`topic_frame`.
    exact_T, sim_T : list of float
        Temperatures of the exact hitting times and of the simulations (descending).
    n_chains, cap : int
        Simulated chains per temperature, and the cap in steps.
    mlm : MaskedLM, optional
        An MLM trained on that world; its chain runs the real sampler restricted to the frame.
    vocab : sequence of str, optional
        To spell the start sentence.

    Returns
    -------
    dict
        ``gamma`` (the barrier Γ(s → B), nats), ``start``, ``start_text``, ``states``, and for
        ``who`` in ("truth", "mlm"): ``exact_{who}`` (mean escape, sweeps, per ``exact_T``),
        ``exact_slope_{who}`` (over the three coldest), ``sim_{who}`` (censored-MLE mean escape,
        sweeps, per ``sim_T``), ``censored_{who}`` (share unescaped per T), ``fit_{who}``
        (:class:`SlopeFit` of the Arrhenius law).
    """
    states = frame.states()
    logp = truth_log_probs(grammar, states)
    post = topic_posterior(grammar, states)[:, 0]
    farm = np.flatnonzero(np.isfinite(logp) & (post >= 0.95))
    town = np.flatnonzero(np.isfinite(logp) & (post <= 0.05))
    s0 = int(farm[np.argmax(logp[farm])])
    text = " ".join(vocab[int(v)] for v in states[s0]) if vocab is not None else None
    w = dict(gamma=basin_barrier(logp, frame, s0, town), start=s0, start_text=text, states=frame.size)
    n_sites = len(frame.sites)
    sources = {"truth": [logp[frame.families(a)] for a in range(n_sites)]}
    if mlm is not None:
        sources["mlm"] = mlm
    for who, source in sources.items():
        tab = frame.conditional_logits(source) if who == "mlm" else source
        exact = [hitting_times(frame.kernel(tab, T), town)[s0] / n_sites for T in exact_T]
        w[f"exact_{who}"] = exact
        w[f"exact_slope_{who}"] = float(np.polyfit(1 / np.array(exact_T[-3:]), np.log(exact[-3:]), 1)[0])
        if who == "truth":
            sims = [simulate_escapes(frame.kernel(tab, T), s0, town, n_chains, cap, seed=seed + k)
                    for k, T in enumerate(sim_T)]
        else:
            sims = _sim_mlm(source, frame, s0, town, sim_T, n_chains, cap, seed)
        rates = [escape_rate(t, c) for t, c in sims]
        w[f"fit_{who}"] = arrhenius_fit(1 / np.array(sim_T), [r.events for r in rates],
                                        [r.exposure for r in rates])
        w[f"sim_{who}"] = [r.mean / n_sites for r in rates]
        w[f"censored_{who}"] = [float(np.mean(c)) for _, c in sims]
    return w


def sample_quality(lm: MaskedLM, start_like, temps: list, n_chains: int, sweeps: int, seed: int = 0,
                   grammar=None, reference=None) -> dict:
    """Chains from uniformly random strings, ``n_chains`` per temperature, scored where they arrive.

    Parameters
    ----------
    start_like : (n,) tensor
        A sentence of the wanted length; its final token stays, the others are drawn uniformly
        from the non-special tokens.
    grammar : Grammar, optional
        The toy truth, to score grammaticality and exact log-probabilities.
    reference : (k, n) tensor, optional
        True sentences of the same length, for their mean log p.

    Returns
    -------
    dict
        ``final`` (chains' last states), ``distinct`` (share of distinct final states per T) and,
        with the grammar, ``grammatical`` ((sweeps + 1, T) share of producible states),
        ``mean_logp`` (per T, mean log p of the grammatical final states, None if none) and
        ``reference_logp``.
    """
    L = len(start_like)
    sampler = GlauberSampler(lm, temperature=np.repeat(temps, n_chains), frozen=[L - 1], seed=seed)
    words_only = torch.tensor([v for v in range(lm.V) if v not in set(lm.special_ids)])
    init = sampler.random_states(len(temps) * n_chains, start_like, pool=words_only)
    traj = sampler.run(init, sweeps * (L - 1), record_every=L - 1, progress=True)
    final = traj[-1]
    out = dict(final=final, distinct=[len({tuple(r) for r in final[b * n_chains:(b + 1) * n_chains].tolist()})
                                      / n_chains for b in range(len(temps))])
    if grammar is None:
        return out
    lp = truth_log_probs(grammar, traj)                                    # (sweeps + 1, chains)
    out["grammatical"] = np.isfinite(lp).reshape(len(lp), len(temps), n_chains).mean(axis=2)
    last = lp[-1].reshape(len(temps), n_chains)
    out["mean_logp"] = [float(r[np.isfinite(r)].mean()) if np.isfinite(r).any() else None for r in last]
    out["reference_logp"] = float(truth_log_probs(grammar, reference).mean())
    return out
