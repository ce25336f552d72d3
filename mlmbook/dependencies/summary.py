"""Chapter 1's summary tables: its numbers beside the papers', each toy model's fit and trees."""
from __future__ import annotations

from typing import Mapping, Sequence

from ..tables import table
from .evaluate import CMI

__all__ = ["papers_table", "models_table", "ZH", "HOOVER"]

ZH, HOOVER = "Zhang & Hashimoto 2021", "Hoover et al. 2021"


def _pct(iv) -> str:
    return f"{100 * iv.estimate:.1f} [{100 * iv.low:.1f}, {100 * iv.high:.1f}]"


def papers_table(uuas: Mapping[str, object], n: int, source: str):
    """The papers' UUAS figures beside this chapter's (``uuas[parser]``: Intervals on the same ``n``
    sentences of ``source``); a parser this run did not compute is left out."""
    rows = [("MLM-CMI", "MLM CMI, spanning tree", ZH, "58.74"),
            ("DMV", "their classic method; our DMV", ZH, "55.91"),
            ("CPMI", "CPMI, spanning tree", HOOVER, "≈ 50 at most"),
            ("adjacent", "adjacent words", HOOVER, "≈ CPMI"),
            ("truth-CMI", "CMI of the exact distribution", "—", "")]
    body = [[label, who, theirs, _pct(uuas[key])] for key, label, who, theirs in rows if key in uuas]
    return table(body, header=["parser", "paper", "paper (%)", f"here, {n} sentences (%, 95 %)"],
                 caption=f"UUAS: the papers' abstracts and this chapter ({source})")


def models_table(entries: Sequence[tuple], n: int):
    """How well each toy model learned the statistics, and its CMI trees: ``entries``, ``(model,
    language, KL to its truth, report)``, each report on ``n`` sentences beside its truth."""
    rows = [[name, language, f"{kl:.2f}", rep.error.corr.format(2), rep.error.mae.format(3),
             rep.uuas[CMI].format(3)] for name, language, kl, rep in entries]
    return table(rows, header=["model", "language", "KL to the truth (nats)", "corr(MLM-CMI, truth-CMI)",
                               "mean |MLM-CMI − truth-CMI| (nats)", "UUAS"],
                 caption=f"Each toy model's fit and trees ({n} sentences each, 95 % intervals)")
