"""The model cache: atomic, verified, and robust to interruptions and corruption."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from mlmbook.oracle import HFMaskedLM
from mlmbook.train import TrainConfig, load_or_train

TINY = TrainConfig(hidden=16, layers=1, heads=1, intermediate=32, steps=30, batch=16, n_eval=10, eval_every=15,
                   checkpoints=(0.5,))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MLMBOOK_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_train_then_load_from_cache(cache):
    t0 = time.perf_counter()
    path = load_or_train("tiny", TINY, seed=1, progress=False)
    first = time.perf_counter() - t0
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["seed"] == 1 and "model.safetensors" in manifest["sha256"]
    assert load_or_train("tiny", TINY, seed=1, progress=False) == path          # cached: same entry
    history = json.loads((path / "history.json").read_text())
    assert history["eval_loss"][-1] < history["eval_loss"][0] + 0.5 and history["bayes"] < history["unigram"]
    lm = HFMaskedLM(str(path))
    assert lm.vocab[5:] == __import__("mlmbook.language", fromlist=["Grammar"]).Grammar.load("tiny").vocab
    assert load_or_train("tiny", TINY, seed=2, progress=False) != path          # seed is part of the key
    assert first > 0


def test_corrupted_entry_is_detected_and_rebuilt(cache, capfd):
    path = load_or_train("tiny", TINY, seed=0, progress=False)
    weights = path / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100] + b"x" * 100)               # flip bytes in place
    again = load_or_train("tiny", TINY, seed=0, progress=False)
    err = capfd.readouterr().err
    assert "corrupted" in err and "retraining" in err and len(err.strip().splitlines()) == 1
    assert again == path and HFMaskedLM(str(again)).V > 5


def test_entry_without_manifest_never_loads(cache, capfd):
    path = load_or_train("tiny", TINY, seed=0, progress=False)
    (path / "manifest.json").unlink()                                            # as if the write was cut short
    load_or_train("tiny", TINY, seed=0, progress=False)
    assert "no manifest" in capfd.readouterr().err
    assert (path / "manifest.json").exists()


def test_interrupted_training_leaves_nothing_that_loads(cache):
    """Ctrl-C (SIGINT) during training: no entry appears; a rerun trains and succeeds."""
    code = textwrap.dedent(f"""
        from mlmbook.train import TrainConfig, load_or_train
        cfg = TrainConfig(hidden=16, layers=1, heads=1, intermediate=32, steps=100000, batch=16, n_eval=10,
                          eval_every=1000, checkpoints=())
        print("start", flush=True)
        load_or_train("tiny", cfg, seed=0, progress=False)
    """)
    env = dict(os.environ, MLMBOOK_CACHE=str(cache))
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "start"
    deadline = time.time() + 60
    while time.time() < deadline and not list(cache.glob(".partial-*/*")):
        time.sleep(0.2)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    assert proc.returncode != 0
    entries = [p for p in cache.iterdir() if not p.name.startswith(".")]
    assert entries == [], entries                                                # nothing that could load
    assert not list(cache.glob(".partial-*"))                                    # and the partial dir was removed
