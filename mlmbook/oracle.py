r"""One interface for "a masked language model": conditionals at masked positions.

Every chapter asks the same question of a model — *given a sentence with some positions
masked, what distribution does it put on the token at position i?* — and every answer goes
through :meth:`MaskedLM.logits`:

.. math:: \text{logits}[b, k, :] \;\to\; q(x_{p_{bk}} = \cdot \mid x_{\text{unmasked}})

:class:`HFMaskedLM` wraps any Hugging Face ``AutoModelForMaskedLM`` (a name or a local path);
:class:`TruthOracle` implements the same interface with the toy language's *exact*
conditionals, so any chapter can swap the model for the truth.  Use :func:`load_mlm`.

Speed: rows are batched within a token budget, the encoder runs once per row and the
output layer (the part with a vocabulary-sized matrix) only at the queried positions.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

__all__ = ["MaskedLM", "HFMaskedLM", "TruthOracle", "load_mlm", "check_masked_lm", "ModelLoadError", "SPECIAL_TOKENS"]

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


class ModelLoadError(RuntimeError):
    """A model or tokenizer could not be used; the message says why and what to do."""


class MaskedLM:
    """Common interface; subclasses implement :meth:`_logits_chunk`.

    Attributes
    ----------
    name : str
    vocab : list of str       token id -> token string
    mask_id : int
    special_ids : list of int  ids that never count as words (their logits are -inf)
    max_length : int          most content tokens a row may hold
    is_exact : bool           True for the truth oracle
    """

    name: str
    vocab: list
    mask_id: int
    special_ids: list
    max_length: int
    is_exact = False
    max_tokens = 16384            # rows are chunked so that one forward pass holds at most this many tokens
    _inference_mode = True        # the truth oracle needs autograd (its outside pass), so it turns this off

    @property
    def V(self) -> int:
        return len(self.vocab)

    # ---------------------------------------------------------------- the core call
    def logits(self, ids, positions) -> torch.Tensor:
        """Scores of every token at the queried positions.

        Parameters
        ----------
        ids : LongTensor (B, n)
            Token ids without special tokens; masked positions hold :attr:`mask_id`.
        positions : LongTensor (B, k)
            Positions to query in each row.

        Returns
        -------
        FloatTensor (B, k, V); special tokens get ``-inf``.
        """
        ids = torch.as_tensor(ids, dtype=torch.long)
        positions = torch.as_tensor(positions, dtype=torch.long)
        if ids.ndim == 1:
            ids = ids[None]
        if positions.ndim == 1:
            positions = positions[:, None] if positions.shape[0] == ids.shape[0] else positions[None]
        B, n = ids.shape
        if n == 0:
            raise ValueError("empty input: a row needs at least one token")
        if n > self.max_length:
            raise ValueError(f"input of {n} tokens is longer than {self.name}'s maximum of {self.max_length}; "
                             f"shorten or filter the sentences (e.g. by length) before querying")
        if positions.shape[0] != B or (positions.numel() and (positions.min() < 0 or positions.max() >= n)):
            raise ValueError(f"positions must have one row per input row and lie in [0, {n})")
        if B == 0:
            return torch.empty(0, positions.shape[1], self.V)
        chunk = max(1, self.max_tokens // (n + 2))
        with (torch.inference_mode() if self._inference_mode else torch.no_grad()):
            out = torch.cat([self._logits_chunk(ids[s:s + chunk], positions[s:s + chunk]) for s in range(0, B, chunk)])
            out[..., self.special_ids] = float("-inf")
        out = out.clone()                                  # a normal tensor, usable outside inference mode
        return out

    def log_probs(self, ids, positions) -> torch.Tensor:
        """``log_softmax`` of :meth:`logits`: shape (B, k, V)."""
        return torch.log_softmax(self.logits(ids, positions), dim=-1)

    def _logits_chunk(self, ids, positions):
        raise NotImplementedError

    # ---------------------------------------------------------------- words and pieces
    def encode_words(self, words):
        """Token ids of a word sequence and, for each word, the positions of its pieces."""
        raise NotImplementedError

    def logits_ragged(self, rows, positions):
        """:meth:`logits` for rows of different lengths: buckets by length, returns a list of (k_b, V)."""
        out = [None] * len(rows)
        buckets: dict = {}
        for b, (r, p) in enumerate(zip(rows, positions)):
            buckets.setdefault((len(r), len(p)), []).append(b)
        for idx in buckets.values():
            res = self.logits(torch.tensor([list(rows[b]) for b in idx]), torch.tensor([list(positions[b]) for b in idx]))
            for b, r in zip(idx, res):
                out[b] = r
        return out

    def pll(self, sentences) -> np.ndarray:
        """Pseudo-log-likelihood (Salazar et al. 2020): ``sum_t log q(x_t | x_{-t})`` per sentence.

        Every token (piece) is masked in turn; all rows of all sentences go through one
        length-bucketed batched call.
        """
        rows, pos, gold, owner = [], [], [], []
        for s, words in enumerate(sentences):
            ids, _ = self.encode_words(words)
            for t in range(len(ids)):
                r = list(ids)
                r[t] = self.mask_id
                rows.append(r), pos.append([t]), gold.append(ids[t]), owner.append(s)
        scores = np.zeros(len(sentences))
        for r, g, s in zip(self.logits_ragged(rows, pos), gold, owner):
            scores[s] += torch.log_softmax(r[0].double(), -1)[g].item()
        return scores


class HFMaskedLM(MaskedLM):
    """A Hugging Face masked LM (``AutoModelForMaskedLM`` + ``AutoTokenizer``) by name or path."""

    def __init__(self, name_or_path: str, device: str | None = None, attn_implementation: str = "eager"):
        from transformers import AutoModelForMaskedLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
        self.name = str(name_or_path)
        local = Path(name_or_path).expanduser()
        looks_like_path = str(name_or_path).startswith((".", "/", "~"))
        if looks_like_path and not local.exists():
            raise ModelLoadError(f"model path {name_or_path!r} does not exist; give a directory written by "
                                 f"save_pretrained() or a Hugging Face model name such as bert-base-uncased")
        src = str(local) if local.exists() else str(name_or_path)
        kw = {}
        if not local.exists() and os.environ.get("HF_HUB_OFFLINE", "") in ("1", "true", "TRUE"):
            kw["local_files_only"] = True
        try:
            tok = AutoTokenizer.from_pretrained(src, **kw)
            model = AutoModelForMaskedLM.from_pretrained(src, attn_implementation=attn_implementation, **kw)
        except ValueError as e:
            if "Unrecognized configuration class" in str(e) or "masked" in str(e).lower():
                raise ModelLoadError(f"{name_or_path!r} is not a masked language model (no masked-LM head); "
                                     f"use an encoder such as bert-base-uncased or roberta-base") from None
            raise ModelLoadError(f"cannot load {name_or_path!r}: {str(e).splitlines()[0]}") from None
        except OSError as e:
            raise ModelLoadError(
                f"cannot load model {name_or_path!r}: not a local directory and not in the Hugging Face cache "
                f"(offline?) — download it once with network (python -c \"from transformers import "
                f"AutoModelForMaskedLM as M; M.from_pretrained('{name_or_path}')\") or pass a local path") from None
        if tok.mask_token_id is None:
            raise ModelLoadError(f"the tokenizer of {name_or_path!r} has no mask token, so it cannot be queried as a "
                                 f"masked LM; use a model trained with [MASK] (BERT, RoBERTa, ...)")
        self.tokenizer, self.model = tok, model.eval()
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model.to(self.device)
        self.mask_id = tok.mask_token_id
        vocab = tok.get_vocab()
        self.vocab = [None] * max(len(vocab), model.config.vocab_size)
        for t, i in vocab.items():
            if i < len(self.vocab):
                self.vocab[i] = t
        self.vocab = [t if t is not None else f"<unused {i}>" for i, t in enumerate(self.vocab)]
        self.special_ids = sorted(set(tok.all_special_ids))
        probe = tok([self.vocab[self.mask_id]], is_split_into_words=True)["input_ids"]
        k = probe.index(self.mask_id)
        self._prefix, self._suffix = probe[:k], probe[k + 1:]
        limit = getattr(model.config, "max_position_embeddings", 512)
        self.max_length = limit - len(self._prefix) - len(self._suffix) - (2 if model.config.model_type in ("roberta", "xlm-roberta", "camembert") else 0)
        self._base = getattr(model, model.base_model_prefix)
        self._head = next((getattr(model, a) for a in ("cls", "lm_head", "predictions") if hasattr(model, a)), None)

    def _logits_chunk(self, ids, positions):
        B = ids.shape[0]
        pre = torch.tensor(self._prefix, dtype=torch.long).expand(B, -1)
        suf = torch.tensor(self._suffix, dtype=torch.long).expand(B, -1)
        full = torch.cat([pre, ids, suf], dim=1).to(self.device)
        pos = (positions + len(self._prefix)).to(self.device)
        if self._head is None:                                      # unknown architecture: full head
            logits = self.model(input_ids=full).logits
            return logits.gather(1, pos[..., None].expand(-1, -1, logits.shape[-1])).float().cpu()
        hidden = self._base(input_ids=full).last_hidden_state        # (B, n, H)
        picked = hidden.gather(1, pos[..., None].expand(-1, -1, hidden.shape[-1]))
        return self._head(picked).float().cpu()

    def encode_words(self, words):
        enc = self.tokenizer(list(words), is_split_into_words=True, add_special_tokens=False)
        ids, pieces = enc["input_ids"], [[] for _ in words]
        for p, w in enumerate(enc.word_ids()):
            pieces[w].append(p)
        return ids, pieces

    def hidden_states(self, ids) -> tuple:
        """All layers' hidden states for rows of content ids (B, n): tuple of (B, n, H), specials dropped."""
        ids = torch.as_tensor(ids, dtype=torch.long)
        B = ids.shape[0]
        full = torch.cat([torch.tensor(self._prefix).expand(B, -1), ids, torch.tensor(self._suffix).expand(B, -1)], 1)
        with torch.inference_mode():
            hs = self._base(input_ids=full.to(self.device), output_hidden_states=True).hidden_states
        a, b = len(self._prefix), len(self._prefix) + ids.shape[1]
        return tuple(h[:, a:b].float().cpu() for h in hs)


