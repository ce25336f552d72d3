"""The toy language: a probabilistic grammar whose distribution the book computes exactly.

==============  ==================================================================
module          idea
==============  ==================================================================
``vocab``       token ids: the special tokens, then the words; a real HF tokenizer
``pcfg``        inside–outside over a PCFG: exact conditionals, pair joints, sampling
``grammar``     the YAML grammar data → PCFG, :class:`Grammar`, gold trees
==============  ==================================================================
"""
from .grammar import GRAMMAR_DIR, Grammar, compile_grammar
from .pcfg import PCFG
from .vocab import MASK, N_SPECIAL, SPECIAL_TOKENS, make_tokenizer

__all__ = ["Grammar", "compile_grammar", "GRAMMAR_DIR", "PCFG", "SPECIAL_TOKENS", "MASK",
           "N_SPECIAL", "make_tokenizer"]
