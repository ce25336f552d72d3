"""The research API (``mlmbook.pll``, ``dependency_trees``, ``derive_joint``, ``rectangle_test``,
``effective_rank``, ``glauber_chains``) on the toy model and on a tiny WordPiece BERT, with plain strings.

Every function's docstring example runs here on both models. The API wraps the science modules;
:func:`test_the_science_the_api_wraps_still_takes_these_arguments` binds the arguments each wrapper
passes to the function it wraps, so a changed signature fails there with the two names, before any
example does.
"""
import doctest
import inspect
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import mlmbook
from mlmbook import api, consistency, dependencies, joints, queries, rank
from mlmbook.glauber import GlauberSampler
from mlmbook.models import HFMaskedLM, load_mlm

FUNCTIONS = [api.pll, api.dependency_trees, api.derive_joint, api.rectangle_test, api.effective_rank,
             api.glauber_chains]


@pytest.fixture(scope="module", params=["toy", "wordpiece"])
def model(request, toy_bert, wordpiece_bert):
    """The toy-tokenizer BERT and the WordPiece BERT, each given to the API by its folder."""
    return toy_bert if request.param == "toy" else wordpiece_bert


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_docstring_example_runs(fn, model):
    tests = doctest.DocTestFinder().find(fn, fn.__name__, globs={"lm": load_mlm(model)})
    assert tests and tests[0].examples, f"{fn.__name__} has no example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in tests:
        runner.run(test)
    assert runner.failures == 0, f"the example of {fn.__name__} fails on {model} (run with -s to see it)"
    assert runner.tries >= 3, f"the example of {fn.__name__} checks too little"


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_numpy_docstring(fn):
    doc = inspect.getdoc(fn)
    for section in ("Parameters\n----------", "Returns\n-------", "Examples\n--------"):
        assert section in doc, f"{fn.__name__} lacks its {section.splitlines()[0]} section"
    params = [p for p in inspect.signature(fn).parameters]
    missing = [p for p in params if not any(line.startswith(f"{p} ") or line.startswith(f"{p}, ")
                                            or f", {p} " in line for line in doc.splitlines())]
    assert not missing, f"{fn.__name__}: parameters without documentation: {missing}"


def test_the_face_exports_the_api_and_no_name_shadows_a_submodule():
    for name in ("pll", "dependency_trees", "derive_joint", "rectangle_test", "effective_rank", "glauber_chains",
                 "HCB", "AG", "load_mlm", "check_fit", "read_for_model"):
        assert name in mlmbook.__all__ and getattr(mlmbook, name) is not None
    # a face name equal to a subpackage's name would be shadowed once that subpackage is imported
    assert not set(mlmbook._FACE) & mlmbook._LAZY_SUBMODULES


def test_the_science_the_api_wraps_still_takes_these_arguments():
    """The calls of mlmbook.api, bound to the science's current signatures."""
    calls = {
        queries.pll_tokens: ((None, []), dict(variant="token", full_softmax=True)),
        dependencies.cpmi: ((None, [], []), {}),
        dependencies.cmi_scores: ((None, [], []), dict(budget_rows=1, window=9)),
        mlmbook.corpus.read_for_model: ((None, [], None), dict(limit=None, allow_unknown=False)),
        mlmbook.corpus.check_fit: ((None, []), dict(allow=False)),
        dependencies.decode: ((None,), dict(projective=False)),
        dependencies.uuas_counts: (([], []), {}),
        mlmbook.stats.ratio: (([], []), dict(level=0.95)),
        joints.topk_candidates: ((None, []), dict(k=50)),
        joints.pair_conditionals: ((None, [], 0, 1, None), {}),
        joints.hcb: ((None, 0), {}),
        joints.ag: ((None,), dict(tol=1e-8)),
        joints.default_pivot: ((None,), {}),
        consistency.top2_rectangles: ((None, [], []), {}),
        rank.effective_rank_mass: ((None, 0.1), {}),
        GlauberSampler: ((None,), dict(temperature=1.0, seed=0)),
        GlauberSampler.run: ((None, None, 10), dict(progress=False)),
    }
    for fn, (args, kwargs) in calls.items():
        try:
            inspect.signature(fn).bind(*args, **kwargs)
        except TypeError as err:
            pytest.fail(f"mlmbook.api calls {fn.__qualname__} with {len(args)} positional arguments and "
                        f"{sorted(kwargs)}, but its signature is now {inspect.signature(fn)} ({err}): "
                        f"update the wrapper in mlmbook/api/")


