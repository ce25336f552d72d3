r"""Many small toy models trained as one computation: K same-shaped BERTs (or MAE-LMs) in a stack.

Per-operation overhead dominates a small BERT's training, so every parameter carries a leading
*model axis*, ``(K, ...)``: a linear layer is one batched product :math:`Y_k = X_k W_k + b_k`,
attention one call over the :math:`K \times B` rows, and the objective the *sum* of the models'
own losses,

.. math:: \mathcal{L}(\theta_1, \dots, \theta_K) = \sum_{k=1}^{K} \mathcal{L}_k(\theta_k),
          \qquad \nabla_{\theta_k}\mathcal{L} = \nabla_{\theta_k}\mathcal{L}_k,

so one backward pass gives every model exactly its own gradient. Everything else stays per
model: its grammar, seed, data stream and corruption (:mod:`mlmbook.models.corrupt`), its
learning-rate schedule, its gradient clipping (to global norm 1 over *its* parameters) and its
AdamW state (decoupled weight decay :math:`\lambda`; :math:`g_t` the clipped gradient,
:math:`\eta_t` the model's scheduled rate)

.. math:: m_t = \beta_1 m_{t-1} + (1-\beta_1) g_t, \quad v_t = \beta_2 v_{t-1} + (1-\beta_2) g_t^2, \quad
          \theta_t = (1 - \eta_t\lambda)\,\theta_{t-1} - \eta_t\,
          \frac{m_t / (1-\beta_1^t)}{\sqrt{v_t / (1-\beta_2^t)} + \epsilon}.

The output layer and MAE-LM's last decoder block run only at the selected positions
(:meth:`Stack.selected_loss`); an MAE-LM's encoder hides its ``[MASK]`` positions from every
attention key. **Same weights whatever the stack**: every operation acts on each model's slice with
shapes set by its own batch, sums run in a fixed order, and training runs on one thread, so a
model's weights depend only on its own job, bit for bit (``tests/models/test_train_stacked.py``).
"""
from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .. import threads
from ..toy.vocab import MASK, SPECIAL_TOKENS, make_tokenizer
from . import maelm
from .corrupt import batches, mask_tokens
from .train import TRAIN_THREADS, SingleSiteEval, TrainConfig, _Live, make_model

__all__ = ["VERSION", "ORDER_SEED", "Member", "StackShape", "shape_of", "Stack", "train_stack"]

VERSION = 2
"""Version of the stacked trainer's arithmetic, part of a stacked model's cache key."""

ORDER_SEED = 0
"""Seed of the order in which every stacked model meets its length buckets (not its sentences)."""


@dataclass
class Member:
    """One model of a stack: what to train and the directory to write it to."""

    grammar: object
    config: TrainConfig
    seed: int
    kind: str
    out: Path


@dataclass(frozen=True, order=True)
class StackShape:
    """What models must share to be stacked: kind, every tensor shape, steps and batch size."""

    kind: str
    vocab: int
    positions: int
    hidden: int
    layers: int
    heads: int
    intermediate: int
    steps: int
    batch: int
    decoder_layers: int


def shape_of(grammar, config: TrainConfig, kind: str) -> StackShape:
    """The :class:`StackShape` of a model of ``kind`` on ``grammar`` with ``config``."""
    c = config
    return StackShape(kind, len(SPECIAL_TOKENS) + len(grammar.vocab), grammar.max_length + 2,
                      c.hidden, c.layers, c.heads, c.intermediate, c.steps, c.batch,
                      c.decoder_layers if kind == "maelm" else 0)


_BLOCK_MODULES = {
    True: dict(qkv=("attention.self.query", "attention.self.key", "attention.self.value"),
               o=("attention.output.dense",), ln1=("attention.output.LayerNorm",),
               ff1=("intermediate.dense",), ff2=("output.dense",), ln2=("output.LayerNorm",)),
    False: dict(qkv=("q", "k", "v"), o=("o",), ln1=("norm1",), ff1=("ff.0",), ff2=("ff.2",),
                ln2=("norm2",)),
}
"""The modules of one Transformer block in Hugging Face's (True) and MAE-LM's decoder naming."""


