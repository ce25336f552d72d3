"""The extended profile is sized by power (issue 37 item 5): every primary question of the committed full
references gets, in the extended plan, at least the units its power calculation asks for (at 80 % power for
its effect of interest at the family's level), and at least five seeds where its unit is the training seed.
Only the plan is tested, never its execution."""
import json
from pathlib import Path

import pytest

from mlmbook import stats
from mlmbook.pipeline import chapters as ch
from mlmbook.pipeline import zoo
from mlmbook.pipeline.plan import chapter_sizes, make_plan, unit_sizes

ROOT = Path(__file__).resolve().parent.parent
REFERENCES = sorted((ROOT / "results" / "full").glob("0*.json"))


def _extended_units(chapter, sample: str) -> int:
    sizes, read_for = chapter_sizes(chapter, "extended")
    assert read_for == "extended", f"{chapter.slug} declares no extended sizes"
    found = {**sizes, **unit_sizes(chapter.number, "extended")}
    assert sample in found, f"{chapter.slug}: the extended plan sets no {sample!r} (has {sorted(found)})"
    return int(found[sample])


@pytest.mark.parametrize("path", REFERENCES, ids=[p.stem for p in REFERENCES])
def test_every_primary_question_is_sized_to_its_need(path):
    results = json.loads(path.read_text())
    chapter = next(c for c in ch.find_chapters(ch.Layout.find(ROOT)) if c.slug == path.stem)
    for key, a in stats.walk_answers(results):
        assert a["sample"], f"{path.stem} {key}: the question names no sample (stats.Question(sample=...))"
        need = max(a["needed"], a.get("needed_planned") or 0)
        if a["unit"] == "seed":
            need = max(need, 5)                                 # a recipe claim: at least five seeds
        has = _extended_units(chapter, a["sample"])
        assert has >= need, f"{path.stem} {key}: extended {a['sample']} = {has}, the question needs {need}"


def test_the_plan_schedules_more_workers_faster_and_names_its_models():
    plan = make_plan(ROOT, [], "extended", 8)
    assert {p.slug for p in plan.chapters} >= {"01_dependencies", "04_deficiency", "05_glauber"}
    assert plan.makespan(8) < plan.makespan(1)
    ch4 = next(p for p in plan.chapters if p.slug == "04_deficiency")
    assert ch4.sizes["zoo.CH4_SEEDS"] == zoo.CH4_SEEDS["extended"] >= 5
    pairs = [j for j in zoo.chapter4("extended") if j.name.startswith("default maelm")]
    assert len(pairs) == zoo.CH4_SEEDS["extended"] and set(pairs) <= set(ch4.models)
    assert len(zoo.CH3_SEEDS["extended"]) >= 5


def test_chapter_1s_sizes_construct_in_every_profile():
    """Chapter 1 reads its main and models sentences as prefixes of its corpus: a profile whose corpus is
    shorter would read fewer sentences than it declares (the extended profile's 290 read 250 once)."""
    from mlmbook.dependencies.design import Sizes
    chapter = next(c for c in ch.find_chapters(ch.Layout.find(ROOT)) if c.slug == "01_dependencies")
    for profile in ("quick", "full", "pilot", "extended"):
        sizes, _ = chapter_sizes(chapter, profile)
        Sizes(**{k.split(".", 1)[1]: v for k, v in sizes.items() if k.startswith("SIZES.")})
    with pytest.raises(ValueError, match="prefixes of corpus"):
        Sizes(**{**{k.split(".", 1)[1]: v for k, v in chapter_sizes(chapter, "extended")[0].items()
                    if k.startswith("SIZES.")}, "corpus": 250})
