r"""Chapter 5's basin and sample-quality experiments, as functions the chapter calls.

:func:`topic_frame` builds the frame of the topic experiment; :func:`escape_experiment` measures
the mean time to escape from the farm basin into the town basin of one topic world, exactly
(mean hitting times of the frame's transition matrix) and by simulation of that matrix
(censored escape times, a Poisson fit of the Arrhenius slope). Restricted to the frame, an
MLM's Glauber chain *is* a finite Markov chain, whose matrix comes from one pass of the MLM
over the frame's contexts; :func:`sampler_escapes` runs the real sampler there, and
:func:`sampler_check` tests it against the exact law of the escape time.
:func:`sample_quality` runs coupled pairs from random strings and scores, with the truth, the
states of the pairs that met.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from .. import stats
from .exact import Frame, basin_barrier, escape_survival, hitting_times, simulate_escapes
from .sampler import GlauberSampler
from .trajectories import arrhenius_fit, escape_counts, escape_rate, truth_log_probs, truth_topic_scores

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
                  n_chains: int, cap: int, seed: int = 0, level: float = stats.LEVEL) -> dict:
    r"""Does the real sampler run the chain of ``frame.kernel(site_logits, T)``?

    :func:`sampler_escapes` gives ``n_chains`` capped escape times :math:`\min(\tau, c)` per
    temperature; :func:`escape_survival` gives their exact mean :math:`\mu_T`, censoring included.
    The check is the relative difference

    .. math:: r = \frac1{|\mathcal T|}\sum_T \frac{\bar\tau_T}{\mu_T} - 1,

    with a bootstrap interval over the chains (chain :math:`c` of every temperature is one row):
    0 if the sampler runs that chain.

    Returns
    -------
    dict
        ``sampler`` and ``exact`` (capped mean escape per T, steps), ``censored`` (share per T),
        ``interval`` (:class:`~mlmbook.stats.Interval` of :math:`r` at ``level``), ``chains``, ``cap``.
    """
    times, cens = sampler_escapes(lm, frame, start, target, temps, n_chains, cap, seed)
    mean = [float(escape_survival(frame.kernel(site_logits, T), start, target, cap)[:cap].sum()) for T in temps]
    scaled = times / np.maximum(np.asarray(mean)[:, None], 1e-12)          # (temps, chains)
    iv = stats.bootstrap(lambda *rows: np.mean([r.mean(-1) for r in rows], axis=0) - 1.0, *scaled,
                         level=level, seed=seed, what="chains")
    return dict(sampler=times.mean(axis=1).tolist(), exact=mean, censored=cens.mean(axis=1).tolist(),
                interval=iv, chains=n_chains, cap=cap)


def escape_experiment(grammar, frame: Frame, exact_T: list, sim_T: list, n_chains: int, cap: int,
                      mlms: dict | None = None, seed: int = 0, vocab=None,
                      check: tuple[int, int] | None = None, level: float = stats.LEVEL) -> dict:
    r"""Escape from the farm basin into the town basin of one topic world.

    The start :math:`s` is the most probable frame sentence whose exact topic posterior of farm
    is at least 0.95; the target :math:`B` the sentences with posterior of town at least 0.95.
    Each chain (the truth's, and each MLM's restricted to the frame) is a finite Markov chain
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
    mlms : dict, optional
        ``{name: MaskedLM}`` trained on that world; each matrix is built from
        :meth:`Frame.conditional_logits`.
    vocab : sequence of str, optional
        To spell the start sentence.
    check : (chains, cap), optional
        Run the real sampler of the first MLM, ``chains`` per ``sim_T``, capped at ``cap`` steps,
        against the exact law of its matrix (:func:`sampler_check`).
    level : float
        The level of the slope intervals (the chapter's family level).

    Returns
    -------
    dict
        ``gamma`` (the barrier Γ(s → B), nats), ``start``, ``start_text``, ``states``, and for
        ``who`` in "truth" and the MLMs' names: ``exact_{who}`` (mean escape, sweeps, per ``exact_T``),
        ``exact_slope_{who}`` (the local slope between the two coldest), ``sim_{who}`` (censored-MLE
        mean escape, sweeps, per ``sim_T``: :class:`~mlmbook.stats.Interval`\ s at 95 %),
        ``censored_{who}`` (share unescaped per T), ``fit_{who}`` (the Arrhenius slope, an
        Interval at ``level``); with ``check``, ``check_mlm``.
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
    for name, lm in (mlms or {}).items():
        tables[name] = frame.conditional_logits(lm)
    inv_e = 1 / np.asarray(exact_T, dtype=float)
    for who, tab in tables.items():
        exact = [hitting_times(frame.kernel(tab, T), town)[s0] / n_sites for T in exact_T]
        w[f"exact_{who}"] = exact
        w[f"exact_slope_{who}"] = float((np.log(exact[-1]) - np.log(exact[-2])) / (inv_e[-1] - inv_e[-2]))
        sims = [simulate_escapes(frame.kernel(tab, T), s0, town, n_chains, cap, seed=seed + k)
                for k, T in enumerate(sim_T)]
        counts = [escape_counts(t, c) for t, c in sims]
        w[f"fit_{who}"] = arrhenius_fit(1 / np.array(sim_T), [d for d, _ in counts], [e for _, e in counts],
                                        level=level)
        w[f"sim_{who}"] = [escape_rate(t, c).scale(1 / n_sites) for t, c in sims]
        w[f"censored_{who}"] = [float(np.mean(c)) for _, c in sims]
    if mlms and check:
        name = next(iter(mlms))
        w["check_mlm"] = sampler_check(mlms[name], frame, tables[name], s0, town, sim_T, *check, seed=seed,
                                       level=level)
    return w


def sample_quality(lm: MaskedLM, start_like, temps: list, n_pairs: int, sweeps: int, seed: int = 0,
                   grammar=None) -> dict:
    """Coupled pairs of chains from two uniformly random strings, ``n_pairs`` per temperature, scored
    only where the pair has met.

    Two copies from different starts that agree everywhere have forgotten where they began; the
    state of a met pair after ``sweeps`` sweeps is scored (copy a is an ordinary chain, see
    :meth:`GlauberSampler.coupled_run`). Pairs that never met are counted, not scored.

    Parameters
    ----------
    start_like : (n,) tensor
        A sentence of the wanted length; its final token stays, the others are drawn uniformly
        from the non-special tokens.
    grammar : Grammar, optional
        The toy truth, to score grammaticality and exact log-probabilities.

    Returns
    -------
    dict
        ``final`` (copy a's last states), ``met`` (bool per pair), ``met_count`` and ``n`` per T,
        and with the grammar ``grammatical_count`` (per T, among met pairs) and ``logp``
        (per T, exact log p of the met pairs' grammatical states).
    """
    L = len(start_like)
    sampler = GlauberSampler(lm, temperature=np.repeat(temps, n_pairs), frozen=[L - 1], seed=seed)
    words_only = torch.tensor([v for v in range(lm.V) if v not in set(lm.special_ids)])
    a = sampler.random_states(len(temps) * n_pairs, start_like, pool=words_only)
    b = sampler.random_states(len(temps) * n_pairs, start_like, pool=words_only)
    res = sampler.coupled_run(a, b, sweeps * (L - 1), stop_when_met=False, coupling="maximal", progress=True)
    met = ~res.censored
    final = res.final_a
    per_T = lambda v: [v[k * n_pairs:(k + 1) * n_pairs] for k in range(len(temps))]   # noqa: E731
    out = dict(final=final, met=met, n=n_pairs, met_count=[int(m.sum()) for m in per_T(met)])
    if grammar is None:
        return out
    lp = truth_log_probs(grammar, final)
    out["grammatical_count"] = [int((np.isfinite(l_) & m).sum()) for l_, m in zip(per_T(lp), per_T(met))]
    out["logp"] = [l_[np.isfinite(l_) & m].tolist() for l_, m in zip(per_T(lp), per_T(met))]
    return out
