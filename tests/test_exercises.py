"""Every graded exercise: its reference solution passes, every deliberately wrong one fails,
and an unfinished one is reported as not attempted (so a student edition still executes)."""
import pytest

from mlmbook import exercises

REGISTRY = exercises.registry()


def test_the_grader_on_a_toy_exercise():
    ex = exercises.Exercise("demo", "warm-up", lambda: [(1.0, 2.0), (3.0, -1.0)], lambda a, b: a + b,
                            lambda a, b: a + b, (lambda a, b: a - b,))
    exercises._REGISTRY["demo"] = ex
    try:
        assert exercises.check("demo", ex.reference).passed
        bad = exercises.check("demo", ex.wrong[0])
        assert not bad.passed and bad.attempted and "case 1 of 2" in bad.message

        def todo(a, b):
            raise NotImplementedError
        assert not exercises.check("demo", todo).attempted
        assert "raised ZeroDivisionError" in exercises.check("demo", lambda a, b: 1 / 0).message
    finally:
        exercises._REGISTRY.pop("demo")


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_reference_passes_and_wrong_solutions_fail(name):
    ex = REGISTRY[name]
    cases = ex.cases()
    assert len(cases) >= 2, "grade on at least two cases"
    assert exercises.check(name, ex.reference, cases).passed
    for wrong in ex.wrong:
        grade = exercises.check(name, wrong, cases)
        assert grade.attempted and not grade.passed, f"{name}: a wrong solution passed"


def test_every_chapter_has_two_graded_exercises():
    by_chapter = {}
    for name, ex in REGISTRY.items():
        by_chapter.setdefault(name.split("-")[0], []).append(ex)
    missing = [f"ch{k}" for k in range(1, 6) if len(by_chapter.get(f"ch{k}", [])) < 2]
    assert not missing, f"chapters with fewer than two graded exercises: {missing}"
