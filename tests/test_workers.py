"""The build's tasks on Dask's graph (mlmbook.workers): needs respected, failures contained, lost
workers retried and said; on a Dask worker thread in this process or on a local Dask cluster of
separate processes bound to 127.0.0.1. Every run asks where its tasks ran: Dask bypassed, they fail."""
import os
import time

import pytest

from mlmbook import workers
from mlmbook.workers import NotRun, Task, WorkerLost


def fail(message):
    raise ValueError(message)


def die_once(marker):
    """Kill this worker process the first time (the marker file does not exist yet); then return its pid."""
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return os.getpid()


def die(_):
    os._exit(1)


def add_needs(x, values):
    return x + sum(v for v in values.values())


def chatty(n):
    workers.tell(f"step {n} of a task")
    return n


def stamp(seconds):
    """When this ran (wall clock), and in which process."""
    start = time.time()
    time.sleep(seconds)
    return start, time.time(), os.getpid()


def where(x):
    """The Dask worker that runs this (it raises outside one) and its process."""
    from distributed import get_worker
    return x, get_worker().address, os.getpid()


def test_upward_rank_is_own_seconds_plus_the_longest_chain_waiting():
    tasks = [Task("x", abs, (1,), seconds=1), Task("y", abs, (1,), seconds=5),
             Task("z", abs, (1,), needs=("x",), seconds=10), Task("w", abs, (1,), needs=("z",), seconds=2)]
    assert workers.ranks(tasks) == {"x": 13, "y": 5, "z": 12, "w": 2}


def test_makespan_plays_list_scheduling_out_on_the_estimates():
    tasks = [Task("x", abs, seconds=1), Task("y", abs, seconds=5),
             Task("z", abs, needs=("x",), seconds=10), Task("w", abs, needs=("z",), seconds=2)]
    assert workers.makespan(tasks, 1) == 18                       # one worker: everything in a row
    assert workers.makespan(tasks, 2) == 13                       # x then z then w on one, y beside them
    assert workers.makespan(tasks, 8) == max(workers.ranks(tasks).values())   # the critical path


def test_one_worker_is_a_dask_worker_in_this_process_and_needs_come_first():
    """Each task runs on a Dask worker (in-process: no network), after its needs, and says so."""
    tasks = [Task("y", where, (2,), seconds=5), Task("x", where, (1,), seconds=1),
             Task("z", where, (3,), needs=("x",), seconds=10)]
    started = []
    progress = workers.Progress(print, on_start=lambda t: started.append(t.key))
    out = list(workers.run(tasks, workers=1, progress=progress))
    assert sorted((t.key, v[0]) for t, v, e, _ in out if e is None) == [("x", 1), ("y", 2), ("z", 3)]
    assert all(v[1].startswith("inproc://") and v[2] == os.getpid() for _, v, _, _ in out)
    ended = [t.key for t, *_ in out]
    assert ended.index("x") < ended.index("z") and started.index("x") < started.index("z")
    assert sorted(started) == ["x", "y", "z"]


ON_A_CLUSTER = pytest.param(2, marks=pytest.mark.slow(reason="starts a local Dask cluster"), id="2")


@pytest.mark.parametrize("n", [1, ON_A_CLUSTER])
def test_a_failure_skips_what_needs_it_and_nothing_else(n):
    tasks = [Task("bad", fail, ("broken input",)), Task("after", abs, (-1,), needs=("bad",)),
             Task("later", abs, (-2,), needs=("after",)), Task("other", abs, (-4,))]
    out = {t.key: (v, e) for t, v, e, _ in workers.run(tasks, workers=n)}
    assert isinstance(out["bad"][1], ValueError) and "broken input" in str(out["bad"][1])
    assert isinstance(out["after"][1], NotRun) and "needs bad, which failed" in str(out["after"][1])
    assert isinstance(out["later"][1], NotRun) and "needs after, which failed" in str(out["later"][1])
    assert out["other"] == (4, None)


def test_stop_cancels_what_has_not_ended():
    """Once ``stop`` says so, the tasks not ended are cancelled: c, which needs b, never runs."""
    tasks = [Task("a", abs, (-1,)), Task("b", time.sleep, (3,), needs=("a",)), Task("c", abs, (-3,), needs=("b",))]
    out = list(workers.run(tasks, workers=1, stop=lambda: True))
    assert out[0][:3] == (tasks[0], 1, None)
    assert {t.key: type(e) for t, _, e, _ in out[1:]} == {"b": NotRun, "c": NotRun}
    assert all("the build stopped" in str(e) for _, _, e, _ in out[1:])


@pytest.mark.parametrize("n", [1, ON_A_CLUSTER])
def test_a_task_is_passed_the_values_of_its_needs_and_of_data(n):
    tasks = [Task("a", abs, (-3,), seconds=2), Task("b", add_needs, (100,), needs=("a", "given"), pass_needs=True)]
    out = {t.key: v for t, v, e, _ in workers.run(tasks, workers=n, data={"given": 20})}
    assert out == {"a": 3, "b": 123}


def test_bad_needs_are_refused():
    with pytest.raises(ValueError, match="unknown keys"):
        list(workers.run([Task("a", abs, (1,), needs=("nope",))]))
    with pytest.raises(ValueError, match="in a circle"):
        list(workers.run([Task("a", abs, (1,), needs=("b",)), Task("b", abs, (1,), needs=("a",))]))


