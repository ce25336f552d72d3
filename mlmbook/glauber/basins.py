r"""Chapter 5's basin and sample-quality experiments, as functions the chapter calls.

:func:`topic_frame` builds the frame of the topic experiment; :func:`escape_experiment` measures
the mean time to escape from the farm basin into the town basin of one topic world, exactly
(mean hitting times of the frame's transition matrix) and by simulation of that matrix
(censored escape times, a Poisson fit of the Arrhenius slope). Restricted to the frame, an
MLM's Glauber chain *is* a finite Markov chain, whose matrix comes from one pass of the MLM
over the frame's contexts; :func:`sampler_escapes` runs the real sampler there, and
:func:`sampler_check` tests it against the exact law of the escape time.
:func:`sample_quality` runs chains from random strings and scores where they arrive with the
truth.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from scipy.stats import chi2

from .exact import Frame, basin_barrier, escape_survival, hitting_times, simulate_escapes
from .sampler import GlauberSampler
from .trajectories import arrhenius_fit, escape_rate, truth_log_probs, truth_topic_scores

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["topic_frame", "escape_experiment", "sampler_escapes", "sampler_check", "sample_quality"]

TOPIC_SENTENCE = "the farmer feeds the cow in the barn ."
TOPIC_SITES = [1, 2, 4, 7]


def topic_frame(lm: MaskedLM, slot_words: list) -> Frame:
    """The topic experiment's frame: *the farmer feeds the cow in the barn .* with its subject,
    verb, object and place ranging over ``slot_words`` (word-level tokenizer)."""
    enc = lambda w: lm.encode_words([w])[0][0]                          # noqa: E731
    return Frame([enc(w) for w in TOPIC_SENTENCE.split()], TOPIC_SITES,
                 [[enc(w) for w in ws] for ws in slot_words])


def sampler_escapes(lm: MaskedLM, frame: Frame, start: int, target, temps: list, n_chains: int,
                    cap: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The real :class:`GlauberSampler`, restricted to the frame (its sites over their
    candidates, the rest frozen), ``n_chains`` per temperature in one batch from frame state
    ``start``; each chain stops at its first step in ``target`` or at ``cap`` steps.

    Returns
    -------
    (times, censored) : two (len(temps), n_chains) arrays, times in steps (``cap`` where
    censored).
    """
    frozen = [i for i in range(len(frame.template)) if i not in frame.sites]
    C = len(temps) * n_chains
    samp = GlauberSampler(lm, temperature=np.repeat(temps, n_chains), seed=seed, frozen=frozen,
                          candidates=dict(zip(frame.sites, frame.candidates)))
    Tc = samp.temperatures(C)
    tgt = np.zeros(frame.size, bool)
    tgt[np.asarray(target, dtype=np.int64)] = True
    x = frame.states()[start].repeat(C, 1)
    times, live = np.full(C, cap, dtype=np.int64), np.full(C, not tgt[start])
    times[~live] = 0
    for t in range(cap):
        rows = np.flatnonzero(live)
        if len(rows) == 0:
            break
        site, u = samp.draw(len(rows), x.shape[1], t)
        x[rows] = samp.update(x[rows], site, u, Tc[rows])
        ix = frame.index(x[rows])
        hit = rows[(ix >= 0) & tgt[np.maximum(ix, 0)]]
        times[hit], live[hit] = t + 1, False
    return times.reshape(len(temps), n_chains), live.reshape(len(temps), n_chains)


def sampler_check(lm: MaskedLM, frame: Frame, site_logits, start: int, target, temps: list,
                  n_chains: int, cap: int, seed: int = 0) -> dict:
    r"""Does the real sampler run the chain of ``frame.kernel(site_logits, T)``?

    :func:`sampler_escapes` gives ``n_chains`` capped escape times :math:`\min(\tau, c)` per
    temperature; :func:`escape_survival` gives their exact mean :math:`\mu_T` and standard
    deviation :math:`\sigma_T`, censoring included. Under the hypothesis that the sampler runs
    that chain, :math:`z_T = (\bar\tau_T - \mu_T)\sqrt{n}/\sigma_T` is approximately standard
    normal and :math:`\sum_T z_T^2` approximately :math:`\chi^2` with one degree per temperature.

    Returns
    -------
    dict
        ``sampler`` and ``exact`` (capped mean escape per T, steps), ``z`` (per T),
        ``censored`` (share per T), ``p`` (the pooled chi-square p-value), ``chains``, ``cap``.
    """
    times, cens = sampler_escapes(lm, frame, start, target, temps, n_chains, cap, seed)
    mean, z = [], []
    for k, T in enumerate(temps):
        surv = escape_survival(frame.kernel(site_logits, T), start, target, cap)[:cap]
        mu = float(surv.sum())
        var = float(((2 * np.arange(cap) + 1) * surv).sum()) - mu ** 2
        mean.append(mu)
        gap = times[k].mean() - mu
        z.append(gap * np.sqrt(n_chains / var) if var > 1e-9 * max(mu, 1.0) ** 2 else
                 (0.0 if abs(gap) < 1e-6 * max(mu, 1.0) else np.inf))   # a sure time: exact or wrong
    return dict(sampler=times.mean(axis=1).tolist(), exact=mean, z=z, censored=cens.mean(axis=1).tolist(),
                p=float(chi2.sf(float(np.sum(np.square(z))), len(temps))), chains=n_chains, cap=cap)


