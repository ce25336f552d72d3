r"""Training the book's default masked LMs on the toy language, with an atomic on-disk cache.

The default model is a small ``BertForMaskedLM`` with a real Hugging Face tokenizer (a
``tokenizers`` WordLevel model saved so that ``AutoTokenizer.from_pretrained(dir)`` loads it),
trained with BERT's recipe: 15 % of tokens are selected, of which 80 % become ``[MASK]``,
10 % a random word and 10 % stay; the loss is the cross-entropy at selected positions.
Fresh sentences are sampled from the grammar at every step (the language is infinite
enough that the model never sees an epoch), and batches are bucketed by length.

While training we track the *single-site* loss on held-out sentences, the quantity the
truth lets us bound from below:

.. math:: \mathcal{L}_{\text{MLM}} = -\frac{1}{N}\sum_{s}\sum_i \log q(x_i \mid x_{-i}) \;\ge\;
          \mathcal{L}_{\text{Bayes}} = -\frac{1}{N}\sum_{s}\sum_i \log p(x_i \mid x_{-i}),

whose gap is the mean KL(truth ‖ MLM) over positions of the held-out sentences.

Models are cached under ``$MLMBOOK_CACHE`` (default ``~/.cache/mlmbook``) in a directory
named by a hash of the grammar, the configuration and the seed.  Everything is written
into a temporary directory that is renamed into place only when complete, with a manifest
holding the weights' SHA-256, so an interrupted or corrupted entry never loads.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from .language import Grammar
from .oracle import SPECIAL_TOKENS

__all__ = ["TrainConfig", "PRESETS", "cache_dir", "load_or_train", "train", "make_tokenizer", "checkpoints"]

VERSION = 1                       # bump to invalidate every cached model


@dataclass(frozen=True)
class TrainConfig:
    hidden: int = 128
    layers: int = 4
    heads: int = 4
    intermediate: int = 512
    steps: int = 3000
    batch: int = 128
    lr: float = 1e-3
    warmup: float = 0.06          # fraction of steps with linear warm-up, then linear decay
    weight_decay: float = 0.01
    mask_rate: float = 0.15
    n_eval: int = 200             # held-out sentences for the single-site loss
    eval_every: int = 250
    checkpoints: tuple = (0.1, 0.3)   # extra snapshots (fractions of training), for chapter 3


PRESETS = {
    "quick": TrainConfig(hidden=64, layers=2, heads=2, intermediate=256, steps=1500, batch=64, lr=3e-3,
                         n_eval=100, eval_every=250),
    "full": TrainConfig(hidden=128, layers=2, heads=4, intermediate=512, steps=4000, batch=64, lr=2e-3,
                        n_eval=200, eval_every=400),
}


def cache_dir() -> Path:
    """Model cache root: ``$MLMBOOK_CACHE`` or ``~/.cache/mlmbook``."""
    return Path(os.environ.get("MLMBOOK_CACHE", Path.home() / ".cache" / "mlmbook")).expanduser()


def _key(grammar: Grammar, config: TrainConfig, seed: int, kind: str) -> str:
    blob = json.dumps([VERSION, kind, grammar.fingerprint, asdict(config), seed], sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _verify(path: Path) -> str | None:
    """None if the cache entry at ``path`` is complete and intact, else the reason it is not."""
    manifest = path / "manifest.json"
    if not manifest.exists():
        return "no manifest (an interrupted write?)"
    try:
        info = json.loads(manifest.read_text())
        for name, digest in info["sha256"].items():
            if _sha256(path / name) != digest:
                return f"{name} does not match its checksum"
    except (OSError, ValueError, KeyError) as e:
        return f"unreadable ({type(e).__name__})"
    return None


def make_tokenizer(grammar: Grammar):
    """A real HF tokenizer over the grammar's words: ids = SPECIAL_TOKENS, then the vocabulary."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(SPECIAL_TOKENS + list(grammar.vocab))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")


