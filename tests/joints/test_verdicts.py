"""Chapter 2's comparisons in words come from verdicts, never from a ranking of point estimates.

Each test here fails on the logic the second edition used: "agrees with the paper" read off a
ranking of point estimates, and a caption saying AG is "not always closest to the truth" whatever
the recorded comparisons said.
"""
import numpy as np
import pytest

from mlmbook import joints as J
from mlmbook import stats

FAMILY = stats.Family("test", size=10)


def verdict(estimate, low, high):
    return stats.decide(stats.Interval(estimate, low, high, FAMILY.level, se=(high - low) / 6), family=FAMILY)


def test_agreement_needs_every_comparison_below_zero_not_a_ranking():
    # AG has the lowest point estimate against every rival, but every interval straddles zero:
    # a ranking says "agrees", the verdicts say nothing either way
    straddling = {"MRF": verdict(-0.5, -1.2, 0.2), "HCB": verdict(-0.1, -0.4, 0.3),
                  "MLM (independent)": verdict(-0.9, -2.0, 0.1)}
    point_ranking_says_agree = all(v.interval.estimate < 0 for v in straddling.values())
    assert point_ranking_says_agree
    assert J.paper_agreement(straddling) == "neither confirms nor contradicts the paper"
    clear = {k: verdict(-1, -2, -0.5) for k in straddling}
    assert J.paper_agreement(clear) == "agrees with the paper"
    mixed = {**clear, "HCB": verdict(0.8, 0.2, 1.4)}
    assert J.paper_agreement(mixed) == "contradicts the paper"
    with pytest.raises(ValueError):
        J.paper_agreement({})


def test_caption_words_follow_the_verdicts():
    below = verdict(-1, -2, -0.5)
    all_better = {"MRF": below, "HCB": below, "MLM (independent)": below}
    text = J.best_against("AG", all_better, "closer to the truth")
    assert text == "AG is closer to the truth than every other joint" and "not always" not in text
    some = {"MRF": below, "HCB": verdict(-0.1, -0.4, 0.3), "MRF-local": verdict(0.5, 0.1, 0.9)}
    text = J.best_against("AG", some, "closer to the truth")
    assert text.startswith("AG is closer to the truth than MRF")
    assert "MRF-local is closer to the truth than AG" in text and "against HCB the difference has no direction" in text
    # a comparison without a direction carries the smallest difference the sample would have detected
    hcb = some["HCB"].detectable
    assert f"(a difference of {hcb:.2g} or more would have been detected)" in text
    only_level = {"HCB": verdict(0, -1, 1), "MRF": verdict(0, -2, 2)}
    text = J.best_against("AG", only_level, "closer", unit="nats")
    assert text.startswith("Against HCB and MRF") and "nats or more, respectively" in text


def test_listing_and_where():
    assert J.listing(["a"]) == "a" and J.listing(["a", "b", "c"]) == "a, b and c"
    assert J.where([]) == "on no rung" and J.where(["h32", "h64"]) == "on h32 and h64"


def test_regime_intervals_resample_sentences_and_seeds():
    rng = np.random.default_rng(0)
    sentence = np.repeat(np.arange(10), 2)
    per = [{"ag.cond_kl_truth": rng.random(20), "mlm.cond_kl_truth": rng.random(20)} for _ in range(3)]
    one = J.gap_interval(per[:1], sentence, level=0.9, n_boot=500)
    diff = per[0]["ag.cond_kl_truth"] - per[0]["mlm.cond_kl_truth"]
    assert np.isclose(one.estimate, diff.mean()) and one.n == 10 and one.level == 0.9
    assert np.allclose(J.per_sentence(diff, sentence), diff.reshape(10, 2).mean(1))
    three = J.gap_interval(per, sentence, level=0.9, n_boot=500)
    assert three.seeds == 3 and "hierarchical" in three.method
    same = J.gain_trend(per[0], per[0], sentence, n_boot=200)
    assert (same.estimate, same.low, same.high) == (0.0, 0.0, 0.0)
