"""The build's schedule: a chapter waits only for the training of its own models (issue 28, item 7),
and, on workers that share no filesystem, is passed those models (issue 37)."""
from mlmbook.pipeline import chapters as ch
from mlmbook.pipeline import prepare
from mlmbook.pipeline.chapter_run import run_chapter
from mlmbook.pipeline.execute import schedule


def test_each_chapter_needs_only_the_units_holding_its_models(tmp_path, monkeypatch):
    monkeypatch.setenv("MLMBOOK_CACHE", str(tmp_path / "empty-cache"))        # every model missing
    layout = ch.Layout.find()
    plans = ch.plan_parameters(ch.find_chapters(layout), [], "quick")
    tasks, training, data = schedule(layout, plans, "quick", n=2)
    assert training and all(t.fn is prepare._run for t in training) and data == {}
    by_key = {t.key: t for t in tasks}
    units = {t.key: set(t.args[0]) for t in training}
    for chapter, _ in plans:
        task = by_key[chapter.slug]
        run = task.args[0]
        assert task.fn is run_chapter and not task.resources and run.threads == 1       # one kernel thread
        assert run.build == layout.build and not task.pass_needs                       # the build folder is shared
        wanted = set(prepare.needed("quick", [int(chapter.slug[:2])]))
        assert set().union(*(units[k] for k in task.needs)) >= wanted                   # all its models first
        assert all(units[k] & wanted for k in task.needs)                                 # and nothing else
    # chapter 0 reads the default model only; chapter 4 waits for its knob models, chapter 0 does not
    assert len(by_key["00_toy_world"].needs) < len(by_key["04_deficiency"].needs)
    assert not set(by_key["00_toy_world"].needs) >= set(by_key["04_deficiency"].needs)


def test_a_chapter_with_another_seed_runs_after_the_training(tmp_path, monkeypatch):
    monkeypatch.setenv("MLMBOOK_CACHE", str(tmp_path / "empty-cache"))
    layout = ch.Layout.find()
    toy_plans = ch.plan_parameters(ch.resolve_chapters(ch.find_chapters(layout), ["0"]), [], "quick")
    (chapter, values), = toy_plans
    plans = [(chapter, values), (chapter, {**values, "seed": 3})]      # another seed trains its own models
    tasks, training, _ = schedule(layout, plans, "quick", n=2)
    assert set(tasks[-1].needs) == {t.key for t in training}


def test_a_chapter_on_a_large_model_runs_alone_or_asks_for_a_resource(tmp_path, monkeypatch):
    """Alone: after every other task (the toy chapters and their training, the large chapters before
    it), so nothing runs beside it, with all the threads; or on a worker with the resource."""
    monkeypatch.setenv("MLMBOOK_CACHE", str(tmp_path / "empty-cache"))
    layout = ch.Layout.find()
    (c0, v0), (c3, v3) = ch.plan_parameters(ch.resolve_chapters(ch.find_chapters(layout), ["0", "3"]), [], "quick")
    big = str(tmp_path / "some-bert")
    plans = [(c0, {**v0, "model": big}), (c3, v3), (c3, {**v3, "model": big})]
    tasks, training, _ = schedule(layout, plans, "quick", n=3)
    first, second = [t for t in tasks if t.args and getattr(t.args[0], "threads", 1) is None]
    toy = [t for t in tasks if t not in (first, second)]
    assert training and set(first.needs) == {t.key for t in toy} and tasks[-2:] == [first, second]
    assert set(second.needs) == {t.key for t in toy} | {first.key} and first.resources == ()
    tasks, training, _ = schedule(layout, plans, "quick", n=3, resource="GPU")
    large = [t for t in tasks if t.resources]
    assert len(large) == 2 and all(t.resources == (("GPU", 1),) for t in large)
    assert all(set(t.needs) <= {u.key for u in training} for t in large)         # no chapter before it


def test_shipping_passes_each_chapter_its_cached_models_and_its_units(tmp_path, monkeypatch):
    """Chapter 0's default model cached here, chapter 4's others missing: chapter 0 is passed the
    cached one as data; chapter 4 also waits for its units, whose models come back as bytes."""
    from mlmbook.models import shipping
    cache = tmp_path / "cache"
    monkeypatch.setenv("MLMBOOK_CACHE", str(cache))
    default = prepare.needed("quick", [0])[0]
    entry = cache / shipping.entry_name(default)
    entry.mkdir(parents=True)
    (entry / "manifest.json").write_text('{"sha256": {}}')             # looks cached to the packer
    monkeypatch.setattr(prepare, "missing", lambda jobs: [j for j in jobs if j != default])
    layout = ch.Layout.find()
    plans = ch.plan_parameters(ch.resolve_chapters(ch.find_chapters(layout), ["0", "4"]), [], "quick")
    tasks, training, data = schedule(layout, plans, "quick", n=2, ship=True)
    key = f"model {entry.name}"
    assert list(data) == [key] and data[key][entry.name].startswith(b"manifest.json\0")   # the entry, packed
    by_key = {t.key: t for t in tasks}
    assert by_key["00_toy_world"].needs == (key,) and by_key["00_toy_world"].pass_needs
    assert by_key["00_toy_world"].args[0].build is None                                 # scratch of its own
    assert key in by_key["04_deficiency"].needs and len(by_key["04_deficiency"].needs) > 1
    assert all(t.args[1] is True for t in training)                                      # units return bytes


def test_progress_lines_name_the_count_the_model_and_the_time():
    """Issue 35: lines a log shows (not a terminal's bar): each model as it is trained, each chapter's cells."""
    said, done = [], []
    unit = prepare.UnitDone([("MLM, hidden 64, 1500 steps, seed 2", 31.2, "stacked with 3 others")], {})
    prepare.report(unit, done, 64, said.append, "2:15")
    assert said == ["  trained 1/64 models (MLM h64 seed 2, 31 s, stacked with 3 others) 2:15 elapsed"]
    assert done[0].label == "MLM, hidden 64, 1500 steps, seed 2"


def test_a_chapter_tells_its_cells_at_a_modest_rate(monkeypatch):
    from mlmbook import workers
    from mlmbook.pipeline import chapter_run
    events = []
    monkeypatch.setattr(workers._context, "sink", events.append, raising=False)
    monkeypatch.setattr(workers._context, "key", "03_x", raising=False)
    monkeypatch.setattr(chapter_run, "CELL_LINE_SECONDS", 3600.0)
    on_cell = chapter_run._cell_reporter("03_x", 80)
    on_cell(1)
    on_cell(2)
    assert [e["text"].split(" (")[0] for e in events] == ["03_x cell 1/80", "03_x cell 2/80"]
    assert not any(e["show"] for e in events)                  # status only: no line within the interval
    monkeypatch.setattr(chapter_run, "CELL_LINE_SECONDS", 0.0)
    on_cell(3)
    assert events[-1]["show"] and events[-1]["text"].startswith("03_x cell 3/80 (0:0")
