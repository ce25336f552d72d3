"""Chapter 6's figures: the bound's decomposition per sentence, and a knob with the truth beside the
models."""
from __future__ import annotations

import numpy as np

from .. import plotting

__all__ = ["bound_parts", "knob_panels"]


def bound_parts(inconsistency, rest, lengths):
    """Per sentence (sorted by the total gap): NELBO − NLL split into the cost of the orders'
    disagreement (NELBO + log p_mix) and the rest (−log p_mix − NLL), nats per token."""
    fig, ax = plotting.figure(height=2.6)
    order = np.argsort(np.asarray(inconsistency) + np.asarray(rest))
    k = np.arange(len(order))
    ax.bar(k, np.asarray(rest)[order], color="C0", label="−log p_mix − NLL")
    ax.bar(k, np.asarray(inconsistency)[order], bottom=np.asarray(rest)[order], color="C3",
           label="NELBO + log p_mix (orders disagree)")
    ax.set_xlabel(f"sentence (lengths {min(lengths)}–{max(lengths)} tokens), sorted by NELBO − NLL")
    ax.set_ylabel("nats per token")
    plotting.place_legend(ax)
    return fig


def knob_panels(noise, truth_values, model_values, seeds_fixed, seeds_uniform, labels):
    """Left: the dependence knob, the truth's parallel-reveal error (exact per sentence, mean) over
    the noise share, the default model's beside it at 0. Right: the training knob, one point per
    seed."""
    fig, (a, b) = plotting.figure(1, 2, height=2.6)
    a.plot(noise, truth_values, "o-", color="k", label="truth")
    a.errorbar([0.0], [model_values.estimate], yerr=[[model_values.estimate - model_values.low],
                                                     [model_values.high - model_values.estimate]],
               fmt="s", color="C3", label="default MLM")
    a.set_xlabel("word noise η (η = 1: no dependence)")
    a.set_ylabel("KL(p ‖ 2 per step) − KL(p ‖ 1), nats/token")
    plotting.place_legend(a)
    for j, (_name, fixed, uniform) in enumerate(zip(labels, seeds_fixed, seeds_uniform)):
        b.plot([j - 0.1] * len(fixed), fixed, "o", color="C0", label="fixed 15 %" if j == 0 else None)
        b.plot([j + 0.1] * len(uniform), uniform, "^", color="C2", label="uniform ratio" if j == 0 else None)
    b.axhline(0, color="k", lw=0.8, ls="--", label="truth")
    b.set_xticks(range(len(labels)), labels)
    b.set_ylabel("nats per token")
    plotting.place_legend(b)
    return fig
