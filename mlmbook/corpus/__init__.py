"""Sentences with dependency trees: one :class:`Sentence` type, and reading CoNLL-U treebanks."""
from ..errors import TreebankError, TreebankNotFoundError
from .conllu import find_treebank, iter_conllu, load_treebank, parse_feats, read_conllu
from .sentence import PUNCT_TAGS, Edge, Multiword, Sentence, edges_from_heads, filter_length, remove_punct

__all__ = ["Sentence", "Multiword", "Edge", "edges_from_heads", "remove_punct", "filter_length", "PUNCT_TAGS",
           "read_conllu", "iter_conllu", "find_treebank", "load_treebank", "parse_feats", "TreebankError",
           "TreebankNotFoundError"]
