"""Chapter 3: every claim its prose makes holds on the recorded numbers; the Study is the only verdict.

The package's probes and statistics are tested in ``tests/consistency/``. Here: the chapter records a
Study of at most six primary questions, each an answer that the independent audit re-derives, and no
old-style verdict; pair-level answers resample sentences; the span questions are claims about a recipe
(three seeds); the prose's claims — the key takeaways first — hold on the committed full reference
(``results/full/03_consistency.json``, against which the prose was written) and the quick build keeps
their structure; the pages follow the book's skeleton, toy-world prose is tagged, nothing templated or
clipped; and the chapter executes on a random ≥ 2,000-piece WordPiece BERT with a CoNLL-U file.
"""
import re
from pathlib import Path

import jupytext
import pytest

from mlmbook import stats

CHAPTER = Path(__file__).resolve().parents[2] / "book" / "03_consistency.md"
SLUG = "03_consistency"
TOY_QUESTIONS = ["flips", "eoc", "dependence", "span", "routes"]
TOY_PHRASES = ("toy language", "toy world", "the truth", "truth's", "couple of hundred", "span model", "noise",
               "ladder", "grammar")


def _text():
    return CHAPTER.read_text()


def _cells():
    return jupytext.read(CHAPTER).cells


def _tags(cell):
    return set(cell.metadata.get("tags", []))


# ---------------------------------------------------------------- the Study, and nothing else decides
def _check_study(r, questions):
    study = r["study"]
    assert study["kind"] == "study" and study["name"] == "chapter 3"
    assert study["questions"] == questions and study["size"] == len(questions) <= stats.MAX_PRIMARY
    for key in questions:
        a = r[f"q_{key}"]
        assert a["kind"] == "answer" and a["family_size"] == len(questions) and a["values"], key
        assert a["alpha"] == 0.05 and a["interval_level"] == pytest.approx(1 - 0.05 / len(questions)), key
    assert not list(stats.walk_verdicts(r)), "an old-style verdict is still recorded"
    assert not any(isinstance(v, dict) and v.get("kind") in ("verdict", "family") for v in r.values())
    assert stats.audit(r) == {}


def _check_units(r, toy):
    """Pair-level answers resample sentences; the ensemble has one target per sentence; the span
    questions are claims about a recipe, over the span models' seeds (three or more)."""
    flips = r["q_flips"]
    assert flips["units"] is not None and len(set(flips["units"])) == r["n_sentences"] < len(flips["values"])
    assert flips["interval_n"] == r["n_sentences"]
    assert r["q_eoc"]["interval_n"] == r["eoc_items"] == len(r["q_eoc"]["values"])
    if toy:
        assert r["q_dependence"]["interval_n"] <= r["cmi_sentences"]
        for key in ("span", "routes"):
            a = r[f"q_{key}"]
            n = r["n_span_seeds"]
            assert a["unit"] == "seed" and a["test"] == "seed t" and a["interval_n"] == n >= 3
            assert len(set(a["seeds"])) == n and len(a["values"]) == n * r["span_items"]
            assert a["second"]["test"] == "each model" and len(a["second"]["per_seed"]) == n


