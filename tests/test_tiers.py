"""The test tiers: a test that executes a chapter or builds a book is marked ``slow`` from what it uses.

``tests/conftest.py`` marks it (``pytest_collection_modifyitems``); ``make test-fast`` runs the rest.
"""
import subprocess
import sys

from tests.conftest import SLOW_FIXTURES, _builds


def _run_cli(*args):
    return subprocess.run([sys.executable, "-m", "mlmbook", *args])


def _builds_through_a_helper():
    return _run_cli("build", "--profile", "quick")


def test_builds_detects_every_way_a_test_builds():
    def direct():
        from mlmbook.pipeline.execute import build
        build(profile="quick")

    def through_the_module():
        from mlmbook.pipeline import execute
        execute.build(chapters=["1"])

    def through_the_cli():
        _run_cli("build", "1")

    def via_a_helper():
        _builds_through_a_helper()

    def a_unit_test():
        from mlmbook.pipeline.chapters import parse_value
        assert parse_value("3", 1) == 3

    assert _builds(direct) and _builds(through_the_module) and _builds(through_the_cli) and _builds(via_a_helper)
    assert not _builds(a_unit_test)


def test_the_chapter_fixtures_are_slow():
    assert {"quick_book", "run_chapter"} <= SLOW_FIXTURES


def test_collected_chapter_tests_are_slow(request):
    """Every collected test that needs a book-building fixture carries the mark."""
    unmarked = [item.nodeid for item in request.session.items
                if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())) and item.get_closest_marker("slow") is None]
    assert not unmarked, unmarked


def _collected(marker: str, path: str) -> set[str]:
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", marker, path,
                          "-p", "no:cacheprovider"], capture_output=True, text=True, timeout=300)
    return {line.split("::")[1].split("[")[0] for line in out.stdout.splitlines() if "::" in line}


def test_the_fast_tier_deselects_the_book_builders():
    path = "tests/pipeline/test_build.py"
    slow, fast = _collected("slow", path), _collected("not slow", path)
    assert "test_build_executes_records_and_renders" in slow           # uses a fixture that builds a book
    assert "test_failed_rerun_keeps_the_previous_good_run_and_says_so" in slow    # builds in its own body
    assert fast and not slow & fast
