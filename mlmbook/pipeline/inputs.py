"""Inputs checked before any work: every chapter's model, treebank and parameters, in one pass.

:data:`CHAPTER_INPUTS` declares what each chapter does with a treebank and the words it reads; the
chapters read it too (:func:`words_window`), so the check and the chapter cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import BuildError, MLMBookError, TreebankNotFoundError, UsageError

__all__ = ["check_inputs", "ChapterInputs", "CHAPTER_INPUTS", "words_window"]


@dataclass(frozen=True)
class ChapterInputs:
    """What a chapter does with a treebank (``"none"``: no such parameter; ``"any"``: any model
    reads it), whether a real model needs real text, its word window per profile, ``drop_punct``."""

    treebank: str = "none"
    needs_real_text: bool = False
    min_words: int = 2
    max_words: dict = field(default_factory=dict)
    drop_punct: bool = False


CHAPTER_INPUTS = {
    "00_toy_world": ChapterInputs(),
    "01_dependencies": ChapterInputs("any", False, 3, {"quick": 5, "full": 10}),
    "02_joints": ChapterInputs("any", True, 5, {"quick": 14, "full": 14}, drop_punct=True),
    "03_consistency": ChapterInputs("any", True, 5, {"quick": 14, "full": 14}),
    "04_deficiency": ChapterInputs("any", False, 2, {"quick": 40, "full": 40}),
    "05_glauber": ChapterInputs(),
    "06_diffusion": ChapterInputs(),
}
"""Per chapter slug, its :class:`ChapterInputs`; a chapter not listed is not checked."""

DEFAULT_TREEBANK = "test"
"""What a chapter that needs real text reads when no treebank is given (UD English EWT test)."""


def words_window(chapter: int | str, profile: str) -> tuple[int, int | None]:
    """``(min_words, max_words)`` a chapter (slug or number) reads in ``profile`` (else full's)."""
    if isinstance(chapter, int):
        chapter = next((slug for slug in CHAPTER_INPUTS if int(slug[:2]) == chapter), "")
    spec = CHAPTER_INPUTS.get(chapter)
    return spec.min_words, spec.max_words.get(profile, spec.max_words.get("full"))


def _is_toy(model: str) -> bool:
    from ..models.load import TOY_MODELS
    return str(model) in TOY_MODELS


class _Tokenizer:
    """A toy model's tokenizer without its weights (trained later in the build)."""

    def __init__(self, model: str):
        from ..toy import Grammar
        from ..toy.vocab import make_tokenizer
        grammar = Grammar.load("toy", topic=model == "toy_topic")
        self.tokenizer = make_tokenizer(grammar)
        vocab = self.tokenizer.get_vocab()
        self.vocab = sorted(vocab, key=vocab.get)
        self.V, self.name, self.max_length = len(self.vocab), str(model), grammar.max_length
        self.mask_id = self.tokenizer.mask_token_id
        self.special_ids = sorted(set(self.tokenizer.all_special_ids))

    def encode_words(self, words):
        enc = self.tokenizer(list(words), is_split_into_words=True, add_special_tokens=False)
        pieces = [[] for _ in words]
        for p, w in enumerate(enc.word_ids()):
            pieces[w].append(p)
        return enc["input_ids"], pieces

    def logits(self, *args, **kw):
        raise NotImplementedError("a tokenizer has no weights")


def _reader(model: str, cache: dict):
    """The model (loaded once: its weights are checked) or, for a toy model, its tokenizer."""
    if model not in cache:
        if _is_toy(model):
            cache[model] = _Tokenizer(model)
        else:
            from ..models.load import load_mlm
            cache[model] = load_mlm(model)
    return cache[model]


def check_inputs(plans, profile: str) -> None:
    """Check every planned chapter's inputs before any training or kernel: a real model without the
    text it needs is a :class:`UsageError` (all such, in one line); a model that does not load or a
    treebank not fitting the windows or the model (unless ``-p allow_unknown``) is a
    :class:`BuildError` naming the chapter."""
    from ..corpus.conllu import find_treebank
    from ..corpus.for_model import Window, read_for_model

    problems, todo, readers, checked = [], [], {}, set()
    for chapter, values in plans:
        spec = CHAPTER_INPUTS.get(chapter.slug)
        if spec is None:
            continue
        model, treebank = str(values.get("model", "toy")), values.get("treebank")
        if spec.treebank == "none":
            treebank = None
        elif treebank is None and spec.needs_real_text and not _is_toy(model):
            treebank = DEFAULT_TREEBANK
            try:
                find_treebank(DEFAULT_TREEBANK)
            except TreebankNotFoundError:
                problems.append(f"chapter {chapter.slug} with model {model!r} needs sentences of a real language: "
                                f"give -p treebank FILE (its default, UD English EWT test, is not on disk; "
                                f"data/README.md says how to get it)")
        todo.append((chapter, values, spec, model, treebank))
    if problems:
        raise UsageError("; ".join(problems))
    for chapter, values, spec, model, treebank in todo:
        try:
            if not _is_toy(model) and not str(model) == "truth":
                _reader(model, readers)                    # the weights load, or one line
            if treebank is None:
                continue
            lo, hi = words_window(chapter.slug, profile)
            key = (model, str(treebank), lo, hi, spec.drop_punct, bool(values.get("allow_unknown", False)))
            if key in checked:
                continue
            checked.add(key)
            read_for_model(_reader(model, readers), treebank, Window(lo, hi, drop_punct=spec.drop_punct, knob=None),
                           allow_unknown=bool(values.get("allow_unknown", False)))
        except BuildError:
            raise
        except MLMBookError as err:
            raise BuildError(f"chapter {chapter.slug}: {err}") from None
