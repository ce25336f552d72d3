"""The build on Dask (issue 37) and without orphans (issue 35): a real cluster of separate processes
on 127.0.0.1 gives the default build's results byte for byte; a worker killed twice mid-training
fails the build with one line and publishes nothing; SIGKILL of the build leaves no process and no
published file; a second build of a live build folder is refused, naming the live one."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.dask_cluster import clean_env, dask_cluster, executed

FIXTURE = Path(__file__).parent.parent / "fixtures" / "book_min"
pytestmark = pytest.mark.slow


def build(*args, env=None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mlmbook", "build", *args], capture_output=True, text=True,
                          env=env or clean_env(), timeout=900, **kw)


@pytest.fixture
def waiting_book(tmp_path, quick_toy_model):
    """The fixture book with its sleeping chapter twice, as chapters 8 and 9: numbers for which the book
    lists no models (the build trains per chapter number), so each needs only the quick default model,
    which ``quick_toy_model`` has cached: the build trains nothing and both chapters start at once. (As
    chapters 6 and 7, chapter 6 first trained its six quick models; on a loaded machine that took
    longer than chapter 7's 60-s sleep, 7 ended before 6 began, and the two never ran side by side.)
    The cell sleeps 600 s: the tests kill the build once the chapters run."""
    root = tmp_path / "book"
    shutil.copytree(FIXTURE, root)
    text = (root / "book" / "01_fail.md").read_text()
    (root / "book" / "01_fail.md").unlink()
    for n in (8, 9):
        (root / "book" / f"0{n}_fail.md").write_text(text)
    return root


def _start(root: Path, *chapters, wait: int = 600, **env) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mlmbook", "build", *chapters, "--root", str(root), "--profile",
                             "quick", "--no-render", "-p", "wait", str(wait)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=clean_env(**env), start_new_session=True)


def _until(condition, seconds: float, what: str) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} within {seconds} s")


def _published(build: Path) -> list[str]:
    return sorted(p.name for d in ("exec", "results") if (build / d).is_dir() for p in (build / d).iterdir()
                  if not p.name.startswith("."))


@pytest.mark.parametrize("chapters", [("8",), ("8", "9")], ids=["in-process", "local-cluster"])
def test_sigkill_of_the_build_leaves_no_process_and_publishes_nothing(waiting_book, chapters):
    build_dir = waiting_book / "_build"
    proc = _start(waiting_book, *chapters)
    running = [build_dir / "results" / ".running" / f"0{c}_fail.json" for c in chapters]
    try:
        _until(lambda: all(p.exists() for p in running), 300, "the chapters never started")   # inside time.sleep
        children = psutil.Process(proc.pid).children(recursive=True)
        kernels = [c for c in children if "ipykernel" in " ".join(c.cmdline())]
        assert len(kernels) == len(chapters), [c.cmdline() for c in children]
        os.kill(proc.pid, signal.SIGKILL)                                # the main process only
        proc.communicate(timeout=60)
        _, alive = psutil.wait_procs(children, timeout=30)
        assert not alive, [(p.pid, p.cmdline()) for p in alive]
    finally:
        with __import__("contextlib").suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    time.sleep(2)
    assert _published(build_dir) == []


def test_a_second_build_of_a_live_build_folder_is_refused_naming_its_pid(waiting_book):
    proc = _start(waiting_book, "8")                                   # still running when the second one ends
    try:
        _until(lambda: (waiting_book / "_build" / "results" / ".running" / "08_fail.json").exists(), 300,
               "the first build never started its chapter")
        second = build("0", "--root", str(waiting_book), "--profile", "quick", "--no-render")
        assert second.returncode == 1
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and f"another build is running in {waiting_book / '_build'} (pid {proc.pid})" \
            in lines[0], second.stderr
    finally:
        stopped = time.time()
        os.killpg(proc.pid, signal.SIGTERM)                             # stops like Ctrl-C: nothing published
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert _published(waiting_book / "_build") == []
    # its chapter's cell sleeps for 600 s: the build kills the kernel rather than wait for the cell (it took
    # 40 s when it waited for Dask's worker thread to notice the dead kernel)
    assert time.time() - stopped < 30, f"the build took {time.time() - stopped:.0f} s to stop"
    assert err.strip().splitlines()[-1].startswith("mlmbook: interrupted") and "Kernel died" not in err, err


def test_a_quick_build_on_a_dask_cluster_is_byte_identical_to_the_default_build(tmp_path):
    """Chapters 0 and 6 (deterministic, and the two cheapest in the quick profile; chapter 6 loads six
    models): once on the default local cluster, once through --scheduler on `dask scheduler` + two
    `dask worker`s, each worker with its own empty model cache, so every model travels as bytes."""
    here = build("0", "6", "--profile", "quick", "--no-render", env=clean_env(MLMBOOK_BUILD=str(tmp_path / "a")))
    assert here.returncode == 0, here.stderr
    with dask_cluster(tmp_path / "cluster") as cluster:
        there = build("0", "6", "--profile", "quick", "--no-render", "--scheduler", cluster.address,
                      env=clean_env(MLMBOOK_BUILD=str(tmp_path / "b")))
        assert there.returncode == 0, there.stderr
        assert f"running on the Dask cluster at {cluster.address}" in there.stderr
        shipped = [sorted(p.name for p in cache.glob("toy*")) for cache in cluster.caches]
        ran = executed(cluster.address)
    assert any(shipped), "no model reached a worker's cache"
    assert sum(ran.values()) >= 2, ran                                   # both chapters ran on the workers
    for slug in ("00_toy_world", "06_diffusion"):
        a, b = (tmp_path / d / "results" / f"{slug}.json" for d in ("a", "b"))
        assert a.read_bytes() == b.read_bytes(), slug


def test_a_worker_killed_twice_mid_training_fails_the_build_with_one_line_and_publishes_nothing(tmp_path):
    from distributed import Client
    cache = tmp_path / "client-cache"                                    # empty: the default model is trained
    with dask_cluster(tmp_path / "cluster") as cluster, Client(cluster.address, timeout=30) as client:
        proc = subprocess.Popen([sys.executable, "-m", "mlmbook", "build", "0", "--profile", "quick", "--no-render",
                                 "--scheduler", cluster.address], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=clean_env(MLMBOOK_BUILD=str(tmp_path / "b"), MLMBOOK_CACHE=str(cache)))
        killed = []
        for _ in range(2):
            def training():
                busy = {w: ks for w, ks in client.processing().items() if any("train" in str(k) for k in ks)}
                return next(iter(busy), None)

            _until(lambda: training() is not None or proc.poll() is not None, 300, "no training started")
            worker = training()
            if worker is None:
                break
            time.sleep(2)                                                # well inside its training
            pid = client.run(os.getpid, workers=[worker])[worker]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
            _until(lambda w=worker: training() != w or proc.poll() is not None, 120, "the task was not moved")
        out, err = proc.communicate(timeout=300)
    assert len(killed) == 2, err
    assert proc.returncode == 1, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("mlmbook: training failed: train 0: its worker process died while running it, twice"), err
    assert "lost the Dask worker tcp://127.0.0.1:" in err and "while it ran train 0" in err, err   # said at once
    assert _published(tmp_path / "b") == []
    assert not [p for p in cache.glob("*") if not p.name.startswith(".")] if cache.exists() else True


def test_pll_and_trees_over_a_two_worker_cluster_equal_one_process_exactly(tmp_path):
    import mlmbook
    from mlmbook.pipeline import prepare
    saved = prepare.needed("quick", [0])[0].entry().path                   # the quick default model's folder
    lm = mlmbook.load_mlm(saved)
    sents = mlmbook.Grammar.load("toy").sample(150, seed=4)                # three blocks of sentences
    texts = [" ".join(s.words) for s in sents]
    here_pll, here_terms = mlmbook.pll(lm, texts), mlmbook.pll(lm, texts[:70], reduction="none")
    here_trees = mlmbook.dependency_trees(lm, sents)
    text = " ".join(max(texts, key=len).split()[:12])
    here_rect = mlmbook.rectangle_test(lm, text)
    with dask_cluster(tmp_path / "cluster") as cluster:
        on = mlmbook.Options(scheduler=cluster.address)
        there_pll = mlmbook.pll(lm, texts, options=on)
        there_terms = mlmbook.pll(lm, texts[:70], reduction="none", options=on)
        there_trees = mlmbook.dependency_trees(lm, sents, options=on)
        there_rect = mlmbook.rectangle_test(lm, text, options=on)
        ran = executed(cluster.address)
        listing = tmp_path / "sentences.txt"
        listing.write_text("\n".join(texts[:80]) + "\n")
        cli = [sys.executable, "-m", "mlmbook", "pll", str(saved), str(listing)]
        verb_here = subprocess.run(cli, capture_output=True, text=True, env=clean_env(), timeout=300)
        verb_there = subprocess.run(cli + ["--scheduler", cluster.address], capture_output=True, text=True,
                                    env=clean_env(), timeout=300)
    assert sum(ran.values()) >= 3 + 2 + 3, ran             # the blocks of pll, per-token pll and trees ran there
    assert here_pll.tobytes() == there_pll.tobytes()
    assert all(a.scores.tobytes() == b.scores.tobytes() for a, b in zip(here_terms, there_terms))
    assert here_trees.uuas == there_trees.uuas and len(here_trees.scores) == len(there_trees.scores) > 128
    assert all(a.tobytes() == b.tobytes() for a, b in zip(here_trees.scores, there_trees.scores))
    assert here_rect.delta.tobytes() == there_rect.delta.tobytes() and here_rect.corners == there_rect.corners
    assert verb_here.returncode == 0 and verb_there.returncode == 0, verb_there.stderr
    assert verb_here.stdout == verb_there.stdout and len(verb_here.stdout.splitlines()) == 80
