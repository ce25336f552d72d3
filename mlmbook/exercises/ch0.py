r"""Chapter 0's graded exercises: the two quantities the chapter's comparisons rest on.
``ch0-kl`` (warm-up): :math:`\mathrm{KL}(p\,\|\,q)` between the truth's conditional of one masked
word and a model's, with :math:`0 \log (0/q) = 0`, graded against the sum written out;
``ch0-bayes-loss`` (core): the Bayes-optimal single-site loss of one sentence, :math:`-\frac1n
\sum_i \log p(x_i \mid x_{\setminus i})`, graded on the tiny grammar against conditionals from
the exact probabilities of whole sentences.
"""
from __future__ import annotations

import numpy as np

from . import Exercise, exercise


def _kl_cases():
    from ..toy import Grammar

    grammar = Grammar.load("tiny")
    cases = []
    for k, s in enumerate(grammar.sample(4, seed=3)):
        p = grammar.conditionals(s.words)[min(2, len(s) - 1)]  # exact zeros for ruled-out words
        other = grammar.conditionals(s.words)[0]
        uniform = np.full_like(p, 1.0 / len(p))
        mix = 0.2 + 0.15 * k
        q = (1 - mix) * other + mix * uniform  # a model: positive everywhere
        q = 0.5 * q + 0.5 * (0.9 * p + 0.1 * uniform)
        cases.append((p, q / q.sum()))
    return cases


def _kl_expected(p, q):
    total = 0.0
    for pw, qw in zip(p, q):  # the definition, word by word
        if pw > 0:
            total += pw * (np.log(pw) - np.log(qw))
    return total


def kl_reference(p, q):
    """KL(p || q) in nats; words with p = 0 contribute nothing."""
    p, q = np.asarray(p, float), np.asarray(q, float)
    keep = p > 0
    return float(np.sum(p[keep] * np.log(p[keep] / q[keep])))


def _quiet(f):
    def wrapped(*args):
        with np.errstate(all="ignore"):
            return f(*args)
    return wrapped


exercise(Exercise(
    "ch0-kl", "warm-up", _kl_cases, _kl_expected, kl_reference,
    wrong=(
        _quiet(lambda p, q: float(np.sum(q * np.log(q / p)))),  # the reverse direction
        _quiet(lambda p, q: float(np.nansum(p * np.log2(p / q)))),                  # bits, not nats
        _quiet(lambda p, q: float(np.sum(p * np.log(p / q)))),  # 0 log 0 left as nan
    ),
    tol=1e-9, what="KL(p || q) in nats"))


def _bayes_cases():
    from ..toy import Grammar

    grammar = Grammar.load("tiny")
    return [(grammar, s.words) for s in grammar.sample(5, seed=11) if len(s) >= 3][:4]


def _bayes_expected(grammar, words):
    """Brute force from whole sentences: p(x_i | rest) = p(x) / sum_w p(x with w at i)."""
    losses = []
    for i, _word in enumerate(words):
        logs = np.array([grammar.log_prob(list(words[:i]) + [w] + list(words[i + 1:])) for w in grammar.vocab])
        top = np.max(logs)
        log_rest = top + np.log(np.sum(np.exp(logs - top)))
        losses.append(-(grammar.log_prob(words) - log_rest))
    return float(np.mean(losses))


def bayes_loss_reference(grammar, words):
    """Mean over positions of -log p(x_i | x_rest): one inside-outside pass gives every
    conditional."""
    cond = grammar.conditionals(words)
    ids = [grammar.word_id[w] for w in words]
    return float(-np.mean(np.log(cond[np.arange(len(words)), ids])))


def _unigram_loss(grammar, words):
    freq = grammar.unigram(2000, seed=0)
    return float(-np.mean(np.log(freq[[grammar.word_id[w] for w in words]])))


exercise(Exercise(
    "ch0-bayes-loss", "core", _bayes_cases, _bayes_expected, bayes_loss_reference,
    wrong=(
        _unigram_loss,  # ignores the context
        lambda g, w: float(-np.sum(np.log(g.conditionals(w)[np.arange(len(w)), [g.word_id[x] for x in w]]))),
        # wrong position
        _quiet(lambda g, w: float(-np.mean(np.log(g.conditionals(w)[np.arange(len(w)) - 1,
                                                                    [g.word_id[x] for x in w]])))),
    ),
    tol=1e-7, what="the Bayes-optimal single-site loss (nats per token)"))
