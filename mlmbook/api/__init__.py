"""The research API: the book's analyses on any masked LM in one call each, without the book.

Every function takes a model first — a :class:`~mlmbook.models.base.MaskedLM`, a Hugging Face name
or the folder of a saved model (loaded once with :func:`mlmbook.load_mlm`) — and plain strings or
word lists; each returns a small dataclass (or an array). They are thin wrappers over the science
modules (the chapters' own functions), so a number here is the number the book computes.

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

>>> import mlmbook
>>> lm = mlmbook.load_mlm("bert-base-uncased")                      # doctest: +SKIP
>>> mlmbook.pll(lm, ["The cat sat on the mat.", "Mat the on sat cat the."])  # doctest: +SKIP
array([-21.3..., -60.1...])

Every call goes through the book's front door first (:func:`mlmbook.check_fit`); the keyword
options each call takes are those of :class:`Options`. The same verbs are on the command line:
``mlmbook pll MODEL FILE`` (see ``mlmbook --help``).
"""
from .dynamics import GlauberRun, Rectangles, glauber_chains, rectangle_test
from .joints import AG, HCB, Joint, derive_joint
from .models import Options, as_model
from .pll import TokenScores, pll
from .rank import Ranks, effective_rank
from .trees import TreeScores, dependency_trees

__all__ = ["pll", "TokenScores", "dependency_trees", "TreeScores", "derive_joint", "Joint", "HCB",
           "AG", "rectangle_test", "Rectangles", "effective_rank", "Ranks", "glauber_chains",
           "GlauberRun", "as_model", "Options"]