def _block_names(src: str, hf: bool) -> list[tuple[str, list[str], bool]]:
    """(suffix, source keys, is a linear weight) for one Transformer block."""
    out = []
    for part, modules in _BLOCK_MODULES[hf].items():
        out += [(f"{part}_w", [f"{src}{m}.weight" for m in modules], not part.startswith("ln")),
                (f"{part}_b", [f"{src}{m}.bias" for m in modules], False)]
    return out


def _layout(kind: str, layers: int, decoder_layers: int) -> list[tuple[str, list[str], bool]]:
    """Each stacked parameter: its name, the state-dict keys it is made of, whether it is a linear
    weight (stored transposed, ``(in, out)``, so that a layer is ``x @ W + b``)."""
    enc, head, bias = ("bert.", "cls.predictions.transform.", "cls.predictions.bias") if kind == "mlm" else \
        ("encoder.", "head.", "bias")
    e = f"{enc}embeddings."
    out = [("word", [f"{e}word_embeddings.weight"], False), ("pos", [f"{e}position_embeddings.weight"], False),
           ("token_type", [f"{e}token_type_embeddings.weight"], False),
           ("emb_ln_w", [f"{e}LayerNorm.weight"], False), ("emb_ln_b", [f"{e}LayerNorm.bias"], False)]
    for i in range(layers):
        out += [(f"L{i}_{s}", keys, lin) for s, keys, lin in _block_names(f"{enc}encoder.layer.{i}.", hf=True)]
    out += [("head_w", [f"{head}dense.weight"], True), ("head_b", [f"{head}dense.bias"], False),
            ("head_ln_w", [f"{head}LayerNorm.weight"], False), ("head_ln_b", [f"{head}LayerNorm.bias"], False),
            ("bias", [bias], False)]
    if kind == "maelm":
        out += [("mask_emb", ["mask_embedding"], False), ("dec_pos", ["decoder_positions.weight"], False),
                ("dec_ln_w", ["decoder_norm.weight"], False), ("dec_ln_b", ["decoder_norm.bias"], False)]
        for i in range(decoder_layers):
            out += [(f"D{i}_{s}", keys, lin) for s, keys, lin in _block_names(f"decoder.{i}.", hf=False)]
    return out


def chunk_rows(batch: int, n: int, rate: float = 0.15) -> int:
    """Rows per round of the output layer: the selected tokens of a batch of ``batch`` sentences of
    ``n - 2`` words at BERT's rate, plus four standard deviations, rounded up to 8."""
    mean = batch * (n - 2) * rate
    return 8 * math.ceil((mean + 4 * math.sqrt(mean * (1 - rate))) / 8)


def _linear(x, w, b):
    """``x`` (K, N, i) @ ``w`` (K, i, o) + ``b`` (K, o), one batched product for all K models."""
    return torch.baddbmm(b.unsqueeze(1), x, w)


def _norm(x, w, b, eps):
    """LayerNorm over the last axis with each model's own scale and shift."""
    return torch.addcmul(b.unsqueeze(1), F.layer_norm(x, x.shape[-1:], eps=eps), w.unsqueeze(1))


