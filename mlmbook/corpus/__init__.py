"""Sentences with dependency trees: one :class:`Sentence` type, reading CoNLL-U treebanks, and the
front door from a treebank to a model (:func:`read_for_model`: the length policy, surface tokens,
the fit check)."""
from ..errors import TreebankError
from .conllu import find_treebank, load_treebank, read_conllu
from .fit import Fit, check_fit
from .for_model import ModelCorpus, Window, read_for_model
from .sentence import Sentence, Surface, edges_from_heads, encode, remove_punct

__all__ = ["Sentence", "Surface", "edges_from_heads", "remove_punct", "encode", "read_conllu",
           "find_treebank", "load_treebank", "TreebankError", "Fit", "check_fit", "ModelCorpus",
           "Window", "read_for_model"]