def test_progress_prints_a_line_after_a_silence_naming_what_runs(monkeypatch):
    said = []
    monkeypatch.setattr(workers, "QUIET_SECONDS", 0.0)
    progress = workers.Progress(said.append)
    progress((0.0, {"key": "train 3", "started_on": "tcp://127.0.0.1:4000 (pid 7)"}))  # a start (Dask's event)
    progress({"key": "train 3", "text": "train 3: 8 models", "show": False})
    assert said == []
    progress.heartbeat()
    assert len(said) == 1 and "running: train 3: 8 models" in said[0] and "elapsed" in said[0]
    progress((0.0, {"key": "03_x", "text": "03_x cell 4/9", "show": True, "worker": "tcp://127.0.0.1:4000"}))
    assert said[-1] == "03_x cell 4/9"                  # a Dask event: the scheduler names its worker


def test_a_lost_worker_and_a_second_start_are_lines():
    said = []
    progress = workers.Progress(said.append)
    progress.begin("train 0", "tcp://127.0.0.1:4000 (pid 7)")
    lost = {"action": "remove-worker", "worker": "tcp://127.0.0.1:4000", "expected": False,
            "processing-tasks": {"train_0-abc"}}
    progress.cluster((0.0, lost), {"train_0-abc": "train 0"})
    progress.cluster((0.0, {**lost, "expected": True}), {"train_0-abc": "train 0"})   # closed on purpose: no line
    progress.begin("train 0", "tcp://127.0.0.1:4001 (pid 8)")
    assert said == ["  lost the Dask worker tcp://127.0.0.1:4000 while it ran train 0: Dask runs it again on "
                    "another worker, up to the cluster's allowed failures",
                    "  train 0 runs again, on tcp://127.0.0.1:4001 (pid 8) (the worker that ran it was lost)"]


@pytest.mark.slow(reason="starts a local Dask cluster of two processes (a few seconds)")
def test_two_workers_overlap_wait_for_needs_and_tell_from_their_processes():
    """a and d run side by side; b, which needs a, ends after a; a line told in a worker arrives here."""
    tasks = [Task("a", stamp, (1.5,), seconds=2), Task("d", stamp, (1.5,), seconds=2),
             Task("b", where, (0,), needs=("a",), seconds=1), Task("c", chatty, (7,), seconds=1)]
    said = []
    out = [(t.key, v) for t, v, e, _ in workers.run(tasks, workers=2, progress=workers.Progress(said.append))
           if e is None]
    order, got = [k for k, _ in out], dict(out)
    assert sorted(order) == ["a", "b", "c", "d"] and order.index("a") < order.index("b")
    (a0, a1, a_pid), (d0, d1, d_pid) = got["a"], got["d"]
    assert a_pid != d_pid and a0 < d1 and d0 < a1                  # side by side, in two processes
    _, address, pid = got["b"]
    assert address.startswith("tcp://127.0.0.1:") and pid != os.getpid()       # on a worker
    deadline = time.time() + 5
    while "step 7 of a task" not in said and time.time() < deadline:
        time.sleep(0.1)
    assert "step 7 of a task" in said


@pytest.mark.slow(reason="starts a local Dask cluster and kills its workers")
def test_a_worker_lost_mid_task_is_retried_once_then_the_task_fails(tmp_path):
    marker = tmp_path / "died-once"
    said = []
    out = {t.key: (v, e) for t, v, e, _ in workers.run([Task("flaky", die_once, (str(marker),))], workers=2,
                                                      progress=workers.Progress(said.append))}
    assert out["flaky"][1] is None and out["flaky"][0] != os.getpid() and marker.exists()   # the second try
    assert [line for line in said if "lost the Dask worker" in line and "while it ran flaky" in line]
    tasks = [Task("doomed", die, (0,)), Task("after", abs, (-1,), needs=("doomed",))]
    out = {t.key: (v, e) for t, v, e, _ in workers.run(tasks, workers=2)}
    assert isinstance(out["doomed"][1], WorkerLost) and "doomed: its worker process died" in str(out["doomed"][1])
    assert len(str(out["doomed"][1]).splitlines()) == 1
    assert isinstance(out["after"][1], NotRun)


def _environment():
    return {k: v for k, v in os.environ.items() if "THREADS" in k or k.startswith("MALLOC")}


@pytest.mark.slow(reason="starts a local Dask cluster")
def test_the_local_cluster_listens_on_127_0_0_1_only_and_keeps_the_environment():
    """Its servers are on 127.0.0.1 only; its workers get this process's thread settings (not Dask's), and
    this process's environment is left as it was."""
    import psutil

    from mlmbook.workers.cluster import client_for
    before = _environment()
    with client_for(2) as client:
        assert list(client.run(_environment).values()) == [before, before]
        pids = [os.getpid(), *client.run(os.getpid).values()]
        info = client.scheduler_info()
        assert info["address"].startswith("tcp://127.0.0.1:") and len(info["workers"]) == 2
        assert all(w.startswith("tcp://127.0.0.1:") for w in info["workers"])
        listening = [c.laddr for pid in pids for c in psutil.Process(pid).net_connections("inet")
                     if c.status == psutil.CONN_LISTEN]
    assert listening and {a.ip for a in listening} == {"127.0.0.1"}, listening
    assert _environment() == before