def _check_structure(r, full):
    """What the prose states in every profile (its numbers are glued; these are its fixed claims)."""
    assert r["central_step_max_difference"] < 1e-4                 # by hand = the package
    assert r["frac_delta_above_floor"] > 0.9                        # "the model's conditionals fit no joint"
    assert r["truth_delta_max"] < 1e-9 and r["truth_order_max"] < 1e-9 and r["truth_eoc_max_dev"] < 1e-9
    assert r["truth_flips"] == 0                                    # "the truth ... never flips"
    assert r["n_forbidden"] > 0                                     # "On the other N rectangles the grammar forbids"
    assert r["n_pairs"] > (1500 if full else 300) and r["n_paper"] >= (550 if full else 90)
    assert 0.05 < r["measure_adjacent_share"] < 0.6                   # "not necessarily adjacent"
    assert r["eoc_leak_gap"] > 0                                    # "the leak flatters every predictor"
    assert r["noise_exact_floor"][0] == 0 and r["noise_exact_floor"] == sorted(r["noise_exact_floor"])
    assert r["span_headroom_ratio"] > 1                             # "a worse predictor" / "larger headroom"
    assert r["regime_delta_floor"] > 10 * 1e-5                      # "far above rounding" (float32 bound)
    assert r["earlier_h128_low"] < 0 < r["earlier_h64_low"]          # the last edition's two results, as quoted
    assert r["earlier_h64_t_p"] > r["earlier_h64_alpha_m"]
    # every rung's headroom fraction is Fieller's: undefined exactly when the headroom's interval holds 0
    for head, frac in zip(r["regime_loss_headroom"], r["regime_loss_frac"]):
        contains_zero = head["low"] <= 0 <= head["high"]
        assert contains_zero or frac["method"] != "undefined"
    assert r["paper_bert_base_mean"] == 0.795 and (r["paper_lambada_single"], r["paper_lambada_eoc"]) == (71.4, 74.0)


def _check_takeaways(r):
    """The key takeaways and the other plain claims, on the full reference the prose was written against."""
    # 1. fit no joint; the truth never flips
    assert r["q_flips"]["side"] == "above" and r["truth_flips"] == 0
    # 2. the inconsistency follows the language's dependence, within sentences
    assert r["q_dependence"]["side"] == "above" and r["dependent_mean"] > r["independent_mean"]
    # 3. on a token-masked MLM the ensemble does not buy the paper's accuracy: within 2.6 points of no change
    assert r["q_eoc"]["side"] == "equivalent" and r["q_eoc"]["decidable"]
    # 4. span models: Q4 and Q5 answered on the seeds their plan asks for (the verdicts are glued)
    assert r["q_span"]["interval_n"] == r["n_span_seeds"] >= r["q_span"]["needed_planned"]
    assert r["q_routes"]["side"] not in ("above", "below")
    n = r["n_span_seeds"]                  # counts of seeds, cited as "k of n" (no verdict words)
    assert all(0 <= r[k] <= n for k in ("span_token_positive", "span_span_positive", "span_twin_positive",
                                        "span_routes_ahead"))
    # the noise knob: the headroom grows several times over, the gain does not follow it
    assert r["noise_headroom"][-1] > 2 * r["noise_headroom"][0]
    for k in range(len(r["noise_headroom"])):
        g = r[f"noise_gain_{k}"]
        assert g["low"] < 0 < g["high"], k
    assert r["noise_beyond_floor"]["low"] > 0                      # "a noisier language is also harder to learn"
    assert r["noise_fit_kl"] == sorted(r["noise_fit_kl"])
    # every primary question but the recipe ones is decidable at its declared effect on the full profile
    for key in ("flips", "dependence", "eoc"):
        assert r[f"q_{key}"]["decidable"], key


def test_full_reference(full_results):
    r = full_results(SLUG)
    _check_study(r, TOY_QUESTIONS)
    _check_units(r, toy=True)
    _check_structure(r, full=True)
    _check_takeaways(r)


def test_quick_build(quick_book):
    r = quick_book.results(SLUG)
    _check_study(r, TOY_QUESTIONS)
    _check_units(r, toy=True)
    _check_structure(r, full=False)


# ---------------------------------------------------------------- the page: skeleton, prose, no templates
def test_page_skeleton():
    headings = [c.source.splitlines() for c in _cells() if c.cell_type == "markdown"]
    level1 = [line for lines in headings for line in lines if line.startswith("# ")]
    assert level1[0] == "# Inconsistencies in masked language models"
    assert level1[-1] == "# Answers, real models and exercises" and 3 <= len(level1) <= 4
    text = _text()
    order = ["## The central step", "## Primary questions", "# Answers, real models and exercises", "## Answers",
             "## Key takeaways", "## Run it on a real model", "## Exercises"]
    where = [text.index(h + "\n") for h in order]
    assert where == sorted(where)
    assert text.index("study.declaration()") < text.index("probes = C.probe_pairs(lm, ids, pairs")
    assert "Learning objectives" in text[: text.index(":tags: [parameters]")]
    assert "Key takeaways" not in text[: text.index("## Answers")]           # takeaways at the end only


