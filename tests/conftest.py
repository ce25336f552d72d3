"""Shared fixtures: tiny models saved locally, so real-model code paths run without network; and the
test tiers: every test that executes a chapter, builds a book or starts a browser is marked ``slow``
here, from what it uses (:func:`pytest_collection_modifyitems`), so ``pytest -m "not slow"``
(``make test-fast``) is the unit tier and ``make test`` the whole suite."""
import ast
import functools
import inspect
import os
import textwrap

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")          # tests never download anything
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def _one_thread_per_process():
    """The suite runs on two processes (``make test``), one per core: each keeps torch and the BLAS to one
    thread outside mlmbook's own calls, which set their counts by the thread policy (``mlmbook.threads``
    reads torch's default first, for large work). Small tensors on a second, descheduled thread run
    10–20 times slower; a test's own training loop or chart would otherwise pay it."""
    import torch
    from threadpoolctl import threadpool_limits

    import mlmbook.threads  # noqa: F401  (reads torch's own default before it changes)
    torch.set_num_threads(1)
    threadpool_limits(1, user_api="blas")


_one_thread_per_process()


def save_tiny_wordpiece_bert(path, corpus, vocab_size=120, seed=0, fixed_vocab=False):
    """A randomly initialised 2-layer BERT with a WordPiece tokenizer trained on ``corpus``.

    The vocabulary is so small that most words split into several pieces, which exercises
    the subword paths of every estimator.
    """
    from tests.trained_models import train_wordpiece_bert
    train_wordpiece_bert(path, list(corpus), vocab_size=vocab_size, steps=0, seed=seed, fixed_vocab=fixed_vocab)
    return path


@pytest.fixture(scope="session")
def wordpiece_bert(tmp_path_factory):
    from mlmbook.toy import Grammar
    corpus = [s.text for s in Grammar.load("toy").sample(500, seed=0)]
    corpus += ["the quick brown fox jumps over the lazy dog .", "i can't believe it's not butter !"] * 5
    return str(save_tiny_wordpiece_bert(tmp_path_factory.mktemp("wp_bert"), corpus))


@pytest.fixture(scope="session")
def quick_toy_model():
    """The folder of the quick profile's toy MLM (the model the quick book trains first), trained quietly
    when the cache lacks it, so that a test of a research verb's own output reads no progress bar and
    needs no full-profile model (two minutes more from an empty cache)."""
    from mlmbook.models import load_or_train, preset_for
    return str(load_or_train("toy", preset=preset_for("toy", "quick"), seed=0, progress=False).path)


@pytest.fixture(scope="session")
def toy_bert(tmp_path_factory):
    """An untrained BERT with the toy tokenizer (WordLevel over the toy vocabulary), saved locally."""
    from mlmbook.models.train import TrainConfig, make_model
    from mlmbook.toy import Grammar
    from mlmbook.toy.vocab import make_tokenizer
    g = Grammar.load("toy")
    path = tmp_path_factory.mktemp("toy_bert")
    make_model(g, TrainConfig(hidden=32, layers=2, heads=2, intermediate=64), seed=0).save_pretrained(path)
    make_tokenizer(g).save_pretrained(path)
    return str(path)


# ---------------------------------------------------------------- executing the book
def _with_build_dir(path, fn):
    old = os.environ.get("MLMBOOK_BUILD")
    os.environ["MLMBOOK_BUILD"] = str(path)
    try:
        return fn()
    finally:
        if old is None:
            os.environ.pop("MLMBOOK_BUILD", None)
        else:
            os.environ["MLMBOOK_BUILD"] = old


class BookRun:
    """What a build left: the site's index, executed notebooks and recorded results."""

    def __init__(self, build_dir, index):
        from pathlib import Path
        self.build_dir, self.index = Path(build_dir), index

    def results(self, slug):
        from mlmbook.pipeline.record import load_results
        return load_results(slug, self.build_dir / "results")

    def not_measured(self, slug):
        """Keys the chapter declared with ``mlmbook.not_measured`` (key -> the sentence shown)."""
        from mlmbook.pipeline.record import load_not_measured
        return load_not_measured(slug, self.build_dir / "results")

    def notebook(self, slug):
        import nbformat
        return nbformat.read(self.build_dir / "exec" / f"{slug}.ipynb", as_version=4)


@pytest.fixture(scope="session")
def quick_book():
    """The whole book executed and rendered once in the quick profile (warnings are errors).

    Built into ``_build/quick`` so that it never clobbers a reader's full build.
    """
    from mlmbook.paths import repo_root
    from mlmbook.pipeline.execute import build
    out = repo_root() / "_build" / "quick"
    index = _with_build_dir(out, lambda: build(profile="quick"))
    return BookRun(out, index)


@pytest.fixture(scope="session")
def run_chapter(tmp_path_factory):
    """Execute one chapter (quick profile, no rendering) with parameters into a fresh build dir."""
    from mlmbook.pipeline.execute import BuildOptions, build

    def run(chapter, **params):
        out = tmp_path_factory.mktemp(f"run_{chapter}")
        _with_build_dir(out, lambda: build(chapters=[chapter], profile="quick",
                                           parameters=[(k, str(v)) for k, v in params.items()],
                                           options=BuildOptions(render_site=False)))
        return BookRun(out, None)
    return run


@pytest.fixture(scope="session")
def full_results():
    """The numbers of the last default full-profile build (``results/full/<slug>.json``, tracked).

    The prose of each chapter was written against these; tests assert its claims on them.
    A build never changes them; regenerate them on purpose with ``make reference``
    (``python -m mlmbook build --profile full --update-reference``).
    """
    import json

    from mlmbook.paths import repo_root

    def load(slug):
        path = repo_root() / "results" / "full" / f"{slug}.json"
        assert path.exists(), f"{path} is missing: run `make reference` to record it"
        return json.loads(path.read_text())
    return load


