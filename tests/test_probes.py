"""Linear probes (chapter 4): labels, splits by sentence, per-sentence counts; the agreement task."""
import numpy as np
import pytest
import torch

from mlmbook import downstream, probes, stats
from mlmbook.corpus import Sentence
from mlmbook.toy import Grammar


@pytest.fixture(scope="module")
def grammar():
    return Grammar.load("toy")


def toy_sentence():
    return Sentence(words="the dogs bark .".split(), heads=[1, 2, -1, 2], upos=["DET", "NOUN", "VERB", "PUNCT"],
                    feats=[{"Number": "Plur"}, {"Number": "Plur", "Class": "animal"}, {"Number": "Plur"}, {}],
                    deprels=["det", "nsubj", "root", "punct"])


def test_token_labels():
    lab = probes.token_labels(toy_sentence())
    assert lab["pos"] == [0, 2, 4, 7]
    assert lab["number"] == [1, 1, 1, -1]
    assert lab["depth"] == [2, 1, 0, 1]
    names = probes.PROBE_TASKS["head_offset"]
    assert [names[k] for k in lab["head_offset"]] == ["+1", "+1", "root", "-1"]


def _accuracy(X, y, sentence_of, seed):
    """Held-out accuracy of a probe fitted on half of the 80 sentences, pooled over the others."""
    correct, total = probes.probe_counts(X, y, sentence_of, 2, *probes.split_sentences(80, seed=seed))
    return correct.sum() / total.sum()


def test_linear_probe_separable_and_split_by_sentence():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    sentence_of = np.repeat(np.arange(80), 5)
    assert min(_accuracy(X, y, sentence_of, seed) for seed in (0, 1, 2)) > 0.95
    # a feature that identifies the sentence and a label drawn per sentence: a probe can only
    # memorise it, so if test sentences never appear in training it stays near chance
    ids = rng.permutation(80)
    X2 = np.eye(80)[np.repeat(ids, 5)]
    y2 = np.repeat(rng.integers(0, 2, 80), 5)
    y2[::7] = -1                                           # ignored rows
    assert np.mean([_accuracy(X2, y2, np.repeat(ids, 5), seed) for seed in (0, 1, 2)]) < 0.75


def test_probe_counts_are_per_test_sentence_and_add_up_to_the_accuracy():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(600, 4))
    y = (X[:, 0] > 0).astype(int)
    y[::11] = -1
    sentence_of = np.repeat(np.arange(100), 6)
    train, test = probes.split_sentences(100, seed=3)
    assert len(set(train) & set(test)) == 0 and len(train) + len(test) == 100
    correct, total = probes.probe_counts(X, y, sentence_of, 2, train, test)
    assert correct.shape == total.shape == (len(test),)
    scored = np.isin(sentence_of, test) & (y >= 0)
    assert total.sum() == scored.sum() and np.all(correct <= total)
    for k in (0, 7, len(test) - 1):                        # the k-th entry is sentence test[k]
        assert total[k] == ((sentence_of == test[k]) & (y >= 0)).sum()
    probe = probes.fit_probe(X[np.isin(sentence_of, train) & (y >= 0)], y[np.isin(sentence_of, train) & (y >= 0)], 2)
    assert correct.sum() / total.sum() == pytest.approx((probe.predict(X[scored]) == y[scored]).mean())
    # two models on the same sentences: a paired ratio of the counts
    iv = stats.ratio(correct, total, minus=correct)
    assert iv.estimate == 0 and iv.low <= 0 <= iv.high


def test_layer_probe_counts_shapes():
    sents = [toy_sentence()] * 12
    labels = [probes.token_labels(s) for s in sents]
    index = np.array([(s, p) for s in range(12) for p in range(4)])
    rng = np.random.default_rng(0)
    layers = [rng.normal(size=(48, 3)), np.eye(8)[np.tile([0, 1, 2, 3], 12)]]
    train, test = probes.split_sentences(12, seed=0)
    out = probes.layer_probe_counts(layers, index, labels, train, test, tasks=["pos", "number"])
    c, t = out["pos"]
    assert c.shape == (2, len(test)) and t.tolist() == [4.0] * len(test)
    assert out["number"][1].tolist() == [3.0] * len(test)          # "." has no number
    assert (c[1] == t).all()                                       # one-hot of the position: POS is exact


def test_collect_states_splits_real_and_mask_rows():
    def states_fn(ids):                                   # two "layers" that echo the token id
        h = ids.float()[..., None].expand(-1, -1, 3)
        return h, 2 * h
    rows = [[10, 11, 12], [20, 21], [30, 31, 32]]
    masked = [[False, True, False], [False, False], [True, False, False]]
    st = probes.collect_states(states_fn, rows, masked, mask_id=4)
    assert st["real_index"].tolist() == [[0, 0], [0, 2], [1, 0], [1, 1], [2, 1], [2, 2]]
    assert st["real"][0][:, 0].tolist() == [10, 12, 20, 21, 31, 32]
    assert st["mask_index"].tolist() == [[0, 1], [2, 0]] and (st["mask"][1] == 8).all()


