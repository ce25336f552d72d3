"""The equality half of the benchmarks: every batched estimator equals a one-item-at-a-time loop.

(The speed half lives in ``make bench``; timings never go in tests.)
"""
import numpy as np
import pytest
import torch

from mlmbook import queries
from mlmbook.glauber import GlauberSampler
from mlmbook.models import HFMaskedLM
from mlmbook.toy import Grammar


def test_conditionals_and_pll_batched_equal_loop(toy_bert):
    from benchmarks.core import rows_for
    lm = HFMaskedLM.from_pretrained(toy_bert)
    g = Grammar.load("toy")
    sents = [s.words for s in g.sample(2000, seed=1) if len(s) == 9][:5]
    rows, pos, _ = rows_for(lm, sents)
    batched = lm.logits(rows, pos)
    loop = torch.cat([lm.logits(rows[i:i + 1], pos[i:i + 1]) for i in range(rows.shape[0])])
    torch.testing.assert_close(batched, loop, atol=1e-5, rtol=1e-5)
    mixed = [s.words for s in g.sample(8, seed=2)]
    np.testing.assert_allclose(queries.pll(lm, mixed), np.concatenate([queries.pll(lm, [s]) for s in mixed]), atol=1e-4)


def test_glauber_same_seed_same_chains(toy_bert):
    """Batched chains are reproducible: the same seed gives the same trajectories."""
    lm = HFMaskedLM.from_pretrained(toy_bert)
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
    lm = HFMaskedLM.from_pretrained(toy_bert)
    sents = [s.words for s in Grammar.load("toy").sample(6, seed=4)]
    full = queries.pll(lm, sents)
    np.testing.assert_allclose(full, [_naive_pll(lm, w) for w in sents], atol=1e-5)
    words_only = queries.pll(lm, sents, full_softmax=False)
    np.testing.assert_allclose(words_only, [_naive_pll(lm, w, full_softmax=False) for w in sents], atol=1e-5)
    assert (words_only > full).all()                   # renormalising over words only raises every term


def test_pll_word_l2r_on_a_wordpiece_model(wordpiece_bert):
    """PLL-word-l2r masks a piece and the later pieces of its word; on multi-piece words it differs."""
    lm = HFMaskedLM.from_pretrained(wordpiece_bert)
    sents = [["the", "shepherds", "watched", "umbrellas", "."], ["butter", "believe", "dog", "."]]
    assert any(len(p) > 1 for w in sents for p in lm.encode_words(w)[1])       # the test needs split words
    l2r = queries.pll(lm, sents, variant="word_l2r")
    np.testing.assert_allclose(l2r, [_naive_pll(lm, w, variant="word_l2r") for w in sents], atol=1e-5)
    single = [["the", "dog", "."]]
    if all(len(p) == 1 for p in lm.encode_words(single[0])[1]):
        np.testing.assert_allclose(queries.pll(lm, single, variant="word_l2r"), queries.pll(lm, single))


def test_pll_variants_mask_exactly_the_rows_of_their_definition(wordpiece_bert, monkeypatch):
    """Which rows each variant asks for, whatever the weights: every (row, position) the engine is
    sent equals the brute-force list of the definition, and with a score of minus the number of
    masked pieces in the row the two PLLs are known exactly (the variants differ on split words)."""
    lm = HFMaskedLM.from_pretrained(wordpiece_bert)
    sents = [["the", "shepherds", "watched", "umbrellas", "."], ["butter", "believe", "dog", "."]]
    sent = []

    def masked_count(lm_, rows, positions, **kw):
        sent.extend((tuple(r), tuple(p)) for r, p in zip(rows, positions))
        yield list(range(len(rows))), np.array([[-float(sum(t == lm.mask_id for t in r))] for r in rows])

    monkeypatch.setattr(queries, "iter_log_probs", masked_count)
    assert any(len(p) > 1 for w in sents for p in lm.encode_words(w)[1])       # the test needs split words
    scores = {}
    for variant in ("token", "word_l2r"):
        sent.clear()
        want, totals = [], []
        for words in sents:
            ids, pieces = lm.encode_words(words)
            total = 0
            for word in pieces:
                for a, t in enumerate(word):
                    hidden = word[a:] if variant == "word_l2r" else [t]
                    want.append((tuple(lm.mask_id if i in hidden else x for i, x in enumerate(ids)), (t,)))
                    total -= len(hidden)
            totals.append(total)
        got = queries.pll(lm, sents, variant=variant)
        assert sent == want
        np.testing.assert_array_equal(got, totals)
        scores[variant] = got
    assert (scores["word_l2r"] < scores["token"]).any()      # a split word's first piece hides the rest


