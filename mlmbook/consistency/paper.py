r"""The numbers chapter 3 sets beside its own: Young & You's, and the last edition's results.

:data:`PAPER` are :cite:t:`young2022inconsistencies`'s numbers: the mean and median relative
difference of the two chain-rule orders over 10,000 Simple English Wikipedia sentences with two
masked word pieces each (computed from the authors' released data, ``data/bert-*-uncased_10000``),
and UL2-20B's accuracy on a filtered LAMBADA subset with the single conditional and with an ensemble
of ten (a figure of the paper). :data:`EARLIER_SPAN` and :data:`EARLIER_BUDGET` are the last
edition's (commit ``5d78747``; see the changelog).
"""
from __future__ import annotations

__all__ = ["PAPER", "EARLIER_SPAN", "EARLIER_BUDGET", "beside_paper"]

PAPER = {"bert_base_mean": 0.795, "bert_base_median": 0.624, "bert_large_mean": 0.857,
         "bert_large_median": 0.699, "lambada_single": 71.4, "lambada_eoc": 74.0}
"""Young & You's numbers; accuracy in percent."""

EARLIER_SPAN = {
    "level_pct": 99.833, "targets": 300,
    "h128_gain": 0.02318768644108316, "h128_low": -0.007274004711046352, "h128_high": 0.06461640450440705,
    "h128_headroom": 0.6958472755810796, "h128_twin_headroom": 0.09189033578230084,
    "h64_gain": 0.021529805339095775, "h64_low": 0.0014255588595957138,
    "h64_high": 0.0455556287244074, "h64_headroom": 1.2243776033300364,
    "h64_twin_headroom": 0.5315534232096346, "h64_t_p": 0.0024, "h64_alpha_m": 0.00167,
}
"""The last edition's span ensemble (log-loss gain in nats, one seed, its 99.833 % interval over 300
targets) at hidden 128 and 64, with each model's single-token headroom."""


EARLIER_BUDGET = {"rho": 0.11904761904761904, "low": -0.7619047619047619,
                  "high": 0.7857142857142857, "targets": 30, "models": 8, "level_pct": 99.833}
"""The last edition's incompatibility budget against the ensemble's gain: Spearman's ρ across eight
models on 30 targets, with its interval."""


def beside_paper(recorded: dict, model_name: str, toy: bool):
    """The paper's numbers beside the chapter's (an HTML table; the chapter's from ``recorded``)."""
    from ..tables import table as html_table
    r, p = recorded, PAPER
    rows = [
        ("relative order difference, two masked pieces per sentence: mean / median",
         f"{p['bert_base_mean']:.3f} / {p['bert_base_median']:.3f} (bert-base-uncased); "
         f"{p['bert_large_mean']:.3f} / {p['bert_large_median']:.3f} (bert-large-uncased); 10,000 sentences",
         f"{r['measure_mean']['estimate']:.3f} / {r['measure_median']:.3f} ({r['n_paper']:,} sentences)"),
        ("Ensemble of Conditionals, accuracy: single → ensemble (%)",
         f"{p['lambada_single']:.1f} → {p['lambada_eoc']:.1f} (UL2-20B, filtered LAMBADA, 10 conditionals)",
         f"{100 * r['eoc_acc_single']:.1f} → {100 * r['eoc_acc_mean']:.1f} (token-masked, {r['eoc_versions']} "
         f"conditionals, {r['eoc_items']:,} targets)"),
    ]
    if toy:
        rows.append(("the same measures for the exact distribution", "–",
                     f"|Δ| ≤ {r['truth_delta_max']:.0e}, |log j0/j1| ≤ {r['truth_order_max']:.0e}, "
                     f"{r['truth_flips']} flips"))
    who = "toy MLM, toy language" if toy else model_name
    return html_table(rows, header=("", "Young & You", f"this chapter ({who})"),
                      caption="The paper's numbers beside this chapter's.")
