"""The build's scheduler (mlmbook.workers): needs respected, longest path first, failures contained."""
import time

import pytest

from mlmbook import workers
from mlmbook.workers import NotRun, Task


def fail(message):
    raise ValueError(message)


def test_upward_rank_is_own_seconds_plus_the_longest_chain_waiting():
    tasks = [Task("x", abs, (1,), seconds=1), Task("y", abs, (1,), seconds=5),
             Task("z", abs, (1,), needs=("x",), seconds=10), Task("w", abs, (1,), needs=("z",), seconds=2)]
    assert workers.ranks(tasks) == {"x": 13, "y": 5, "z": 12, "w": 2}


def test_one_worker_runs_by_rank_once_needs_are_done():
    tasks = [Task("y", abs, (-2,), seconds=5), Task("x", abs, (-1,), seconds=1),
             Task("z", abs, (-3,), needs=("x",), seconds=10)]
    started = []
    out = list(workers.run(tasks, workers=1, started=lambda t: started.append(t.key)))
    assert [t.key for t, *_ in out] == started == ["x", "z", "y"]      # x unblocks the longest task
    assert [v for _, v, _, _ in out] == [1, 3, 2]


@pytest.mark.parametrize("n", [1, 2])
def test_a_failure_skips_what_needs_it_and_nothing_else(n):
    tasks = [Task("bad", fail, ("broken input",)), Task("after", abs, (-1,), needs=("bad",)),
             Task("other", abs, (-4,))]
    out = {t.key: (v, e) for t, v, e, _ in workers.run(tasks, workers=n)}
    assert isinstance(out["bad"][1], ValueError) and "broken input" in str(out["bad"][1])
    assert isinstance(out["after"][1], NotRun) and "needs bad, which failed" in str(out["after"][1])
    assert out["other"] == (4, None)


def test_stop_starts_nothing_more():
    tasks = [Task("a", abs, (-1,), seconds=3), Task("b", abs, (-2,), seconds=2), Task("c", abs, (-3,), seconds=1)]
    out = list(workers.run(tasks, workers=1, stop=lambda: True))
    assert out[0][:3] == (tasks[0], 1, None)
    assert [type(e) for _, _, e, _ in out[1:]] == [NotRun, NotRun]


@pytest.mark.slow(reason="spawns two worker processes (about 5 s)")
def test_two_workers_overlap_and_wait_for_needs():
    """c runs beside a; b, which needs a, starts only after a ends."""
    tasks = [Task("a", time.sleep, (1.5,), seconds=2), Task("b", time.sleep, (0.0,), needs=("a",), seconds=1),
             Task("c", time.sleep, (0.2,), seconds=1)]
    t0 = time.perf_counter()
    order = [t.key for t, _, e, _ in workers.run(tasks, workers=2) if e is None]
    assert order == ["c", "a", "b"]
    assert time.perf_counter() - t0 < 1.5 + 0.2 + 4      # side by side, not one after another (plus spawn)


def test_bad_needs_are_refused():
    with pytest.raises(ValueError, match="unknown keys"):
        list(workers.run([Task("a", abs, (1,), needs=("nope",))]))