# ---------------------------------------------------------------------------- the downstream task
def test_agreement_task_is_exactly_labelled(grammar):
    s = grammar.sample(50, seed=1)
    present = next(x for x in s if downstream.flip_agreement(grammar, x) is not None)
    flipped = downstream.flip_agreement(grammar, present)
    assert sum(a != b for a, b in zip(flipped, present.words)) == 1
    sents, labels = downstream.agreement_task(grammar, 40, seed=2)
    assert len(sents) == 40 and labels.sum() == 20
    for words, label in zip(sents, labels):
        assert (grammar.log_prob(words) == -np.inf) == bool(label)


def test_attractor_sentences_have_a_noun_of_the_other_number_between_subject_and_verb(grammar):
    s = Sentence(words="the child with the shepherds wants this apple .".split(), heads=[1, 5, 4, 4, 1, -1, 7, 5, 5],
                 upos=["DET", "NOUN", "ADP", "DET", "NOUN", "VERB", "DET", "NOUN", "PUNCT"],
                 feats=[{"Number": "Sing"}, {"Number": "Sing"}, {}, {"Number": "Plur"}, {"Number": "Plur"},
                        {"Number": "Sing"}, {"Number": "Sing"}, {"Number": "Sing"}, {}],
                 deprels=["det", "nsubj", "case", "det", "nmod", "root", "det", "obj", "punct"])
    assert downstream.attractor(s, 5)
    same = Sentence(words=s.words, heads=s.heads, upos=s.upos, deprels=s.deprels,
                    feats=s.feats[:4] + [{"Number": "Sing"}] + s.feats[5:])
    assert not downstream.attractor(same, 5)
    sents, labels = downstream.agreement_task(grammar, 20, seed=4, attractors=True)
    assert len(sents) == 20 and labels.sum() == 10
    for words, label in zip(sents, labels):
        assert (grammar.log_prob(words) == -np.inf) == bool(label)


def test_finetune_classifier_scores_each_test_set_and_leaves_the_encoder_alone(grammar):
    from mlmbook.models import maelm
    from mlmbook.models.train import TrainConfig
    enc = maelm.make_maelm(grammar, TrainConfig(hidden=32, layers=2, heads=2, intermediate=64), seed=0).encoder.eval()
    before = {k: v.clone() for k, v in enc.state_dict().items()}
    sents, labels = downstream.agreement_task(grammar, 24, seed=5)
    rows = [[2] + [5 + grammar.word_id[w] for w in s] + [3] for s in sents]
    tests = [(rows[16:], labels[16:]), (rows[:4], labels[:4])]
    out = downstream.finetune_classifier(enc, rows[:16], labels[:16], tests,
                                         settings=downstream.FinetuneSettings(epochs=1, batch=8))
    assert [o.shape for o in out] == [(8,), (4,)] and out[0].dtype == bool
    assert all(torch.equal(before[k], v) for k, v in enc.state_dict().items())


def test_finetune_encoder_reads_word_lists_through_the_models_own_tokens(grammar):
    """``finetune_encoder`` is ``finetune_classifier`` on the encoder a downstream task receives, with the
    model's [CLS] ... [SEP] rows: the same seed gives the same hits either way (MAE-LM: its encoder)."""
    from mlmbook.models import maelm
    from mlmbook.models.train import TrainConfig
    from mlmbook.toy.vocab import make_tokenizer
    net = maelm.make_maelm(grammar, TrainConfig(hidden=32, layers=2, heads=2, intermediate=64), seed=1)
    tok = make_tokenizer(grammar)
    lm = maelm.MAEMaskedLM(net, tok.convert_ids_to_tokens(list(range(len(tok)))), tokenizer=tok)
    assert lm.encoder is net.encoder and lm.hidden_size == 32
    sents, labels = downstream.agreement_task(grammar, 20, seed=6)
    tests = [(sents[12:], labels[12:])]
    got = downstream.finetune_encoder(lm, sents[:12], labels[:12], tests, seed=2, epochs=1)
    rows = [[tok.cls_token_id] + lm.encode_words(s)[0] + [tok.sep_token_id] for s in sents]
    want = downstream.finetune_classifier(net.encoder, rows[:12], labels[:12], [(rows[12:], labels[12:])],
                                          pad_id=tok.pad_token_id,
                                          settings=downstream.FinetuneSettings(seed=2, epochs=1))
    assert rows[0][0] == tok.cls_token_id and rows[0][-1] == tok.sep_token_id and len(rows[0]) == len(sents[0]) + 2
    assert len(got) == 1 and np.array_equal(got[0], want[0])