def test_visible_central_step_prints_both_numbers_and_declaration_is_visible():
    for name in ("def delta_by_hand(", "print(f\"pair {k + 1}: Δ by hand", "study.declaration()"):
        cell = next(c for c in _cells() if c.cell_type == "code" and name in c.source)
        assert not _tags(cell) & {"remove-cell", "remove-input", "hide-input", "hide-cell"}, name


def test_toy_world_prose_is_tagged():
    """Markdown a real-model page keeps must not speak of the toy world."""
    for cell in _cells():
        if cell.cell_type != "markdown" or "toy-only" in _tags(cell):
            continue
        body = re.sub(r"(?ms)^```\{(exercise|solution)[^\n]*\n.*?^```\s*$", " ", cell.source).lower()
        hits = [p for p in TOY_PHRASES if p in body]
        assert not hits, (hits, cell.source[:120])


def test_claims_are_prose_not_code():
    """No hidden cell writes English sentences: the claims are in the Markdown, with glued numbers."""
    for cell in _cells():
        if cell.cell_type != "code" or not _tags(cell) & {"remove-cell", "remove-input", "hide-input"}:
            continue
        assert "display(Markdown" not in cell.source and "_summary\"," not in cell.source
        for literal in re.findall(r"f\"([^\"]{60,})\"", cell.source):
            assert literal.count(" ") < 12 or "{" not in literal or "caption" in cell.source, literal
    assert "stats.Family" not in _text() and "stats.decide" not in _text() and "verdict(" not in _text()


def test_no_templated_or_clipped_text():
    text = _text()
    blocks = re.findall(r"\$\$(.*?)\$\$", text, flags=re.S)
    assert len(blocks) >= 5
    for block in blocks:
        for line in block.strip().splitlines():
            assert len(line) <= 90, line                        # a longer display line is cut at the column
    assert "exact floor: " not in text and "0.0e+00" not in text and ".1e}" not in text.split("## Exercises")[0]
    assert "plt.subplots(" not in text and "figsize=" not in text and "legend(loc=" not in text


def test_hidden_code_halved():
    hidden = 0
    for cell in _cells():
        if cell.cell_type == "code" and _tags(cell) & {"remove-input", "remove-cell", "hide-input", "hide-cell"}:
            hidden += sum(1 for line in cell.source.splitlines() if line.strip())
    assert hidden <= 709 // 2, hidden


def test_no_visible_cell_uses_a_name_defined_only_in_a_hidden_cell():
    import ast
    import builtins

    hidden_tags = {"remove-cell", "remove-input", "hide-input", "hide-cell"}
    visible_defs, hidden_defs, problems = set(dir(builtins)), set(), []
    for cell in _cells():
        if cell.cell_type != "code":
            continue
        tree = ast.parse(cell.source)
        defined = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                defined.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                defined.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                defined.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.arg):
                defined.add(node.arg)
        if hidden_tags & _tags(cell):
            hidden_defs |= defined
            continue
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        problems += sorted((used - defined - visible_defs) & hidden_defs)
        visible_defs |= defined
    assert not problems, f"visible cells use names defined only in hidden cells: {problems}"


def test_graded_exercises_are_linked():
    text = _text()
    assert text.count("mlmbook.exercises.check(\"ch3-") >= 6 and ":label: ch3-capstone" in text
    exercises = text[text.index("## Exercises"):]
    assert "--no-solutions" in exercises and "launch button" in exercises


