"""One place for locations, variables, threads and statistics (mlmbook.paths, .threads, .stats)."""
from pathlib import Path

import numpy as np
import pytest
import torch

from mlmbook import paths, stats, threads
from mlmbook.errors import MLMBookError, UsageError


def test_empty_cache_variable_means_the_default(monkeypatch):
    """MLMBOOK_CACHE="" used to make training cache in the working directory while clear-cache used the default."""
    monkeypatch.setenv("MLMBOOK_CACHE", "")
    assert paths.cache_dir() == Path.home() / ".cache" / "mlmbook"
    monkeypatch.setenv("MLMBOOK_CACHE", "~/somewhere")
    assert paths.cache_dir() == (Path.home() / "somewhere").resolve()


def test_flags_and_integers(monkeypatch):
    for value, expected in (("1", True), ("true", True), ("TRUE", True), ("on", True), ("0", False), ("", False)):
        monkeypatch.setenv("HF_HUB_OFFLINE", value)
        assert paths.hf_offline() is expected
    monkeypatch.setenv("MLMBOOK_CELL_TIMEOUT", "-3")
    with pytest.raises(UsageError, match="below its minimum"):
        paths.env_int("MLMBOOK_CELL_TIMEOUT", 1200, minimum=1)
    assert issubclass(UsageError, MLMBookError)


def test_data_dirs_search_order(monkeypatch, tmp_path):
    monkeypatch.setenv("MLMBOOK_DATA", str(tmp_path))
    dirs = paths.data_dirs("ud_english_ewt")
    assert dirs[:2] == [tmp_path, tmp_path / "ud_english_ewt"]
    assert dirs[2] == paths.repo_root() / "data" and dirs[-1].parts[-3:] == ("shared", "data", "ud_english_ewt")


def test_thread_policy(monkeypatch):
    monkeypatch.delenv("MLMBOOK_THREADS", raising=False)
    assert threads.policy() == 1 and threads.policy(large=True) == threads._DEFAULT
    monkeypatch.setenv("MLMBOOK_THREADS", "3")
    assert threads.policy() == threads.policy(large=True) == 3
    monkeypatch.setenv("MLMBOOK_THREADS", "0")
    assert threads.policy() == threads._DEFAULT
    before = torch.get_num_threads()
    with threads.using(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    monkeypatch.setenv("MLMBOOK_THREADS", "1")
    with threads.limited(large=True) as n:
        assert n == torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_blas_limit_per_call_and_restored():
    """BLAS threads follow the policy inside a call and return to the caller's setting after it."""
    from threadpoolctl import threadpool_info
    blas = lambda: sorted(d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas")
    before = blas()
    with threads.using(1):
        assert set(blas()) == {1}
    assert blas() == before
    assert not threads.is_large(object()) and threads.is_large(type("Big", (), {"hidden_size": 768})())


def test_divergences_against_hand_computed_values():
    p, q = np.array([0.5, 0.5, 0.0]), np.array([0.25, 0.25, 0.5])
    assert stats.kl(p, q) == pytest.approx(np.log(2))
    assert stats.kl(q, p) == np.inf
    assert stats.tv(p, q) == pytest.approx(0.5)
    assert 0 < stats.jsd(p, q) < np.log(2)
    assert stats.mutual_information(np.outer([0.3, 0.7], [0.6, 0.4])) == pytest.approx(0.0, abs=1e-12)
    assert stats.mutual_information(np.eye(2) / 2) == pytest.approx(np.log(2))


def test_tv_sees_what_a_max_cell_error_hides():
    """Mass spread thinly over many wrong cells: tiny per-cell error, large total variation."""
    p = np.zeros(1000)
    p[0] = 1.0
    q = np.full(1000, 0.5 / 999)
    q[0] = 0.5
    assert np.abs(p - q)[1:].max() < 1e-3 and stats.tv(p, q) == pytest.approx(0.5)


def test_bootstraps():
    rng = np.random.default_rng(0)
    x = rng.normal(1.0, 1.0, 400)
    est, lo, hi = stats.bootstrap(lambda a: a.mean(-1), x, n_boot=2000)
    assert lo < est < hi and lo < 1.0 < hi and hi - lo < 0.4
    correct, total = np.array([3, 4, 5, 2]), np.array([5, 5, 5, 5])
    est, lo, hi = stats.ratio(correct, total)
    assert est == pytest.approx(14 / 20) and lo <= est <= hi
    assert not hasattr(stats, "ratio_bootstrap") and not hasattr(stats, "side_of_zero")   # one name each
    same = stats.ratio(correct, total, minus=correct)
    assert tuple(same) == (0.0, 0.0, 0.0)              # a paired difference of a parser with itself
    with pytest.raises(ValueError):
        stats.ratio([], [])


def test_ratio_with_zero_denominators():
    """No headroom at all is 0 of 0: undefined (not 0, not inf); replicates that draw only
    zero-headroom units drop out."""
    assert not stats.ratio([0, 0], [0, 0]).defined
    est, lo, hi = stats.ratio([1, 0, 0], [2, 0, 0], n_boot=500)
    assert est == 0.5 and np.isfinite([lo, hi]).all()


def test_json_written_atomically_with_ordinary_permissions(tmp_path, monkeypatch):
    """The one atomic JSON writer: the file appears whole with the umask's permissions (not
    mkstemp's 0600), and a writer that fails mid-way leaves the old file and no temporary."""
    import json
    import os

    from mlmbook.paths import write_json_atomic

    path = write_json_atomic(tmp_path / "r" / "x.json", {"a": 1}, indent=1)
    assert json.loads(path.read_text()) == {"a": 1}
    mask = os.umask(0)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask
    with pytest.raises(TypeError):
        write_json_atomic(path, {"a": object()})          # not JSON: fails after the temp file exists
    assert json.loads(path.read_text()) == {"a": 1} and sorted(os.listdir(path.parent)) == ["x.json"]