class TruthOracle(MaskedLM):
    """The toy language's exact conditionals behind the :class:`MaskedLM` interface.

    Logits are exact log-probabilities given the unmasked positions (other masked positions
    are marginalised); words the grammar forbids there get ``-inf``.  Token ids are those of
    the toy tokenizer: :data:`SPECIAL_TOKENS` followed by the grammar's vocabulary.
    """

    is_exact = True
    max_tokens = 4096
    _inference_mode = False

    def __init__(self, grammar):
        self.grammar = grammar
        self.name = f"truth[{grammar.name}]"
        self.vocab = SPECIAL_TOKENS + list(grammar.vocab)
        self.mask_id = SPECIAL_TOKENS.index("[MASK]")
        self.special_ids = list(range(len(SPECIAL_TOKENS)))
        self.max_length = grammar.max_length
        self._offset = len(SPECIAL_TOKENS)

    def _logits_chunk(self, ids, positions):
        masked = ids == self.mask_id
        if (ids[~masked] < self._offset).any():
            raise ValueError("the truth oracle only knows the toy vocabulary: found a special or unknown token")
        words = torch.where(masked, torch.zeros_like(ids), ids - self._offset)
        cond = self.grammar.pcfg.conditionals(words, masked)                     # (B, n, Vw)
        picked = cond.gather(1, positions[..., None].expand(-1, -1, cond.shape[-1]))
        out = torch.full((*positions.shape, self.V), float("-inf"), dtype=torch.float64)
        out[..., self._offset:] = picked.log()
        return out

    def encode_words(self, words):
        try:
            ids = [self._offset + self.grammar.word_id[w] for w in words]
        except KeyError as e:
            raise ValueError(f"word {e.args[0]!r} is not in the toy vocabulary") from None
        return ids, [[p] for p in range(len(ids))]


