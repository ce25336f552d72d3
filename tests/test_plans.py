"""Plans before data (issue 40): the pilot's seeds and samples are its own, a plan round-trips, a reference
built against another plan fails the check, and the declarations read the committed plans."""
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from mlmbook import plans, profiles
from mlmbook.models import ladder
from mlmbook.pipeline import prepare, zoo
from mlmbook.stats import Question, Study, unit_sd

ROOT = Path(__file__).resolve().parent.parent
REFERENCE_PROFILES = ("quick", "full", "extended")


def _jobs(profile):
    return prepare.needed(profile)


def test_the_pilot_trains_no_model_of_a_reference():
    pilot = _jobs(profiles.PILOT)
    assert pilot and all(j.seed >= profiles.PILOT_SEED_OFFSET for j in pilot)
    for profile in REFERENCE_PROFILES:
        theirs = _jobs(profile)
        assert all(j.seed < profiles.PILOT_SEED_OFFSET for j in theirs), profile
        assert not set(pilot) & set(theirs), profile       # a Job is its grammar, config, seed and kind
    assert {r.seed for r in ladder.rungs("pilot") + ladder.seed_rungs("pilot")} == {1000, 1001, 1002}
    span = [zoo.find(3, "pilot", f"span s{s}").seed for s in zoo.CH3_SEEDS["pilot"]]
    assert span == [1000 + s for s in zoo.CH3_SEEDS["pilot"]]


def test_the_pilot_samples_its_own_sentences():
    from mlmbook.pipeline.chapters import Layout, find_chapters, plan_parameters
    from mlmbook.toy import Grammar

    chapters = [c for c in find_chapters(Layout.find(ROOT)) if c.number in (1, 2, 3, 4, 5)]
    for chapter, values in plan_parameters(chapters, [], profiles.PILOT):
        assert values["profile"] == "pilot" and values["seed"] == profiles.PILOT_SEED_OFFSET, chapter.slug
    for chapter, values in plan_parameters(chapters, [], "full"):
        assert "seed" not in values, chapter.slug                      # the references: the default 0
    grammar = Grammar.load("toy")
    ours = [s.words for s in grammar.sample(40, seed=profiles.PILOT_SEED_OFFSET)]
    theirs = [s.words for s in grammar.sample(40, seed=0)]
    assert ours != theirs


def _results(values_by_key, alpha=0.05, plan_hash=None, unit="sentence"):
    """A pilot chapter's results file, built by the study layer from constructed rows."""
    qs = [Question(k, f"claim {k}", 0.05, "basis", unit=unit, measure="UUAS", sample="SIZES.main")
          for k in values_by_key]
    study = Study("chapter 9", qs, alpha=alpha)
    out = {}
    for k, (v, units, seeds) in values_by_key.items():
        out[f"q_{k}"] = study.answer(k, v, units=units, seeds=seeds).to_record()
    out["study"] = study.to_record()
    if plan_hash is not None:
        out[plans.PLAN_KEY] = {"chapter": "09_test", "hash": plan_hash}
    return out


def _pilot(seed=0):
    rng = np.random.default_rng(seed)
    v = rng.normal(0.02, 0.15, 80)
    return _results({"a": (v, np.repeat(np.arange(40), 2), None), "b": (rng.normal(0, 0.1, 40), None, None)})


def test_the_planning_sd_is_the_units_sd_behind_the_standard_error():
    results = _pilot()
    for key in ("q_a", "q_b"):
        rec = results[key]
        sd, n = plans.unit_sd_of(rec)
        assert n == 40 and math.isclose(sd, unit_sd(rec["interval_se"], rec["interval_n"]), rel_tol=1e-6)
    rng = np.random.default_rng(3)           # a recipe question: the SD of the seed means
    seeds = np.repeat(np.arange(5), 6)
    v = rng.normal(0, 0.01, 30) + np.repeat(rng.normal(0, 0.02, 5), 6)
    rec = _results({"s": (v, None, seeds)}, unit="seed")["q_s"]
    means = [v[seeds == s].mean() for s in range(5)]
    assert plans.unit_sd_of(rec) == (pytest.approx(float(np.std(means, ddof=1))), 5)