@pytest.fixture(scope="session")
def chromium():
    """Debian's Chromium for the browser checks: skipped with the reason where absent, never under CI=true."""
    from mlmbook.errors import BrowserMissing
    from mlmbook.pipeline.sitecheck import find_chromium
    try:
        return find_chromium()
    except BrowserMissing as e:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{e} (CI must run the browser check)")
        pytest.skip(str(e))


# ---------------------------------------------------------------- test tiers
SLOW_FIXTURES = frozenset({"quick_book", "run_chapter", "other_model_book", "tiny_site", "chromium"})
"""Fixtures that execute chapters, build a book (the whole book or the tiny one the browser checks
doctor) or start a browser: any test that needs one (directly or through another fixture) is slow."""


@functools.lru_cache(maxsize=None)
def _builds(fn) -> bool:
    """Whether ``fn``'s body builds a book: it calls ``mlmbook.pipeline.execute.build`` (by that name,
    imported in the function or its module, or as ``execute.build``), runs ``python -m mlmbook build``
    through a helper whose first argument is ``"build"``, or calls a function of its own module that does."""
    fn = inspect.unwrap(fn)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    module = inspect.getmodule(fn)
    names = getattr(module, "__dict__", {})
    local_build = any(isinstance(n, ast.ImportFrom) and (n.module or "").endswith("pipeline.execute")
                      and any(a.name == "build" for a in n.names) for n in ast.walk(tree))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr == "build" and getattr(f.value, "id", "") == "execute":
            return True
        if isinstance(f, ast.Name):
            if f.id == "build" and (local_build or getattr(names.get("build"), "__module__", "")
                                    == "mlmbook.pipeline.execute"):
                return True
            if node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == "build":
                return True
            helper = names.get(f.id)
            if inspect.isfunction(helper) and helper is not fn and inspect.getmodule(helper) is module \
                    and _builds(helper):
                return True
    return False


def _is_slow(item) -> bool:
    if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    functions = [getattr(item, "function", None)]
    info = getattr(item, "_fixtureinfo", None)
    for name in getattr(item, "fixturenames", ()):
        for fixturedef in (info.name2fixturedefs.get(name, ()) if info else ()):
            functions.append(fixturedef.func)
    return any(f is not None and _builds(f) for f in functions)


SHARED_BUILDS = ("quick_book", "other_model_book", "tiny_site")
"""Session fixtures that build a book once. Under ``make test`` (``pytest -n 2``, pytest-xdist) every
test that uses one runs in the same worker process, so no book is built twice (``quick_book`` also
always writes one folder, ``_build/quick``, which two workers must never build at once)."""

GROUPS_ENV = "MLMBOOK_TEST_GROUPS"
"""A file the workers write at collection (test → group) and the controller's scheduler reads."""


def _group(item) -> str:
    """A test's group: the shared book it reads, else its module (so a module's own ``scope="module"``
    fixtures are made once, in one worker)."""
    used = set(getattr(item, "fixturenames", ()))
    return next((name for name in SHARED_BUILDS if name in used), item.nodeid.split("::")[0])


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark ``slow`` every test that executes a chapter or builds a book (see :data:`SLOW_FIXTURES`);
    order the long groups first, and in a worker write every test's group (:func:`_group`)."""
    for item in items:
        if item.get_closest_marker("slow") is None and _is_slow(item):
            item.add_marker(pytest.mark.slow)
    # the scheduler hands the groups out in this order: the shared books first (each goes to a worker at
    # the start), then the other groups with a slow test, then the unit tests, which fill the end evenly
    slow = {_group(item) for item in items if item.get_closest_marker("slow")}
    first = {name: k for k, name in enumerate(SHARED_BUILDS)}
    items.sort(key=lambda item: first.get(_group(item), len(first) + (_group(item) not in slow)))
    path = os.environ.get(GROUPS_ENV)
    if path and os.environ.get("PYTEST_XDIST_WORKER"):
        import json
        tmp = f"{path}.{os.environ['PYTEST_XDIST_WORKER']}"
        with open(tmp, "w") as fh:
            json.dump({item.nodeid: _group(item) for item in items}, fh)
        os.replace(tmp, path)                       # both workers write the same map


def pytest_configure(config):
    """In the controller of a parallel run: where the workers write the groups (inherited by them)."""
    if not os.environ.get("PYTEST_XDIST_WORKER") and getattr(config.option, "dist", "no") != "no":
        import tempfile
        fd, path = tempfile.mkstemp(prefix="mlmbook-test-groups-", suffix=".json")
        os.close(fd)
        os.environ[GROUPS_ENV] = path


def pytest_unconfigure(config):
    if not os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get(GROUPS_ENV):
        os.unlink(os.environ.pop(GROUPS_ENV))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` by :func:`_group`: xdist's own reads ``xdist_group`` marks through a node id
    that pytest 9 no longer lets a plugin change, so it would spread one book's tests over both workers."""
    if config.getvalue("dist") != "loadgroup":
        return None
    import json

    from xdist.scheduler import LoadScopeScheduling

    class BookGroups(LoadScopeScheduling):
        groups = None

        def _split_scope(self, nodeid):
            if self.groups is None:                  # read once every worker has collected
                with open(os.environ[GROUPS_ENV]) as fh:
                    self.groups = json.load(fh)
            return self.groups.get(nodeid, nodeid)
    return BookGroups(config, log)