def check_masked_lm(name_or_path: str) -> None:
    """Fail fast (:class:`ModelLoadError`) unless ``name_or_path`` can be loaded as a masked LM.

    Reads only the configuration and the tokenizer (no weights): is the model there (locally
    or in the Hugging Face cache), is its architecture a masked LM, has its tokenizer a mask token?
    """
    from transformers import AutoConfig, AutoTokenizer
    from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING_NAMES

    local = Path(name_or_path).expanduser()
    if str(name_or_path).startswith((".", "/", "~")) and not local.exists():
        raise ModelLoadError(f"model path {name_or_path!r} does not exist; give a directory written by "
                             f"save_pretrained() or a Hugging Face model name such as bert-base-uncased")
    src = str(local) if local.exists() else str(name_or_path)
    kw = {"local_files_only": True} if os.environ.get("HF_HUB_OFFLINE", "") in ("1", "true") and not local.exists() else {}
    try:
        config = AutoConfig.from_pretrained(src, **kw)
        tok = AutoTokenizer.from_pretrained(src, **kw)
    except (OSError, ValueError):
        raise ModelLoadError(
            f"cannot load model {name_or_path!r}: not a local directory and not in the Hugging Face cache "
            f"(offline?) — download it once with network or pass a local path") from None
    if config.model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        raise ModelLoadError(f"{name_or_path!r} is a {config.model_type} model, not a masked language model; "
                             f"use an encoder such as bert-base-uncased or roberta-base")
    if tok.mask_token_id is None:
        raise ModelLoadError(f"the tokenizer of {name_or_path!r} has no mask token, so it cannot be queried as a "
                             f"masked LM; use a model trained with [MASK] (BERT, RoBERTa, ...)")


def load_mlm(name: str = "toy", profile: str = "full", seed: int = 0, **kw) -> MaskedLM:
    """Load a masked LM by name.

    ``"toy"`` / ``"toy_topic"``: the default tiny BERT trained on the toy language (trained on
    first use, then cached; ``profile`` picks the training preset); ``"truth"`` /
    ``"truth_topic"``: the exact oracle of the same language; anything else: a Hugging Face
    model name or a local directory.
    """
    if name in ("truth", "truth_topic"):
        from .language import Grammar
        return TruthOracle(Grammar.load("toy", topic=name.endswith("_topic")))
    if name in ("toy", "toy_topic"):
        from .train import load_or_train
        return HFMaskedLM(load_or_train(grammar=name, preset=profile, seed=seed, **kw))
    return HFMaskedLM(name, **kw)
