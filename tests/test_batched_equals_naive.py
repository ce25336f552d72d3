"""The equality half of the benchmarks: every batched estimator equals a one-item-at-a-time loop.

(The speed half lives in ``make bench``; timings never go in tests.)
"""
import numpy as np
import torch

from mlmbook.glauber import GlauberSampler
from mlmbook.language import Grammar
from mlmbook.oracle import HFMaskedLM


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