def escape_experiment(grammar, frame: Frame, exact_T: list, sim_T: list, n_chains: int, cap: int,
                      mlm: MaskedLM | None = None, seed: int = 0, vocab=None,
                      check: tuple[int, int] | None = None) -> dict:
    r"""Escape from the farm basin into the town basin of one topic world.

    The start :math:`s` is the most probable frame sentence whose exact topic posterior of farm
    is at least 0.95; the target :math:`B` the sentences with posterior of town at least 0.95.
    Each chain (the truth's, and the MLM's restricted to the frame) is a finite Markov chain
    with a known matrix: its mean escape times are solved exactly, and its censored escapes are
    simulated from the matrix (``n_chains`` per temperature, each stopped at its escape).

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
        An MLM trained on that world; its matrix is built from :meth:`Frame.conditional_logits`.
    vocab : sequence of str, optional
        To spell the start sentence.
    check : (chains, cap), optional
        With ``mlm``: run the real sampler, ``chains`` per ``sim_T``, capped at ``cap`` steps,
        against the exact law of its matrix (:func:`sampler_check`).

    Returns
    -------
    dict
        ``gamma`` (the barrier Γ(s → B), nats), ``start``, ``start_text``, ``states``, and for
        ``who`` in ("truth", "mlm"): ``exact_{who}`` (mean escape, sweeps, per ``exact_T``),
        ``exact_slope_{who}`` (over the three coldest), ``sim_{who}`` (censored-MLE mean escape,
        sweeps, per ``sim_T``), ``censored_{who}`` (share unescaped per T), ``fit_{who}``
        (:class:`SlopeFit` of the Arrhenius law); with ``check``, ``check_mlm``.
    """
    states = frame.states()
    logp, post = truth_topic_scores(grammar, states)
    post = post[:, 0]
    farm = np.flatnonzero(np.isfinite(logp) & (post >= 0.95))
    town = np.flatnonzero(np.isfinite(logp) & (post <= 0.05))
    s0 = int(farm[np.argmax(logp[farm])])
    text = " ".join(vocab[int(v)] for v in states[s0]) if vocab is not None else None
    w = dict(gamma=basin_barrier(logp, frame, s0, town), start=s0, start_text=text, states=frame.size)
    n_sites = len(frame.sites)
    tables = {"truth": [logp[frame.families(a)] for a in range(n_sites)]}
    if mlm is not None:
        tables["mlm"] = frame.conditional_logits(mlm)
    for who, tab in tables.items():
        exact = [hitting_times(frame.kernel(tab, T), town)[s0] / n_sites for T in exact_T]
        w[f"exact_{who}"] = exact
        w[f"exact_slope_{who}"] = float(np.polyfit(1 / np.array(exact_T[-3:]), np.log(exact[-3:]), 1)[0])
        sims = [simulate_escapes(frame.kernel(tab, T), s0, town, n_chains, cap, seed=seed + k)
                for k, T in enumerate(sim_T)]
        rates = [escape_rate(t, c) for t, c in sims]
        w[f"fit_{who}"] = arrhenius_fit(1 / np.array(sim_T), [r.events for r in rates],
                                        [r.exposure for r in rates])
        w[f"sim_{who}"] = [r.mean / n_sites for r in rates]
        w[f"censored_{who}"] = [float(np.mean(c)) for _, c in sims]
    if mlm is not None and check:
        w["check_mlm"] = sampler_check(mlm, frame, tables["mlm"], s0, town, sim_T, *check, seed=seed)
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
