"""The README's research-API example runs as printed (on the toy model: nothing is downloaded)."""
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.slow
def test_readme_research_example_runs():
    text = README.read_text()
    block = re.search(r"## The book's analyses without the book.*?```python\n(.*?)```", text, re.S)
    assert block, "README lost its research-API example"
    code = block.group(1)
    assert "load_mlm(\"toy\")" in code
    # the quick preset of the same model (the full one would train for minutes on a fresh cache)
    code = code.replace('load_mlm("toy")', 'load_mlm("toy", profile="quick")')
    namespace: dict = {}
    exec(compile(code, str(README), "exec"), namespace)          # every line must run as written
