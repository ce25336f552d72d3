"""The research API: the book's analyses on any masked LM in one call each, without the book.

Every function takes a model first (a :class:`~mlmbook.models.base.MaskedLM`, a Hugging Face name
or a saved model's folder) and plain strings or word lists, and returns a small dataclass (or an
array); a thin wrapper over the chapters' own functions, so a number here is the book's.

=========================  ============================================================  =========
function                   what                                                          chapter
=========================  ============================================================  =========
:func:`pll`                pseudo-log-likelihood, per sentence or per token              0
:func:`dependency_trees`   trees from CPMI/CMI, UUAS with an interval                    1
:func:`derive_joint`       the joint of two masked tokens: MRF, HCB (:class:`HCB`), AG   2
:func:`rectangle_test`     can one joint have produced the conditionals?                 3
:func:`effective_rank`     effective rank of real-token and ``[MASK]`` rows              4
:func:`glauber_chains`     tempered Glauber dynamics from a sentence                     5
=========================  ============================================================  =========

Every call goes through the book's front door first (:func:`mlmbook.check_fit`); how it runs is
its keyword-only ``options=`` (:class:`Options`). The same verbs are on the command line:
``mlmbook pll MODEL FILE`` (see ``mlmbook --help``).
"""
from .dynamics import glauber_chains, rectangle_test
from .joints import AG, HCB, derive_joint
from .models import Options, as_model
from .pll import pll
from .rank import effective_rank
from .trees import dependency_trees

__all__ = ["pll", "dependency_trees", "derive_joint", "HCB", "AG", "rectangle_test",
           "effective_rank", "glauber_chains", "as_model", "Options"]
