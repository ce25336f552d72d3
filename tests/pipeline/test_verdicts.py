"""The book's one decision rule, checked on every verdict a chapter records.

Each chapter declares one verdict family (``decision_family``: its size and error rate) and
records every verdict whole (``stats.Verdict``). For the committed full-profile numbers and
for the quick build, every recorded verdict must be the side the rule gives for its recorded
interval, at its family's level, with the detectable effect its standard error gives; and no
chapter may record more verdicts than its family allows.
"""
import json

import pytest

from mlmbook.paths import repo_root
from mlmbook.stats import check_record, walk_verdicts

CHAPTERS = ("01_dependencies", "02_joints", "03_consistency", "04_deficiency", "05_glauber")


def audit(results: dict) -> list[str]:
    """Everything wrong with one chapter's recorded verdicts under the book's rule."""
    problems = []
    family = results.get("decision_family")
    if not isinstance(family, dict) or family.get("kind") != "family":
        return ["no decision_family recorded (stats.Family, recorded once per chapter)"]
    found = list(walk_verdicts(results))
    if not found:
        problems.append("no verdict recorded through stats.decide")
    if len(found) > family["size"]:
        problems.append(f"{len(found)} verdicts recorded, more than the family's {family['size']}")
    for key, rec in found:
        if rec.get("family") != family["name"]:
            problems.append(f"{key}: from family {rec.get('family')!r}, not the chapter's {family['name']!r}")
        problems += [f"{key}: {p}" for p in check_record(rec)]
    return problems


def test_audit_catches_a_doctored_verdict():
    from mlmbook import stats
    fam = stats.Family("chapter 9", size=2)
    v = stats.decide(stats.Interval(0.1, 0.05, 0.2, level=fam.level, se=0.03), family=fam)
    good = {"decision_family": fam.to_record(), "a": v.to_record()}
    assert audit(good) == []
    assert audit({**good, "a": {**v.to_record(), "side": "indistinguishable"}})
    assert audit({**good, "b": v.to_record(), "c": v.to_record()})          # 3 > 2
    assert audit({"a": v.to_record()})                                      # no family


@pytest.mark.parametrize("slug", CHAPTERS)
def test_committed_full_results_follow_the_rule(slug):
    path = repo_root() / "results" / "full" / f"{slug}.json"
    assert path.exists(), f"{path} is missing: run `make reference`"
    assert audit(json.loads(path.read_text())) == []


@pytest.mark.parametrize("slug", CHAPTERS)
def test_quick_build_results_follow_the_rule(quick_book, slug):
    assert audit(quick_book.results(slug)) == []
