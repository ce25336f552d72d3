"""The toy language: a probabilistic grammar whose distribution the book computes exactly
(``vocab``: token ids; ``pcfg``: inside–outside; ``grammar``: the YAML data → :class:`Grammar`;
``knobs``: settings of the world; ``treemrf``: chapter 1's positive control)."""
from .grammar import GRAMMAR_DIR, Grammar, compile_grammar
from .vocab import MASK, N_SPECIAL, SPECIAL_TOKENS, make_tokenizer

__all__ = ["Grammar", "compile_grammar", "GRAMMAR_DIR", "SPECIAL_TOKENS", "MASK", "N_SPECIAL",
           "make_tokenizer"]