def make_model(grammar: Grammar, config: TrainConfig, seed: int):
    """A freshly initialised ``BertForMaskedLM`` sized by ``config``."""
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=len(SPECIAL_TOKENS) + len(grammar.vocab), hidden_size=config.hidden,
                     num_hidden_layers=config.layers, num_attention_heads=config.heads,
                     intermediate_size=config.intermediate, max_position_embeddings=grammar.max_length + 2,
                     type_vocab_size=1, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                     pad_token_id=0)
    return BertForMaskedLM(cfg)


# ---------------------------------------------------------------------------- data
def batches(grammar: Grammar, config: TrainConfig, seed: int, pool: int = 16):
    """Endless length-bucketed batches of token ids (with [CLS]/[SEP]) and attention masks."""
    offset = len(SPECIAL_TOKENS)
    gen = torch.Generator().manual_seed(seed)
    for k in range(sys.maxsize):
        sents = grammar.sample(pool * config.batch, seed=(seed * 1_000_003 + k) % (2**31))
        sents.sort(key=len)
        groups = [sents[i:i + config.batch] for i in range(0, len(sents), config.batch)]
        for g in torch.randperm(len(groups), generator=gen).tolist():
            group = groups[g]
            n = max(len(s) for s in group) + 2
            ids = torch.zeros(len(group), n, dtype=torch.long)
            for r, s in enumerate(group):
                ids[r, : len(s) + 2] = torch.tensor([2] + [offset + grammar.word_id[w] for w in s.words] + [3])
            yield ids, (ids != 0).long()


def mask_tokens(ids, config: TrainConfig, vocab_size: int, gen: torch.Generator):
    """BERT's corruption: returns (inputs, labels) with labels -100 where nothing is predicted."""
    offset = len(SPECIAL_TOKENS)
    content = ids >= offset
    selected = (torch.rand(ids.shape, generator=gen) < config.mask_rate) & content
    labels = torch.where(selected, ids, torch.full_like(ids, -100))
    roll = torch.rand(ids.shape, generator=gen)
    inputs = ids.clone()
    inputs[selected & (roll < 0.8)] = SPECIAL_TOKENS.index("[MASK]")
    rand = selected & (roll >= 0.8) & (roll < 0.9)
    inputs[rand] = torch.randint(offset, vocab_size, (int(rand.sum()),), generator=gen)
    return inputs, labels


# ---------------------------------------------------------------------------- evaluation
class SingleSiteEval:
    """Held-out single-site loss of a model, against the truth's (Bayes) and a unigram's."""

    def __init__(self, grammar: Grammar, n: int, seed: int):
        self.grammar = grammar
        self.sentences = grammar.sample(n, seed=seed + 1_000_003)
        offset = len(SPECIAL_TOKENS)
        self.rows, self.pos, self.gold = [], [], []
        for s in self.sentences:
            ids = [offset + grammar.word_id[w] for w in s.words]
            for i in range(len(ids)):
                r = list(ids)
                r[i] = SPECIAL_TOKENS.index("[MASK]")
                self.rows.append(r), self.pos.append([i]), self.gold.append(ids[i])
        truth = []
        for s in self.sentences:
            c = grammar.conditionals(s.words)
            truth += [-math.log(c[i, grammar.word_id[w]]) for i, w in enumerate(s.words)]
        self.bayes = float(np.mean(truth))
        uni = grammar.unigram(20000, seed=seed + 7)
        self.unigram = float(np.mean([-math.log(uni[g - offset]) for g in self.gold]))

    def loss(self, lm) -> float:
        """Mean -log q(x_i | x_-i) over every position of the held-out sentences."""
        out = lm.logits_ragged(self.rows, self.pos)
        return float(np.mean([-torch.log_softmax(o[0].double(), -1)[g].item() for o, g in zip(out, self.gold)]))


