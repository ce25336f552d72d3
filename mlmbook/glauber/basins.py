r"""Chapter 5's topic basins, as functions the chapter calls: the exact escape from the farm basin
into the town basin of each topic world. Restricted to a frame, an MLM's Glauber chain *is* a finite
Markov chain, whose matrix comes from one pass of the MLM over the frame's contexts; the real
sampler is checked against it (:func:`sampler_check`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import torch

from .. import stats
from ..compare import kl_to_truth
from ..toy import Grammar
from .exact import Frame, escape_survival, hitting_times
from .landscape import barrier_path
from .sampler import GlauberSampler
from .trajectories import escape_rate, hysteresis_labels, topic_log_odds, topic_posterior, truth_topic_scores

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["escape_experiment", "state_kl", "EscapeCheck", "sampler_escapes",
           "sampler_check", "TopicWorlds", "topic_worlds", "ladder_fit", "topic_trajectory",
           "saddle_move"]


@dataclass(frozen=True)
class EscapeCheck:
    """How the real sampler's escapes are run and checked: ``chains`` chains per temperature of
    ``temps``, each capped at ``cap`` steps, seeded by ``seed``; the interval at ``level``."""
    temps: list
    chains: int
    cap: int
    seed: int = 0
    level: float = stats.LEVEL


def sampler_escapes(lm: MaskedLM, frame: Frame, start: int, target,
                    check: EscapeCheck) -> tuple[np.ndarray, np.ndarray]:
    """The real :class:`GlauberSampler` restricted to the frame (its sites over their candidates,
    the rest frozen), ``check.chains`` chains per temperature in one batch from frame state
    ``start``, each stopped at its first step in ``target`` or at ``check.cap`` steps: (times,
    censored), two (len(temps), chains) arrays, times in steps (``cap`` where censored)."""
    temps, n_chains, cap = check.temps, check.chains, check.cap
    frozen = [i for i in range(len(frame.template)) if i not in frame.sites]
    C = len(temps) * n_chains
    samp = GlauberSampler(lm, temperature=np.repeat(temps, n_chains), seed=check.seed,
                          frozen=frozen, candidates=dict(zip(frame.sites, frame.candidates)))
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


def sampler_check(lm: MaskedLM, frame: Frame, site_logits, start: int, target,
                  check: EscapeCheck) -> dict:
    r"""Does the real sampler run the chain of ``frame.kernel(site_logits, T)``?

    :func:`sampler_escapes` gives ``check.chains`` capped escape times :math:`\min(\tau, c)` per
    temperature; :func:`escape_survival` gives their exact mean :math:`\mu_T`, censoring included.
    The check is :math:`r = \frac1{|\mathcal T|}\sum_T \bar\tau_T / \mu_T - 1` (0 if the sampler
    runs that chain) with a bootstrap interval over the chains (chain :math:`c` of every temperature
    is one row). Returns ``sampler`` and ``exact`` (capped mean escape per T, steps), ``censored``
    (share per T), ``interval`` (of :math:`r` at ``check.level``), ``chains`` and ``cap``.
    """
    times, cens = sampler_escapes(lm, frame, start, target, check)
    temps, cap = check.temps, check.cap
    mean = [float(escape_survival(frame.kernel(site_logits, T), start, target, cap)[:cap].sum()) for T in temps]
    scaled = times / np.maximum(np.asarray(mean)[:, None], 1e-12)          # (temps, chains)
    iv = stats.bootstrap(lambda *rows: np.mean([r.mean(-1) for r in rows], axis=0) - 1.0, *scaled,
                         level=check.level, seed=check.seed, what="chains")
    return dict(sampler=times.mean(axis=1).tolist(), exact=mean,
                censored=cens.mean(axis=1).tolist(), interval=iv, chains=check.chains, cap=cap)


def escape_experiment(grammar, frame: Frame, temps: list, mlms: dict | None = None,
                      check: tuple | None = None, seed: int = 0) -> dict:
    r"""Escape from the farm basin into the town basin of the topic world ``grammar``
    (``Grammar.load("toy", topic=knob)``) on the topic frame of :func:`topic_worlds`, exactly.

    The start :math:`s` is the most probable frame sentence whose exact topic posterior of farm is
    at least 0.95; the target :math:`B` the sentences with posterior of town at least 0.95. Mean
    escape times are exact (:func:`~mlmbook.glauber.exact.hitting_times`) at ``temps`` (descending:
    the last two give the local Arrhenius slope), for the truth and each of ``mlms`` (``{name:
    MaskedLM}`` trained on that world); ``check`` = (temps, chains, cap) runs :func:`sampler_check`
    on the first MLM.

    Returns a dict: ``gamma`` (the barrier Γ(s → B), nats), ``path``
    (:class:`~mlmbook.glauber.landscape.BarrierPath`), ``start``, ``town`` (state indices), ``logp``
    (the truth's, per state), ``states`` (the frame's size), ``tables`` (``{who: site
    log-scores}``), and for ``who`` in "truth" and the MLMs' names: ``exact_{who}`` (mean escape
    time in sweeps, per temperature) and ``exact_slope_{who}`` (the local slope of its log against
    :math:`1/T` between the two coldest); with ``check``, ``check_mlm``.
    """
    logp, post = truth_topic_scores(grammar, frame.states())
    farm = np.flatnonzero(np.isfinite(logp) & (post[:, 0] >= 0.95))
    town = np.flatnonzero(np.isfinite(logp) & (post[:, 0] <= 0.05))
    s0 = int(farm[np.argmax(logp[farm])])
    path = barrier_path(logp, frame, s0, town)
    n_sites = len(frame.sites)
    w = dict(gamma=path.gamma, path=path, start=s0, town=town, logp=logp, states=frame.size)
    w["tables"] = {"truth": [logp[frame.families(a)] for a in range(n_sites)]}
    w["tables"].update({name: frame.conditional_logits(lm) for name, lm in (mlms or {}).items()})
    inv = 1 / np.asarray(temps, dtype=float)
    for who, tab in w["tables"].items():
        exact = [hitting_times(frame.kernel(tab, T), town)[s0] / n_sites for T in temps]
        w[f"exact_{who}"] = exact
        w[f"exact_slope_{who}"] = float((np.log(exact[-1]) - np.log(exact[-2])) / (inv[-1] - inv[-2]))
    if mlms and check:
        name = next(iter(mlms))
        check_T, chains, cap = check
        w["check_mlm"] = sampler_check(mlms[name], frame, w["tables"][name], s0, town,
                                       EscapeCheck(list(check_T), chains, cap, seed=seed))
    return w


def state_kl(frame: Frame, logp, site_scores) -> np.ndarray:
    r"""The MLM's single-site KL to the truth at every state of the frame, over the candidates:

    .. math:: \kappa(x) = \frac1L \sum_i
              \mathrm{KL}\big(p(\cdot \mid x_{\setminus i}) \,\|\, q(\cdot \mid x_{\setminus i})\big),

    both conditionals renormalised over site :math:`i`'s candidates (what the frame's chains use),
    :math:`p` from the truth's exact ``logp`` of the states, :math:`q` from the MLM's
    :meth:`Frame.conditional_logits` ``site_scores``; NaN where the truth forbids a whole context.
    """
    logp = np.asarray(logp, dtype=np.float64)
    out = np.zeros(frame.size)
    for a, lq in enumerate(site_scores):
        fam = frame.families(a)
        lp = logp[fam]
        top = lp.max(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            p = np.exp(lp - top)
            p /= p.sum(axis=1, keepdims=True)
            lq = np.asarray(lq, dtype=np.float64)
            lq = lq - lq.max(axis=1, keepdims=True)
            lq = lq - np.log(np.exp(lq).sum(axis=1, keepdims=True))
            kl = np.where(p > 0, p * (np.log(np.where(p > 0, p, 1.0)) - lq), 0.0).sum(axis=1)
        kl[~np.isfinite(top[:, 0])] = np.nan
        out[fam] += kl[:, None] / len(site_scores)
    return out


class TopicWorlds(NamedTuple):
    """The topic experiment: its ``frame`` and ``worlds`` (``{knob: escape_experiment(...)}``)."""
    frame: Frame
    worlds: dict


def topic_worlds(lms: dict, slot_words: list, temps: list, default: str, check: tuple | None = None,
                 seed: int = 0) -> TopicWorlds | None:
    """The exact escapes of :func:`escape_experiment` in the three topic worlds: the plateau with
    its MLM ``lms["plateau"]``, the ridge (the truth alone) and the wall with every MLM whose name
    starts with ``"wall"`` (``default`` first; the sampler ``check`` runs on it). The frame is *the
    farmer feeds the cow in the barn .* with its subject, verb, object and place ranging over
    ``slot_words``. None without MLMs (a model other than the toy one: the worlds are the toy
    language's)."""
    if not lms:
        return None
    enc = lambda w: lms["plateau"].encode_words([w])[0][0]          # the toy tokenizer is shared
    frame = Frame([enc(w) for w in "the farmer feeds the cow in the barn .".split()], [1, 2, 4, 7],
                  [[enc(w) for w in ws] for ws in slot_words])
    wall = [default] + sorted(name for name in lms if name.startswith("wall") and name != default)
    worlds = {knob: escape_experiment(Grammar.load("toy", topic=knob), frame, list(temps),
                                      mlms={name: lms[name] for name in names},
                                      check=check if knob == "wall" else None, seed=seed)
              for knob, names in (("plateau", ["plateau"]), ("ridge", []), ("wall", wall))}
    return TopicWorlds(frame, worlds)


def ladder_fit(lms: dict, knob: str = "wall", sentences: int = 60, seed: int = 7) -> dict:
    """Each MLM's mean single-site KL to the truth of the topic world ``knob`` (nats per token) on
    ``sentences`` sentences of that world: ``{name: KL}`` for the MLMs whose name starts with
    ``knob``."""
    grammar = Grammar.load("toy", topic=knob)
    words = [s.words for s in grammar.sample(sentences, seed=seed)]
    return {name: float(np.mean(np.concatenate(kl_to_truth(grammar, lm, words))))
            for name, lm in sorted(lms.items()) if name.startswith(knob)}


def topic_trajectory(lm: MaskedLM, plan, seed: int = 0) -> dict | None:
    r"""An MLM trained behind the wall writes sentences of ``plan.topic_len`` tokens over its whole
    vocabulary at ``plan.trajectory_T``, its ``plan.trajectory_chains`` chains starting on the
    farmiest sentences of the wall world; the lexical topic probe :math:`\lambda`
    (:func:`~mlmbook.glauber.trajectories.topic_log_odds`) labels each sweep farm (:math:`\lambda
    \ge \log 19`) or town (:math:`\le -\log 19`), keeping the label in between.

    Returns
    -------
    dict
        ``lam`` (sweeps + 1, chains), ``labels``, ``threshold``, ``probe_agreement`` (share of 200
        true sentences with a decisive exact topic posterior whose sign the probe gets right),
        ``switches``, ``farm_share``, ``chain_sweeps`` and ``stay`` (the mean stay on one side in
        sweeps, censored exponential, a 95 % :class:`~mlmbook.stats.Interval`).
    """
    if lm is None:
        return None
    grammar, L = Grammar.load("toy", topic="wall"), plan.topic_len
    pool = [s for s in grammar.sample(2000, seed=seed + 3) if len(s) == L]
    ids = torch.tensor([lm.encode_words(s.words)[0] for s in pool])
    lam0 = topic_log_odds(grammar, ids)
    post = topic_posterior(grammar, ids[:200])[:, 0]
    decisive = np.isfinite(post) & (np.abs(post - 0.5) > 0.45)
    agree = float(np.mean((lam0[:200][decisive] > 0) == (post[decisive] > 0.5)))
    start = ids[np.argsort(lam0)[::-1][:plan.trajectory_chains].copy()]
    sampler = GlauberSampler(lm, temperature=plan.trajectory_T, frozen=[L - 1], seed=seed)
    traj = sampler.run(start, plan.trajectory_sweeps * (L - 1), record_every=L - 1, progress=False)
    lam = topic_log_odds(grammar, traj)
    thr = float(np.log(19.0))
    labels = hysteresis_labels(lam, -thr, thr)
    stays, cut = [], []
    for c in range(labels.shape[1]):
        change = np.flatnonzero(np.diff(labels[:, c])) + 1
        bounds = np.concatenate([[0], change, [len(labels) - 1]])
        stays += np.diff(bounds).tolist()
        cut += [False] * len(change) + [True]  # the last stay is cut by the end
    return dict(lam=lam, labels=labels, threshold=thr, probe_agreement=agree,
                switches=int(np.abs(np.diff(labels, axis=0)).sum()), farm_share=float((labels == 1).mean()),
                chain_sweeps=plan.trajectory_sweeps * len(start), stay=escape_rate(stays, cut, level=0.95))


def saddle_move(frame: Frame, logp, site_scores, saddle: tuple) -> dict:
    r"""The barrier's top move :math:`x \to y` (one site :math:`i` apart) as the truth and a model
    see it: ``truth`` and ``model``, the log-odds :math:`\log \frac{q(y_i \mid x_{\setminus
    i})}{q(x_i \mid x_{\setminus i})}` of crossing against staying, each conditional renormalised
    over the site's candidates (the truth's from ``logp``, the model's from ``site_scores``), and
    ``kl``: the model's :math:`\mathrm{KL}(p \,\|\, q)` over the candidates at that context, which
    weighs an error on the move by the truth's own small probability of it."""
    x, y = saddle
    states = frame.states()
    a = int(np.flatnonzero((states[x] != states[y]).numpy())[0])
    site = frame.sites.index(a)
    fam = frame.families(site)
    row = int(np.flatnonzero((fam == x).any(axis=1))[0])
    ix, iy = int(np.flatnonzero(fam[row] == x)[0]), int(np.flatnonzero(fam[row] == y)[0])
    lp = np.asarray(logp, dtype=np.float64)[fam[row]]
    lp = lp - np.logaddexp.reduce(lp)
    lq = np.asarray(site_scores[site][row], dtype=np.float64)
    lq = lq - np.logaddexp.reduce(lq)
    p = np.exp(lp)
    kl = float(np.sum(np.where(p > 0, p * (lp - lq), 0.0)))
    return dict(truth=float(lp[iy] - lp[ix]), model=float(lq[iy] - lq[ix]), kl=kl)
