"""Training up front, one process per core: the same weights as training in the chapter."""
import pytest
import torch

from mlmbook.models import TrainConfig, load_or_train, prepare
from mlmbook.models.cache import is_cached
from mlmbook.toy import Grammar

TINY = TrainConfig(hidden=16, layers=1, heads=1, intermediate=32, steps=20, batch=16, n_eval=10, eval_every=10,
                   checkpoints=())


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
    assert prepare.needed(profile, [0]) == [j for j in every if j.seed == 0 and j.kind == "mlm"
                                            and j.topic is None and j.config.steps == max(x.config.steps for x in every)]
    assert all(j.kind == "mlm" for j in prepare.needed(profile, [1, 2, 3]))
    from mlmbook.models import ladder
    defaults = [j for j in prepare.needed(profile, [1]) if j.config == prepare.PRESETS[profile] and j.kind == "mlm"]
    assert sorted(j.seed for j in defaults) == list(range(ladder.VERDICT_SEEDS[profile]))
    assert len(prepare.needed(profile, [1], extra_seeds=(7,))) == len(prepare.needed(profile, [1])) + 1


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


@pytest.mark.parametrize("threads_env, expected", [("1", 2), ("2", 1)])
def test_workers_never_oversubscribe_the_cores(monkeypatch, threads_env, expected):
    """Two trainings of 2 threads each on 2 cores would fight: one worker then."""
    monkeypatch.setattr(prepare, "needed", lambda *a, **k: [_Fake(0), _Fake(1)])
    monkeypatch.setattr(prepare.os, "cpu_count", lambda: 2)
    monkeypatch.setenv("MLMBOOK_THREADS", threads_env)
    monkeypatch.delenv("MLMBOOK_TRAIN_WORKERS", raising=False)
    said = []
    if expected == 1:
        assert prepare.prepare("quick", say=said.append) == ["fake 0", "fake 1"]
    else:
        monkeypatch.setattr(prepare, "ProcessPoolExecutor", None)    # must not be reached with 1 worker
        with pytest.raises(TypeError):
            prepare.prepare("quick", say=said.append)
    assert f"{expected} at a time" in said[0]
