r"""Chapter 1's figures, one function each, returning a new column-wide figure; colours follow
:data:`COLORS`, one per parser."""
from __future__ import annotations

from collections import Counter
from typing import Mapping, Sequence

import numpy as np

from .. import plotting
from ..plotting import errorbars
from .sample import edge_relations, recall
from .trees import symmetrize

__all__ = ["COLORS", "ORDER", "pair", "gibbs_vs_exact", "uuas_bars",
           "cmi_scatter", "learned", "control", "knob", "regime", "breakdown", "explorer"]

P = plotting.PALETTE
COLORS = {"truth-CMI": P["truth"], "MLM-CMI": P["mlm"], "MLM-CMI (Gibbs)": P["mlm"],
          "CPMI": P["extra"], "DMV": P["alt"], "adjacent": P["muted"], "random": P["muted"]}
"""One colour per parser."""

ORDER = ("truth-CMI", "MLM-CMI", "MLM-CMI (Gibbs)", "CPMI", "DMV", "adjacent", "random")
"""The parsers in the order the figures list them."""


def pair(panels: Sequence[tuple], words: Sequence[str], i: int, j: int):
    """One panel per ``(title, joint P[a, b], vocabulary, observed row)``: the distribution of word
    ``j`` with word ``i`` masked, given the observed word ``i``, and given the value among word
    ``i``'s 15 likeliest that moves word ``j`` most (largest KL from the observed case)."""
    fig, axes = plotting.figure(len(panels), 1, height=2.9 * len(panels), squeeze=False)
    for ax, (title, joint, vocab, observed) in zip(axes[:, 0], panels):
        cond = joint / np.maximum(joint.sum(1, keepdims=True), 1e-300)
        log_cond = np.log(np.maximum(cond, 1e-300))
        likely = np.argsort(-joint.sum(1))[:15]
        shift = [(cond[x] * (log_cond[x] - log_cond[observed])).sum() for x in likely]
        c = likely[int(np.argmax(shift))]
        shown = {"first word masked": joint.sum(0) / joint.sum(),
                 f"= {vocab[observed]}": cond[observed], f"= {vocab[c]}": cond[c]}
        plotting.distribution_bars(shown, vocab, top=10, ax=ax,
                                   title=f"{title}: '{words[j]}' given '{words[i]}'")
    return fig


def gibbs_vs_exact(exact_mats, gibbs_mats, title: str):
    """Each pair's Gibbs estimate against its exact value (the grey line is equality)."""
    exact, sampled = (np.concatenate([M[~np.eye(len(M), dtype=bool)] for M in mats])
                      for mats in (exact_mats, gibbs_mats))
    fig, ax = plotting.figure(height=3.2)
    ax.scatter(exact, sampled, s=12, color=P["mlm"], alpha=0.7)
    lim = [min(exact.min(), sampled.min()), max(exact.max(), sampled.max())]
    ax.plot(lim, lim, color=P["muted"], lw=1)
    ax.set_xlabel("exact (grid), nats")
    ax.set_ylabel("Gibbs estimate, nats")
    ax.set_title(title)
    return fig


def uuas_bars(ivs: Mapping[str, object], title: str | None = None):
    """Horizontal bars of each parser's UUAS with its interval (all on the same sentences)."""
    names = [m for m in ORDER if m in ivs]
    fig, ax = plotting.figure(height=3.0)
    for row, name in enumerate(names):
        iv = ivs[name]
        faint = name in ("MLM-CMI (Gibbs)", "random")
        ax.barh(row, iv.estimate, color=COLORS[name], alpha=0.55 if faint else 1)
        ax.errorbar(iv.estimate, row, xerr=[[iv.estimate - iv.low], [iv.high - iv.estimate]],
                    color="k", capsize=3, lw=1)
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("UUAS (95 % interval over sentences)")
    if title:
        ax.set_title(title)
    return fig


