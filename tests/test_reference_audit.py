"""Every verdict of the book re-derived a second way (issue 32): on the committed full and extended
references and on the quick build, each chapter states at most six primary answers, records no other verdict, and
every directional answer survives an independent re-derivation from its own per-row values."""
import json
from pathlib import Path

import pytest

from mlmbook import plans, stats

ROOT = Path(__file__).resolve().parent.parent
REFERENCES = sorted((ROOT / "results" / "full").glob("0*.json")) + \
    sorted((ROOT / "results" / "extended").glob("0*.json"))
IDS = [f"{p.parent.name}/{p.stem}" for p in REFERENCES]


def _verdicts(results):
    return [k for k, _ in stats.walk_verdicts(results)]


def _check(results, name):
    answers = list(stats.walk_answers(results))
    assert len(answers) <= stats.MAX_PRIMARY, f"{name}: {len(answers)} primary answers"
    assert not _verdicts(results), f"{name}: old-style verdicts left: {_verdicts(results)[:5]}"
    study = results.get("study")
    if answers:
        assert study and study["kind"] == "study" and study["size"] >= len(answers), name
        for key, rec in answers:
            assert rec["family_size"] == study["size"], (name, key)
            assert rec["values"], (name, key)               # re-derivable: the per-row values are recorded
    problems = stats.audit(results)
    assert not problems, f"{name}: {problems}"


@pytest.mark.parametrize("path", REFERENCES, ids=IDS)
def test_committed_reference_answers_rederive(path):
    _check(json.loads(path.read_text()), path.name)


def test_quick_build_answers_rederive(quick_book):
    for path in sorted(Path(quick_book.build_dir, "results").glob("0*.json")):
        _check(json.loads(path.read_text()), f"quick {path.name}")


@pytest.mark.parametrize("path", REFERENCES, ids=IDS)
def test_committed_reference_was_built_against_its_plan(path):
    """Plans before data (issue 40): a reference records the hash of the plan its questions were declared
    under, and it must be the committed plan (results/plans), with the plan's planning SDs."""
    problems = plans.check(path.stem, json.loads(path.read_text()), ROOT)
    assert not problems, problems


def test_quick_build_was_declared_under_the_committed_plans(quick_book):
    problems = plans.check_references(Path(quick_book.build_dir, "results"), ROOT)
    assert not problems, problems


def test_the_extended_reference_decides_every_question_it_holds():
    """Issue 40: every primary question of the extended reference is sampled so that it can decide; none is
    "cannot decide" (a question is decidable when the guard holds and its detectable effect is at most the
    effect of interest at the observed spread)."""
    for path in sorted((ROOT / "results" / "extended").glob("0*.json")):
        undecided = [k for k, a in stats.walk_answers(json.loads(path.read_text())) if a["verdict"] == "cannot decide"]
        assert not undecided, f"extended/{path.stem}: cannot decide {undecided}"
