"""Inputs checked before any work: every chapter's model, treebank and parameters, in one pass.

:func:`check_inputs` is called by the build after the parameters are planned and before any model is
trained or any kernel starts. Each failure is one line (a :class:`~mlmbook.errors.BuildError` naming
the chapter), caught in seconds instead of inside a kernel minutes later:

* a ``-p treebank`` that the chapter cannot use with this model (chapters 2 and 3 read the toy
  language with the toy model) is an error, not ignored;
* a model other than the toy one, in a chapter that needs sentences of a real language (chapters 2
  and 3), needs a treebank: the one given, or UD English EWT test when it is on disk;
* a model's weights must load (a truncated ``model.safetensors`` is one line, not a traceback);
* the treebank must hold sentences inside the chapter's window of words and the model's window of
  pieces;
* the model must fit the treebank (:func:`mlmbook.corpus.fit.check_fit` on a sample: unknown pieces,
  the model's own predictions) unless ``-p allow_unknown true``.

:data:`CHAPTER_INPUTS` declares, per chapter, what it does with a treebank and the window of words
it reads (chapters read it too: :func:`words_window`), so the check and the chapter cannot drift
apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import BuildError, MLMBookError, TreebankNotFoundError, UsageError

__all__ = ["check_inputs", "ChapterInputs", "CHAPTER_INPUTS", "words_window"]


@dataclass(frozen=True)
class ChapterInputs:
    """What a chapter does with a treebank.

    Attributes
    ----------
    treebank : str
        ``"none"``: no treebank parameter; ``"any"``: any model reads it (the toy model too);
        ``"other models"``: only a model other than the toy one reads it (the toy model reads its
        language).
    needs_real_text : bool
        A model other than the toy one needs sentences of a real language: the given treebank, or UD
        English EWT test when none is given.
    min_words : int
    max_words : dict
        Per profile, the most scored (non-punctuation) words of a sentence (None: only the model's
        window).
    drop_punct : bool
        The chapter removes punctuation before counting and reading.
    """

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
"""Per chapter (its slug), its :class:`ChapterInputs`; a chapter not listed (another book's) is not
checked."""

DEFAULT_TREEBANK = "test"
"""What a chapter that needs real text reads when no treebank is given (UD English EWT test)."""


def _spec(chapter: int | str) -> ChapterInputs | None:
    """The inputs of a chapter given by slug (``"01_dependencies"``) or number (``1``)."""
    if isinstance(chapter, int):
        chapter = next((slug for slug in CHAPTER_INPUTS if int(slug[:2]) == chapter), "")
    return CHAPTER_INPUTS.get(chapter)


def words_window(chapter: int | str, profile: str) -> tuple[int, int | None]:
    """``(min_words, max_words)`` a chapter (slug or number) reads in ``profile`` (the full
    profile's for a profile it does not size, e.g. ``extended``)."""
    spec = _spec(chapter)
    return spec.min_words, spec.max_words.get(profile, spec.max_words.get("full"))


def _is_toy(model: str) -> bool:
    from ..models.load import TOY_MODELS
    return str(model) in TOY_MODELS


class _Tokenizer:
    """A toy model's tokenizer without its weights (the toy models are trained later in the build):
    enough for the window and the unknown pieces (a word-level vocabulary: one piece per word, so no
    PLL is needed)."""

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


def _usage_problems(plans) -> list[str]:
    """Parameters a chapter cannot use, and real models without the text they need."""
    from ..corpus.conllu import find_treebank
    problems = []
    for chapter, values in plans:
        spec = CHAPTER_INPUTS.get(chapter.slug)
        if spec is None or spec.treebank == "none":
            continue
        model, treebank = str(values.get("model", "toy")), values.get("treebank")
        if treebank is not None and _is_toy(model) and spec.treebank == "other models":
            problems.append(f"chapter {chapter.slug} reads the toy language with the toy model and cannot use "
                            f"-p treebank (give -p model NAME to read the treebank, or leave this chapter out)")
        if treebank is None and not _is_toy(model) and spec.needs_real_text:
            try:
                find_treebank(DEFAULT_TREEBANK)
            except TreebankNotFoundError:
                problems.append(f"chapter {chapter.slug} with model {model!r} needs sentences of a real language: "
                                f"give -p treebank FILE (its default, UD English EWT test, is not on disk; "
                                f"data/README.md says how to get it)")
    return problems


def _treebank_of(spec: ChapterInputs, model: str, treebank):
    """The treebank the chapter will read with this model, or None."""
    if spec.treebank == "none" or (spec.treebank == "other models" and _is_toy(model)):
        return None
    if treebank is None and spec.needs_real_text and not _is_toy(model):
        return DEFAULT_TREEBANK
    return treebank


def check_inputs(plans, profile: str) -> None:
    """Check every planned chapter's inputs before any training or kernel (one-line errors).

    Parameters
    ----------
    plans : list of (Chapter, dict)
        What :func:`mlmbook.pipeline.chapters.plan_parameters` returns.
    profile : str
        The build's profile (it sets the chapters' windows of words).

    Raises
    ------
    UsageError
        A parameter a chapter cannot use, or a real model without the text it needs (every such
        problem, in one line).
    BuildError
        ``chapter NN_slug: <cause and remedy>``: the model does not load, no sentence of the
        treebank fits the chapter's and the model's windows, or the model does not fit the treebank.
    """
    from ..corpus.for_model import Window, read_for_model

    problems = _usage_problems(plans)
    if problems:
        raise UsageError("; ".join(problems))
    readers: dict = {}
    checked: set = set()
    for chapter, values in plans:
        spec = CHAPTER_INPUTS.get(chapter.slug)
        if spec is None:
            continue
        model = str(values.get("model", "toy"))
        treebank = _treebank_of(spec, model, values.get("treebank"))
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
