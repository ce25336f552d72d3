"""Reading dependency treebanks in CoNLL-U (https://universaldependencies.org/format.html).

One sentence per block of lines: comments ``# key = value``, ten tab-separated fields per
*syntactic word* (``ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC``), *multiword-token* lines
with a range ID (``3-4 don't``: kept in ``Sentence.multiword``, not words of the tree) and *empty
nodes* (``8.1``, skipped). ``HEAD`` is stored 0-based (:class:`mlmbook.corpus.Sentence`).
"""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import TreebankError, TreebankNotFoundError
from ..paths import data_dirs
from .sentence import Multiword, Sentence, filter_length, remove_punct

__all__ = ["read_conllu", "find_treebank", "load_treebank"]

_EWT_FILES = {split: f"en_ewt-ud-{split}.conllu" for split in ("train", "dev", "test")}
_DOWNLOAD_HINT = (
    "download UD English EWT (e.g. git clone --depth 1 "
    "https://github.com/UniversalDependencies/UD_English-EWT) and put its .conllu files in "
    "$MLMBOOK_DATA or $MLMBOOK_DATA/ud_english_ewt"
)


def _parse_int(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() else None


class _Block:
    """The lines of one sentence while it is being read."""

    def __init__(self) -> None:
        self.comments: list[tuple[int, str]] = []
        self.rows: list[tuple[int, list[str]]] = []       # syntactic words
        self.ranges: list[tuple[int, int, int, str]] = []  # lineno, start, end, form
        self.first_line: int | None = None


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
    state = [0] * n  # 0 unseen, 1 on current path, 2 reaches the root
    for start in range(n):
        path_nodes, i = [], start
        while i != -1 and state[i] == 0:
            state[i] = 1
            path_nodes.append(i)
            i = heads[i]
        if i != -1 and state[i] == 1:
            lineno, row = block.rows[i]
            raise TreebankError(f"cycle through word {row[0]} (expected every word to "
                                f"reach the root by following HEAD)", path, lineno)
        for j in path_nodes:
            state[j] = 2
    for lineno, start, end, _ in block.ranges:
        if end > n:
            raise TreebankError(f"range {start}-{end} goes past the last word (expected an "
                                f"end <= {n})", path, lineno)
    parts = [line[1:].partition("=") for _, line in block.comments]
    meta = {key.strip(): value.strip() for key, eq, value in parts if eq}
    cols = [c for _, c in block.rows]
    return Sentence(
        words=[c[1] for c in cols], upos=[c[3] for c in cols], heads=heads,
        deprels=[c[7] for c in cols], lemmas=[c[2] for c in cols], xpos=[c[4] for c in cols],
        feats=[{} if c[5] in ("_", "") else dict(kv.partition("=")[::2] for kv in c[5].split("|"))
               for c in cols],                       # FEATS "Number=Sing|Person=3" as a dict
        multiword=[Multiword(s - 1, e - 1, f) for _, s, e, f in block.ranges],
        sent_id=meta.get("sent_id"), text=meta.get("text"), meta=meta,
        source=f"{path}:{block.first_line}", source_index=list(range(n)))


def read_conllu(path: str | os.PathLike) -> list[Sentence]:
    """Every sentence of a CoNLL-U file (UTF-8), in file order; an empty file reads as ``[]``.
    Raises :class:`TreebankError` ``path:lineno: problem (expected ...)`` on the first malformed
    line (columns, IDs out of sequence, ranges, HEAD, not one root, a cycle, a missing blank line
    between sentences, no words, not UTF-8); a missing blank line at the very end is tolerated."""
    sentences, block = [], _Block()
    with open(path, "rb") as fh:
        for lineno, data in enumerate(fh, start=1):
            try:
                line = data.decode("utf-8").rstrip("\n").rstrip("\r")
            except UnicodeDecodeError as err:
                raise TreebankError(f"not UTF-8 text (byte 0x{data[err.start]:02x} at column "
                                    f"{err.start + 1}; expected UTF-8, as CoNLL-U requires: "
                                    f"convert the file, e.g. iconv -f latin1 -t utf-8)",
                                    path, lineno) from None
            if lineno == 1:
                line = line.lstrip("\ufeff")
            if line == "":
                if block.first_line is not None:
                    sentences.append(_finish(block, path))
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
    if block.first_line is not None:  # tolerated: a last sentence without its final blank line
        sentences.append(_finish(block, path))
    return sentences


def find_treebank(name_or_path: str | os.PathLike) -> Path:
    """Resolve a treebank file: an existing path, a file name (looked up, in order, in
    ``$MLMBOOK_DATA``, ``$MLMBOOK_DATA/ud_english_ewt``, ``<repo>/data/ud_english_ewt`` and
    ``<repo>/../shared/data/ud_english_ewt``), or ``"train"``, ``"dev"``, ``"test"`` for UD English
    EWT (``en_ewt-ud-<split>.conllu``). Raises :class:`TreebankNotFoundError` (a
    :class:`TreebankError` and a :class:`FileNotFoundError`), one line naming the places searched
    and how to download UD English EWT."""
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise TreebankError(f"a treebank is a file name or path, not {name_or_path!r} "
                            f"({type(name_or_path).__name__}); e.g. -p treebank en_ewt-ud-test.conllu")
    path = Path(name_or_path)
    if path.is_file():
        return path
    name = _EWT_FILES.get(str(name_or_path), str(name_or_path))
    searched = data_dirs("ud_english_ewt")
    for folder in searched:
        if (folder / name).is_file():
            return folder / name
    where = ", ".join(str(d) for d in searched)
    if name in _EWT_FILES.values():          # UD English EWT, which the reader may not have yet
        raise TreebankNotFoundError(f"treebank {name!r} not found (looked in: {where}); {_DOWNLOAD_HINT}")
    raise TreebankNotFoundError(f"treebank {str(name_or_path)!r} not found: no such file in {Path.cwd()} "
                                f"nor in the data folders ({where}); check the name, or give a path")


def load_treebank(name_or_path: str | os.PathLike, *, drop_punct: bool = True,
                  max_len: int | None = None, min_len: int = 2) -> list[Sentence]:
    """Find, read and prepare a treebank in one call: ``load_treebank("test", max_len=10)`` is UD
    English EWT test with punctuation removed and 2..10 words per sentence."""
    sents = read_conllu(find_treebank(name_or_path))
    if drop_punct:
        sents = [remove_punct(s) for s in sents]
    if max_len is not None:
        sents = filter_length(sents, max_len, min_len)
    return sents
