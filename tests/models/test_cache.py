"""The model cache: atomic, verified, and robust to interruptions and corruption."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

from mlmbook.models import PRESETS, HFMaskedLM, TrainConfig, load_or_train
from mlmbook.toy import Grammar

TINY = TrainConfig(hidden=16, layers=1, heads=1, intermediate=32, steps=30, batch=16, n_eval=10, eval_every=15,
                   checkpoints=(0.5,))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MLMBOOK_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_train_then_load_from_cache(cache):
    t0 = time.perf_counter()
    entry = load_or_train("tiny", TINY, seed=1, progress=False)
    path = entry.path
    first = time.perf_counter() - t0
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["seed"] == 1 and "model.safetensors" in manifest["sha256"]
    assert entry.info["threads"] == 1 and "sha256" not in entry.info
    assert load_or_train("tiny", TINY, seed=1, progress=False).path == path     # cached: same entry
    history = entry.history()
    assert history["eval_loss"][-1] < history["eval_loss"][0] + 0.5 and history["bayes"] < history["unigram"]
    assert [p.name for p in entry.checkpoints()] == ["step_000015", path.name]
    lm = HFMaskedLM.from_pretrained(path, name=entry.label)
    assert lm.vocab[5:] == Grammar.load("tiny").vocab
    assert str(cache) not in lm.name and "tiny" in lm.name                      # a name, never a path
    assert load_or_train("tiny", TINY, seed=2, progress=False).path != path     # seed is part of the key
    assert first > 0


def test_a_thread_setting_loads_the_cached_model_and_leaves_the_callers_threads(cache, monkeypatch):
    """Training always runs on one thread: MLMBOOK_THREADS=2 must load the model trained before,
    never train a different one silently; and training restores the caller's thread count."""
    torch.set_num_threads(2)
    one = load_or_train("tiny", TINY, seed=0, progress=False)
    assert torch.get_num_threads() == 2
    monkeypatch.setenv("MLMBOOK_THREADS", "2")
    monkeypatch.setattr("mlmbook.models.stacked.train_stack", lambda *a, **k: pytest.fail("trained again"))
    two = load_or_train("tiny", TINY, seed=0, progress=False)
    assert one.path == two.path and two.info["threads"] == 1


@pytest.mark.slow                  # trains four models
@pytest.mark.parametrize("kind", ["mlm", "maelm"])
def test_same_seed_and_threads_give_identical_weights(tmp_path, monkeypatch, kind):
    """Training is deterministic: the quick profile's architecture, trained twice, bit for bit."""
    from safetensors.torch import load_file
    cfg = PRESETS["quick"]
    short = TrainConfig(**{**cfg.__dict__, "steps": 40, "eval_every": 20, "n_eval": 10, "checkpoints": ()})
    weights = []
    for run in ("a", "b"):
        monkeypatch.setenv("MLMBOOK_CACHE", str(tmp_path / run))
        entry = load_or_train("toy", short, seed=3, progress=False, kind=kind)
        name = "model.safetensors" if kind == "mlm" else "maelm.safetensors"
        weights.append(load_file(entry.path / name))
    assert weights[0].keys() == weights[1].keys()
    for k in weights[0]:
        assert torch.equal(weights[0][k], weights[1][k]), k


def test_corrupted_entry_is_detected_and_rebuilt(cache, capfd):
    path = load_or_train("tiny", TINY, seed=0, progress=False).path
    weights = path / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100] + b"x" * 100)               # flip bytes in place
    again = load_or_train("tiny", TINY, seed=0, progress=False).path
    out = capfd.readouterr()
    assert "corrupted" in out.err and "trained again" in out.err and len(out.err.strip().splitlines()) == 1
    assert "corrupted" in out.out                                                # the page says it too
    assert again == path and HFMaskedLM.from_pretrained(again).V > 5


def test_entry_without_manifest_never_loads(cache, capfd):
    path = load_or_train("tiny", TINY, seed=0, progress=False).path
    (path / "manifest.json").unlink()                                            # as if the write was cut short
    load_or_train("tiny", TINY, seed=0, progress=False)
    assert "no manifest" in capfd.readouterr().err
    assert (path / "manifest.json").exists()


def default_sigint():
    """A child started from a background job inherits an ignored SIGINT; Ctrl-C must reach it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow                  # trains in a child process
def test_interrupted_training_leaves_nothing_that_loads(cache):
    """Ctrl-C (SIGINT) during training: no entry appears; a rerun trains and succeeds."""
    code = textwrap.dedent("""
        from mlmbook.models import TrainConfig, load_or_train
        cfg = TrainConfig(hidden=16, layers=1, heads=1, intermediate=32, steps=100000, batch=16, n_eval=10,
                          eval_every=1000, checkpoints=())
        print("start", flush=True)
        load_or_train("tiny", cfg, seed=0, progress=False)
    """)
    env = dict(os.environ, MLMBOOK_CACHE=str(cache))
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)
    assert proc.stdout.readline().strip() == "start"
    deadline = time.time() + 8           # mid-training: files in the partial dir, or a few seconds in
    while time.time() < deadline and not list(cache.glob(".partial-*/*")):
        time.sleep(0.2)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    assert proc.returncode != 0
    entries = [p for p in cache.iterdir() if not p.name.startswith(".") and p.name not in ("evaluator", "ladder")]
    assert entries == [], entries                                                # nothing that could load
    assert not list(cache.glob(".partial-*"))                                    # and the partial dir was removed