# ---------------------------------------------------------------------------- pll
def test_pll_plain_strings_equal_word_lists_and_the_engine(toy_bert):
    lm = load_mlm(toy_bert)
    text = ["the farmers near the river often feed the cows .", "the horses rarely sleep ."]
    words = [t.split() for t in text]
    np.testing.assert_allclose(mlmbook.pll(lm, text), queries.pll(lm, words), atol=1e-10)
    np.testing.assert_allclose(mlmbook.pll(toy_bert, text), mlmbook.pll(lm, text), atol=1e-10)  # by its folder
    per = mlmbook.pll(lm, text, reduction="none")
    assert [p.tokens for p in per] == words and [p.words for p in per] == words
    np.testing.assert_allclose([p.total for p in per], mlmbook.pll(lm, text), atol=1e-10)
    np.testing.assert_allclose(mlmbook.pll(lm, text, reduction="mean"), [p.scores.mean() for p in per])
    with pytest.raises(ValueError, match="reduction"):
        mlmbook.pll(lm, text, reduction="max")


def test_pll_of_a_plain_string_on_a_wordpiece_model(wordpiece_bert):
    lm = load_mlm(wordpiece_bert)
    text = "The shepherds watched umbrellas."
    [scores] = mlmbook.pll(lm, [text], reduction="none")
    assert scores.words == ["The", "shepherds", "watched", "umbrellas", "."]
    assert len(scores.tokens) > len(scores.words)                          # words split into pieces
    assert [q for p in scores.pieces for q in p] == list(range(len(scores.tokens)))
    np.testing.assert_allclose(scores.by_word().sum(), scores.total)
    l2r = mlmbook.pll(lm, [text], variant="word_l2r")[0]                   # the string split as the tokenizer does
    assert l2r == pytest.approx(queries.pll(lm, [["The", "shepherds", "watched", "umbrellas", "."]],
                                            variant="word_l2r")[0], abs=1e-9)


# ---------------------------------------------------------------------------- trees
def test_dependency_trees_on_a_treebank_file(wordpiece_bert):
    from pathlib import Path
    res = mlmbook.dependency_trees(wordpiece_bert, Path(__file__).parent / "fixtures" / "tiny.conllu")
    assert len(res.trees) == len(res.gold) == len(res.correct) and res.total.sum() > 0
    assert res.uuas.estimate == pytest.approx(res.correct.sum() / res.total.sum())
    with pytest.raises(ValueError, match="method"):
        mlmbook.dependency_trees(wordpiece_bert, "toy", method="dmv", limit=2)


def test_every_call_refuses_text_the_model_does_not_know_unless_allowed(toy_bert):
    from mlmbook.errors import DataFitError
    english = "the dog sees a cat ."                                      # "a" is not a toy word
    calls = [lambda **o: mlmbook.pll(toy_bert, [english], **o),
             lambda **o: mlmbook.derive_joint(toy_bert, english, (1, 2), method="hcb", **o),
             lambda **o: mlmbook.rectangle_test(toy_bert, english, pairs=[(1, 2)], **o),
             lambda **o: mlmbook.effective_rank(toy_bert, [english], **o),
             lambda **o: mlmbook.glauber_chains(toy_bert, english, steps=2, **o)]
    for call in calls:
        with pytest.raises(DataFitError, match="'a'"):
            call()
        call(options=mlmbook.Options(allow_unknown=True))
    with pytest.raises(TypeError, match="max_words"):                # an option this call does not read
        mlmbook.pll(toy_bert, [english], options=mlmbook.Options(max_words=3))
    with pytest.raises(TypeError, match="mlmbook.Options"):
        mlmbook.pll(toy_bert, [english], options={"allow_unknown": True})


