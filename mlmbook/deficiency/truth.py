r"""A model's **fit** to the truth, computed exactly on toy sentences: the mean single-site
:math:`\mathrm{KL}(p(\cdot\mid x_{\setminus i})\,\|\,q(\cdot\mid x_{\setminus i}))`.
"""
from __future__ import annotations

import numpy as np

__all__ = ["Truth"]


class Truth:
    """The exact single-site conditionals of some toy sentences, computed once for many models."""

    def __init__(self, grammar, sentences, offset: int | None = None):
        from ..toy.vocab import SPECIAL_TOKENS
        self.sentences = [list(getattr(s, "words", s)) for s in sentences]
        self.p = [grammar.conditionals(w) for w in self.sentences]
        self.offset = len(SPECIAL_TOKENS) if offset is None else offset

    def kl(self, lm) -> np.ndarray:
        """Each sentence's mean single-site KL from the truth to ``lm`` (nats), shape
        (n_sentences,): :func:`mlmbook.compare.kl_to_truth` averaged per sentence."""
        from ..compare import kl_rows, single_site_log_probs
        return np.asarray([kl_rows(p, lq[:, self.offset:self.offset + p.shape[1]]).mean()
                           for p, lq in zip(self.p, single_site_log_probs(lm, self.sentences))])
