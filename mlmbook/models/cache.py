"""The model cache: train once, keep the result, never load a half-written entry.

An entry is a directory under :func:`mlmbook.paths.cache_dir` named by a hash of everything that
changes the weights (:func:`entry_key`). It is built in a temporary directory, checksummed into
``manifest.json`` (written last) and renamed into place, under a lock per entry; a corrupted entry
is reported and rebuilt. :class:`CacheEntry` gives the training history and the snapshots.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import sys
from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path

from ..paths import cache_dir
from ..toy.grammar import Grammar
from . import stacked
from .train import PRESETS, TRAIN_THREADS, TrainConfig

__all__ = ["VERSION", "CacheEntry", "load_or_train", "train_together", "is_cached", "entry_key"]

VERSION = 3  # bump to invalidate every cached model


def entry_key(grammar: Grammar, config: TrainConfig, seed: int, kind: str) -> str:
    """The hash that names a cache entry (:data:`mlmbook.models.stacked.VERSION` included)."""
    settings = asdict(config)
    if settings["mask_ratio"] == "fixed":          # at its default the key is as before the setting
        del settings["mask_ratio"]
    parts = [VERSION, kind, grammar.fingerprint, settings, seed, TRAIN_THREADS, f"stacked {stacked.VERSION}"]
    blob = json.dumps(parts, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def _entry_path(grammar: Grammar, config: TrainConfig, seed: int, kind: str) -> Path:
    key = entry_key(grammar, config, seed, kind)
    return cache_dir() / f"{grammar.name.replace('+', '_')}{'-maelm' if kind == 'maelm' else ''}-{key}"


def is_cached(grammar: Grammar, config: TrainConfig, seed: int = 0, kind: str = "mlm") -> bool:
    """Whether :func:`load_or_train` would find this model in the cache (without training it)."""
    return _verify(_entry_path(grammar, config, seed, kind)) is None


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


def _cached_many(finals: list[Path], make, infos: list[dict]) -> list[Path]:
    """Return the entries ``finals``, building the missing ones at once with ``make(missing,
    tmp_dirs)``, under every entry's lock (taken in path order, so two callers never deadlock)."""
    with ExitStack() as locks:
        for final in sorted(set(finals)):
            final.parent.mkdir(parents=True, exist_ok=True)
            lock = locks.enter_context(open(final.parent / f".{final.name}.lock", "w"))
            fcntl.flock(lock, fcntl.LOCK_EX)
        todo: dict[Path, dict] = {}
        for final, info in zip(finals, infos):
            if final.exists():
                reason = _verify(final)
                if reason is None:
                    continue
                note = (f"the cached model {final.name} was corrupted ({reason}); "
                        f"it is deleted and trained again")
                print(f"mlmbook: {note}", file=sys.stderr, flush=True)    # the build's terminal
                print(f"Note: {note}.")                                   # the chapter
                shutil.rmtree(final, ignore_errors=True)
            todo.setdefault(final, info)
        if not todo:
            return finals
        for final in todo:                      # partial entries of a killed run (we hold the lock)
            for stale in final.parent.glob(f".partial-{final.name}-*"):
                shutil.rmtree(stale, ignore_errors=True)
        tmps = [final.parent / f".partial-{final.name}-{os.getpid()}" for final in todo]
        try:
            make(list(todo), tmps)
            for tmp, (final, info) in zip(tmps, todo.items()):
                files = sorted(p.relative_to(tmp).as_posix() for p in tmp.rglob("*") if p.is_file())
                manifest = dict(info, sha256={f: _sha256(tmp / f) for f in files})
                (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))
                os.replace(tmp, final)
        finally:
            for tmp in tmps:
                shutil.rmtree(tmp, ignore_errors=True)
    return finals


class CacheEntry:
    """A trained model in the cache: its directory ``path`` (load it with
    :func:`~mlmbook.models.load_mlm`), ``kind`` (``"mlm"`` or ``"maelm"``), a reader-facing
    ``label`` such as ``"toy MLM (full preset, seed 0)"`` (never a path), its snapshots."""

    def __init__(self, path: Path, kind: str, label: str):
        self.path, self.kind, self.label = Path(path), kind, label

    def __fspath__(self) -> str:
        return str(self.path)

    def __repr__(self) -> str:
        return f"CacheEntry({self.label!r})"

    @property
    def info(self) -> dict:
        """How the entry was trained: grammar, kind, configuration, seed, threads, version."""
        return {k: v for k, v in json.loads((self.path / "manifest.json").read_text()).items() if k != "sha256"}

    def history(self) -> dict:
        """The training history: steps, train/eval losses, the Bayes and unigram losses, seconds."""
        return json.loads((self.path / "history.json").read_text())

    def checkpoints(self) -> list[Path]:
        """Snapshot directories of the model, earliest first, then the final model itself."""
        return sorted((self.path / "checkpoints").glob("step_*")) + [self.path]


def load_or_train(grammar: str | Grammar = "toy", preset: str | TrainConfig = "full", seed: int = 0,
                  progress: bool = True, kind: str = "mlm") -> CacheEntry:
    """The cache entry of a trained toy model; trains (and caches atomically) on first use.

    Parameters
    ----------
    grammar : "toy", "toy_topic", a YAML path, or a :class:`~mlmbook.toy.grammar.Grammar`
    preset : a name of :data:`~mlmbook.models.train.PRESETS` or a :class:`~mlmbook.models.train.TrainConfig`
    kind : "mlm" (default) or "maelm" (:mod:`mlmbook.models.maelm`)
    """
    if kind not in ("mlm", "maelm"):
        raise ValueError(f"unknown model kind {kind!r}; use 'mlm' or 'maelm'")
    g = grammar if isinstance(grammar, Grammar) else Grammar.load(grammar)
    if isinstance(preset, str) and preset not in PRESETS:
        raise ValueError(f"unknown training preset {preset!r}; use one of {', '.join(PRESETS)}")
    config, name = (PRESETS[preset], preset) if isinstance(preset, str) else (preset, "custom")
    return train_together([(g, config, seed, kind)], progress, name)[0]


def train_together(models: list[tuple], progress: bool = False,
                   preset: str = "custom") -> list[CacheEntry]:
    """The cache entries of ``models``, (Grammar, TrainConfig, seed, kind) of one
    :func:`~mlmbook.models.stacked.shape_of`, training the missing ones as one stack (the same
    weights :func:`load_or_train` would train one at a time); ``preset`` names the configuration."""
    finals = [_entry_path(g, c, s, k) for g, c, s, k in models]
    infos = [dict(grammar=g.name, kind=k, config=asdict(c), seed=s, threads=TRAIN_THREADS,
                  version=VERSION, trainer=f"stacked {stacked.VERSION}") for g, c, s, k in models]
    by_path = dict(zip(finals, models))

    def make(missing, tmps):
        stacked.train_stack([stacked.Member(*by_path[f], tmp) for f, tmp in zip(missing, tmps)], progress)

    paths = _cached_many(finals, make, infos)
    return [CacheEntry(p, k, f"{g.name} {'MAE-LM' if k == 'maelm' else 'MLM'} ({preset} preset, "
                             f"seed {s})") for p, (g, c, s, k) in zip(paths, models)]
