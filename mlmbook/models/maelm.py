r"""MAE-LM (Meng et al., 2023): masked language modelling with ``[MASK]`` kept out of the encoder.

The *encoder* reads only the real tokens; a shallow *decoder*, in pretraining only, fills in the
masked positions::

    corrupted    [CLS] the dogs [MASK] near the river [MASK] . [SEP]
    encoder in   [CLS] the dogs        near the river        . [SEP]   positions 0 1 2 _ 4 5 6 _ 8 9
    decoder in    h0   h1   h2    m     h4  h5   h6     m    h8  h9     m = a learned [MASK] vector
    loss               -log q(x3 | ...)  and  -log q(x7 | ...)

The encoder keeps every real token's *original* position id. With :math:`S` the selected
positions, :math:`M \subseteq S` those replaced by ``[MASK]`` and :math:`h = \mathrm{Enc}(x_{-M})`,

.. math::
    \mathcal{L}_{\text{MAE-LM}} = -\sum_{i \in S} \log
        \operatorname{softmax}\big(E\,g(\mathrm{Dec}(z)_i) + b\big)_{x_i},
    \qquad z_j = \begin{cases} m & j \in M \\ h_j & j \notin M \end{cases}

where :math:`E` is the encoder's input embedding matrix (tied output weights, as in BERT)
and :math:`g` BERT's prediction-head transform; downstream, only the encoder is kept. Against the
MLM of the same seed only the architecture differs (the same initial weights, data and corruption).
"""
from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from ..toy.vocab import SPECIAL_TOKENS
from .base import MaskedLMBase
from .train import make_model

__all__ = ["MAELM", "DecoderLayer", "MAEMaskedLM", "drop_masked", "make_maelm", "parameter_counts",
           "save", "load", "load_encoder"]

PAD, CLS, SEP, MASK = (SPECIAL_TOKENS.index(t) for t in ("[PAD]", "[CLS]", "[SEP]", "[MASK]"))


def drop_masked(inputs: torch.Tensor, keep: torch.Tensor):
    """Pack the kept tokens of each row to the left, remembering where they came from.

    Parameters
    ----------
    inputs : LongTensor (B, n)
        Token ids.
    keep : BoolTensor (B, n)
        Which tokens the encoder may see (real tokens that are not padding).

    Returns
    -------
    ids : LongTensor (B, m)
        The kept tokens in their original order, padded with ``[PAD]``; ``m`` is the largest
        number kept in a row. No dropped id (in particular no ``[MASK]``) survives.
    positions : LongTensor (B, m)
        Their original positions (0 at padding), used as the encoder's position ids.
    attention : LongTensor (B, m)
        1 at kept tokens, 0 at padding.
    """
    order = torch.argsort((~keep).to(torch.int8), dim=1, stable=True)  # kept positions first
    m = max(int(keep.sum(1).max()), 1)
    positions = order[:, :m]
    attention = keep.gather(1, positions)
    ids = torch.where(attention, inputs.gather(1, positions), torch.full_like(positions, PAD))
    return ids, torch.where(attention, positions, torch.zeros_like(positions)), attention.long()