def test_a_plan_round_trips(tmp_path):
    plan = plans.from_pilot("09_test", _pilot(), date="2026-12-06 00:00 UTC")
    q = {x["key"]: x for x in plan["questions"]}
    assert set(q) == {"a", "b"} and plan["source"]["profile"] == "pilot"
    assert q["a"]["planned_n"] == plans.needed_units(q["a"]["planning_sd"], 0.05, plan["level"])
    assert q["a"]["pilot_units"] == 40 and q["a"]["basis"] == "basis" and q["a"]["test"]
    plans.save(plan, tmp_path)
    again = plans.load("09_test", tmp_path)
    assert again == plan and plans.content_hash(again) == plans.content_hash(plan)
    assert plans.planning_sds("09_test", tmp_path) == {"a": q["a"]["planning_sd"], "b": q["b"]["planning_sd"]}


def test_a_pilot_whose_units_do_not_vary_sizes_nothing():
    rec = _results({"z": (np.zeros(20), None, None)})
    q = plans.from_pilot("09_test", rec)["questions"][0]
    assert q["planning_sd"] is None and q["planned_n"] is None and "did not vary" in q["note"]


def test_a_plan_comes_from_the_pilot_only():
    results = {**_pilot(), "profile": "full"}
    with pytest.raises(ValueError, match="pilot"):
        plans.from_pilot("09_test", results)
    with pytest.raises(ValueError, match="pilot"):
        plans.from_pilot("09_test", _pilot(), profile="full")


def _reference_against(plan, tmp_path, doctor=None):
    """A reference declared under ``plan`` (committed in ``tmp_path``) the way a chapter declares."""
    plans.save(plan, tmp_path)
    qs = plans.fill("09_test", [Question(k, "c", 0.05, "b") for k in ("a", "b")], tmp_path)
    study = Study("chapter 9", qs)
    rng = np.random.default_rng(1)
    out = {f"q_{q.key}": study.answer(q.key, rng.normal(0, 0.1, 30)).to_record() for q in qs}
    out = plans.stamp(out, "09_test", tmp_path)                  # as the build stamps a chapter's results
    if doctor:
        doctor(out)
    return out


def test_the_check_passes_a_reference_built_against_its_plan(tmp_path):
    plan = plans.from_pilot("09_test", _pilot())
    reference = _reference_against(plan, tmp_path)
    assert plans.check("09_test", reference, tmp_path) == []


def test_the_check_fails_a_doctored_plan(tmp_path):
    plan = plans.from_pilot("09_test", _pilot())
    reference = _reference_against(plan, tmp_path)
    doctored = json.loads(json.dumps(plan))
    doctored["questions"][0]["planning_sd"] *= 0.5            # a smaller SD: a smaller planned N
    plans.save(doctored, tmp_path)
    problems = plans.check("09_test", reference, tmp_path)
    assert problems and "not the committed one" in problems[0]


def test_the_check_fails_an_answer_not_declared_under_the_plan(tmp_path):
    plan = plans.from_pilot("09_test", _pilot())

    def edit(out):
        out["q_a"]["planning_sd"] = 0.2064                   # a number typed into the code

    problems = plans.check("09_test", _reference_against(plan, tmp_path, edit), tmp_path)
    assert problems and "planning SD" in problems[0]
    unstamped = _reference_against(plan, tmp_path, lambda out: out.pop(plans.PLAN_KEY))
    assert "no plan" in plans.check("09_test", unstamped, tmp_path)[0]
    assert plans.check("09_test", {"x": 1.0}, tmp_path) == []              # no primary answer, no plan needed


