"""Where tasks run (mlmbook.workers.cluster): blocks that do not depend on the cluster, a one-line error for
an unreachable scheduler, processes that die with the one that started them; models as bytes
(mlmbook.models.shipping); the build lock."""
import contextlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import psutil
import pytest

from mlmbook.workers import cluster


def _lengths(block, offset):
    return [(len(block), offset + x) for x in block]


def test_map_blocks_here_cuts_the_same_blocks_a_cluster_would():
    out = cluster.map_blocks(_lengths, list(range(10)), 100, size=4)
    assert out == [(4, 100), (4, 101), (4, 102), (4, 103), (4, 104), (4, 105), (4, 106), (4, 107), (2, 108), (2, 109)]
    assert cluster.map_blocks(_lengths, [], 0) == []


@contextlib.contextmanager
def plain_listener():
    """A TCP server on 127.0.0.1 that accepts connections and never says a word (not Dask)."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted = []

    def accept():
        with contextlib.suppress(OSError):
            while True:
                accepted.append(server.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"tcp://127.0.0.1:{server.getsockname()[1]}", accepted
    finally:
        server.close()
        for conn in accepted:
            conn.close()


def test_a_bad_scheduler_address_is_one_line_within_the_connect_timeout():
    """Malformed, nothing listening, or a listener that is not Dask: one line, no hang."""
    import dask

    from mlmbook.errors import UsageError
    with pytest.raises(UsageError, match=r"'garbage' is not a Dask address .*tcp://HOST:8786"):
        cluster.reach("garbage")
    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}), plain_listener() as (where, accepted):
        start = time.perf_counter()
        with pytest.raises(UsageError, match=rf"cannot reach the Dask scheduler at {where} \(no answer within 2 s\)"):
            cluster.map_blocks(_lengths, [1, 2], 0, scheduler=where)
        assert time.perf_counter() - start < 10 and accepted               # it did connect, and gave up
        with pytest.raises(UsageError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9 "):
            cluster.reach("tcp://127.0.0.1:9")


def test_the_build_checks_its_scheduler_first_one_line_within_30_s(tmp_path):
    """``build --scheduler`` at garbage, and at a plain TCP listener: one line on stderr, a non-zero
    exit, before any planning (no build folder, no lock). The listener costs the connect timeout
    (3 s here) beyond the start-up that garbage costs: within 30 s on a quiet machine, and measured
    against that start-up so that a loaded one cannot flip it (the old build hung for 300 s)."""
    from tests.dask_cluster import clean_env
    env = clean_env(MLMBOOK_BUILD=str(tmp_path / "_build"), DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="3s")
    took = {}
    with plain_listener() as (where, accepted):
        for address in ("garbage", where):
            start = time.perf_counter()
            out = subprocess.run([sys.executable, "-m", "mlmbook", "build", "0", "--profile", "quick", "--no-render",
                                  "--scheduler", address], capture_output=True, text=True, env=env, timeout=300)
            took[address] = time.perf_counter() - start
            lines = out.stderr.strip().splitlines()
            assert out.returncode != 0 and len(lines) == 1 and address in lines[0], out.stderr
        assert accepted
    assert took[where] < took["garbage"] + 3 + 15, took
    assert not (tmp_path / "_build").exists()


def test_the_scheduler_comes_from_the_option_then_the_environment(monkeypatch):
    monkeypatch.setenv("MLMBOOK_SCHEDULER", "tcp://127.0.0.1:8786")
    assert cluster.address("tcp://127.0.0.1:1") == "tcp://127.0.0.1:1"
    assert cluster.address() == "tcp://127.0.0.1:8786"
    monkeypatch.setenv("MLMBOOK_SCHEDULER", "")
    assert cluster.address() is None


PARENT = textwrap.dedent("""
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", {child!r}])
    print(child.pid, flush=True)
    time.sleep(600)
