"""Draw the landing page's hero figure, ``book/images/hero.png`` (run once; the image is committed).

Everything on it is exact, from the toy grammar alone (no model): one sampled sentence with its
gold dependency tree, one position masked, and the true conditional distribution of the masked
word given the rest, p(x_i | x_{\\setminus i}), over its most likely words.

    .venv/bin/python docs/make_hero_figure.py
"""
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from mlmbook import plotting  # noqa: E402
from mlmbook.toy.grammar import Grammar  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "book" / "images" / "hero.png"


def main(seed: int = 3) -> Path:
    plotting.use_style()
    grammar = Grammar.load("toy")
    sentence = next(s for s in grammar.sample(50, seed=seed) if 6 <= len(s.words) <= 8)
    words = list(sentence.words)
    i = next(k for k, h in enumerate(sentence.heads) if h >= 0 and abs(h - k) > 1)  # a word with a long arc
    truth = grammar.conditionals(words)[i]
    shown = [w if k != i else "[MASK]" for k, w in enumerate(words)]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(plotting.PAGE_WIDTH_IN, 4.6),
                                      gridspec_kw={"height_ratios": [1.1, 1]})
    plotting.arcs(shown, gold=sentence.heads, ax=top,
                  title="a toy sentence, its dependency tree, one word masked")
    order = np.argsort(-truth)[:8]
    bottom.bar(range(len(order)), truth[order], color=plotting.PALETTE["truth"])
    bottom.set_xticks(range(len(order)), [grammar.vocab[k] for k in order], rotation=30, ha="right")
    bottom.set_ylabel("probability")
    bottom.set_title(f"the exact conditional of the masked word given the rest, "
                     f"p(x$_{{{i + 1}}}$ | x$_{{\\setminus {i + 1}}}$)")
    fig.tight_layout()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(plotting.figure_png(fig)[0])      # the book's PNG: 2x resolution, font size recorded
    return OUT


if __name__ == "__main__":
    print(main())
