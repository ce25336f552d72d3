"""Reading dependency treebanks in the CoNLL-U format.

A CoNLL-U file (https://universaldependencies.org/format.html) holds one sentence
per block of lines, blocks separated by one blank line. A block is

* comment lines ``# key = value`` (``# sent_id = ...`` and ``# text = ...`` matter here),
* one line per *syntactic word*, ten tab-separated fields
  ``ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC`` with integer ``ID`` 1, 2, ...,
* *multiword-token* lines with a range ID such as ``3-4 don't``: one surface token
  that is split into the syntactic words 3 (``do``) and 4 (``n't``),
* *empty nodes* with a decimal ID such as ``8.1``, used only by enhanced dependencies.

The basic tree is the ``HEAD`` column of the syntactic words. In this package a sentence
stores it 0-based: ``heads[i]`` is the index of word ``i``'s head and ``-1`` marks the root,
the same convention as :mod:`mlmbook.language`. Multiword tokens are kept (in
``Sentence.multiword``) so the surface text can be rebuilt, but they are not words of the
tree; empty nodes are skipped.

A malformed file raises :class:`TreebankError` whose message is one line,
``path:lineno: what is wrong (expected ...)``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Iterator

__all__ = [
    "TreebankError",
    "TreebankNotFoundError",
    "Multiword",
    "Sentence",
    "read_conllu",
    "iter_conllu",
    "find_treebank",
    "load_treebank",
    "remove_punct",
    "gold_edges",
    "filter_length",
    "PUNCT_TAGS",
]

#: UPOS tags removed by :func:`remove_punct` by default.
PUNCT_TAGS = ("PUNCT",)

_EWT_DIR = "ud_english_ewt"
_EWT_FILES = {
    "train": "en_ewt-ud-train.conllu",
    "dev": "en_ewt-ud-dev.conllu",
    "test": "en_ewt-ud-test.conllu",
}
_DOWNLOAD_HINT = (
    "download UD English EWT (e.g. git clone --depth 1 "
    "https://github.com/UniversalDependencies/UD_English-EWT) and put its .conllu files in "
    "$MLMBOOK_DATA or $MLMBOOK_DATA/ud_english_ewt"
)


class TreebankError(ValueError):
    """A CoNLL-U file is malformed, or a treebank cannot be found.

    Attributes
    ----------
    path, lineno : where the problem is (``lineno`` is 1-based; ``None`` if not a line).
    """

    def __init__(self, message: str, path: str | os.PathLike | None = None,
                 lineno: int | None = None):
        self.path = None if path is None else str(path)
        self.lineno = lineno
        where = "" if path is None else (f"{path}:{lineno}: " if lineno else f"{path}: ")
        super().__init__(where + message)


class TreebankNotFoundError(TreebankError, FileNotFoundError):
    """A treebank file could not be found (also a :class:`FileNotFoundError`)."""


@dataclass
class Multiword:
    """A multiword (surface) token such as ``don't`` = words ``start..end`` (inclusive)."""

    start: int
    end: int
    form: str


@dataclass
class Sentence:
    """One sentence: its syntactic words and basic dependency tree.

    ``words, lemmas, upos, xpos, feats, heads, deprels`` are parallel lists over the
    syntactic words. ``heads[i]`` is the 0-based index of the head of word ``i``, ``-1`` for
    the root. ``feats`` keeps the raw FEATS strings (``"Number=Sing"``, ``"_"``).
    ``multiword`` lists the multiword tokens (0-based, inclusive word ranges).
    ``source_index[i]`` is the position of word ``i`` in the sentence as read from the file
    (it changes only when words are removed, e.g. by :func:`remove_punct`).
    """

    words: list[str]
    upos: list[str]
    heads: list[int]
    deprels: list[str]
    lemmas: list[str] = field(default_factory=list)
    xpos: list[str] = field(default_factory=list)
    feats: list[str] = field(default_factory=list)
    multiword: list[Multiword] = field(default_factory=list)
    sent_id: str | None = None
    text: str | None = None
    meta: dict[str, str] = field(default_factory=dict)
    source: str | None = None
    source_index: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.words)

    @property
    def tokens(self) -> list[str]:
        """Surface tokens: words, with each multiword range replaced by its surface form."""
        starts = {m.start: m for m in self.multiword}
        out, i = [], 0
        while i < len(self.words):
            if i in starts:
                out.append(starts[i].form)
                i = starts[i].end + 1
            else:
                out.append(self.words[i])
                i += 1
        return out


