r"""The representation deficiency (Meng et al. 2024), measured like with like: chapter 4's science.

Meng et al. argue that an MLM spends some of its dimensions on ``[MASK]``, so that the
representations of real tokens span fewer directions than they could, and that MAE-LM — an encoder
that never reads ``[MASK]`` — does not. Chapter 4 compares matrices of the **same number of rows**
drawn from the **same sentences**, reading models only through the ``MaskedLM`` protocol.
"""
from .agreement import Agreement, agreement
from .earlier import EARLIER
from .measure import CONDITIONS, ROWS_PER_DIM, encode, geometry, make_sample, sentences_for
from .seeds import (
    WidthRow,
    describe_seeds,
    difference,
    seed_rows,
    sign_change,
    training_failures,
    width_panel,
    widths_text,
)
from .truth import Truth

__all__ = ["ROWS_PER_DIM", "CONDITIONS", "sentences_for", "make_sample", "geometry", "encode",
           "Truth", "seed_rows", "difference", "describe_seeds", "WidthRow", "width_panel",
           "sign_change", "training_failures", "EARLIER", "Agreement", "agreement", "widths_text"]