""")
READY = "open({ready!r}, 'w').close()\n"
"""The child's line after it set its signal (or did not): the test waits for the file, not a time."""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
@pytest.mark.parametrize("guarded", [True, False])
def test_a_guarded_child_dies_with_its_parent_killed_by_sigkill(guarded, tmp_path):
    """A process that set the parent-death signal dies when its parent is SIGKILLed; one that did not
    lives on (so the test can fail)."""
    ready = tmp_path / "ready"
    child = ("import time\nfrom mlmbook.workers.cluster import set_parent_death_signal\n"
             f"assert set_parent_death_signal() or not {guarded}\n" if guarded else "import time\n") + \
        READY.format(ready=str(ready)) + "time.sleep(60)"
    parent = subprocess.Popen([sys.executable, "-c", PARENT.format(child=child)], stdout=subprocess.PIPE, text=True)
    pid = int(parent.stdout.readline())
    deadline = time.time() + 120
    while not ready.exists() and time.time() < deadline:    # the child has set its signal
        time.sleep(0.1)
    assert ready.exists()
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    proc = psutil.Process(pid)
    try:
        gone, alive = psutil.wait_procs([proc], timeout=5 if guarded else 1)
        assert bool(gone) == guarded
    finally:
        if proc.is_running():
            proc.kill()


def test_the_kernelspec_starts_ipykernel_behind_the_guard():
    argv = cluster.kernel_argv("/some/python")
    assert argv[0] == "/some/python" and argv[1] == "-c" and "{connection_file}" in argv
    assert "prctl(1, int(signal.SIGKILL))" in argv[2] and '"-m", "ipykernel_launcher"' in argv[2]
    compile(argv[2], "guard", "exec")


def test_a_live_build_lock_is_refused_naming_its_pid(tmp_path, monkeypatch):
    from mlmbook.errors import BuildError
    from mlmbook.pipeline.chapters import Layout
    from mlmbook.pipeline.runs import build_lock
    monkeypatch.setenv("MLMBOOK_BUILD", str(tmp_path / "_build"))
    layout = Layout(tmp_path)
    with build_lock(layout) as path:
        assert path.read_text().strip() == str(os.getpid())
        holder = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
            import os
            os.environ["MLMBOOK_BUILD"] = {str(tmp_path / "_build")!r}
            from mlmbook.pipeline.chapters import Layout
            from mlmbook.pipeline.runs import build_lock
            with build_lock(Layout({str(tmp_path)!r})):
                pass
            """)], capture_output=True, text=True)
        assert holder.returncode != 0 and f"(pid {os.getpid()})" in holder.stderr
    with build_lock(layout):                                  # released: the next build takes it
        pass
    with pytest.raises(BuildError, match="another build is running"):
        with build_lock(layout):
            with build_lock(layout):                          # a second holder, even in one process
                pass


@pytest.mark.slow(reason="trains a tiny model")
def test_a_model_packed_as_bytes_installs_whole_and_a_damaged_one_never_lands(tmp_path, monkeypatch):
    from mlmbook.models import load_or_train, shipping
    from mlmbook.models.train import TrainConfig
    tiny = TrainConfig(hidden=16, layers=1, heads=1, intermediate=32, steps=10, batch=8, n_eval=5, eval_every=5,
                       checkpoints=())
    monkeypatch.setenv("MLMBOOK_CACHE", str(tmp_path / "here"))
    entry = load_or_train("tiny", tiny, seed=0, progress=False).path
    blob = shipping.pack(entry)
    assert shipping.pack(entry) == blob                                  # the same entry, the same bytes
    monkeypatch.setenv("MLMBOOK_CACHE", str(tmp_path / "there"))
    landed = shipping.install(entry.name, blob)
    assert landed == tmp_path / "there" / entry.name
    files = sorted(p.relative_to(entry) for p in entry.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(landed) for p in landed.rglob("*") if p.is_file())
    assert all((entry / f).read_bytes() == (landed / f).read_bytes() for f in files)
    assert load_or_train("tiny", tiny, seed=0, progress=False).path == landed   # found: not trained again
    monkeypatch.setenv("MLMBOOK_CACHE", str(tmp_path / "elsewhere"))
    at = blob.index(b"model.safetensors")
    damaged = blob[:at + 1024] + bytes([blob[at + 1024] ^ 0xFF]) + blob[at + 1025:]
    with pytest.raises(ValueError, match="does not match its checksum"):
        shipping.install(entry.name, damaged)
    assert not [p for p in (tmp_path / "elsewhere").glob("*") if not p.name.startswith(".")]
