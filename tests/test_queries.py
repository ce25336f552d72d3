"""The equality half of the benchmarks: every batched estimator equals a one-item-at-a-time loop.

(The speed half lives in ``make bench``; timings never go in tests.)
"""
import numpy as np
import pytest
import torch

from mlmbook.glauber import GlauberSampler
from mlmbook.toy import Grammar
from mlmbook.models import HFMaskedLM


def test_conditionals_and_pll_batched_equal_loop(toy_bert):
    from benchmarks.core import rows_for
    lm = HFMaskedLM(toy_bert)
    g = Grammar.load("toy")
    sents = [s.words for s in g.sample(2000, seed=1) if len(s) == 9][:5]
    rows, pos, _ = rows_for(lm, sents)
    batched = lm.logits(rows, pos)
    loop = torch.cat([lm.logits(rows[i:i + 1], pos[i:i + 1]) for i in range(rows.shape[0])])
    torch.testing.assert_close(batched, loop, atol=1e-5, rtol=1e-5)
    mixed = [s.words for s in g.sample(8, seed=2)]
    np.testing.assert_allclose(lm.pll(mixed), np.concatenate([lm.pll([s]) for s in mixed]), atol=1e-4)


def test_glauber_same_seed_same_chains(toy_bert):
    """Batched chains are reproducible: the same seed gives the same trajectories."""
    lm = HFMaskedLM(toy_bert)
    g = Grammar.load("toy")
    init = torch.tensor([lm.encode_words(g.sample(50, seed=3)[k].words)[0] for k in range(50)
                         if len(g.sample(50, seed=3)[k]) == 7][:4])
    a = GlauberSampler(lm, temperature=1.0, seed=5).run(init, 6, progress=False)
    b = GlauberSampler(lm, temperature=1.0, seed=5).run(init, 6, progress=False)
    assert torch.equal(torch.as_tensor(a), torch.as_tensor(b))            # same seed, same chains


# ---------------------------------------------------------------- the engine itself
def _naive_pll(lm, words, full_softmax=True, variant="token"):
    """One forward pass per masked piece, the whole model, no batching: the reference."""
    ids, pieces = lm.encode_words(words)
    total = 0.0
    for word in pieces:
        for a, t in enumerate(word):
            row = list(ids)
            for p in (word[a:] if variant == "word_l2r" else [t]):
                row[p] = lm.mask_id
            with torch.no_grad():
                logits = lm.model(input_ids=lm.wrap([row])).logits[0, t + len(lm._prefix)].double()
            if not full_softmax:
                logits[lm.special_ids] = float("-inf")
            total += torch.log_softmax(logits, -1)[ids[t]].item()
    return total


def test_pll_is_the_full_softmax_of_the_literature(toy_bert):
    """Salazar et al.'s PLL (and minicons'): softmax over the whole vocabulary, specials included."""
    from mlmbook import queries
    lm = HFMaskedLM(toy_bert)
    sents = [s.words for s in Grammar.load("toy").sample(6, seed=4)]
    full = queries.pll(lm, sents)
    np.testing.assert_allclose(full, [_naive_pll(lm, w) for w in sents], atol=1e-5)
    words_only = queries.pll(lm, sents, full_softmax=False)
    np.testing.assert_allclose(words_only, [_naive_pll(lm, w, full_softmax=False) for w in sents], atol=1e-5)
    assert (words_only > full).all()                   # renormalising over words only raises every term


def test_pll_word_l2r_on_a_wordpiece_model(wordpiece_bert):
    """PLL-word-l2r masks a piece and the later pieces of its word; on multi-piece words it differs."""
    from mlmbook import queries
    lm = HFMaskedLM(wordpiece_bert)
    sents = [["the", "shepherds", "watched", "umbrellas", "."], ["butter", "believe", "dog", "."]]
    assert any(len(p) > 1 for w in sents for p in lm.encode_words(w)[1])       # the test needs split words
    l2r = queries.pll(lm, sents, variant="word_l2r")
    np.testing.assert_allclose(l2r, [_naive_pll(lm, w, variant="word_l2r") for w in sents], atol=1e-5)
    assert np.abs(l2r - queries.pll(lm, sents)).max() > 1e-4     # differs beyond the 1e-5 agreement above
    single = [["the", "dog", "."]]
    if all(len(p) == 1 for p in lm.encode_words(single[0])[1]):
        np.testing.assert_allclose(queries.pll(lm, single, variant="word_l2r"), queries.pll(lm, single))


def test_engine_answers_do_not_depend_on_budget_or_dedupe(toy_bert, monkeypatch):
    """Chunking by the memory budget and sending duplicates once change no answer."""
    from mlmbook import queries
    lm = HFMaskedLM(toy_bert)
    g = Grammar.load("toy")
    sents = [s.words for s in g.sample(12, seed=6)]
    rows, pos = [], []
    for w in sents:
        ids = lm.encode_words(w)[0]
        for t in range(len(ids)):
            r = list(ids)
            r[t] = lm.mask_id
            rows += [r, r]                                  # every query twice
            pos += [[t], [t]]
    big = queries.log_probs(lm, rows, pos)
    monkeypatch.setenv("MLMBOOK_QUERY_BUDGET", str(3 * lm.V))     # three rows per call
    small = queries.log_probs(lm, rows, pos, dedupe=False)
    for a, b in zip(big, small):
        np.testing.assert_allclose(a, b, atol=1e-5)
    per_sentence = queries.single_site(lm, sents)
    flat = np.concatenate(per_sentence)
    np.testing.assert_allclose(flat, np.concatenate([b for b in big[::2]]), atol=1e-5)
    assert [len(x) for x in per_sentence] == [len(w) for w in sents]


def test_bad_budget_is_a_one_line_error(monkeypatch):
    from mlmbook import queries
    from mlmbook.errors import UsageError
    monkeypatch.setenv("MLMBOOK_QUERY_BUDGET", "lots")
    with pytest.raises(UsageError, match="MLMBOOK_QUERY_BUDGET='lots' is not an integer"):
        queries.budget()