def cmi_scatter(ax, model_mats, truth_mats, edges) -> None:
    """Every pair of scored words: the model's CMI against the truth's (both symmetrised by the
    larger direction), gold edges in green, other pairs in grey, and the line of equality."""
    for gold_pair, color, label in ((False, P["muted"], "other pairs"), (True, P["hit"], "gold edges")):
        xs, ys = [], []
        for M, T, gold in zip(model_mats, truth_mats, edges):
            M, T = symmetrize(M), symmetrize(T)
            for e in zip(*np.triu_indices(len(M), 1)):
                if (e in gold) == gold_pair:
                    xs.append(T[e])
                    ys.append(M[e])
        ax.scatter(xs, ys, s=12, color=color, alpha=0.8, label=label)
    top = max(ax.get_xlim()[1], ax.get_ylim()[1])
    ax.plot([0, top], [0, top], color="k", lw=0.8)
    ax.set_xlabel("truth-CMI, nats")
    ax.set_ylabel("MLM-CMI, nats")
    plotting.place_legend(ax)


def learned(model_mats, truth_mats, edges):
    """:func:`cmi_scatter` on its own figure."""
    fig, ax = plotting.figure(height=3.4)
    cmi_scatter(ax, model_mats, truth_mats, edges[: len(model_mats)])
    return fig


def control(sentences, truth_mats, model_mats: Mapping[str, list]):
    """The positive control on ``sentences`` (a :class:`~mlmbook.dependencies.sample.Scored`). Left:
    share of each relation's gold edges the truth's trees and each model's trees find. Right:
    :func:`cmi_scatter` of the last model in ``model_mats``."""
    from .evaluate import trees
    fig, (left, right) = plotting.figure(1, 2, height=3.2)
    rels = edge_relations(sentences.gold)
    names = sorted({r for d in rels for r in d.values()})
    found = {"truth": trees(truth_mats), **{m: trees(x) for m, x in model_mats.items()}}
    colors = [P["truth"], P["muted"], P["mlm"], P["extra"]]
    width = 0.8 / len(found)
    x = np.arange(len(names))
    for k, ((who, tr), color) in enumerate(zip(found.items(), colors)):
        left.bar(x + (k - (len(found) - 1) / 2) * width,
                 [recall(tr, rels, lambda s, e, r, n=n: r == n) for n in names], width, color=color, label=who)
    left.set_xticks(x, names, rotation=45, ha="right")
    left.set_ylim(0, 1.45)
    left.set_yticks(np.linspace(0, 1, 6))
    left.set_ylabel("gold edges found")
    plotting.place_legend(left, ncols=2, fontsize="small")
    last = list(model_mats)[-1]
    cmi_scatter(right, model_mats[last], truth_mats, sentences.edges[: len(truth_mats)])
    right.set_title(last)
    right.get_legend().remove()
    return fig


def knob(results: Mapping[float, tuple], name: str = "selection $s$", title: str | None = None):
    """Dose–response of a knob on the same sentences, ``results[s] = (truth counts, model report)``.
    Left: UUAS of the truth's trees and of the MLM trained at each setting. Right: each MLM's CMI
    correlation with its own language's truth."""
    from .evaluate import CMI, uuas
    fig, (left, right) = plotting.figure(1, 2, height=3.2)
    xs = np.asarray(list(results), dtype=float)
    errorbars(left, xs - 0.01, [uuas(t) for t, _ in results.values()], fmt="o-", color=P["truth"], label="truth")
    errorbars(left, xs + 0.01, [r.uuas[CMI] for _, r in results.values()], fmt="o-", color=P["mlm"], label="MLM")
    left.set_xlabel(name)
    left.set_ylabel("UUAS")
    errorbars(right, xs, [r.error.corr for _, r in results.values()], fmt="o-", color=P["mlm"])
    right.set_xlabel(name)
    right.set_ylabel("corr(MLM-CMI, truth-CMI)")
    if title:
        fig.suptitle(title)
    plotting.place_legend(left)             # last: the layout is final
    return fig


