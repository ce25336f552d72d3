r"""The joint of two masked tokens derived from a masked LM's conditionals: MRF, HCB or AG."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import joints, queries
from .models import Options, Work, budget, on_text, tokens_of

__all__ = ["HCB", "AG", "Joint", "derive_joint"]

AUTO_CANDIDATES = 1000
"""Up to this vocabulary size every word is a candidate; above it, the model's top-K (``top_k``,
default 50)."""


@dataclass(frozen=True)
class HCB:
    """Hammersley–Clifford–Besag with a pivot :math:`a^\\star` at the first position, ``pivot``:
    ``"both"`` (the paper's ``hcb-both``: the likeliest token with both positions masked),
    ``"observed"`` (the token the text has there), or a token id (it must be a candidate)."""

    pivot: str | int = "both"


@dataclass(frozen=True)
class AG:
    """Arnold–Gokhale, stopped when the error bound on every log-probability is below ``tol`` (nats;
    one below :data:`mlmbook.joints.TOL_FLOOR`, what float64 can reach, is raised to it with a
    one-line warning)."""

    tol: float = 1e-8


METHODS = {"mrf": None, "mrf_local": None, "naive": None, "hcb": HCB(), "ag": AG()}


@dataclass(frozen=True)
class Joint:
    """A derived joint :math:`p(x_i = a, x_j = b \\mid \\text{rest})` over candidate tokens:
    ``probs`` (K_i, K_j), summing to one; ``cand_i``, ``cand_j`` the candidate token ids at each
    position, ``tokens_i``, ``tokens_j`` their strings; ``conditionals``, what the model said (the
    input of every method); ``converged``, whether AG's stopping rule was met (True for closed
    forms)."""

    probs: np.ndarray
    cand_i: np.ndarray
    cand_j: np.ndarray
    tokens_i: list
    tokens_j: list
    method: str
    conditionals: joints.PairConditionals
    converged: bool = True

    def top(self, k: int = 5) -> list[tuple[str, str, float]]:
        """The ``k`` likeliest pairs as ``(token_i, token_j, probability)``."""
        flat = np.argsort(-self.probs, axis=None, kind="stable")[:k]
        return [(self.tokens_i[a], self.tokens_j[b], float(self.probs[a, b]))
                for a, b in zip(*np.unravel_index(flat, self.probs.shape))]


def _pivot(pc: joints.PairConditionals, pivot, observed: int) -> int:
    """The candidate index of an HCB pivot given as a mode or a token id."""
    if pivot == "both":
        return joints.default_pivot(pc)
    token = observed if pivot == "observed" else pivot
    if isinstance(token, str) or np.flatnonzero(pc.cand_a == int(token)).size == 0:
        raise ValueError(f"HCB pivot {pivot!r} is not a candidate token id at the first position; use 'both', "
                         f"'observed' or one of the candidate ids")
    return int(np.flatnonzero(pc.cand_a == int(token))[0])


def derive_joint(model, text, pair: tuple[int, int], method="ag", top_k: int | None = None, *,
                 options: Options = Options()) -> Joint:
    r"""The joint of the tokens at positions ``i`` and ``j`` of ``text``, both masked, from the
    model's conditionals.

    The model gives :math:`q(x_i \mid x_j, \cdot)`, :math:`q(x_j \mid x_i, \cdot)` and the
    both-masked marginals (Torroba Hennigen & Kim 2023); each method turns them into one joint:
    ``"mrf"`` (logits as pairwise potentials), ``"mrf_local"``, ``"naive"`` (the product of the
    marginals), ``"hcb"`` / :class:`HCB` (Besag's identity around a pivot), ``"ag"`` / :class:`AG`
    (the joint whose conditionals are closest to the model's, Arnold & Gokhale 1998).

    Parameters
    ----------
    model : MaskedLM, model name or path
    text : str or list of words
    pair : (int, int)
        Token positions ``(i, j)`` (the model's pieces, special tokens excluded), ``i != j``.
    method : str, HCB or AG
        A name, or an options object: ``HCB(pivot=...)``, ``AG(tol=...)``.
    top_k : int, optional
        Candidates per position (see :data:`AUTO_CANDIDATES`): the model's ``top_k`` likeliest
        tokens with both positions masked, the text's own tokens included.
    options : Options
        Reads ``allow_unknown`` and ``max_minutes``.

    Returns
    -------
    Joint

    Examples
    --------
    >>> import mlmbook
    >>> lm = mlmbook.load_mlm("toy")                                  # doctest: +SKIP
    >>> text = "the farmers near the river often feed the cows ."
    >>> joint = mlmbook.derive_joint(lm, text, (1, 6), method="hcb")
    >>> bool(abs(joint.probs.sum() - 1) < 1e-9), joint.probs.shape == (len(joint.cand_i), len(joint.cand_j))
    (True, True)
    >>> ag = mlmbook.derive_joint(lm, text, (1, 6), method=mlmbook.AG(tol=1e-10), top_k=8)
    >>> ag.converged, len(ag.top(3))
    (True, 3)
    >>> observed = mlmbook.derive_joint(lm, text, (1, 6), method=mlmbook.HCB(pivot="observed"), top_k=8)
    >>> observed.method
    'hcb'
    """
    settings = METHODS.get(method, method) if isinstance(method, str) else method
    name = method if isinstance(method, str) else type(method).__name__.lower()
    if name not in METHODS:
        raise ValueError(f"unknown method {method!r}; use one of {', '.join(METHODS)}, HCB(...) or AG(...)")
    lm, ids, opts = on_text("derive_joint", model, text, options)
    i, j = pair
    if not (0 <= i < len(ids) and 0 <= j < len(ids)) or i == j:
        raise ValueError(f"positions must be two different token positions in [0, {len(ids)}); the text has "
                         f"tokens {tokens_of(lm, ids)}")
    few = top_k is None and lm.V <= AUTO_CANDIDATES          # every token is a candidate
    candidates = None if few else joints.topk_candidates(lm, [(ids, i, j)], k=top_k or 50)[0]
    k = lm.V if candidates is None else max(len(c) for c in candidates)
    work = Work(f"the joint over {k} x {k} candidates", 1 + 2 * k, (1 + 2 * k) * (len(ids) + queries.SPECIALS))
    budget(lm, work, opts.max_minutes, "joint", "ask for fewer candidates (--top-k)")
    pc = joints.pair_conditionals(lm, ids, i, j, candidates)
    converged = True
    if name == "hcb":
        probs = joints.hcb(pc, _pivot(pc, settings.pivot, ids[i]))
    elif name == "ag":
        result = joints.ag(pc, tol=settings.tol)
        probs, converged = result.joint, bool(result.converged)
    else:
        probs = getattr(joints, name)(pc)
    return Joint(np.asarray(probs), pc.cand_a, pc.cand_b, tokens_of(lm, pc.cand_a),
                 tokens_of(lm, pc.cand_b), name, pc, converged)
