"""A Hugging Face masked LM behind the :class:`~mlmbook.models.base.MaskedLM` interface:
``HFMaskedLM.from_pretrained("bert-base-uncased")`` loads one, with one-line errors that say what to
do; ``HFMaskedLM(model, tokenizer)`` only wraps loaded objects (no file, network or global state).
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

import torch

from .. import threads
from ..errors import ModelLoadError
from ..paths import hf_offline
from .base import MaskedLMBase

__all__ = ["HFMaskedLM", "check_masked_lm"]

_WEIGHTS = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json", "pytorch_model.bin.index.json")
_TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model",
                    "sentencepiece.bpe.model", "tokenizer.model")
_ROBERTA_LIKE = ("roberta", "xlm-roberta", "camembert")


def _source(name_or_path) -> tuple[str, bool, dict]:
    """Where to load from (a checked local directory or a Hub name), whether it is local, and the
    keywords of transformers' ``from_pretrained`` (offline: only the Hugging Face cache)."""
    name_or_path = str(name_or_path)
    local = Path(name_or_path).expanduser()
    if name_or_path.startswith((".", "/", "~")) and not local.exists():
        raise ModelLoadError(f"model path {name_or_path!r} does not exist; give a directory written by "
                             f"save_pretrained() or a Hugging Face model name such as bert-base-uncased")
    if not local.exists():
        return name_or_path, False, {"local_files_only": True} if hf_offline() else {}
    if not local.is_dir():
        raise ModelLoadError(f"{name_or_path!r} is a file, not a model directory; give the folder that "
                             f"save_pretrained() wrote")
    if not (local / "config.json").is_file():
        raise ModelLoadError(f"{name_or_path!r} is a directory but not a saved model (no config.json); "
                             f"give a directory written by save_pretrained() or a Hugging Face model name")
    return str(local), True, {}


def _damaged(src: str, local: bool, what: str, err: Exception) -> ModelLoadError:
    """The one-line error for a file that exists but cannot be read (truncated, corrupt)."""
    first = (str(err).strip().splitlines() or [type(err).__name__])[0][:160]
    if local:
        remedy = "save the model again with save_pretrained() (an interrupted copy or download leaves a short file)"
    else:
        remedy = (f"delete it from the Hugging Face cache (huggingface-cli delete-cache, or remove the folder "
                  f"models--{src.replace('/', '--')} under $HF_HOME/hub) and download it again")
    return ModelLoadError(f"the {what} of {src!r} is damaged ({first}); {remedy}")


def _no_mask_token(where) -> ModelLoadError:
    return ModelLoadError(
        f"the tokenizer of {str(where)!r} has no mask token, so it cannot be queried as a "
        "masked LM; use a model trained with [MASK] (BERT, RoBERTa, ...)")


def _not_found(src: str) -> ModelLoadError:
    return ModelLoadError(
        f"cannot load model {src!r}: not a local directory and not in the Hugging Face cache "
        f"(offline?) — download it once with network (python -c \"from transformers import "
        f"AutoModelForMaskedLM as M; M.from_pretrained('{src}')\") or pass a local path")


@contextmanager
def _quiet_transformers():
    """Silence transformers' logging and progress bars for the block, then restore them."""
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def _load_tokenizer(src: str, local: bool, kw: dict):
    from transformers import AutoTokenizer

    if local and not any((Path(src) / f).is_file() for f in _TOKENIZER_FILES):
        raise ModelLoadError(f"{src!r} has no tokenizer files (tokenizer.json, vocab.txt, ...); save the tokenizer "
                             f"into the same folder with tokenizer.save_pretrained()")
    try:
        return AutoTokenizer.from_pretrained(src, **kw)
    except OSError as e:
        if "not a valid JSON" in str(e):
            raise _damaged(src, local, "configuration (config.json)", e) from None
        raise (_damaged(src, local, "tokenizer", e) if local else _not_found(src)) from None
    except ValueError as e:  # JSONDecodeError of a truncated tokenizer.json
        raise _damaged(src, local, "tokenizer", e) from None


