"""Training up front (small models stacked, one process per core): the same weights as training in the chapter."""
import pytest
import torch

from mlmbook.models import TrainConfig, load_or_train
from mlmbook.models.cache import is_cached
from mlmbook.pipeline import prepare
from mlmbook.toy import Grammar

TINY = TrainConfig(hidden=16, layers=1, heads=1, intermediate=32, steps=20, batch=16, n_eval=10, eval_every=10,
                   checkpoints=())


@pytest.mark.slow                  # trains in worker processes
def test_parallel_training_gives_the_weights_of_training_in_process(tmp_path, monkeypatch):
    from safetensors.torch import load_file
    jobs = [prepare.Job("tiny", None, TINY, 0), prepare.Job("tiny", None, TINY, 1),
            prepare.Job("tiny", None, TINY, 0, "maelm")]
    monkeypatch.setattr(prepare, "needed", lambda *a, **k: jobs)
    monkeypatch.setenv("MLMBOOK_CACHE", str(tmp_path / "pool"))
    said = []
    trained = prepare.prepare("quick", workers=2, say=said.append)
    assert len(trained) == 3 and "2 at a time" in said[0]
    assert prepare.prepare("quick", workers=2, say=said.append) == []          # all cached now
    pooled = {(j.seed, j.kind): load_or_train("tiny", TINY, seed=j.seed, kind=j.kind, progress=False).path
              for j in jobs}
    monkeypatch.setenv("MLMBOOK_CACHE", str(tmp_path / "inline"))
    for j in jobs:
        inline = load_or_train("tiny", TINY, seed=j.seed, kind=j.kind, progress=False).path
        name = "model.safetensors" if j.kind == "mlm" else "maelm.safetensors"
        a, b = load_file(pooled[j.seed, j.kind] / name), load_file(inline / name)
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), (j.seed, j.kind)


def test_is_cached_tells_without_training(tmp_path, monkeypatch):
    monkeypatch.setenv("MLMBOOK_CACHE", str(tmp_path))
    g = Grammar.load("tiny")
    assert not is_cached(g, TINY, 5)
    assert not list(tmp_path.glob("*-*"))                                      # nothing was trained
    load_or_train(g, TINY, seed=5, progress=False)
    assert is_cached(g, TINY, 5) and not is_cached(g, TINY, 6)


@pytest.mark.parametrize("profile", ["quick", "full"])
def test_the_list_covers_each_chapter(profile):
    every = prepare.needed(profile)
    assert len(set(every)) == len(every)
    assert [j.cost for j in every] == sorted((j.cost for j in every), reverse=True)   # longest first
    kinds = {(j.kind, j.topic) for j in every}
    assert ("maelm", None) in kinds and ("mlm", "wall") in kinds
    assert prepare.needed(profile, [0]) == [prepare.Job("toy", None, prepare.PRESETS[profile], 0)]
    assert all(j.kind == "mlm" for j in prepare.needed(profile, [1, 2, 3]))
    from mlmbook.models import ladder
    defaults = [j for j in prepare.needed(profile, [1]) if j.config == prepare.PRESETS[profile] and j.kind == "mlm"]
    assert sorted(j.seed for j in defaults) == [0]                # chapter 1 reads one default model
    assert ladder.VERDICT_SEEDS[profile] >= 1


@pytest.mark.slow
def test_the_quick_book_trained_exactly_what_the_list_names(quick_book):
    """After the quick book, every listed model is in the cache under the key the list computes."""
    assert prepare.missing(prepare.needed("quick")) == []


class _Fake:
    def __init__(self, k):
        self.k, self.cost = k, 1.0

    def cached(self):
        return False

    def run(self):
        return f"fake {self.k}"


@pytest.mark.parametrize("threads_env", ["1", "2"])
def test_one_worker_per_core_whatever_the_thread_setting(monkeypatch, threads_env):
    """Training always runs on one thread, so two cores take two workers even with MLMBOOK_THREADS=2."""
    monkeypatch.setattr(prepare, "needed", lambda *a, **k: [_Fake(0), _Fake(1)])
    monkeypatch.setattr(prepare.os, "cpu_count", lambda: 2)
    monkeypatch.setenv("MLMBOOK_THREADS", threads_env)
    monkeypatch.delenv("MLMBOOK_TRAIN_WORKERS", raising=False)
    said, pools = [], []
    assert prepare.workers_for() == 2
    monkeypatch.setattr(prepare, "run_tasks", lambda tasks, n: pools.append(n) or (t for t in ()))   # no pool started
    prepare.prepare("quick", say=said.append)
    assert "2 at a time" in said[0] and pools == [2]
    monkeypatch.undo()
    monkeypatch.setattr(prepare, "needed", lambda *a, **k: [_Fake(0), _Fake(1)])
    monkeypatch.setenv("MLMBOOK_THREADS", threads_env)
    monkeypatch.setenv("MLMBOOK_TRAIN_WORKERS", "1")
    done = prepare.prepare("quick", say=said.append)
    assert [(t.label, t.how) for t in done] == [("fake 0", "alone"), ("fake 1", "alone")]
    assert all(t.seconds >= 0 for t in done) and "1 at a time" in said[-3]


def test_plan_stacks_small_models_by_shape_and_keeps_large_ones_alone():
    from dataclasses import replace
    small, wide = replace(TINY, hidden=32, heads=2), replace(TINY, hidden=256, heads=4)
    jobs = ([prepare.Job("toy", None, small, s) for s in range(12)] + [prepare.Job("toy", None, wide, 0)]
            + [prepare.Job("toy", None, small, s, "maelm") for s in range(2)]
            + [prepare.Job("toy", None, replace(small, steps=40), 0)])
    units = prepare.plan(jobs, workers=2)
    flat = [x for u in units for x in u]
    assert len(flat) == len(jobs) and set(flat) == set(jobs)                    # every job once
    assert [len(u) for u in units if u[0].config == wide] == [1]
    mlm = sorted(len(u) for u in units if u[0].config == small and u[0].kind == "mlm")
    assert mlm == [6, 6]                                                        # two cores, at most 8 of width 32
    assert sorted(len(u) for u in units if u[0].kind == "maelm") == [2]         # MAE-LMs never mix with MLMs
    assert any(u[0].config.steps == 40 and len(u) == 1 for u in units)         # other steps: another shape


@pytest.mark.slow                  # trains models
def test_prepare_trains_stacks_and_reports_each_models_share(tmp_path, monkeypatch):
    jobs = [prepare.Job("tiny", None, TINY, s) for s in range(5)]
    monkeypatch.setattr(prepare, "needed", lambda *a, **k: jobs)
    monkeypatch.setenv("MLMBOOK_CACHE", str(tmp_path))
    said = []
    done = prepare.prepare("quick", workers=1, say=said.append)
    assert len(done) == 5 and {t.how for t in done} == {"stacked with 4 others"}
    assert len({t.seconds for t in done}) == 1 and done[0].seconds > 0          # the stack's time, shared
    assert "stack" in said[0] and all("stacked with 4 others" in line for line in said[1:])
    assert prepare.missing(jobs) == []