def test_a_superseded_plan_stays_on_record_with_its_answers_and_reason(tmp_path):
    old = plans.from_pilot("09_test", _pilot(0))
    reference = _reference_against(old, tmp_path)
    new = plans.from_pilot("09_test", _pilot(1))
    with pytest.raises(ValueError, match="reason"):
        plans.supersede(old, new, "  ")
    kept = plans.supersede(old, new, "the effect of interest was corrected", reference)
    assert plans.content_hash(kept) == plans.content_hash(new)            # history is not part of the hash
    entry = kept["superseded"][-1]
    assert entry["hash"] == plans.content_hash(old) and entry["plan"]["questions"] == old["questions"]
    assert set(entry["answers"]) == {"a", "b"} and entry["reason"].startswith("the effect")
    plans.save(kept, tmp_path)
    assert "a superseded plan" in plans.check("09_test", reference, tmp_path)[0]


COMMITTED = sorted((ROOT / "results" / "plans").glob("0*.json"))


@pytest.mark.parametrize("path", COMMITTED, ids=[p.stem for p in COMMITTED])
def test_a_committed_plan_is_a_pilots(path):
    plan = plans.load(path.stem, ROOT)
    assert plan["source"]["profile"] == "pilot" and plan["source"]["seed_offset"] == profiles.PILOT_SEED_OFFSET
    for q in plan["questions"]:
        assert q["basis"] and q["sample"] and q["pilot_units"] >= 2, q["key"]
        if q["planning_sd"] is None:                  # a pilot whose units did not vary says so
            assert q["planned_n"] is None and "did not vary" in q["note"], q["key"]
            continue
        assert q["planning_sd"] > 0, q["key"]
        assert q["planned_n"] == plans.needed_units(q["planning_sd"], q["effect"], plan["level"], unit=q["unit"])


@pytest.mark.parametrize("path", COMMITTED, ids=[p.stem for p in COMMITTED])
def test_declarations_read_the_committed_plan(path):
    """Every chapter declares its questions in a visible cell under "Primary questions", with the planning
    SDs its committed plan gives (``plans.fill``), none typed in."""
    page = (ROOT / "book" / f"{path.stem}.md").read_text()
    cell = page[page.index("## Primary questions"):]
    cell = cell[:cell.index("study.declaration()")]
    assert f'plans.fill("{path.stem}"' in cell, path.stem
    assert not re.search(r"planning_sd\s*=\s*[0-9]", cell), "a planning SD typed into the page"


def test_the_command_line_supersedes_a_plan_a_reference_was_built_against(tmp_path):
    pilot = tmp_path / "pilot"
    pilot.mkdir()
    (pilot / "09_test.json").write_text(json.dumps(_pilot(0)))
    assert plans.main(["write", str(pilot), "--root", str(tmp_path)]) == 0
    first = plans.load("09_test", tmp_path)
    reference = _reference_against(first, tmp_path)
    (tmp_path / "results" / "full").mkdir(parents=True)
    (tmp_path / "results" / "full" / "09_test.json").write_text(json.dumps(reference))
    (pilot / "09_test.json").write_text(json.dumps(_pilot(1)))          # a new pilot, after the result was seen
    with pytest.raises(SystemExit, match="--reason"):
        plans.main(["write", str(pilot), "--root", str(tmp_path)])
    assert plans.load("09_test", tmp_path) == first                      # nothing written without the reason
    assert plans.main(["write", str(pilot), "--root", str(tmp_path), "--reason", "a larger pilot"]) == 0
    kept = plans.load("09_test", tmp_path)["superseded"]
    assert [e["hash"] for e in kept] == [plans.content_hash(first)] and kept[0]["reason"] == "a larger pilot"
    assert plans.main(["check", str(tmp_path / "results" / "full"), "--root", str(tmp_path)]) == 1


