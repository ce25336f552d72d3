"""The build's schedule: a chapter waits only for the training of its own models (issue 28, item 7)."""
from mlmbook.models import prepare
from mlmbook.pipeline import chapters as ch
from mlmbook.pipeline.execute import execute_chapter, schedule


def test_each_chapter_needs_only_the_units_holding_its_models(tmp_path, monkeypatch):
    monkeypatch.setenv("MLMBOOK_CACHE", str(tmp_path / "empty-cache"))        # every model missing
    layout = ch.Layout.find()
    plans = ch.plan_parameters(ch.find_chapters(layout), [], "quick")
    tasks, training = schedule(layout, plans, "quick", n=2)
    assert training and all(t.fn is prepare._run for t in training)
    by_key = {t.key: t for t in tasks}
    units = {t.key: set(t.args[0]) for t in training}
    for chapter, _ in plans:
        task = by_key[chapter.slug]
        assert task.fn is execute_chapter and task.slots == 1 and task.args[-1] == 1     # one kernel thread
        wanted = set(prepare.needed("quick", [int(chapter.slug[:2])]))
        assert set().union(*(units[k] for k in task.needs)) >= wanted                   # all its models first
        assert all(units[k] & wanted for k in task.needs)                                 # and nothing else
    # chapter 0 reads the default model only; chapter 4 waits for its knob models, chapter 0 does not
    assert len(by_key["00_toy_world"].needs) < len(by_key["04_deficiency"].needs)
    assert not set(by_key["00_toy_world"].needs) >= set(by_key["04_deficiency"].needs)


def test_a_chapter_on_a_large_model_runs_alone_after_the_training(tmp_path, monkeypatch):
    monkeypatch.setenv("MLMBOOK_CACHE", str(tmp_path / "empty-cache"))
    layout = ch.Layout.find()
    toy_plans = ch.plan_parameters(ch.resolve_chapters(ch.find_chapters(layout), ["0"]), [], "quick")
    (chapter, values), = toy_plans
    plans = [(chapter, values), (chapter, {**values, "seed": 3})]      # another seed trains its own models
    tasks, training = schedule(layout, plans, "quick", n=2)
    assert set(tasks[-1].needs) == {t.key for t in training}