def test_dependency_trees_of_the_truth_recover_more_than_chance():
    """The exact oracle's CPMI trees beat a random tree's expected UUAS on the toy language."""
    sents = mlmbook.Grammar.load("toy").sample(12, seed=3)
    res = mlmbook.dependency_trees(load_mlm("truth"), sents)
    n = np.array([len(g) + 1 for g in res.gold])
    chance = float(np.sum(2 / n * (n - 1)) / np.sum(n - 1))               # a uniform random tree: 2/n per edge
    assert res.uuas.low > chance


# ---------------------------------------------------------------------------- joints
def test_derive_joint_methods_and_hcb_pivots(toy_bert):
    lm = load_mlm(toy_bert)
    text = "the farmers near the river often feed the cows ."
    ids = lm.encode_words(text.split())[0]
    both = mlmbook.derive_joint(lm, text, (1, 6), method="hcb")
    observed = mlmbook.derive_joint(lm, text, (1, 6), method=mlmbook.HCB(pivot="observed"))
    by_id = mlmbook.derive_joint(lm, text, (1, 6), method=mlmbook.HCB(pivot=ids[1]))
    np.testing.assert_allclose(observed.probs, by_id.probs)
    index = int(np.flatnonzero(observed.cand_i == ids[1])[0])
    np.testing.assert_allclose(observed.probs, joints.hcb(observed.conditionals, index))
    np.testing.assert_allclose(both.probs, joints.hcb(both.conditionals))
    for method in ("mrf", "mrf_local", "naive", "ag"):
        j = mlmbook.derive_joint(lm, text, (1, 6), method=method, top_k=6)
        assert j.method == method and j.probs.shape == (len(j.cand_i), len(j.cand_j))
        assert ids[1] in j.cand_i and ids[6] in j.cand_j                   # the text's tokens are candidates
    with pytest.raises(ValueError, match="pivot"):
        mlmbook.derive_joint(lm, text, (1, 6), method=mlmbook.HCB(pivot="middle"))
    with pytest.raises(ValueError, match="positions"):
        mlmbook.derive_joint(lm, text, (1, 1))
    with pytest.raises(ValueError, match="method"):
        mlmbook.derive_joint(lm, text, (1, 6), method="besag")


def test_ag_tolerance_below_float64_is_raised_to_the_floor_with_a_note(toy_bert):
    text = "the farmers near the river often feed the cows ."
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        j = mlmbook.derive_joint(toy_bert, text, (1, 6), method=mlmbook.AG(tol=1e-16), top_k=8)
    notes = [str(w.message) for w in caught]
    assert any("below what float64 can reach" in n for n in notes), notes
    assert j.converged


# ---------------------------------------------------------------------------- rectangle, rank, glauber
def test_the_truth_passes_the_rectangle_test_and_a_random_bert_fails_it(toy_bert):
    text = "the farmers near the river often feed the cows ."
    pairs = [(1, 6), (0, 3), (2, 8)]
    truth = mlmbook.rectangle_test(load_mlm("truth"), text, pairs)
    assert not truth.inconsistent.any()
    bert = mlmbook.rectangle_test(toy_bert, text, pairs)
    assert bert.inconsistent.any() and bert.corners[0][0] in load_mlm(toy_bert).vocab


def test_effective_rank_counts_rows(toy_bert):
    r = mlmbook.effective_rank(toy_bert, ["the farmers feed the cows .", "the horses rarely sleep ."], mask_rate=0.4)
    assert r.n_rows == 11 and r.n_mask_rows == 2 + 2
    assert 0 < r.clean <= 32 and 0 < r.masked_all <= 32


