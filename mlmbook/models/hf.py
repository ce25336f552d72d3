"""A Hugging Face masked LM behind the :class:`~mlmbook.models.base.MaskedLM` interface."""
from __future__ import annotations

from pathlib import Path

import torch

from .. import threads
from ..errors import ModelLoadError
from ..paths import hf_offline
from .base import MaskedLM

__all__ = ["HFMaskedLM", "check_masked_lm"]


def _check_local(name_or_path, local: Path) -> None:
    """A local directory must hold a saved model (a ``config.json``)."""
    if local.is_dir() and not (local / "config.json").is_file():
        raise ModelLoadError(f"{str(name_or_path)!r} is a directory but not a saved model (no config.json); "
                             f"give a directory written by save_pretrained() or a Hugging Face model name")
    if local.exists() and not local.is_dir():
        raise ModelLoadError(f"{str(name_or_path)!r} is a file, not a model directory; give the folder that "
                             f"save_pretrained() wrote")


class HFMaskedLM(MaskedLM):
    """A Hugging Face masked LM (``AutoModelForMaskedLM`` + ``AutoTokenizer``) by name or path."""

    def __init__(self, name_or_path, device: str | None = None, attn_implementation: str = "eager",
                 name: str | None = None):
        from transformers import AutoModelForMaskedLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
        name_or_path = str(name_or_path)
        local = Path(name_or_path).expanduser()
        # a reader-facing name: never an absolute path or a cache key
        self.name = name or (local.name if local.exists() else name_or_path)
        looks_like_path = str(name_or_path).startswith((".", "/", "~"))
        if looks_like_path and not local.exists():
            raise ModelLoadError(f"model path {name_or_path!r} does not exist; give a directory written by "
                                 f"save_pretrained() or a Hugging Face model name such as bert-base-uncased")
        src = str(local) if local.exists() else str(name_or_path)
        _check_local(name_or_path, local)
        kw = {"local_files_only": True} if hf_offline() and not local.exists() else {}
        try:
            tok = AutoTokenizer.from_pretrained(src, **kw)
            model = AutoModelForMaskedLM.from_pretrained(src, attn_implementation=attn_implementation, **kw)
        except ValueError as e:
            if "Unrecognized configuration class" in str(e) or "masked" in str(e).lower():
                raise ModelLoadError(f"{name_or_path!r} is not a masked language model (no masked-LM head); "
                                     f"use an encoder such as bert-base-uncased or roberta-base") from None
            raise ModelLoadError(f"cannot load {name_or_path!r}: {str(e).splitlines()[0]}") from None
        except OSError:
            raise ModelLoadError(
                f"cannot load model {name_or_path!r}: not a local directory and not in the Hugging Face cache "
                f"(offline?) — download it once with network (python -c \"from transformers import "
                f"AutoModelForMaskedLM as M; M.from_pretrained('{name_or_path}')\") or pass a local path") from None
        if tok.mask_token_id is None:
            raise ModelLoadError(f"the tokenizer of {name_or_path!r} has no mask token, so it cannot be queried as a "
                                 f"masked LM; use a model trained with [MASK] (BERT, RoBERTa, ...)")
        self.tokenizer, self.model = tok, model.eval()
        threads.apply(large=getattr(model.config, "hidden_size", 0) >= threads.LARGE_HIDDEN)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model.to(self.device)
        if self.device != "cpu":
            self.max_tokens = 1 << 16                              # a GPU wants large batches
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

    @property
    def n_parameters(self) -> int:
        """Number of parameters of the whole model (encoder and LM head)."""
        return int(sum(p.numel() for p in self.model.parameters()))

    @property
    def encoder(self):
        """The Transformer body without the LM head (a ``transformers`` model), e.g. for fine-tuning."""
        return self._base

    @property
    def head(self):
        """The LM head (hidden states -> vocabulary scores), or None for an architecture it cannot find."""
        return self._head

    def wrap(self, ids) -> torch.Tensor:
        """Rows of content ids (B, n) with the model's special tokens added around them: (B, n + extra)."""
        ids = torch.as_tensor(ids, dtype=torch.long)
        B = ids.shape[0]
        return torch.cat([torch.tensor(self._prefix, dtype=torch.long).expand(B, -1), ids,
                          torch.tensor(self._suffix, dtype=torch.long).expand(B, -1)], 1)

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
    _check_local(name_or_path, local)
    src = str(local) if local.exists() else str(name_or_path)
    kw = {"local_files_only": True} if hf_offline() and not local.exists() else {}
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
