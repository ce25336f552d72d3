"""Every chapter executes *and renders* on a masked LM that is not the toy model.

The whole book is built in the quick profile with a tiny random-weight WordPiece BERT saved
locally, and with a CoNLL-U file this test writes itself (toy-grammar sentences plus the
fixture's multiword tokens, empty nodes and comments). The rendered pages may not show a
``nan`` or an ``n/a`` where a number belongs (the chapters say in a sentence what a model cannot give).
"""
import re
from pathlib import Path

import pytest

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "tiny.conllu"
NUMBER_SLOT = re.compile(r"(?<![\w/])(nan|n/a|NaN|inf)(?![\w/])")


def _write_conllu(path: Path, n: int = 160) -> Path:
    """Toy sentences as CoNLL-U (1-based heads), after the fixture's hard cases."""
    from mlmbook.toy import Grammar
    blocks = [FIXTURE.read_text().strip()]
    for k, s in enumerate(Grammar.load("toy").sample(n, seed=99)):
        lines = [f"# sent_id = toy-{k}", f"# text = {s.text}"]
        for i, w in enumerate(s.words):
            feats = "|".join(f"{a}={b}" for a, b in sorted(s.feats[i].items())) or "_"
            lines.append(f"{i + 1}\t{w}\t{w}\t{s.upos[i]}\t_\t{feats}\t{s.heads[i] + 1}\t{s.deprels[i] or 'dep'}\t_\t_")
        blocks.append("\n".join(lines))
    path.write_text("\n\n".join(blocks) + "\n\n")
    return path


@pytest.fixture(scope="module")
def other_model_book(tmp_path_factory, wordpiece_bert):
    from tests.conftest import BookRun, _with_build_dir

    from mlmbook.pipeline.execute import build
    out = tmp_path_factory.mktemp("any_model")
    treebank = _write_conllu(out / "toy_as_conllu.conllu")
    index = _with_build_dir(out / "_build", lambda: build(
        profile="quick", parameters=[("model", wordpiece_bert), ("treebank", str(treebank))]))
    return BookRun(out / "_build", index)


def _page_text(html_path: Path) -> str:
    html = html_path.read_text()
    html = re.sub(r"(?s)<(script|style|pre)\b.*?</\1>", " ", html)          # code is not prose
    html = re.sub(r"(?s)<div class=\"highlight.*?</div>", " ", html)
    return re.sub(r"<[^>]+>", " ", html)


@pytest.mark.slow
def test_every_chapter_renders_on_a_wordpiece_model(other_model_book):
    html = other_model_book.build_dir / "html" / "book"
    pages = sorted(html.glob("0[0-5]_*.html"))
    assert [p.stem[:2] for p in pages] == ["00", "01", "02", "03", "04", "05"], pages
    problems = {}
    for page in pages:
        text = _page_text(page)
        bad = sorted(set(NUMBER_SLOT.findall(text)))
        if bad:
            problems[page.stem] = bad
    assert not problems, f"placeholders on pages built with a non-toy model: {problems}"
