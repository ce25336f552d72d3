"""Hard inputs, tried as a new user would: each gets a one-line cause and what to do.

(Other hard inputs live beside the code they exercise: unknown chapter / parameter / type and
interrupted builds in test_build.py; corrupted and interrupted caches in test_cache.py;
model errors in test_oracle.py; malformed CoNLL-U in test_treebank.py.)
"""
import os
import subprocess
import sys

import pytest


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
    from mlmbook.toy.vocab import make_tokenizer
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


CONLLU = """# text = the dog barks
1\tthe\tthe\tDET\t_\t_\t2\tdet\t_\t_
2\tdog\tdog\tNOUN\t_\t_\t3\tnsubj\t_\t_
3\tbarks\tbark\tVERB\t_\t_\t0\troot\t_\t_

"""


def _fixture_book(tmp_path):
    import shutil
    from pathlib import Path
    root = tmp_path / "book_min"
    shutil.copytree(Path(__file__).parent.parent / "fixtures" / "book_min", root)
    return root


@pytest.mark.slow                  # spawns the command line
def test_a_relative_treebank_path_is_the_callers_path(tmp_path):
    """`-p treebank ../data/x.conllu` used to be read relative to book/ (the chapter's own cwd)."""
    import json
    root = _fixture_book(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.conllu").write_text(CONLLU)
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run([sys.executable, "-m", "mlmbook", "build", "0", "--root", str(root), "--profile", "quick",
                           "--no-render", "-p", "treebank", "../data/x.conllu"], capture_output=True, text=True,
                          cwd=work, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr
    results = json.loads((root / "_build" / "results" / "00_min.json").read_text())
    assert results["treebank_path"] == str(tmp_path / "data" / "x.conllu") and results["treebank_sentences"] == 1


def test_bad_explicit_treebanks_fail_in_one_line_before_any_kernel_starts(tmp_path):
    root = _fixture_book(tmp_path)
    (tmp_path / "empty.conllu").write_text("")
    (tmp_path / "bad.conllu").write_text(CONLLU.replace("\t_\t_\t2\tdet", "\t_\t_\tX\tdet"))
    for given, expected in (("./nowhere.conllu", "does not exist"), ("mistyped-name.conllu", "check the name"),
                            (str(tmp_path / "empty.conllu"), "no sentence in"),
                            (str(tmp_path / "bad.conllu"), "bad.conllu:2")):
        msg = one_line(cli("build", "0", "--root", str(root), "--profile", "quick", "-p", "treebank", given))
        assert expected in msg, msg
        assert "download" not in msg or "ewt" in given           # a mistyped path is not told to download EWT
    assert not (root / "_build" / "exec").exists() or not list((root / "_build" / "exec").glob("*.ipynb"))


def test_a_relative_model_directory_is_the_callers_path(tmp_path):
    from mlmbook.pipeline.chapters import resolve_user_paths
    (tmp_path / "m").mkdir()
    out = resolve_user_paths({"model": "m", "treebank": "test"}, {"model": "toy", "treebank": None}, cwd=tmp_path)
    assert out == {"model": str(tmp_path / "m"), "treebank": "test"}
    assert resolve_user_paths({"model": "google/bert_uncased_L-2_H-128_A-2"}, {"model": "toy"},
                              cwd=tmp_path)["model"] == "google/bert_uncased_L-2_H-128_A-2"