class _Live:
    """Adapter so the model being trained can be scored through the MaskedLM interface."""

    def __init__(self, model, grammar):
        from .oracle import MaskedLM

        class Live(MaskedLM):
            def _logits_chunk(inner, ids, positions):
                B = ids.shape[0]
                full = torch.cat([torch.full((B, 1), 2), ids, torch.full((B, 1), 3)], 1)
                logits = model(input_ids=full).logits
                return logits.gather(1, (positions + 1)[..., None].expand(-1, -1, logits.shape[-1]))
        self.lm = Live()
        self.lm.name, self.lm.vocab = "training", SPECIAL_TOKENS + list(grammar.vocab)
        self.lm.mask_id, self.lm.special_ids = SPECIAL_TOKENS.index("[MASK]"), list(range(len(SPECIAL_TOKENS)))
        self.lm.max_length = grammar.max_length


# ---------------------------------------------------------------------------- training
def fit(model, loss_of, grammar: Grammar, config: TrainConfig, seed: int, live, desc: str,
        progress: bool = True, on_step=None, **extra) -> dict:
    """The training loop shared by the MLM and MAE-LM: same data, corruption, optimiser, schedule.

    ``loss_of(model, inputs, attention_mask, labels)`` returns the loss of one corrupted batch;
    ``live`` is the model behind the :class:`~mlmbook.oracle.MaskedLM` interface, scored on
    held-out sentences every ``config.eval_every`` steps; ``on_step(step)`` runs after each
    step (snapshots). Returns the history (losses, tokens, seconds) with ``extra`` merged in.
    """
    from tqdm.auto import tqdm

    if os.environ.get("MLMBOOK_THREADS"):               # e.g. 1 on a machine shared with other jobs
        torch.set_num_threads(int(os.environ["MLMBOOK_THREADS"]))
    evaluator = SingleSiteEval(grammar, config.n_eval, seed)
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    warm = max(1, int(config.warmup * config.steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (config.steps - s) / max(1, config.steps - warm))))
    gen = torch.Generator().manual_seed(seed)
    vocab_size = len(SPECIAL_TOKENS) + len(grammar.vocab)
    history = dict(bayes=evaluator.bayes, unigram=evaluator.unigram, steps=[], train_loss=[], eval_loss=[],
                   tokens=[], seconds=[], **extra)
    data = batches(grammar, config, seed)
    tokens, running, t0 = 0, None, time.perf_counter()
    bar = tqdm(range(1, config.steps + 1), desc=desc, disable=not progress, mininterval=2)
    for step in bar:
        model.train()
        ids, attn = next(data)
        inputs, labels = mask_tokens(ids, config, vocab_size, gen)
        loss = loss_of(model, inputs, attn, labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        tokens += int(attn.sum())
        running = loss.item() if running is None else 0.95 * running + 0.05 * loss.item()
        if step % config.eval_every == 0 or step == config.steps:
            model.eval()
            ev = evaluator.loss(live)
            for k, v in (("steps", step), ("train_loss", running), ("eval_loss", ev), ("tokens", tokens),
                         ("seconds", time.perf_counter() - t0)):
                history[k].append(v)
            bar.set_postfix(eval=f"{ev:.3f}", bayes=f"{evaluator.bayes:.3f}")
        if on_step:
            on_step(step)
    model.eval()
    history["train_seconds"] = time.perf_counter() - t0
    history["tokens_per_second"] = tokens / history["train_seconds"]
    return history


def train(grammar: Grammar, config: TrainConfig, seed: int, out: Path, progress: bool = True) -> dict:
    """Train the default MLM and write it (plus tokenizer, history, snapshots) into directory ``out``."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    model = make_model(grammar, config, seed)
    tokenizer = make_tokenizer(grammar)
    snapshots = {max(1, int(f * config.steps)) for f in config.checkpoints}

    def snapshot(step):
        if step in snapshots:
            model.save_pretrained(out / "checkpoints" / f"step_{step:06d}")
            tokenizer.save_pretrained(out / "checkpoints" / f"step_{step:06d}")

    history = fit(model, lambda m, x, a, y: m(input_ids=x, attention_mask=a, labels=y).loss, grammar, config, seed,
                  _Live(model, grammar).lm, f"training {grammar.name} MLM", progress, on_step=snapshot)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / "history.json").write_text(json.dumps(history, indent=1))
    return history


def load_or_train(grammar: str | Grammar = "toy", preset: str | TrainConfig = "full", seed: int = 0,
                  progress: bool = True, kind: str = "mlm") -> Path:
    """Path of a trained model directory; trains (and caches atomically) on first use.

    Parameters
    ----------
    grammar : "toy", "toy_topic", a YAML path, or a :class:`Grammar`
    preset : "quick", "full" or a :class:`TrainConfig`
    seed : int
    kind : "mlm" (default) or "maelm"
        ``"maelm"`` trains the MAE-LM of :mod:`mlmbook.maelm` (chapter 4) on the same data,
        steps and initial encoder weights as the MLM of the same preset and seed; load it
        with :func:`mlmbook.maelm.load` / :func:`mlmbook.maelm.load_encoder`.
    """
    if kind not in ("mlm", "maelm"):
        raise ValueError(f"unknown model kind {kind!r}; use 'mlm' or 'maelm'")
    g = grammar if isinstance(grammar, Grammar) else Grammar.load(grammar)
    if isinstance(preset, str) and preset not in PRESETS:
        raise ValueError(f"unknown training preset {preset!r}; use one of {', '.join(PRESETS)}")
    config = PRESETS[preset] if isinstance(preset, str) else preset
    root = cache_dir()
    if kind == "maelm":
        from . import maelm
        final = root / f"{g.name.replace('+', '_')}-maelm-{_key(g, config, seed, 'maelm')}"
        return _cached(final, lambda tmp: maelm.train(g, config, seed, tmp, progress=progress),
                       dict(grammar=g.name, kind="maelm", config=asdict(config), seed=seed, version=VERSION))
    final = root / f"{g.name.replace('+', '_')}-{_key(g, config, seed, 'mlm')}"
    return _cached(final, lambda tmp: train(g, config, seed, tmp, progress=progress),
                   dict(grammar=g.name, config=asdict(config), seed=seed, version=VERSION))


def _cached(final: Path, make, info: dict) -> Path:
    """Return ``final`` if it holds a verified entry, else build it with ``make(tmp_dir)``.

    The entry is built in a temporary directory, checksummed into ``manifest.json`` (written
    last) and renamed into place, so an interrupted run leaves nothing that loads.  A lock
    file serialises processes that want the same entry: the second waits, then loads.
    """
    import fcntl

    final.parent.mkdir(parents=True, exist_ok=True)
    with open(final.parent / f".{final.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if final.exists():
            reason = _verify(final)
            if reason is None:
                return final
            print(f"mlmbook: model cache entry {final} is corrupted ({reason}); deleting it and retraining",
                  file=sys.stderr)
            shutil.rmtree(final, ignore_errors=True)
        for stale in final.parent.glob(f".partial-{final.name}-*"):   # left by a killed run (we hold the lock)
            shutil.rmtree(stale, ignore_errors=True)
        tmp = final.parent / f".partial-{final.name}-{os.getpid()}"
        try:
            make(tmp)
            files = sorted(p.relative_to(tmp).as_posix() for p in tmp.rglob("*") if p.is_file())
            manifest = dict(info, sha256={f: _sha256(tmp / f) for f in files})
            (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))
            os.replace(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def checkpoints(path: Path) -> list:
    """Snapshot directories of a trained model, earliest first, then the final model itself."""
    snaps = sorted((Path(path) / "checkpoints").glob("step_*"))
    return snaps + [Path(path)]
