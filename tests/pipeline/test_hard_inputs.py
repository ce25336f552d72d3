"""Hard inputs, tried as a new user would: each gets a one-line cause and what to do.

(Other hard inputs live beside the code they exercise: unknown chapter / parameter / type and
interrupted builds in test_build.py; corrupted and interrupted caches in test_cache.py;
model errors in test_oracle.py; malformed CoNLL-U in test_treebank.py.)
"""
import os
import subprocess
import sys



def cli(*args, **env):
    e = {k: v for k, v in os.environ.items() if k not in ("MLMBOOK_BUILD",)}
    e.update(HF_HUB_OFFLINE="1", **env)
    return subprocess.run([sys.executable, "-m", "mlmbook", *args], capture_output=True, text=True, env=e,
                          timeout=300)


def one_line(proc):
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_causal_lm_is_refused_before_any_chapter_runs(tmp_path):
    from transformers import GPT2Config, GPT2LMHeadModel
    from mlmbook.toy import Grammar
    from mlmbook.models.train import make_tokenizer
    GPT2LMHeadModel(GPT2Config(vocab_size=240, n_embd=8, n_layer=1, n_head=1)).save_pretrained(tmp_path)
    make_tokenizer(Grammar.load("tiny")).save_pretrained(tmp_path)
    msg = one_line(cli("build", "0", "--profile", "quick", "-p", "model", str(tmp_path), "--no-render",
                       MLMBOOK_BUILD=str(tmp_path / "b")))
    assert "not a masked language model" in msg
    assert not (tmp_path / "b" / "exec").exists() or not list((tmp_path / "b" / "exec").glob("*.ipynb"))


def test_missing_model_path_and_offline_model():
    msg = one_line(cli("build", "0", "--profile", "quick", "-p", "model", "./no/such/model"))
    assert "does not exist" in msg
    msg = one_line(cli("build", "0", "--profile", "quick", "-p", "model", "someone/not-downloaded-model"))
    assert "not in the Hugging Face cache" in msg and "download" in msg


def test_unknown_subcommand_and_chapter_listing():
    proc = cli("build", "7")
    msg = one_line(proc)
    assert "unknown chapter" in msg.lower() and "00_toy_world" in msg
