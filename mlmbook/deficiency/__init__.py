r"""The representation deficiency (Meng et al. 2024), measured like with like: chapter 4's science.

Meng et al. argue that an MLM spends some of its dimensions on ``[MASK]``, so that the
representations of real tokens span fewer directions than they could, and that MAE-LM — an encoder
that never reads ``[MASK]`` — does not. Chapter 4 measures that claim with comparisons between
matrices of the **same number of rows** drawn from the **same sentences**: what the ``[MASK]`` rows
add, what ``[MASK]`` in the input does to the real tokens, and MLM against MAE-LM.

The modules: ``measure`` (:class:`Sample`, :func:`geometry`: every effective rank per condition,
layer and block), ``truth`` (each model's exact single-site KL to the truth, its fit), ``seeds``
(the training seed as the unit), ``agreement`` (number agreement read from each encoder),
``earlier`` (:data:`EARLIER`: results of configurations the chapter no longer runs) and
``figures``. They read a model only through the :class:`~mlmbook.models.base.MaskedLM` protocol.
"""
from .agreement import Agreement, agreement
from .earlier import EARLIER
from .measure import CONDITIONS, ROWS_PER_DIM, Geometry, Sample, encode, geometry, make_sample, sentences_for
from .seeds import (
    FAIL_MARGIN,
    SIGN_LABELS,
    SeedRows,
    Stability,
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

__all__ = ["ROWS_PER_DIM", "CONDITIONS", "Sample", "sentences_for", "make_sample", "Geometry",
           "geometry", "encode", "Truth",
           "SeedRows", "seed_rows", "difference", "describe_seeds", "WidthRow", "width_panel",
           "SIGN_LABELS", "sign_change", "FAIL_MARGIN", "Stability", "training_failures", "EARLIER",
           "Agreement", "agreement", "widths_text"]