# ---------------------------------------------------------------- any model, any treebank
@pytest.mark.slow
def test_chapter_runs_on_a_2000_piece_wordpiece_model(other_model_book):
    """The shared any-model pair: a random 2,000-piece WordPiece BERT and the shipped treebank. Only the
    two questions that need no truth are asked; the page keeps no toy-world prose."""
    from mlmbook.pipeline.split import drop_other_world
    from tests.chapters.conftest import ANY_MODEL_TREEBANK
    run = other_model_book
    r = run.results(SLUG)
    _check_study(r, ["flips", "eoc"])
    _check_units(r, toy=False)
    assert ANY_MODEL_TREEBANK.name in r["corpus_source"] and r["eoc_items"] > 10
    for key in ("truth_delta_max", "bayes_loss", "train_kl", "regime_names", "noise_headroom", "q_span"):
        assert key not in r, key
    import nbformat
    nb = drop_other_world(nbformat.read(run.build_dir / "exec" / f"{SLUG}.ipynb", as_version=4), "real")
    prose = " ".join(c.source for c in nb.cells if c.cell_type == "markdown").lower()
    body = prose.split("## exercises")[0]
    assert not [p for p in TOY_PHRASES if p in body]


def _failure(run_chapter, capfd, **params) -> str:
    """The build's error and what it printed (the one-line cause)."""
    from mlmbook.errors import BuildError
    capfd.readouterr()
    with pytest.raises(BuildError) as e:
        run_chapter(SLUG, **params)
    out, err = capfd.readouterr()
    return "\n".join([str(e.value), out, err])


@pytest.mark.slow
def test_an_unusable_treebank_fails_in_one_line_and_the_toy_model_refuses_one(run_chapter, wordpiece_bert,
                                                                                tmp_path, capfd):
    broken = tmp_path / "broken.conllu"
    broken.write_text("# sent_id = 1\n1\tthe\tthe\tDET\n\n")          # four columns instead of ten
    message = _failure(run_chapter, capfd, model=wordpiece_bert, treebank=str(broken))
    assert "broken.conllu" in message and "toy-language sentences" not in message
    english = Path(__file__).resolve().parents[1] / "fixtures" / "english_web.conllu"
    message = _failure(run_chapter, capfd, model="toy", treebank=str(english))   # words it does not know
    assert "does not fit" in message and "allow_unknown" in message


@pytest.mark.slow
def test_allow_unknown_runs_and_shows_the_fit_warning_on_the_page(run_chapter, wordpiece_bert):
    """A model that does not fit the treebank runs with -p allow_unknown true, and the page shows the
    fit check's warning as a visible admonition (not on stderr, which the site drops)."""
    import nbformat
    treebank = Path(__file__).resolve().parents[1] / "fixtures" / "english_web.conllu"
    run = run_chapter(SLUG, model=wordpiece_bert, treebank=str(treebank), allow_unknown="true")
    nb = nbformat.read(run.build_dir / "exec" / f"{SLUG}.ipynb", as_version=4)
    shown = [o.get("data", {}).get("text/html", "") for c in nb.cells if c.cell_type == "code"
             and not {"remove-cell"} & set(c.metadata.get("tags", [])) for o in c.get("outputs", [])]
    assert any("admonition warning" in h and "allow_unknown" in h for h in shown)


def test_every_heading_shows_on_both_kinds_of_page():
    """A heading inside a toy-only or real-only cell vanishes from the other kind of page: only the toy
    world's own sections may be tagged, never a heading of the skeleton."""
    skeleton = {"# Inconsistencies in masked language models", "## The central step", "## Primary questions",
                "# Answers, real models and exercises", "## Answers", "## Key takeaways",
                "## Run it on a real model", "## Exercises"}
    for cell in _cells():
        if cell.cell_type == "markdown" and _tags(cell) & {"toy-only", "real-only"}:
            heads = {line for line in cell.source.splitlines() if line.startswith("#")}
            assert not heads & skeleton, heads & skeleton