class Stack(nn.Module):
    """K same-shaped BERTs (``kind="mlm"``) or MAE-LMs (``"maelm"``) from their state dicts, whose
    parameters carry a model axis; ``eps`` is the LayerNorm epsilon (BERT's 1e-12)."""

    def __init__(self, states: list[dict], kind: str, heads: int, layers: int,
                 decoder_layers: int = 1, eps: float = 1e-12):
        super().__init__()
        self.kind, self.heads, self.layers, self.decoder_layers, self.eps = kind, heads, layers, decoder_layers, eps
        self.layout = _layout(kind, layers, decoder_layers)
        self.params = nn.ParameterDict()
        for name, keys, linear in self.layout:
            per_model = [torch.cat([s[k] for k in keys], 0) for s in states]
            self.params[name] = nn.Parameter(torch.stack([t.T if linear else t for t in per_model]).contiguous())
        self.chunk = None  # selected rows per round of the output layer (None: chunk_rows)

    def state(self, k: int) -> dict:
        """Model ``k``'s parameters as a state dict of its Hugging Face (or MAE-LM) form."""
        out = {}
        for name, keys, linear in self.layout:
            t = self.params[name].detach()[k]
            t = t.T if linear else t
            for key, part in zip(keys, torch.split(t, t.shape[0] // len(keys), 0)):
                out[key] = part.contiguous().clone()
        if self.kind == "mlm":                                    # the tied output layer
            out["cls.predictions.decoder.weight"] = out["bert.embeddings.word_embeddings.weight"]
            out["cls.predictions.decoder.bias"] = out["cls.predictions.bias"]
        return out

    def subset(self, who=None) -> dict:
        """The parameters of models ``who`` (all, uncopied, when None): name -> (K', ...)."""
        return dict(self.params) if who is None else {k: v[who] for k, v in self.params.items()}

    def _after_attention(self, p: dict, prefix: str, x, a):
        """The rest of a post-LayerNorm block after attention ``a`` (projection, FFN, residuals)."""
        x = _norm(x + _linear(a, p[f"{prefix}_o_w"], p[f"{prefix}_o_b"]), p[f"{prefix}_ln1_w"],
                  p[f"{prefix}_ln1_b"], self.eps)
        f = _linear(F.gelu(_linear(x, p[f"{prefix}_ff1_w"], p[f"{prefix}_ff1_b"])),
                    p[f"{prefix}_ff2_w"], p[f"{prefix}_ff2_b"])
        return _norm(x + f, p[f"{prefix}_ln2_w"], p[f"{prefix}_ln2_b"], self.eps)

    def _block(self, p: dict, x, prefix: str, allowed, B: int, n: int):
        """One Transformer block on ``x`` (K, B*n, d); ``allowed`` (K*B, 1, 1, n) keys."""
        K, _, d = x.shape
        h = self.heads
        qkv = _linear(x, p[f"{prefix}_qkv_w"], p[f"{prefix}_qkv_b"]).view(K * B, n, 3, h, d // h).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], attn_mask=allowed)
        return self._after_attention(p, prefix, x, a.transpose(1, 2).reshape(K, B * n, d))

    def encode(self, p: dict, ids, visible):
        """The BERT body: ``ids`` (K, B, n) -> last hidden states (K, B*n, d); ``visible`` (K, B, n)
        marks the tokens attention may read (the keys)."""
        K, B, n = ids.shape
        V, d = p["word"].shape[1:]
        offsets = (torch.arange(K) * V).view(K, 1, 1)
        x = F.embedding(ids + offsets, p["word"].reshape(K * V, d))
        x = x + (p["pos"][:, :n] + p["token_type"])[:, None]
        x = _norm(x.view(K, B * n, d), p["emb_ln_w"], p["emb_ln_b"], self.eps)
        allowed = visible.reshape(K * B, 1, 1, n)
        for i in range(self.layers):
            x = self._block(p, x, f"L{i}", allowed, B, n)
        return x

    def decode(self, p: dict, h, keep, attention, last: bool = True):
        """MAE-LM's decoder: the ``[MASK]`` vector where the encoder saw nothing, positions, blocks
        (all but the last one unless ``last``: the loss runs it at the selected rows only)."""
        K, B, n = keep.shape
        d = h.shape[-1]
        z = torch.where(keep.view(K, B * n, 1), h, p["mask_emb"].unsqueeze(1))
        z = (z.view(K, B, n, d) + p["dec_pos"][:, None, :n]).view(K, B * n, d)
        z = _norm(z, p["dec_ln_w"], p["dec_ln_b"], self.eps)
        allowed = attention.reshape(K * B, 1, 1, n)
        for i in range(self.decoder_layers - (0 if last else 1)):
            z = self._block(p, z, f"D{i}", allowed, B, n)
        return z

    def _block_at(self, p: dict, x, rows, prefix: str, attention):
        """The block ``prefix`` evaluated at ``rows`` (K, M) only, its keys and values from every
        row of each row's sentence: (K, M, d). ``x`` (K, B*n, d), ``attention`` (K, B, n)."""
        K, N, d = x.shape
        B, n = attention.shape[1:]
        M, H = rows.shape[1], self.heads
        w, b = p[f"{prefix}_qkv_w"], p[f"{prefix}_qkv_b"]
        kv = _linear(x, w[..., d:], b[:, d:]).view(K, B, n, 2, H, d // H)
        xr = x.gather(1, rows.unsqueeze(-1).expand(-1, -1, d))
        q = _linear(xr, w[..., :d], b[:, :d]).view(K * M, H, 1, d // H)
        sentence, model = rows // n, torch.arange(K).unsqueeze(1)
        kv = kv[model, sentence].permute(3, 0, 1, 4, 2, 5).reshape(2, K * M, H, n, d // H)
        a = F.scaled_dot_product_attention(q, kv[0], kv[1], attn_mask=attention[model, sentence].view(K * M, 1, 1, n))
        return self._after_attention(p, prefix, xr, a.view(K, M, d))

    def logits(self, p: dict, h):
        """Vocabulary scores :math:`E\\,g(h) + b` with the tied input embeddings (K, N, V)."""
        t = _norm(F.gelu(_linear(h, p["head_w"], p["head_b"])), p["head_ln_w"], p["head_ln_b"], self.eps)
        return torch.baddbmm(p["bias"].unsqueeze(1), t, p["word"].transpose(1, 2))

    def forward(self, inputs, attention, labels):
        """Each model's mean cross-entropy at its selected positions (K,), from one (B, n_k) tensor
        per model each; models of one length ``n_k`` are computed together, so a model's arithmetic
        is the same whichever models share its stack."""
        K = len(inputs)
        groups: dict[int, list[int]] = {}
        for k in range(K):
            groups.setdefault(inputs[k].shape[-1], []).append(k)
        parts, order = [], []
        for ks in groups.values():
            who = None if len(ks) == K else torch.tensor(ks)
            x, a, y = (torch.stack([ts[k] for k in ks]) for ts in (inputs, attention, labels))
            parts.append(self._losses(self.subset(who), x, a.bool(), y))
            order += ks
        losses = torch.cat(parts)
        return losses if len(parts) == 1 else losses[torch.argsort(torch.tensor(order))]

    def _losses(self, p: dict, inputs, attention, labels):
        """The mean losses of models whose batches share one shape (K', B, n)."""
        K, B, n = inputs.shape
        chunk = self.chunk or chunk_rows(B, n)
        flat = labels.reshape(K, B * n)
        if self.kind == "maelm":  # the decoder's last block only where the loss needs it
            keep = attention & (inputs != MASK)
            z = self.decode(p, self.encode(p, inputs, keep), keep, attention, last=False)
            last = f"D{self.decoder_layers - 1}"
            return self.selected_loss(p, z, flat, chunk, lambda q, part, rows, who: self._block_at(
                q, part, rows, last, attention if who is None else attention[who]))
        return self.selected_loss(p, self.encode(p, inputs, attention), flat, chunk)

    def selected_loss(self, p: dict, h, labels, chunk: int, at_rows=None):
        """Mean cross-entropy at each model's selected rows (``labels`` (K, N), -100 elsewhere),
        with the output layer at those rows only, ``chunk`` at a time (padded with unselected rows
        of loss 0), so every model's shapes are the same whatever its neighbours: a model with more
        selected rows takes further rounds on its own. ``at_rows(p, h_part, rows, who)`` gives the
        final states at ``rows`` (default: ``h``'s rows)."""
        K, N, d = h.shape
        chunk = min(chunk, N)
        selected = labels != -100
        count = selected.sum(1)
        order = torch.argsort((~selected).to(torch.int8), dim=1, stable=True)  # selected rows first
        total = None
        for j in range(max(1, math.ceil(int(count.max()) / chunk))):
            who = None if j == 0 else (count > j * chunk).nonzero()[:, 0]
            q = p if who is None else {k: v[who] for k, v in p.items()}
            rows = order if who is None else order[who]
            rows = F.pad(rows[:, j * chunk:(j + 1) * chunk], (0, max(0, (j + 1) * chunk - N)))
            part = h if who is None else h[who]
            picked = part.gather(1, rows.unsqueeze(-1).expand(-1, -1, d)) if at_rows is None else \
                at_rows(q, part, rows, who)
            gold = (labels if who is None else labels[who]).gather(1, rows)
            loss = F.cross_entropy(self.logits(q, picked).flatten(0, 1), gold.flatten(), reduction="none")
            m = rows.shape[0]
            # a fixed-shape sum
            summed = torch.bmm(loss.view(m, 1, chunk), torch.ones(m, chunk, 1)).view(m)
            total = summed if who is None else total.index_add(0, who, summed)
        return total / count.clamp(min=1)


class StackAdamW:
    """AdamW over stacked parameters with a learning rate and weight decay per model."""

    def __init__(self, params, weight_decay, betas=(0.9, 0.999), eps=1e-8):
        self.params = list(params)
        self.wd = torch.as_tensor(weight_decay, dtype=torch.float32)
        self.b1, self.b2, self.eps, self.t = betas[0], betas[1], eps, 0
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]

    def step(self, lr: torch.Tensor) -> None:
        """One update with per-model rates ``lr`` (K,)."""
        self.t += 1
        c1, c2 = 1 - self.b1 ** self.t, math.sqrt(1 - self.b2 ** self.t)
        with torch.no_grad():
            for p, m, v in zip(self.params, self.m, self.v):
                shape = (-1,) + (1,) * (p.dim() - 1)
                g = p.grad
                p.mul_((1 - lr * self.wd).view(shape))
                m.lerp_(g, 1 - self.b1)
                v.mul_(self.b2).addcmul_(g, g, value=1 - self.b2)
                p.sub_(m / (v.sqrt() / c2 + self.eps) * (lr / c1).view(shape))


def clip_per_model(params, max_norm: float = 1.0) -> torch.Tensor:
    """Scale each model's gradients to a global norm of at most ``max_norm``; returns the norms."""
    params = [p for p in params if p.grad is not None]
    K = params[0].shape[0]
    squares = torch.zeros(K)
    for p in params:               # a batched dot product per model and a running sum: the same
        g = p.grad.reshape(K, 1, -1)   # arithmetic for every K (a row-wise .sum(1) is not)
        squares = squares + torch.bmm(g, g.transpose(1, 2)).view(K)
    norms = squares.sqrt()
    coef = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    for p in params:
        p.grad.mul_(coef.view((-1,) + (1,) * (p.dim() - 1)))
    return norms


def _rate(config: TrainConfig, s: int) -> float:
    """The learning rate after ``s`` optimiser steps: linear warm-up, then linear decay to 0."""
    warm = max(1, int(config.warmup * config.steps))
    return config.lr * min((s + 1) / warm, max(0.0, (config.steps - s) / max(1, config.steps - warm)))


def train_stack(members: list[Member], progress: bool = True,
                chunk: int | None = None) -> list[dict]:
    """Train ``members`` (same :func:`shape_of`) as one stack, write each into its ``out``
    directory and return each one's history (held-out and training losses, tokens and seconds at
    each evaluation, the Bayes and unigram losses, ``stack`` = K, ``stack_seconds`` and the model's
    share ``train_seconds``). ``chunk`` overrides :func:`chunk_rows` (it changes rounding only)."""
    shapes = {shape_of(m.grammar, m.config, m.kind) for m in members}
    if len(shapes) != 1:
        raise ValueError(f"models of different shapes cannot share a stack: {sorted(shapes)}")
    with threads.using(TRAIN_THREADS):
        return _train_stack(members, progress, chunk)


def _train_stack(members, progress, chunk) -> list[dict]:
    from tqdm.std import tqdm  # a text bar on stderr, never a notebook widget
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    K, first = len(members), members[0]
    kind, steps = first.kind, first.config.steps
    shells = [(maelm.make_maelm if kind == "maelm" else make_model)(m.grammar, m.config, m.seed)
              for m in members]
    stack = Stack([s.state_dict() for s in shells], kind, first.config.heads, first.config.layers,
                  first.config.decoder_layers)
    stack.chunk = chunk
    opt = StackAdamW(stack.parameters(), [m.config.weight_decay for m in members])
    # members with the same sentences share one stream and one evaluator
    stream_of = [(m.grammar.fingerprint, m.config.batch, m.seed, m.config.mask_only) for m in members]
    streams = {key: batches(m.grammar, m.config, m.seed, eligible=bool(m.config.mask_only), order_seed=ORDER_SEED)
               for key, m in zip(stream_of, members)}
    gens = [torch.Generator().manual_seed(m.seed) for m in members]
    vocab = len(SPECIAL_TOKENS) + len(first.grammar.vocab)
    shared = {}
    for m in members:
        key = (m.grammar.fingerprint, m.config.n_eval, m.seed)
        if key not in shared:
            shared[key] = SingleSiteEval(m.grammar, m.config.n_eval, m.seed)
    evaluators = [shared[m.grammar.fingerprint, m.config.n_eval, m.seed] for m in members]
    lives = [maelm.MAEMaskedLM(s, SPECIAL_TOKENS + list(m.grammar.vocab), name="training") if kind == "maelm"
             else _Live(s, m.grammar) for s, m in zip(shells, members)]
    snapshots = [{max(1, int(f * steps)) for f in m.config.checkpoints} if kind == "mlm" else set() for m in members]
    histories = []
    for m, ev, shell in zip(members, evaluators, shells):
        h = dict(bayes=ev.bayes, unigram=ev.unigram, steps=[], train_loss=[], eval_loss=[], tokens=[], seconds=[])
        if kind == "maelm":
            h.update(parameters=maelm.parameter_counts(shell), decoder_layers=m.config.decoder_layers)
        histories.append(h)
    tokens, running = [0] * K, [None] * K
    t0 = time.perf_counter()
    what = "MAE-LM" if kind == "maelm" else "MLM"
    desc = f"training {K} {what}s (hidden {first.config.hidden}) stacked"
    bar = tqdm(range(1, steps + 1), desc=desc, disable=not progress, mininterval=2, file=sys.stderr)
    for step in bar:
        xs, attns, ys = [], [], []
        drawn = {key: next(stream) for key, stream in streams.items()}
        for k, m in enumerate(members):
            ids, attn, *eligible = drawn[stream_of[k]]
            x, y = mask_tokens(ids, m.config, vocab, gens[k], *eligible)
            xs.append(x), attns.append(attn), ys.append(y)
            tokens[k] += int(attn.sum())
        losses = stack(xs, attns, ys)
        stack.zero_grad(set_to_none=True)
        losses.sum().backward()
        clip_per_model(stack.parameters())
        opt.step(torch.tensor([_rate(m.config, step - 1) for m in members]))
        for k, value in enumerate(losses.tolist()):
            running[k] = value if running[k] is None else 0.95 * running[k] + 0.05 * value
        for k, m in enumerate(members):
            due = step % m.config.eval_every == 0 or step == steps
            if due or step in snapshots[k]:
                shells[k].load_state_dict(stack.state(k))
            if step in snapshots[k]:
                _save(shells[k], m, Path(m.out) / "checkpoints" / f"step_{step:06d}")
            if due:
                shells[k].eval()
                ev = evaluators[k].loss(lives[k])
                for key, v in (("steps", step), ("train_loss", running[k]), ("eval_loss", ev),
                               ("tokens", tokens[k]), ("seconds", time.perf_counter() - t0)):
                    histories[k][key].append(v)
        latest = [h["eval_loss"][-1] for h in histories if h["eval_loss"]]
        if progress and latest and step % max(1, first.config.eval_every) == 0:
            bar.set_postfix(eval=f"{sum(latest) / len(latest):.3f}")
    wall = time.perf_counter() - t0
    for k, m in enumerate(members):
        h = histories[k]
        h.update(train_seconds=wall / K, tokens_per_second=tokens[k] * K / wall, stack=K, stack_seconds=wall)
        _save(shells[k], m, m.out)
        (Path(m.out) / "history.json").write_text(json.dumps(h, indent=1))
    return histories


def _save(shell, member: Member, out) -> None:
    """Write one model (or a snapshot) as a Hugging Face folder (or an MAE-LM directory)."""
    tokenizer = make_tokenizer(member.grammar)
    if member.kind == "maelm":
        maelm.save(shell, tokenizer, out)
    else:
        shell.save_pretrained(out)
        tokenizer.save_pretrained(out)
