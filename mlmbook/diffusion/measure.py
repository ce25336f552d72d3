"""Chapter 6's measurements as functions, so that the chapter shows their idea and not their
bookkeeping.

Every function takes a model behind the :class:`~mlmbook.models.base.MaskedLM` interface and returns
plain arrays (nats; per sentence unless said otherwise) for the study layer and the figures.
"""
from __future__ import annotations

import numpy as np

from ..stats import unsigned_zero
from ..toy.vocab import N_SPECIAL
from .exact import left_to_right, mixture, nelbo, reveal_table, truth_log_prob
from .sample import ORDERS, confident_log_prob, distinct_share, nelbo_mc, simulate

__all__ = ["SAMPLERS", "sentence_measures", "own_log_prob", "exact_laws", "sampler_draws",
           "parallel_error", "recipe_measures", "real_measures"]

SAMPLERS = {"left to right": ("l2r", 1), "random order": ("random", 1),
            "most confident first": ("confident", 1), "random, two per step": ("random", 2)}
"""The samplers the chapter compares: label -> (order, tokens per step)."""


def _ids(lm, sentences):
    return [lm.encode_words(list(w))[0] for w in sentences]


def sentence_measures(lm, grammar, sentences) -> dict:
    """Per sentence (word lists of the toy language): ``n`` (tokens), ``log_p`` (the truth's
    :math:`\\log p(x \\mid n)`), and the model's ``log_mix``, ``nelbo``, ``log_two`` (two per step),
    ``log_l2r`` and ``log_conf`` (most confident first), all exact."""
    ids = _ids(lm, sentences)
    tables = reveal_table(lm, ids)
    return {"n": np.array([len(x) for x in ids]),
            "log_p": np.array([truth_log_prob(grammar, w) for w in sentences]),
            "log_mix": np.array([mixture(t) for t in tables]),
            "nelbo": np.array([nelbo(t) for t in tables]),
            "log_two": np.array([mixture(t, k=2) for t in tables]),
            "log_l2r": np.array([left_to_right(t) for t in tables]),
            "log_conf": confident_log_prob(lm, ids)}


def own_log_prob(lm, sentences, order: str = "random", k: int = 1) -> np.ndarray:
    """Exact log-probability that the sampler (``order``, ``k`` per step) generates each sentence
    (token ids)."""
    if order == "confident":
        return confident_log_prob(lm, sentences)
    tables = reveal_table(lm, [list(map(int, x)) for x in sentences])
    return np.array([left_to_right(t) if order == "l2r" else mixture(t, k=k) for t in tables])


def exact_laws(models: dict, grammar, n: int = 3) -> tuple[list, dict]:
    """Each sampler's exact law over the toy language's sentences of ``n`` tokens, for each model of
    ``models`` (name -> MaskedLM). Returns the table rows and ``{(model, sampler): (KL(p ‖ P), KL(P
    ‖ p) on the language, mass outside it)}``."""
    support = {k: v for k, v in grammar.pcfg.enumerate(n).items() if len(k) == n}
    ids = [[N_SPECIAL + int(t) for t in k] for k in support]
    p = np.array(list(support.values()))
    p = p / p.sum()
    rows, out = [], {}
    for name, lm in models.items():
        tables = reveal_table(lm, ids)
        for label, (order, k) in SAMPLERS.items():
            logP = (confident_log_prob(lm, ids) if order == "confident" else
                    np.array([left_to_right(t) if order == "l2r" else mixture(t, k=k) for t in tables]))
            inside = np.exp(logP).sum()
            forward = float(np.sum(p * (np.log(p) - logP)))
            back = float(np.sum(np.exp(logP) / inside * (logP - np.log(inside) - np.log(p))))
            out[name, label] = (forward, back, float(1 - inside))
            rows.append([name, label, *(f"{unsigned_zero(v, 4):.4f}" for v in (forward, back, 1 - inside))])
    return rows, {"laws": out, "support": len(support), "entropy": float(-np.sum(p * np.log(p)))}


def sampler_draws(lm, n: int, count: int, seed: int = 0) -> dict:
    """For each one-per-step sampler: ``count`` simulated sentences of ``n`` tokens, and the exact
    :math:`-\\log P(x)` of each along its own paths (``{order: (draws, nll)}``)."""
    out = {}
    for order in ORDERS:
        draws = simulate(lm, n, count, order=order, seed=seed)
        out[order] = draws, -own_log_prob(lm, draws, order)
    return out


def parallel_error(oracle, sentences) -> np.ndarray:
    """Per sentence (word lists of ``oracle``'s language): :math:`(\\log P_1(x) - \\log P_2(x))/n`,
    one against two tokens per step in random order; for an exact oracle :math:`P_1 = p`, so the
    mean over sentences from its language is its parallel sampler's KL from the truth, per token."""
    tables = reveal_table(oracle, _ids(oracle, sentences))
    return np.array([(mixture(t) - mixture(t, k=2)) / len(w) for t, w in zip(tables, sentences)])


def recipe_measures(model, grammar, sentences) -> tuple[np.ndarray, np.ndarray]:
    """Per sentence: the random-order sampler's term of the KL from the truth, :math:`(\\log p(x
    \\mid n) - \\log p_{\\text{mix}}(x))/n`, and the mean single-site KL to the truth."""
    from ..compare import kl_to_truth
    tables = reveal_table(model, _ids(model, sentences))
    n = np.array([len(w) for w in sentences])
    log_p = np.array([truth_log_prob(grammar, w) for w in sentences])
    gen = (log_p - np.array([mixture(t) for t in tables])) / n
    return gen, np.array([k.mean() for k in kl_to_truth(grammar, model, sentences)])


def real_measures(lm, rows, orders: int, samples: int, length: int = 6, seed: int = 0) -> dict:
    """What a model without a truth gives on token rows: ``one`` and ``two`` (the Monte Carlo NELBO
    per token with one and two positions per step, per row), and per sampler its draws of ``length``
    tokens with their own :math:`-\\log P(x)` per token and the share of distinct draws."""
    n = np.array([len(x) for x in rows])
    out = {"one": nelbo_mc(lm, rows, orders=orders, seed=seed).mean(axis=1) / n,
           "two": nelbo_mc(lm, rows, orders=orders, k=2, seed=seed).mean(axis=1) / n}
    for order, (draws, nll) in sampler_draws(lm, length, samples, seed=seed).items():
        out[order] = draws, nll / length, distinct_share(draws)
    return out