def regime(points, corr: Mapping[str, object], truth_uuas: float, dmv_uuas: float, methods,
           title: str | None = None):
    """The regime map. Left: UUAS of each method on each rung against the rung's KL to the truth
    (``methods[0]``, the main one, names the rungs), the truth's and the DMV's UUAS as lines. Right:
    each rung's CMI correlation with the truth's (``corr[rung]``)."""
    main = methods[0]
    fig, (left, right) = plotting.figure(1, 2, height=3.4)
    for method, color in zip(methods, (P["mlm"], P["extra"])):
        pts = [x for x in points if x.method == method]
        first = method == main
        plotting.regime_map([x.kl for x in pts], [x.uuas.estimate for x in pts], [x.uuas.low for x in pts],
                            [x.uuas.high for x in pts], ax=left, style=plotting.RegimeStyle(
                                label=method.replace(" (exact)", ""), color=color, ylabel="UUAS",
                                truth=truth_uuas if first else None, truth_label="truth-CMI"))
    left.axhline(dmv_uuas, ls=":", color=P["alt"], label="DMV")
    pts = [x for x in points if x.method == main]
    plotting.place_labels(left, [(x.kl, x.uuas.estimate) for x in pts], [x.rung for x in pts], color="0.3")
    plotting.place_legend(left)
    errorbars(right, [x.kl for x in pts], [corr[x.rung] for x in pts], fmt="o", color=P["mlm"])
    right.set_xscale("log")
    right.set_xlabel("mean single-site KL to the truth (nats)")
    right.set_ylabel("corr(MLM-CMI, truth-CMI)")
    if title:
        fig.suptitle(title)
    return fig


DISTANCES = ((1, 1), (2, 2), (3, 3), (4, 99))


def breakdown(pred: Mapping[str, list], relations: Sequence[dict], min_edges: int = 3):
    """Share of gold edges each parser finds, by relation (top, relations with at least
    ``min_edges`` gold edges; their number in brackets) and by the distance between the words."""
    n = min(len(p) for p in pred.values())
    rels = relations[:n]
    count = Counter(r for d in rels for r in d.values())
    names = [r for r, c in sorted(count.items(), key=lambda t: -t[1]) if c >= min_edges]
    fig, (top, bottom) = plotting.figure(2, 1, height=4.6)
    width = 0.8 / len(pred)
    for m, (name, trees) in enumerate(pred.items()):
        by_rel = [recall(trees, rels, lambda k, e, r, x=x: r == x) for x in names]
        top.bar(np.arange(len(names)) + m * width, by_rel, width, color=COLORS[name], label=name)
        by_dist = [recall(trees, rels, lambda k, e, r, lo=lo, hi=hi: lo <= e[1] - e[0] <= hi)
                   for lo, hi in DISTANCES]
        bottom.plot(range(len(DISTANCES)), by_dist, "o-", color=COLORS[name], label=name)
    top.set_xticks(np.arange(len(names)) + 0.4 - width / 2, [f"{x}\n({count[x]})" for x in names])
    top.set_ylabel("gold edges found")
    bottom.set_xticks(range(len(DISTANCES)), ["1", "2", "3", "4+"])
    bottom.set_xlabel("distance between the two words")
    bottom.set_ylabel("gold edges found")
    plotting.place_legend(top, ncols=3)
    top.set_ylim(0, 1.4)
    bottom.set_ylim(0, 1.05)
    for ax in (top, bottom):
        ax.set_yticks(np.linspace(0, 1, 6))
    return fig


def explorer(words, gold_edges, tree, scores, parser: str):
    """One sentence and one parser: its tree against the gold one (top) and the symmetrised score
    matrix it was read from (bottom)."""
    fig, (top, bottom) = plotting.figure(2, 1, height=4.8, gridspec_kw=dict(height_ratios=[1, 1.5]))
    plotting.arcs(words, gold=gold_edges, pred=tree, ax=top,
                  title=f"{parser}: {len(tree & gold_edges)} of {len(gold_edges)} gold edges")
    M = symmetrize(scores)
    plotting.heatmap(np.where(np.eye(len(M), dtype=bool), np.nan, M), labels=list(words), ax=bottom,
                     cmap="magma")
    return fig