def test_engine_answers_do_not_depend_on_budget_or_dedupe(toy_bert, monkeypatch):
    """Chunking by the memory budget and sending duplicates once change no answer."""
    lm = HFMaskedLM.from_pretrained(toy_bert)
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
    once = queries.log_probs(lm, rows[::2], pos[::2])               # no duplicates to share
    for a, b, c in zip(big[::2], big[1::2], once):
        np.testing.assert_allclose(a, c, atol=1e-5)
        np.testing.assert_allclose(b, c, atol=1e-5)
    monkeypatch.setenv("MLMBOOK_QUERY_BUDGET", str(3 * lm.V))     # three rows per call
    small = queries.log_probs(lm, rows, pos)
    for a, b in zip(big, small):
        np.testing.assert_allclose(a, b, atol=1e-5)
    per_sentence = queries.single_site(lm, sents)
    flat = np.concatenate(per_sentence)
    np.testing.assert_allclose(flat, np.concatenate([b for b in big[::2]]), atol=1e-5)
    assert [len(x) for x in per_sentence] == [len(w) for w in sents]


def test_bad_budget_is_a_one_line_error(monkeypatch):
    from mlmbook.errors import UsageError
    monkeypatch.setenv("MLMBOOK_QUERY_BUDGET", "lots")
    with pytest.raises(UsageError, match="MLMBOOK_QUERY_BUDGET='lots' is not an integer"):
        queries.budget()


@pytest.mark.parametrize("which", ["toy_bert", "wordpiece_bert"])
def test_padded_calls_give_the_answers_of_length_groups(which, request, monkeypatch):
    """On an accelerator the engine pads rows of every length into one call; the answers are those of
    the length groups (forced here on the CPU)."""
    lm = HFMaskedLM.from_pretrained(request.getfixturevalue(which))
    sents = [s.words for s in Grammar.load("toy").sample(10, seed=8)]
    lengths = {len(lm.encode_words(w)[0]) for w in sents}
    assert len(lengths) > 3
    calls = {"logits": 0, "padded_logits": 0}
    for name in calls:
        original = getattr(lm, name)

        def counted(*a, _name=name, _original=original, **k):
            calls[_name] += 1
            return _original(*a, **k)
        monkeypatch.setattr(lm, name, counted)
    one = queries.pll(lm, sents, variant="word_l2r")
    assert calls == {"logits": len(lengths), "padded_logits": 0}
    monkeypatch.setattr(queries, "_padded_mode", lambda lm: True)
    padded = queries.pll(lm, sents, variant="word_l2r")
    assert 1 <= calls["padded_logits"] < len(lengths)                      # fewer calls than length groups
    np.testing.assert_allclose(padded, one, atol=1e-4)
    np.testing.assert_allclose(np.concatenate(queries.single_site(lm, sents[:3])),
                               np.concatenate([queries.single_site(lm, [s])[0] for s in sents[:3]]), atol=1e-4)


def test_several_threads_run_chunks_side_by_side_on_one_thread_each(toy_bert, monkeypatch):
    """With MLMBOOK_THREADS=2 the engine tries one thread and two one-thread workers, keeps the faster
    (measured) and probes the other now and then; the answers never change."""
    lm = HFMaskedLM.from_pretrained(toy_bert)
    lm.max_tokens = 64                                           # many chunks
    sents = [s.words for s in Grammar.load("toy").sample(12, seed=9)]
    one = queries.pll(lm, sents)
    seen = []
    original = lm._logits_chunk
    monkeypatch.setattr(lm, "_logits_chunk", lambda *a: seen.append(torch.get_num_threads()) or original(*a))
    monkeypatch.setenv("MLMBOOK_THREADS", "2")
    before = torch.get_num_threads()
    np.testing.assert_allclose(queries.pll(lm, sents), one, atol=1e-5)
    assert set(seen) == {1} and torch.get_num_threads() == before        # never one pass split across threads
    pace = queries._PACES[lm]
    assert set(pace.rate) == {1, 2} and pace.waves > 2

    fast_one = queries._Pace(2)
    fast_one.record(1, 1000, 1.0), fast_one.record(2, 1000, 3.0)
    modes = [fast_one.mode() for _ in range(16)]
    assert modes.count(1) == 14 and modes.count(2) == 2               # the faster, and a probe every 8 waves


def test_the_engine_restores_the_callers_threads(toy_bert, monkeypatch):
    lm = HFMaskedLM.from_pretrained(toy_bert)
    before = torch.get_num_threads()
    seen = []
    original = lm._logits_chunk
    monkeypatch.setattr(lm, "_logits_chunk", lambda *a: seen.append(torch.get_num_threads()) or original(*a))
    try:
        torch.set_num_threads(2)
        queries.pll(lm, [["the", "dogs", "bark", "."]])
        assert seen and set(seen) == {1} and torch.get_num_threads() == 2      # small work: one thread, per call
    finally:
        torch.set_num_threads(before)