# ----------------------------------------------------------------------------- reading


def _parse_int(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() else None


class _Block:
    """The lines of one sentence while it is being read."""

    def __init__(self) -> None:
        self.comments: list[tuple[int, str]] = []
        self.rows: list[tuple[int, list[str]]] = []       # syntactic words
        self.ranges: list[tuple[int, int, int, str]] = []  # lineno, start, end, form
        self.first_line: int | None = None

    def empty(self) -> bool:
        return self.first_line is None


def _check_word_line(cols: list[str], lineno: int, block: _Block, path) -> None:
    """Validate the ID of a line and file it as word, multiword range, or empty node."""
    wid = cols[0]
    n_words = len(block.rows)
    if "-" in wid:
        a, _, b = wid.partition("-")
        start, end = _parse_int(a), _parse_int(b)
        if start is None or end is None:
            raise TreebankError(f"invalid range ID {wid!r} (expected two integers like 3-4)",
                                path, lineno)
        if not start < end:
            raise TreebankError(f"empty range {wid!r} (expected start < end, like 3-4)",
                                path, lineno)
        if start != n_words + 1:
            raise TreebankError(f"range {wid!r} out of sequence (expected it to start at "
                                f"word {n_words + 1})", path, lineno)
        if block.ranges and block.ranges[-1][2] >= start:
            raise TreebankError(f"range {wid!r} overlaps the previous range (expected "
                                f"disjoint ranges)", path, lineno)
        block.ranges.append((lineno, start, end, cols[1]))
    elif "." in wid:
        a, _, b = wid.partition(".")
        major, minor = _parse_int(a), _parse_int(b)
        if major is None or minor is None or minor == 0:
            raise TreebankError(f"invalid empty-node ID {wid!r} (expected a decimal like 8.1)",
                                path, lineno)
        if major != n_words:
            raise TreebankError(f"empty node {wid!r} out of sequence (expected "
                                f"{n_words}.N after word {n_words})", path, lineno)
    else:
        num = _parse_int(wid)
        if num is None:
            raise TreebankError(f"invalid ID {wid!r} (expected an integer, a range like 3-4 "
                                f"or an empty node like 8.1)", path, lineno)
        if num != n_words + 1:
            hint = "; missing blank line between sentences?" if num == 1 else ""
            raise TreebankError(f"word ID {num} out of sequence (expected {n_words + 1}{hint})",
                                path, lineno)
        for name, value in (("FORM", cols[1]), ("UPOS", cols[3]), ("HEAD", cols[6]),
                            ("DEPREL", cols[7])):
            if value == "":
                raise TreebankError(f"empty {name} field (expected a value or '_')",
                                    path, lineno)
        block.rows.append((lineno, cols))


def _finish(block: _Block, path) -> Sentence:
    """Turn a completed block into a :class:`Sentence`, checking the tree."""
    if not block.rows:
        raise TreebankError("sentence has no words (expected at least one word line before "
                            "the blank line)", path, block.first_line)
    n = len(block.rows)
    heads: list[int] = []
    for lineno, cols in block.rows:
        head = _parse_int(cols[6])
        if head is None:
            raise TreebankError(f"invalid HEAD {cols[6]!r} (expected an integer 0..{n})",
                                path, lineno)
        if head > n:
            raise TreebankError(f"HEAD {head} out of range (expected 0..{n})", path, lineno)
        if head == int(cols[0]):
            raise TreebankError(f"word {head} is its own head (expected another word or 0)",
                                path, lineno)
        heads.append(head - 1)
    roots = [i for i, h in enumerate(heads) if h == -1]
    if len(roots) != 1:
        lineno = block.rows[roots[1]][0] if roots else block.rows[0][0]
        found = "no root" if not roots else f"{len(roots)} roots"
        raise TreebankError(f"{found} in the sentence (expected exactly one word with HEAD 0)",
                            path, lineno)
    _check_acyclic(heads, block, path)
    for lineno, start, end, _ in block.ranges:
        if end > n:
            raise TreebankError(f"range {start}-{end} goes past the last word (expected an "
                                f"end <= {n})", path, lineno)
    meta = {}
    for _, line in block.comments:
        key, eq, value = line[1:].partition("=")
        if eq:
            meta[key.strip()] = value.strip()
    cols = [c for _, c in block.rows]
    return Sentence(
        words=[c[1] for c in cols], upos=[c[3] for c in cols], heads=heads,
        deprels=[c[7] for c in cols], lemmas=[c[2] for c in cols], xpos=[c[4] for c in cols],
        feats=[c[5] for c in cols],
        multiword=[Multiword(s - 1, e - 1, f) for _, s, e, f in block.ranges],
        sent_id=meta.get("sent_id"), text=meta.get("text"), meta=meta,
        source=f"{path}:{block.first_line}", source_index=list(range(n)))


def _check_acyclic(heads: list[int], block: _Block, path) -> None:
    """Raise if following heads from some word never reaches the root."""
    state = [0] * len(heads)  # 0 unseen, 1 on current path, 2 reaches the root
    for start in range(len(heads)):
        path_nodes, i = [], start
        while i != -1 and state[i] == 0:
            state[i] = 1
            path_nodes.append(i)
            i = heads[i]
        if i != -1 and state[i] == 1:
            lineno, cols = block.rows[i]
            raise TreebankError(f"cycle through word {cols[0]} (expected every word to "
                                f"reach the root by following HEAD)", path, lineno)
        for j in path_nodes:
            state[j] = 2


def iter_conllu(path: str | os.PathLike) -> Iterator[Sentence]:
    """Yield the sentences of a CoNLL-U file one by one (see :func:`read_conllu`)."""
    block = _Block()
    with open(path, encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, start=1):
            line = raw.rstrip("\n").rstrip("\r")
            if lineno == 1:
                line = line.lstrip("\ufeff")
            if line == "":
                if not block.empty():
                    yield _finish(block, path)
                    block = _Block()
                continue
            if line.strip() == "":
                raise TreebankError("line holds only whitespace (expected an empty line)",
                                    path, lineno)
            if block.first_line is None:
                block.first_line = lineno
            if line.startswith("#"):
                if block.rows or block.ranges:
                    raise TreebankError("comment inside a sentence (expected a blank line "
                                        "before the next sentence's comments)", path, lineno)
                block.comments.append((lineno, line))
                continue
            cols = line.split("\t")
            if len(cols) != 10:
                raise TreebankError(f"{len(cols)} tab-separated columns (expected 10)",
                                    path, lineno)
            _check_word_line(cols, lineno, block, path)
    if not block.empty():  # tolerated: a last sentence without its final blank line
        yield _finish(block, path)


def read_conllu(path: str | os.PathLike) -> list[Sentence]:
    """Read every sentence of a CoNLL-U file.

    Parameters
    ----------
    path : a ``.conllu`` file (UTF-8).

    Returns
    -------
    list of :class:`Sentence`, in file order.

    Raises
    ------
    TreebankError
        On the first malformed line, with message ``path:lineno: problem (expected ...)``.
        Checked: 10 tab-separated columns; IDs are integers 1, 2, ... in order, ranges
        ``a-b`` (a < b, starting at the next word, ending inside the sentence) or empty
        nodes ``k.m`` after word k; HEAD an integer in 0..n, not the word itself; exactly
        one root; no cycles; no comment after a sentence's word lines (a missing blank
        line between sentences); no whitespace-only lines; no sentence without words.
        A missing blank line at the very end of the file is tolerated.
    """
    return list(iter_conllu(path))


# ----------------------------------------------------------------------------- locating


def _repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


def _candidate_dirs() -> list[Path]:
    dirs = []
    env = os.environ.get("MLMBOOK_DATA")
    if env:
        dirs += [Path(env), Path(env) / _EWT_DIR]
    root = _repo_root()
    dirs += [root / "data" / _EWT_DIR, root.parent / "shared" / "data" / _EWT_DIR]
    return dirs


def find_treebank(name_or_path: str | os.PathLike) -> Path:
    """Resolve a treebank file.

    ``name_or_path`` is an existing path, a file name, or one of the short names
    ``"train"``, ``"dev"``, ``"test"`` for UD English EWT (``en_ewt-ud-<split>.conllu``).
    A file name is looked up, in order, in ``$MLMBOOK_DATA``, ``$MLMBOOK_DATA/ud_english_ewt``,
    ``<repo>/data/ud_english_ewt`` and ``<repo>/../shared/data/ud_english_ewt``.

    Raises
    ------
    TreebankNotFoundError
        (a :class:`TreebankError` and a :class:`FileNotFoundError`) with a one-line message
        naming the places searched and how to download UD English EWT.
    """
    path = Path(name_or_path)
    if path.is_file():
        return path
    name = _EWT_FILES.get(str(name_or_path), str(name_or_path))
    searched = _candidate_dirs()
    for folder in searched:
        if (folder / name).is_file():
            return folder / name
    where = ", ".join(str(d) for d in searched)
    raise TreebankNotFoundError(f"treebank {name!r} not found (looked in: {where}); {_DOWNLOAD_HINT}")


# ----------------------------------------------------------------------------- trees


def remove_punct(sentence: Sentence, punct_tags: Iterable[str] = PUNCT_TAGS) -> Sentence:
    """Drop punctuation words (UPOS in ``punct_tags``) and repair the tree.

    A word whose head is punctuation is re-attached to its nearest non-punctuation
    ancestor. In UD punctuation is almost always a leaf, so this rarely matters. If a word
    has no non-punctuation ancestor (the root itself was punctuation), it becomes a root;
    when that leaves several roots, the leftmost stays the root and the others attach to it,
    so the result is always a single tree. (In UD English EWT a punctuation root only occurs
    in sentences made of punctuation alone, which become empty.)

    Multiword tokens shrink to their surviving words and disappear if none survive;
    ``source_index`` keeps each surviving word's original position.
    """
    tags = set(punct_tags)
    keep = [i for i, t in enumerate(sentence.upos) if t not in tags]
    new_index = {old: new for new, old in enumerate(keep)}

    def kept_ancestor(i: int) -> int:
        h = sentence.heads[i]
        while h != -1 and h not in new_index:
            h = sentence.heads[h]
        return -1 if h == -1 else new_index[h]

    heads = [kept_ancestor(i) for i in keep]
    roots = [i for i, h in enumerate(heads) if h == -1]
    for extra in roots[1:]:
        heads[extra] = roots[0]
    multiword = []
    for m in sentence.multiword:
        inside = [new_index[i] for i in range(m.start, m.end + 1) if i in new_index]
        if inside:
            multiword.append(Multiword(inside[0], inside[-1], m.form))
    pick = (lambda xs: [xs[i] for i in keep] if len(xs) == len(sentence.words) else list(xs))
    return replace(
        sentence, words=pick(sentence.words), upos=pick(sentence.upos), heads=heads,
        deprels=pick(sentence.deprels), lemmas=pick(sentence.lemmas), xpos=pick(sentence.xpos),
        feats=pick(sentence.feats), multiword=multiword, meta=dict(sentence.meta),
        source_index=pick(sentence.source_index) if sentence.source_index else keep)


def gold_edges(sentence) -> set[tuple[int, int]]:
    """The tree's undirected edges ``{(min(i, h), max(i, h))}``, root arc excluded.

    Accepts anything with a ``heads`` list (a :class:`Sentence`, a
    :class:`mlmbook.language.Sentence`) or the heads list itself.
    """
    heads = getattr(sentence, "heads", sentence)
    return {(min(i, h), max(i, h)) for i, h in enumerate(heads) if h >= 0}


def filter_length(sentences: Iterable[Sentence], max_len: int, min_len: int = 2
                  ) -> list[Sentence]:
    """Keep sentences with ``min_len <= len(words) <= max_len``.

    Lengths count the words as given, so for the WSJ10-style setting call
    :func:`remove_punct` first: ``filter_length(map(remove_punct, sents), 10)``.
    The default ``min_len=2`` drops one-word sentences, which have no edge to score.
    """
    return [s for s in sentences if min_len <= len(s.words) <= max_len]


def load_treebank(name_or_path: str | os.PathLike, *, drop_punct: bool = True,
                  max_len: int | None = None, min_len: int = 2) -> list[Sentence]:
    """Find, read and prepare a treebank in one call.

    ``load_treebank("test", max_len=10)`` is UD English EWT test with punctuation removed
    and 2..10 words per sentence.
    """
    sents = read_conllu(find_treebank(name_or_path))
    if drop_punct:
        sents = [remove_punct(s) for s in sents]
    if max_len is not None:
        sents = filter_length(sents, max_len, min_len)
    return sents