def test_glauber_chains_are_reproducible(toy_bert):
    seed4 = mlmbook.Options(seed=4)
    a = mlmbook.glauber_chains(toy_bert, "the farmers feed the cows .", steps=15, chains=2, options=seed4)
    b = mlmbook.glauber_chains(toy_bert, "the farmers feed the cows .", steps=15, chains=2, options=seed4)
    assert (a.states == b.states).all() and a.texts == b.texts
    assert ((a.changed >= 0) & (a.changed <= 1)).all()


def test_model_argument_errors():
    with pytest.raises(TypeError, match="masked LM"):
        mlmbook.pll(42, ["a"])


# ---------------------------------------------------------------------------- the command line
def _cli(*argv):
    """The research verbs through the book's own command line (``python -m mlmbook``, the console script)."""
    return subprocess.run([sys.executable, "-m", "mlmbook", *map(str, argv)], capture_output=True,
                          text=True, timeout=300)


@pytest.mark.slow                  # spawns the command line once per verb
def test_cli_verbs(toy_bert, tmp_path):
    sentences = tmp_path / "s.txt"
    sentences.write_text("the farmers feed the cows .\nthe horses rarely sleep .\n")
    out = _cli("pll", toy_bert, sentences)
    assert out.returncode == 0, out.stderr
    scores = [float(line.split("\t")[0]) for line in out.stdout.splitlines()]
    np.testing.assert_allclose(scores, mlmbook.pll(toy_bert, sentences.read_text().splitlines()), atol=1e-5)
    out = _cli("joint", toy_bert, "the farmers feed the cows .", 1, 2, "--method", "hcb", "--pivot", "observed",
               "--show", "3")
    assert out.returncode == 0 and len(out.stdout.splitlines()) == 3, out.stderr
    out = _cli("pll", tmp_path / "no-such-model", sentences)
    assert out.returncode == 1 and len(out.stderr.strip().splitlines()) == 1 and "does not exist" in out.stderr


def test_console_script_is_declared():
    from pathlib import Path

    import tomllib
    project = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["mlmbook"] == "mlmbook.__main__:main"


# ---------------------------------------------------------------------------- without the book's toolchain
BOOK_PACKAGES = ("papermill", "jupytext", "jupyter_book", "sphinx", "myst_nb", "myst_parser", "nbclient", "nbformat",
                 "sphinx_exercise", "ipywidgets", "ipykernel", "IPython")


@pytest.mark.slow                  # spawns a fresh interpreter
def test_the_package_and_the_api_need_no_book_toolchain(toy_bert):
    """``pip install mlmbook`` without ``[book]``: the book's packages made unimportable."""
    code = textwrap.dedent(f"""
        import importlib.abc, sys
        class NoBook(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {BOOK_PACKAGES!r}:
                    raise ImportError("not installed: " + name)
        sys.meta_path.insert(0, NoBook())
        import mlmbook
        from mlmbook import api, cli_research
        print(mlmbook.pll({toy_bert!r}, ["the farmers feed the cows ."])[0] < 0)
        print(mlmbook.rectangle_test({toy_bert!r}, "the farmers feed the cows .", [(1, 2)]).delta.shape)
        print(sorted(m for m in sys.modules if m.split(".")[0] in {BOOK_PACKAGES!r}))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:3] == ["True", "(1,)", "[]"], out.stdout


def test_one_version_number():
    from pathlib import Path

    import tomllib
    root = Path(__file__).parent.parent
    project = tomllib.loads((root / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "mlmbook.__version__"}
    citation = (root / "CITATION.cff").read_text()
    assert f"\nversion: {mlmbook.__version__}\n" in citation, "CITATION.cff must carry mlmbook.__version__"


def test_hf_masked_lm_is_a_masked_lm(toy_bert):
    lm = load_mlm(toy_bert)
    assert isinstance(lm, HFMaskedLM) and isinstance(lm, mlmbook.MaskedLM) and isinstance(load_mlm("truth"),
                                                                                          mlmbook.MaskedLM)
