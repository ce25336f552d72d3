"""The research verbs of the command line (``pll``, ``trees``, ``joint``, ``rectangle``, ``rank``,
``glauber``; ``python -m mlmbook VERB --help``): the research API (:mod:`mlmbook.api`) on files and
strings. ``MODEL`` is ``toy``, ``truth``, a Hugging Face name or a saved model's folder; ``FILE``
holds one sentence per line (``-``: standard input). Output is tab-separated text on standard
output; notes and an error are one line each on standard error (exit status 2 for a missing or
empty input, as for ``build`` and ``cost``; 1 for any other). Every verb refuses a run estimated
longer than :data:`MAX_MINUTES` (:func:`mlmbook.api.models.budget`) unless ``--max-minutes``
allows it, and text the model does not know (:func:`mlmbook.check_fit`) unless ``--allow-unknown``.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import InputTooLong, MLMBookError, TreebankNotFoundError, UsageError
from .workers.cluster import address

__all__ = ["add_research_commands", "RESEARCH_COMMANDS", "run", "missing", "MAX_WORDS", "MAX_MINUTES"]

MAX_WORDS = 40
"""``trees`` keeps sentences of at most this many scored words by default (longer: hours)."""
MAX_MINUTES = 10.0


def missing(what: str, text: str, argument: str) -> str:
    """The one wording of a missing input file, the build's and the verbs' alike (exit status 2)."""
    here = Path.cwd()
    return (f"{what} {(here / Path(text).expanduser()).resolve()} does not exist ({argument} {text}, read "
            f"relative to {here}); check the path")


def _lines(path: str, verb: str) -> list[str]:
    """The sentences of a file, one a line (``-``: standard input); an empty one is an error."""
    if path != "-" and not Path(path).expanduser().exists():
        raise UsageError(missing("sentence file", path, f"{verb} FILE"))
    text = sys.stdin.read() if path == "-" else Path(path).expanduser().read_text(encoding="utf-8")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        raise UsageError(f"{'standard input' if path == '-' else path} holds no sentence (one sentence a line); "
                         f"give a file with text")
    return lines


def _options(args, **more):
    """The research API's Options of a verb's flags (``--allow-unknown``, ``--max-minutes``, ...)."""
    from .api import Options
    return Options(allow_unknown=args.allow_unknown, max_minutes=args.max_minutes, **more)


def _pll(args) -> None:
    from . import api
    sentences = _lines(args.file, "pll")
    try:
        scores = api.pll(args.model, sentences, variant=args.variant,
                         reduction="none" if args.per_token else args.reduction,
                         options=_options(args, scheduler=address(args.scheduler)))
    except InputTooLong as err:                     # say where: file:line of the sentence
        if args.file == "-":
            raise UsageError(f"standard input, sentence {err.index + 1}: {err}") from None
        lines = Path(args.file).expanduser().read_text(encoding="utf-8").splitlines()
        number = [k for k, line in enumerate(lines, 1) if line.strip()][err.index]
        raise UsageError(f"{args.file}:{number}: {err}") from None
    if not args.per_token:
        for sentence, score in zip(sentences, scores):
            print(f"{score:.6f}\t{sentence}")
        return
    for k, terms in enumerate(scores):
        for token, score in zip(terms.tokens, terms.scores):
            print(f"{k}\t{token}\t{score:.6f}")


def _trees(args) -> None:
    from . import api
    name = args.treebank                    # a path must exist here; a name is found later
    if name != "toy" and ("/" in name or name.endswith(".conllu")) \
            and not Path(name).expanduser().exists():
        raise UsageError(missing("treebank file", name, "trees TREEBANK"))
    options = _options(args, max_words=args.max_words, scheduler=address(args.scheduler),
                       **({} if args.budget_rows is None else {"budget_rows": args.budget_rows}))
    res = api.dependency_trees(args.model, name, method=args.method, projective=args.projective,
                               limit=args.limit, options=options)
    print(f"note: {res.corpus.summary()}", file=sys.stderr)
    if res.estimator != "cpmi":
        print(f"note: CMI by the {res.estimator}" + (f", each pair within {res.bound:.3g} nats of the exact grid"
                                                     if res.estimator != "exact grid" else ""), file=sys.stderr)
    if any(res.undetermined):
        print(f"note: {sum(res.undetermined)} of {len(res.trees)} trees undetermined: their pairs' CMI bounds "
              f"exceed the differences that decide them (a larger --budget-rows narrows the bounds)",
              file=sys.stderr)
    print(f"UUAS\t{res.uuas.format(3)}\t({len(res.trees)} sentences, {int(res.total.sum())} gold edges)")


def _joint(args) -> None:
    from . import api
    method = {"hcb": api.HCB(pivot=int(args.pivot) if args.pivot.isdigit() else args.pivot),
              "ag": api.AG(tol=args.tol)}.get(args.method, args.method)
    joint = api.derive_joint(args.model, args.text, (args.i, args.j), method=method, top_k=args.top_k,
                             options=_options(args))
    for a, b, p in joint.top(args.show):
        print(f"{p:.6f}\t{a}\t{b}")


def _rectangle(args) -> None:
    from . import api
    res = api.rectangle_test(args.model, args.text, pairs=args.pair,
                             options=_options(args, scheduler=address(args.scheduler)))
    for (i, j), delta, corners, bad in zip(res.pairs, res.delta, res.corners, res.inconsistent):
        print(f"{i}\t{j}\t{delta:.6g}\t{' '.join(corners)}\t{'inconsistent' if bad else 'within rounding'}")


def _rank(args) -> None:
    from . import api
    r = api.effective_rank(args.model, _lines(args.file, "rank"), layer=args.layer, mask_rate=args.mask_rate,
                           options=_options(args))
    if r.n_too_long:
        print(f"note: {r.n_too_long} of {r.n_too_long + r.n_sentences} sentences left out: longer than the "
              f"model's window", file=sys.stderr)
    print(f"clean real tokens\t{r.clean}\nmasked input, real tokens\t{r.masked_real}\n"
          f"masked input, all tokens\t{r.masked_all}\nrows\t{r.n_rows}\t[MASK] rows\t{r.n_mask_rows}")


def _glauber(args) -> None:
    from . import api
    run_ = api.glauber_chains(args.model, args.text, steps=args.steps, temperature=args.temperature,
                              chains=args.chains, options=_options(args, seed=args.seed))
    for text, changed in zip(run_.texts, run_.changed):
        print(f"{changed:.2f}\t{text}")


RESEARCH_COMMANDS = {"pll": _pll, "trees": _trees, "joint": _joint, "rectangle": _rectangle,
                     "rank": _rank, "glauber": _glauber}
"""Verb -> handler (``handler(args)`` prints its result)."""


def add_research_commands(subparsers) -> None:
    """Add the research verbs to an ``argparse`` sub-parser set."""

    def verb(name: str, what: str) -> argparse.ArgumentParser:
        sub = subparsers.add_parser(name, help=what)
        sub.add_argument("model", help="toy, truth, a Hugging Face name or a saved model's folder")
        return sub

    p = verb("pll", "pseudo-log-likelihood of each line of a file")
    p.add_argument("file", help="one sentence per line ('-': standard input)")
    p.add_argument("--variant", default="token", choices=("token", "word_l2r"))
    p.add_argument("--reduction", default="sum", choices=("sum", "mean"))
    p.add_argument("--per-token", action="store_true", help="print every token's term")
    cluster = dict(metavar="ADDRESS", help="spread the work over an existing Dask cluster (default: "
                                            "$MLMBOOK_SCHEDULER, else this process); the same numbers either way")
    p.add_argument("--scheduler", **cluster)

    t = verb("trees", "trees from CPMI/CMI and their UUAS with an interval")
    t.add_argument("treebank", help="a CoNLL-U file or name, or 'toy'")
    t.add_argument("--method", default="cpmi", choices=("cpmi", "cmi"))
    t.add_argument("--projective", action="store_true")
    t.add_argument("--limit", type=int, default=None, help="the first N sentences that qualify")
    t.add_argument("--max-words", type=int, default=MAX_WORDS,
                   help=f"keep sentences of at most N scored words (default {MAX_WORDS}; the note says how "
                        f"many were left out)")
    t.add_argument("--budget-rows", type=int, default=None,
                   help="forward passes each sentence's CMI grid may spend: its exact grid if it fits, else "
                        "top-K (default: chapter 1's full profile per sentence)")
    t.add_argument("--scheduler", **cluster)

    j = verb("joint", "the joint of two masked tokens (MRF, HCB, AG)")
    j.add_argument("text")
    j.add_argument("i", type=int, help="token position")
    j.add_argument("j", type=int, help="token position")
    j.add_argument("--method", default="ag", choices=("ag", "hcb", "mrf", "mrf_local", "naive"))
    j.add_argument("--pivot", default="both", help="HCB pivot: both, observed or a token id")
    j.add_argument("--tol", type=float, default=1e-8, help="AG's tolerance (nats)")
    j.add_argument("--top-k", type=int, default=None)
    j.add_argument("--show", type=int, default=10, help="print the N likeliest pairs")

    r = verb("rectangle", "the rectangle test on pairs of positions of a text")
    r.add_argument("text")
    r.add_argument("--pair", nargs=2, type=int, action="append", metavar=("I", "J"), help="default: every pair")
    r.add_argument("--scheduler", **cluster)

    k = verb("rank", "effective ranks of real-token and [MASK] representations")
    k.add_argument("file", help="one sentence per line ('-': standard input)")
    k.add_argument("--layer", type=int, default=-1)
    k.add_argument("--mask-rate", type=float, default=0.15)

    g = verb("glauber", "tempered Glauber dynamics from a text")
    g.add_argument("text")
    g.add_argument("--steps", type=int, default=100)
    g.add_argument("--temperature", type=float, default=1.0)
    g.add_argument("--chains", type=int, default=4)
    g.add_argument("--seed", type=int, default=0)
    for verb in (p, t, j, r, k, g):
        verb.add_argument("--allow-unknown", action="store_true",
                          help="run even when the model does not know the text (a warning, not an error)")
        verb.add_argument("--max-minutes", type=float, default=MAX_MINUTES,
                          help=f"refuse, before any work, a run estimated longer (default {MAX_MINUTES:g})")


def run(args) -> int:
    """Run a parsed research verb; a deliberate error is one line on stderr (exit status 2 or 1)."""
    try:
        RESEARCH_COMMANDS[args.command](args)
    except (MLMBookError, ValueError, FileNotFoundError) as err:
        print(f"mlmbook: error: {err}", file=sys.stderr)
        return 2 if isinstance(err, (UsageError, TreebankNotFoundError)) else 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """The research verbs alone (``python -m mlmbook.cli_research``)."""
    parser = argparse.ArgumentParser(prog="mlmbook", description="The book's analyses on any masked LM.")
    add_research_commands(parser.add_subparsers(dest="command", required=True))
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
