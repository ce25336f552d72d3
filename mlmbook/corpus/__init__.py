"""Sentences with dependency trees: one :class:`Sentence` type, reading CoNLL-U treebanks, and the
front door from a treebank to a model (:func:`read_for_model`: the length policy, surface tokens,
the fit check)."""
from ..errors import TreebankError, TreebankNotFoundError
from .conllu import find_treebank, iter_conllu, load_treebank, parse_feats, read_conllu
from .fit import Fit, FitRules, check_fit
from .for_model import ModelCorpus, Window, read_for_model
from .sentence import (
    PUNCT_TAGS,
    Edge,
    Multiword,
    Sentence,
    Surface,
    edges_from_heads,
    encode,
    filter_length,
    model_words,
    remove_punct,
)

__all__ = ["Sentence", "Multiword", "Surface", "Edge", "edges_from_heads", "remove_punct", "filter_length",
           "PUNCT_TAGS", "encode", "model_words", "read_conllu", "iter_conllu", "find_treebank",
           "load_treebank", "parse_feats", "TreebankError", "TreebankNotFoundError", "Fit",
           "FitRules", "check_fit", "ModelCorpus", "Window", "read_for_model"]