@pytest.mark.parametrize("path", COMMITTED, ids=[p.stem for p in COMMITTED])
def test_a_committed_plan_rederives_from_its_committed_pilot(path):
    """The pilot's recorded answers are committed (results/pilot): the plan is what they give."""
    import hashlib
    pilot = ROOT / "results" / "pilot" / path.name
    plan = plans.load(path.stem, ROOT)
    data = pilot.read_bytes()
    assert hashlib.sha256(data).hexdigest() == plan["source"]["results_sha256"]
    again = plans.from_pilot(path.stem, json.loads(data))
    keep = ("key", "effect", "unit", "planning_sd", "pilot_units", "planned_n")
    assert [{k: q[k] for k in keep} for q in again["questions"]] == [{k: q[k] for k in keep} for q in plan["questions"]]


def test_a_run_shows_its_answers_beside_the_extended_reference(tmp_path):
    """The answers table carries a second table with the extended reference's answers, question by question,
    only for a toy-language run of another profile, and only once the reference exists."""
    study = Study("chapter 9", [Question("gain", "ensemble gains", 0.02, "2 %", measure="nats"),
                                Question("loss", "something else", 0.02, "2 %", measure="nats")])
    study.answer("gain", [0.03, 0.05, 0.04, 0.02, 0.06, 0.05, 0.04, 0.03])
    theirs = Study("chapter 9", list(study.questions.values()))
    theirs.answer("gain", [0.01, -0.02, 0.0, 0.01, 0.02, -0.01] * 5)
    assert plans.reference("99_x", root=tmp_path) is None
    assert plans.reference_for("99_x", "toy", "full") is None                # no such reference in the repo
    results = {"study": theirs.to_record(), "q_gain": theirs.answers["gain"].to_record()}
    (tmp_path / "results" / "extended").mkdir(parents=True)
    (tmp_path / "results" / "extended" / "99_x.json").write_text(json.dumps(results))
    ref = plans.reference("99_x", root=tmp_path)
    assert ref["label"] == "the extended reference" and set(ref["answers"]) == {"gain"}
    (tmp_path / "results" / "timings").mkdir()
    (tmp_path / "results" / "timings" / "extended-uncached.json").write_text(json.dumps({"when": "2026-12-06 11:00"}))
    ref = plans.reference("99_x", root=tmp_path)
    assert ref["label"] == "the extended reference, built 2026-12-06 11:00"
    assert "built" not in plans.stamp(results, "99_x", tmp_path)["plan"]         # a build's bytes have no clock
    made = {**results, "reference": {"profile": "extended", "built": "2026-12-06 12:00 UTC"}}   # the committed copy's
    (tmp_path / "results" / "extended" / "99_x.json").write_text(json.dumps(made))
    label = plans.reference("99_x", root=tmp_path)["label"]
    assert label == "the extended reference, built 2026-12-06 12:00 UTC"
    shown = repr(study.table(beside=ref))
    assert repr(study.table()) in shown
    rows = shown.split("\n\n", 1)[1].splitlines()
    assert rows[2].startswith("Q1 | 0.040 [") and f"| {theirs.answers['gain'].verdict} | 30" in rows[2]
    assert rows[3] == "Q2 | — | not asked | — | — | not in the reference | —"
    assert "<table" in study.table(beside=ref)._repr_html_().split("</table>", 1)[1]
    glue = plans.reference_glue(ref, study)
    assert glue["ext_label"] == ref["label"] and glue["ext_loss"] == "not asked"
    assert glue["ext_gain"] == f"{theirs.answers['gain'].interval.format(3)} ({theirs.answers['gain'].verdict}, n = 30)"
    own = plans.reference_glue(None, study)                                    # the extended build itself
    assert own["ext_label"] == "this run" and own["ext_gain"].endswith(f"({study.answers['gain'].verdict}, n = 8)")
    for model, profile, treebank in (("bert-base-uncased", "full", None), ("toy", "full", "test"),
                                     ("toy", "extended", None)):
        assert plans.reference_for("04_deficiency", model, profile, treebank) is None