class DecoderLayer(nn.Module):
    """One post-LayerNorm Transformer block, as in BERT, that can be evaluated at chosen positions:
    every position's keys and values are computed, but queries, the feed-forward network and the
    residual path only where ``wanted`` says (the loss needs the last layer only at the ~15 %
    selected positions), with exactly the full layer's outputs there."""

    def __init__(self, d: int, heads: int, ffn: int, eps: float):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ff = nn.Sequential(nn.Linear(d, ffn), nn.GELU(), nn.Linear(ffn, d))
        self.norm1, self.norm2 = nn.LayerNorm(d, eps=eps), nn.LayerNorm(d, eps=eps)

    def forward(self, h, padding, wanted=None):
        """``h`` (B, n, d), ``padding`` (B, n) True at padding, ``wanted`` (B, n) bool or None ->
        (B, n, d), or (N, d) for the N wanted positions in row-major order."""
        B, n, d = h.shape
        split = lambda t: t.unflatten(-1, (self.heads, d // self.heads)).transpose(-3, -2)  # noqa: E731
        k, v = split(self.k(h)), split(self.v(h))                 # (B, heads, n, d_head)
        allowed = ~padding[:, None, None, :]                       # (B, 1, 1, n)
        x = h
        if wanted is not None:                                     # one query per wanted position
            rows = wanted.nonzero()[:, 0]
            x, k, v, allowed = h[wanted][:, None], k[rows], v[rows], allowed[rows]
        a = nn.functional.scaled_dot_product_attention(split(self.q(x)), k, v, attn_mask=allowed)
        x = self.norm1(x + self.o(a.transpose(-3, -2).flatten(-2)))
        x = self.norm2(x + self.ff(x))
        return x if wanted is None else x[:, 0]


class MAELM(nn.Module):
    """Encoder over real tokens (a ``transformers.BertModel``, kept downstream) + shallow decoder
    over all positions (layers of an encoder layer's sizes) + tied output head (BERT's transform
    :math:`g` and a (V,) ``bias``)."""

    def __init__(self, encoder, head, bias, decoder_layers: int = 1):
        super().__init__()
        cfg = encoder.config
        d = cfg.hidden_size
        self.encoder, self.head, self.bias = encoder, head, bias
        self.mask_embedding = nn.Parameter(torch.zeros(d))
        self.decoder_positions = nn.Embedding(cfg.max_position_embeddings, d)
        self.decoder_norm = nn.LayerNorm(d, eps=cfg.layer_norm_eps)
        self.decoder = nn.ModuleList(DecoderLayer(d, cfg.num_attention_heads, cfg.intermediate_size,
                                                  cfg.layer_norm_eps) for _ in range(decoder_layers))
        for module in [self.decoder_positions, *self.decoder.modules()]:   # BERT's initialisation
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=cfg.initializer_range)
            if isinstance(module, nn.Linear):
                nn.init.zeros_(module.bias)
        nn.init.normal_(self.mask_embedding, std=cfg.initializer_range)

    def encode(self, inputs, attention_mask, all_layers: bool = False):
        """Run the encoder on the real tokens only and put its outputs back in place: ``(states,
        keep)``, the last layer (B, n, d) (with ``all_layers``, every layer, embeddings first), zero
        where the encoder saw nothing, and the (B, n) positions it saw."""
        keep = attention_mask.bool() & (inputs != MASK)
        ids, pos, attn = drop_masked(inputs, keep)
        out = self.encoder(input_ids=ids, attention_mask=attn, position_ids=pos, output_hidden_states=all_layers)
        layers = out.hidden_states if all_layers else (out.last_hidden_state,)
        B, n = inputs.shape
        slot = torch.where(attn.bool(), pos, torch.full_like(pos, n))      # padding: a spare column
        index = slot[..., None].expand(-1, -1, layers[0].shape[-1])
        placed = tuple(h.new_zeros(B, n + 1, h.shape[-1]).scatter(1, index, h)[:, :n] for h in layers)
        return (placed if all_layers else placed[0]), keep

    def decode(self, states, keep, attention_mask, wanted=None, all_layers: bool = False):
        """Fill the gaps with the [MASK] vector, add positions, run the decoder layers (the *last*
        one only at the (B, n) ``wanted`` positions; with ``all_layers``: the input and every
        layer)."""
        n = states.shape[1]
        z = torch.where(keep[..., None], states, self.mask_embedding.to(states.dtype))
        h = self.decoder_norm(z + self.decoder_positions(torch.arange(n, device=states.device)))
        padding = ~attention_mask.bool()
        out = [h]
        for i, layer in enumerate(self.decoder):
            h = layer(h, padding, wanted if i == len(self.decoder) - 1 else None)
            out.append(h)
        return tuple(out) if all_layers else h

    def logits(self, h):
        """Vocabulary scores from decoder states: :math:`E\\,g(h) + b`."""
        return self.head(h) @ self.encoder.embeddings.word_embeddings.weight.T + self.bias

    def forward(self, inputs, attention_mask, labels):
        """Mean cross-entropy at the selected positions (``labels != -100``)."""
        selected = labels != -100
        h = self.decode(*self.encode(inputs, attention_mask), attention_mask, wanted=selected)
        return nn.functional.cross_entropy(self.logits(h), labels[selected])


def make_maelm(grammar, config, seed: int) -> MAELM:
    """An MAE-LM whose encoder and head start from the MLM's initial weights."""
    mlm = make_model(grammar, config, seed)  # seeds torch, so the decoder init is fixed too
    p = mlm.cls.predictions
    return MAELM(mlm.bert, p.transform, p.bias, config.decoder_layers)


def parameter_counts(model: MAELM) -> dict:
    """Parameters of the encoder (kept downstream), the decoder and the output head."""
    count = lambda ps: int(sum(p.numel() for p in ps))  # noqa: E731
    enc = count(model.encoder.parameters())
    head = count(model.head.parameters()) + model.bias.numel()
    return dict(encoder=enc, head=head, decoder=count(model.parameters()) - enc - head)


class MAEMaskedLM(MaskedLMBase):
    """A trained MAE-LM behind the book's masked-LM interface (``logits`` runs encoder and decoder)
    and its representations over the content tokens; ``encoder`` is what a downstream task receives
    (a ``BertModel``: MAE-LM without its decoder)."""

    def __init__(self, model: MAELM, vocab, name: str = "MAE-LM", tokenizer=None):
        self.model, self.encoder = model.eval(), model.encoder
        self.name, self.vocab, self.tokenizer = name, list(vocab), tokenizer
        self.mask_id, self.special_ids = MASK, list(range(len(SPECIAL_TOKENS)))
        self.max_length = model.encoder.config.max_position_embeddings - 2
        self.hidden_size = int(model.encoder.config.hidden_size)
        self._word_id = {w: i for i, w in enumerate(self.vocab)}

    def _full(self, ids):
        B = ids.shape[0]
        full = torch.cat([torch.full((B, 1), CLS), ids, torch.full((B, 1), SEP)], 1)
        return full, torch.ones_like(full)

    def _logits_chunk(self, ids, positions):
        full, attn = self._full(ids)
        h = self.model.decode(*self.model.encode(full, attn), attn)
        picked = h.gather(1, (positions + 1)[..., None].expand(-1, -1, h.shape[-1]))
        return self.model.logits(picked).float()

    def encode_words(self, words):
        try:
            ids = [self._word_id[w] for w in words]
        except KeyError as e:
            raise ValueError(f"word {e.args[0]!r} is not in the toy vocabulary") from None
        return ids, [[p] for p in range(len(ids))]

    def hidden_states(self, ids) -> tuple:
        """Encoder layers (embeddings first), each (B, n, d); zero at ``[MASK]``, never seen."""
        full, attn = self._full(torch.as_tensor(ids, dtype=torch.long))
        with torch.inference_mode():
            layers, _ = self.model.encode(full, attn, all_layers=True)
        return tuple(h[:, 1:-1].float().clone() for h in layers)

    def decoder_states(self, ids) -> tuple:
        """Decoder input (after its LayerNorm) and each decoder layer's output, (B, n, d)."""
        full, attn = self._full(torch.as_tensor(ids, dtype=torch.long))
        with torch.inference_mode():
            out = self.model.decode(*self.model.encode(full, attn), attn, all_layers=True)
        return tuple(h[:, 1:-1].float().clone() for h in out)


def save(model: MAELM, tokenizer, out) -> None:
    """Write the encoder as a Hugging Face model and the pretraining-only parts beside it."""
    from safetensors.torch import save_file
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    out = Path(out)
    model.encoder.save_pretrained(out / "encoder")
    tokenizer.save_pretrained(out / "encoder")
    rest = {k: v.detach().contiguous() for k, v in model.state_dict().items() if not k.startswith("encoder.")}
    save_file(rest, out / "maelm.safetensors")
    (out / "maelm.json").write_text(json.dumps(dict(decoder_layers=len(model.decoder), mask_id=MASK)))


def load_encoder(path):
    """The trained MAE-LM encoder: a ``transformers.BertModel`` (what downstream tasks use)."""
    from transformers import BertModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    return BertModel.from_pretrained(Path(path) / "encoder", add_pooling_layer=False).eval()


def load(path, name: str = "MAE-LM") -> MAEMaskedLM:
    """A trained MAE-LM (encoder + decoder) from a directory written by :func:`save`."""
    from safetensors.torch import load_file
    from transformers import AutoTokenizer, BertConfig
    from transformers.models.bert.modeling_bert import BertPredictionHeadTransform

    path = Path(path)
    if not (path / "maelm.json").exists():
        raise FileNotFoundError(f"{path} is not an MAE-LM directory (no maelm.json); "
                                f"train one with mlmbook.models.load_or_train(..., kind='maelm')")
    info = json.loads((path / "maelm.json").read_text())
    encoder = load_encoder(path)
    cfg: BertConfig = encoder.config
    model = MAELM(encoder, BertPredictionHeadTransform(cfg),
                  nn.Parameter(torch.zeros(cfg.vocab_size)), info["decoder_layers"])
    missing, unexpected = model.load_state_dict(load_file(path / "maelm.safetensors"), strict=False)
    missing = [k for k in missing if not k.startswith("encoder.")]
    if missing or unexpected:
        raise ValueError(f"{path}: MAE-LM weights do not match the model (missing {missing}, unexpected {unexpected})")
    tok = AutoTokenizer.from_pretrained(path / "encoder")
    vocab = [t for t, _ in sorted(tok.get_vocab().items(), key=lambda kv: kv[1])]
    return MAEMaskedLM(model, vocab, name=name, tokenizer=tok)

