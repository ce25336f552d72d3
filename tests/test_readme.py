"""The README's research-API example runs as printed (on the toy model: nothing is downloaded), its text is
one the model knows, and its numbers are the ones an independent route computes."""
import re
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _example() -> str:
    text = README.read_text()
    block = re.search(r"## The book's analyses without the book.*?```python\n(.*?)```", text, re.S)
    assert block, "README lost its research-API example"
    return block.group(1)


def test_the_readme_example_uses_words_the_toy_model_knows():
    from mlmbook.corpus.fit import unknown_share
    from mlmbook.toy import Grammar
    code = _example()
    text = re.search(r'^text = "(.*?)"', code, re.M).group(1)
    assert set(text.split()) <= set(Grammar.load("toy").vocab), "the README's sentence has a word the toy model lacks"

    class Vocabulary:                                     # the toy model's vocabulary, without training it
        vocab = ["[UNK]"] + list(Grammar.load("toy").vocab)

        def encode_words(self, words):
            ids = [self.vocab.index(w) if w in self.vocab else 0 for w in words]
            return ids, [[p] for p in range(len(ids))]
    assert unknown_share(Vocabulary(), [text]).share == 0.0


@pytest.mark.slow
def test_readme_research_example_runs_and_gives_the_independent_numbers():
    import torch

    from mlmbook import dependencies as dep
    from mlmbook import joints as J
    code = _example()
    assert "load_mlm(\"toy\")" in code
    # the quick preset of the same model (the full one would train for minutes on a fresh cache)
    code = code.replace('load_mlm("toy")', 'load_mlm("toy", profile="quick")')
    ns: dict = {}
    exec(compile(code, str(README), "exec"), ns)          # every line must run as written
    lm, text = ns["lm"], ns["text"]
    words = text.split()
    # PLL by hand: mask each token, full softmax (Salazar et al.), sum the log-probabilities of the tokens
    ids, _ = lm.encode_words(words)
    rows = torch.tensor([[lm.mask_id if k == t else i for k, i in enumerate(ids)] for t in range(len(ids))])
    logits = lm.logits(rows, torch.arange(len(ids))[:, None], full_softmax=True)[:, 0].double()
    by_hand = float(logits.log_softmax(-1)[torch.arange(len(ids)), torch.tensor(ids)].sum())
    assert ns["pll"][0] == pytest.approx(by_hand, abs=1e-6)
    assert by_hand > -0.75 * len(ids) * np.log(lm.V)        # a sentence the model knows: far above a uniform guess
    # chapter 1's route on the sentences the API read: CPMI, decode, UUAS counts
    trees = ns["trees"]
    sc = dep.sample.Scored.of(trees.corpus.sentences)
    correct, total = dep.uuas_counts([dep.decode(M) for M in dep.cpmi(lm, sc.words, sc.keep)], sc.edges)
    assert trees.uuas.estimate == pytest.approx(correct.sum() / total.sum()) and len(trees.trees) == 20
    # chapter 2's route: the pair's conditionals on the full grid, then Arnold-Gokhale
    pc = J.pair_conditionals(lm, ids, 1, 2, None)
    np.testing.assert_allclose(ns["joint"].probs, J.ag(pc).joint, atol=1e-12)
    assert ns["ranks"].n_rows == len(ids) and ns["chains"].states.shape[-1] == len(ids)
