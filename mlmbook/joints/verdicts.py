r"""Reading chapter 2's comparisons in words — only from verdicts, never from point estimates.

Every comparison of two joints is a :class:`~mlmbook.stats.Verdict` of a paired difference
(the first joint's score minus the second's; lower is better for every score here), so its side
says which is better *beyond the sample's noise*: ``"below"`` — the first is better; ``"above"``
— the second is; anything else — no direction. These helpers turn a set of such verdicts into the
sentences the chapter prints, so that a ranking by point estimates can never pass for a finding.
"""
from __future__ import annotations

from typing import Mapping

__all__ = ["paper_agreement", "best_against", "listing", "where"]


def listing(names) -> str:
    """``["a"]`` -> ``"a"``; ``["a", "b", "c"]`` -> ``"a, b and c"``."""
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1] if names else ""


def where(names) -> str:
    """``[]`` -> ``"on no rung"``; ``["h32", "h64"]`` -> ``"on h32 and h64"``."""
    return "on no rung" if not list(names) else "on " + listing(names)


def paper_agreement(verdicts: Mapping[str, object]) -> str:
    """Does a run agree with a paper's claim that one joint *beats* every other?

    ``verdicts`` maps each rival to the verdict of (claimed winner − rival); the words:

    - ``"agrees with the paper"``: every difference is below zero;
    - ``"contradicts the paper"``: some rival is better beyond the noise (a difference above zero);
    - ``"neither confirms nor contradicts the paper"``: otherwise — some differences have no
      direction, whatever the point estimates' order.
    """
    sides = [v.side for v in verdicts.values()]
    if not sides:
        raise ValueError("no comparison to read")
    if all(s == "below" for s in sides):
        return "agrees with the paper"
    if any(s == "above" for s in sides):
        return "contradicts the paper"
    return "neither confirms nor contradicts the paper"


def _detectable(names, verdicts: Mapping[str, object], unit: str) -> str:
    """The smallest differences the sample would have detected against ``names``."""
    u = f" {unit}" if unit else ""
    sizes = [f"{float(verdicts[r].detectable):.2g}{u}" for r in names]
    if len(sizes) == 1:
        return f"a difference of {sizes[0]} or more would have been detected"
    return f"differences of {listing(sizes)} or more, respectively, would have been detected"


def best_against(who: str, verdicts: Mapping[str, object], quantity: str, unit: str = "") -> str:
    """One sentence on how ``who`` compares with each rival on ``quantity`` (lower is better).

    ``verdicts`` maps a rival's label to the verdict of (``who`` − rival). E.g. "AG is closer to the
    truth than every other joint" or "AG is closer to the truth than MRF and HCB; against MLM
    (independent) the difference has no direction in this sample (a difference of 0.2 nats or
    more would have been detected)": a comparison without a direction always carries the
    smallest difference the sample would have detected (``unit`` names its unit).
    """
    better = [r for r, v in verdicts.items() if v.side == "below"]
    worse = [r for r, v in verdicts.items() if v.side == "above"]
    level = [r for r, v in verdicts.items() if v.side not in ("below", "above")]
    if len(better) == len(verdicts):
        return f"{who} is {quantity} than every other joint"
    parts = []
    if better:
        parts.append(f"{who} is {quantity} than {listing(better)}")
    if worse:
        parts.append(f"{listing(worse)} {'is' if len(worse) == 1 else 'are'} {quantity} than {who}")
    if level:
        parts.append(f"against {listing(level)} the difference has no direction in this sample "
                     f"({_detectable(level, verdicts, unit)})")
    out = "; ".join(parts)
    return out[0].upper() + out[1:] if out.startswith("against") else out
