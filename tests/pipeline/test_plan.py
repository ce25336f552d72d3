"""The extended profile's plan (issue 37, item 5): models, samples and estimated time for N workers,
read from what chapters and model lists declare, the full profile's where they declare nothing yet."""
import json
import subprocess
import sys

import pytest

from mlmbook import workers
from mlmbook.pipeline import chapters as ch
from mlmbook.pipeline import prepare
from mlmbook.pipeline.plan import chapter_sizes, make_plan, plan_lines

CHAPTER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# {title}

```{{code-cell}} ipython3
:tags: [parameters]

profile = "full"
```

```{{code-cell}} ipython3
{sizes}
n_eval = {{"quick": 5, "full": 50}}[profile]
```
"""


@pytest.fixture
def book(tmp_path):
    """A book of two chapters numbered 0 and 2 (so they load those chapters' models), chapter 2 declaring
    an extended size for its toy sentences only, and measured full-profile times of 10 s and 40 s."""
    root = tmp_path / "book"
    (root / "book").mkdir(parents=True)
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/00_a\n")
    (root / "book" / "00_a.md").write_text(CHAPTER.format(title="A", sizes="SIZES = {'quick': 1, 'full': 4}"))
    sizes = 'SIZES = {"toy": {"quick": 12, "full": 64, "extended": 256}, "real": {"quick": 6, "full": 24}}'
    (root / "book" / "02_b.md").write_text(CHAPTER.format(title="B", sizes=sizes))
    timings = {"profile": "full", "cache": "cached", "chapters": {"00_a": 10.0, "02_b": 40.0}}
    (root / "results" / "timings").mkdir(parents=True)
    (root / "results" / "timings" / "full-cached.json").write_text(json.dumps(timings))
    return root


def test_declared_extended_sizes_are_read_and_the_rest_falls_back_to_full(book):
    chapter, = ch.resolve_chapters(ch.find_chapters(ch.Layout.find(book)), ["2"])
    extended, used = chapter_sizes(chapter, "extended")
    full, used_full = chapter_sizes(chapter, "full")
    assert full == {"SIZES.toy": 64, "SIZES.real": 24, "n_eval": 50} and used_full == "full"
    assert extended == {"SIZES.toy": 256, "SIZES.real": 24, "n_eval": 50}   # none declared: the full one
    assert used == "full"                                                    # partly declared: says so
    quick, _ = chapter_sizes(chapter, "quick")
    assert quick == {"SIZES.toy": 12, "SIZES.real": 6, "n_eval": 5}


def test_the_plan_counts_models_samples_and_time_on_n_workers(book):
    plan = make_plan(book, ["0", "2"], "extended", 4)
    by = {p.slug: p for p in plan.chapters}
    joints = by["02_b"]
    # the model lists declare the extended profile (the full profile's configurations): read, not a fallback
    assert joints.models == prepare.needed("extended", [2]) and joints.models_from == "extended"
    assert set(joints.models) == set(prepare.needed("full", [2]))             # chapter 2: no more seeds
    assert joints.seconds == pytest.approx(40.0 * (256 / 64 + 1 + 1) / 3)     # the mean ratio of its sizes
    assert by["00_a"].seconds == 10.0 and by["00_a"].sizes == {"SIZES": 4, "n_eval": 50}
    assert sum(len(u) for u in plan.units) == len(set(joints.models) | set(by["00_a"].models))
    total = sum(t.seconds for t in plan.tasks)
    assert plan.makespan(1) == pytest.approx(total)                         # one worker: everything in a row
    assert plan.makespan(1000) == pytest.approx(max(workers.ranks(plan.tasks).values()))   # the critical path
    assert plan.makespan(1) >= plan.makespan(2) >= plan.makespan(4)
    chapter_task = next(t for t in plan.tasks if t.key == "02_b")
    assert chapter_task.needs and all(n.startswith("train ") for n in chapter_task.needs)


def test_the_printed_plan_says_where_it_fell_back(book):
    lines = plan_lines(book, ["0", "2"], "extended", 4)
    text = "\n".join(lines)
    assert lines[0] == "the extended profile's plan on 4 workers:"
    assert "  02_b: " in text and "SIZES.toy=256, SIZES.real=24, n_eval=50" in text
    assert "the full profile's where none are declared for extended yet" in text    # SIZES.real
    assert lines[-1].startswith("estimated wall time on 4 workers: about ")
    with pytest.raises(ch.UsageError):
        plan_lines(book, ["0"], "extended", 0)


@pytest.mark.slow(reason="runs the command line (imports torch)")
def test_cost_prints_the_extended_plan_from_the_command_line(book):
    proc = subprocess.run([sys.executable, "-m", "mlmbook", "cost", "--profile", "extended", "--workers", "8",
                           "--root", str(book)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "the extended profile's plan on 8 workers:"
    assert all(f"  {c.slug}: " in proc.stdout for c in ch.find_chapters(ch.Layout.find(book)))
    assert "estimated wall time on 8 workers" in proc.stdout