def _load_model(src: str, local: bool, kw: dict, attn_implementation: str):
    from transformers import AutoModelForMaskedLM

    if local and not any((Path(src) / f).is_file() for f in _WEIGHTS):
        raise ModelLoadError(f"{src!r} has no weights (model.safetensors or pytorch_model.bin); save the model "
                             f"into that folder with model.save_pretrained()")
    try:
        return AutoModelForMaskedLM.from_pretrained(src, attn_implementation=attn_implementation, **kw)
    except ValueError as e:
        if "Unrecognized configuration class" in str(e) or "masked" in str(e).lower():
            raise ModelLoadError(f"{src!r} is not a masked language model (no masked-LM head); "
                                 f"use an encoder such as bert-base-uncased or roberta-base") from None
        raise ModelLoadError(f"cannot load {src!r}: {(str(e).splitlines() or [''])[0]}") from None
    except OSError as e:
        if "not a valid JSON" in str(e):
            raise _damaged(src, local, "configuration (config.json)", e) from None
        raise (_damaged(src, local, "weight file", e) if local else _not_found(src)) from None
    except Exception as e:  # safetensors / torch.load on a short or corrupt file
        raise _damaged(src, local, "weight file", e) from None


class HFMaskedLM(MaskedLMBase):
    """A loaded Hugging Face masked LM (put in evaluation mode, left on its device) and its
    tokenizer (with a mask token) as a :class:`MaskedLM`; ``name`` defaults to the model's
    ``name_or_path``. ``encoder`` is the Transformer body without the LM head (a ``transformers``
    model, to fine-tune), ``head`` the LM head (None for an unknown architecture)."""

    supports_padding = True
    thread_safe = True                        # inference only: a forward pass changes no state

    def __init__(self, model, tokenizer, name: str | None = None):
        if isinstance(model, (str, os.PathLike)):
            raise TypeError("HFMaskedLM(model, tokenizer) wraps loaded objects; load a name or a path with "
                            "HFMaskedLM.from_pretrained(...) or mlmbook.load_mlm(...)")
        if tokenizer.mask_token_id is None:
            raise _no_mask_token(getattr(tokenizer, "name_or_path", "") or "this model")
        config = model.config
        self.tokenizer, self.model = tokenizer, model.eval()
        self.name = name or Path(str(getattr(model, "name_or_path", "") or "model")).name
        self.device = next(model.parameters()).device
        if self.device.type != "cpu":
            self.max_tokens = 1 << 16                              # a GPU wants large batches
        self.hidden_size = int(getattr(config, "hidden_size", 0) or 0)
        self.mask_id = tokenizer.mask_token_id
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        by_id = {i: t for t, i in tokenizer.get_vocab().items()}
        size = max(len(by_id), config.vocab_size)
        self.vocab = [by_id.get(i, f"<unused {i}>") for i in range(size)]
        self.special_ids = sorted(set(tokenizer.all_special_ids))
        probe = tokenizer([self.vocab[self.mask_id]], is_split_into_words=True)["input_ids"]
        k = probe.index(self.mask_id)
        self._prefix, self._suffix = probe[:k], probe[k + 1:]
        limit = getattr(config, "max_position_embeddings", 512)
        self.max_length = (limit - len(self._prefix) - len(self._suffix)
                           - (2 if config.model_type in _ROBERTA_LIKE else 0))
        self.encoder = getattr(model, model.base_model_prefix)
        self.head = next((getattr(model, a) for a in ("cls", "lm_head", "predictions")
                          if hasattr(model, a)), None)

    @classmethod
    def from_pretrained(cls, name_or_path, name: str | None = None, device: str | None = None,
                        attn_implementation: str = "eager") -> HFMaskedLM:
        """Load a masked LM by Hugging Face name or from a directory written by ``save_pretrained``
        onto ``device`` (default: CUDA when available); ``name`` defaults to the folder's or the Hub
        name, ``attn_implementation`` goes to transformers (``"eager"`` runs everywhere).

        Raises :class:`ModelLoadError`, one line with the cause and what to do: a missing path or
        file, a damaged file (in the folder or the Hugging Face cache), not a masked LM, offline
        without a cached copy.
        """
        src, local, kw = _source(name_or_path)
        with _quiet_transformers():
            tokenizer = _load_tokenizer(src, local, kw)
            if tokenizer.mask_token_id is None:
                raise _no_mask_token(name_or_path)
            model = _load_model(src, local, kw, attn_implementation)
        model.to(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        return cls(model, tokenizer, name=name or (Path(src).name if local else str(name_or_path)))

    def _logits_chunk(self, ids, positions, lengths=None):
        full, attention = self._wrap(ids, lengths)
        pos = (positions + len(self._prefix)).to(self.device)
        if self.head is None:  # unknown architecture: full head
            logits = self.model(input_ids=full, attention_mask=attention).logits
            return logits.gather(1, pos[..., None].expand(-1, -1, logits.shape[-1])).float().cpu()
        hidden = self.encoder(input_ids=full, attention_mask=attention).last_hidden_state
        picked = hidden.gather(1, pos[..., None].expand(-1, -1, hidden.shape[-1]))  # (B, k, H)
        return self.head(picked).float().cpu()

    def _wrap(self, ids, lengths=None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Rows with the model's special tokens around them, and the attention mask when padded."""
        B, n = ids.shape
        pre = torch.tensor(self._prefix, dtype=torch.long).expand(B, -1)
        suf = torch.tensor(self._suffix, dtype=torch.long).expand(B, -1)
        if lengths is None:
            return torch.cat([pre, ids, suf], dim=1).to(self.device), None
        a, width = len(self._prefix), len(self._prefix) + n + len(self._suffix)
        full = torch.full((B, width), self.pad_id, dtype=torch.long)
        full[:, :a] = pre
        content = torch.arange(n)[None] < lengths[:, None]
        full[:, a:a + n] = torch.where(content, ids, torch.full_like(ids, self.pad_id))
        rows = torch.arange(B)[:, None]
        full[rows, a + lengths[:, None] + torch.arange(len(self._suffix))[None]] = suf
        attention = (torch.arange(width)[None] < (a + lengths + len(self._suffix))[:, None]).long()
        return full.to(self.device), attention.to(self.device)

    @property
    def n_parameters(self) -> int:
        """Number of parameters of the whole model (encoder and LM head)."""
        return int(sum(p.numel() for p in self.model.parameters()))

    def wrap(self, ids) -> torch.Tensor:
        """Rows of content ids (B, n) with the model's special tokens around them (B, n + extra)."""
        return self._wrap(torch.as_tensor(ids, dtype=torch.long))[0].cpu()

    def encode_words(self, words):
        enc = self.tokenizer(list(words), is_split_into_words=True, add_special_tokens=False)
        ids, pieces = enc["input_ids"], [[] for _ in words]
        for p, w in enumerate(enc.word_ids()):
            pieces[w].append(p)
        return ids, pieces

    def encode_text(self, text: str) -> tuple[list[int], list[list[int]], list[str]]:
        """Token ids, the pieces of each word, and the words of a plain string, as the tokenizer
        splits it (a slow tokenizer, which keeps no offsets: at white space)."""
        if not getattr(self.tokenizer, "is_fast", False):
            return super().encode_text(text)
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        pieces, spans, last = [], [], None
        for p, (w, (a, b)) in enumerate(zip(enc.word_ids(), enc["offset_mapping"])):
            if w is None:
                continue
            if w != last:
                pieces.append([]), spans.append([a, b])
                last = w
            pieces[-1].append(p)
            spans[-1][1] = b
        return enc["input_ids"], pieces, [text[a:b] for a, b in spans]

    def hidden_states(self, ids) -> tuple:
        """All layers' hidden states at the content positions of rows ``ids``: (B, n, H) each."""
        ids = torch.as_tensor(ids, dtype=torch.long)
        with threads.limited(threads.is_large(self)), torch.inference_mode():
            hs = self.encoder(input_ids=self._wrap(ids)[0], output_hidden_states=True).hidden_states
        a, b = len(self._prefix), len(self._prefix) + ids.shape[1]
        return tuple(h[:, a:b].float().cpu() for h in hs)


def check_masked_lm(name_or_path: str) -> None:
    """Fail fast (:class:`ModelLoadError`) unless ``name_or_path`` can be loaded as a masked LM,
    reading only the configuration and the tokenizer (no weights)."""
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING_NAMES

    src, local, kw = _source(name_or_path)
    with _quiet_transformers():
        try:
            config = AutoConfig.from_pretrained(src, **kw)
        except (OSError, ValueError) as e:
            raise (_damaged(src, local, "configuration (config.json)", e) if local else _not_found(src)) from None
        tokenizer = _load_tokenizer(src, local, kw)
    if config.model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        raise ModelLoadError(f"{name_or_path!r} is a {config.model_type} model, not a masked language model; "
                             f"use an encoder such as bert-base-uncased or roberta-base")
    if tokenizer.mask_token_id is None:
        raise _no_mask_token(name_or_path)
