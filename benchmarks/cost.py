"""The cost estimate of a real-model build against the time the build really takes.

1. **Calibrate**: every chapter is executed (no rendering) on a small saved WordPiece BERT with a
   2,000-piece vocabulary and the shipped treebank; the modelled model time
   (:func:`mlmbook.pipeline.cost.rows_for` / tokens per second) is subtracted from each chapter's
   wall time, and the rest — the chapter's work outside the model — is written per chapter and
   profile to ``results/timings/overhead.json``, which :mod:`mlmbook.pipeline.cost` reads.
2. **Check**: the whole-chapter estimate (model time plus that overhead) for a *different* small
   model (another width, depth and vocabulary) against its measured wall time: the ratio per chapter.

``python -m benchmarks.cost [quick|full]``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mlmbook.paths import write_json_atomic

ROOT = Path(__file__).resolve().parent.parent
TREEBANK = ROOT / "tests" / "fixtures" / "any_model.conllu"
CHAPTERS = ("00_toy_world", "01_dependencies", "02_joints", "03_consistency", "04_deficiency", "05_glauber",
            "06_diffusion")


def _models(folder: Path) -> dict[str, str]:
    """Two small saved BERTs: the calibration model (2,000 pieces) and another shape for the check."""
    sys.path.insert(0, str(ROOT))
    from mlmbook.toy import Grammar
    from tests.chapters.conftest import pseudo_words
    from tests.conftest import save_tiny_wordpiece_bert
    corpus = [s.text for s in Grammar.load("toy").sample(500, seed=0)]
    words = pseudo_words()
    corpus += [" ".join(words[i:i + 12]) for i in range(0, len(words), 12)]
    calib = save_tiny_wordpiece_bert(folder / "calib", corpus, vocab_size=2000)
    check = save_tiny_wordpiece_bert(folder / "check", corpus, vocab_size=800, seed=1)
    from transformers import BertForMaskedLM
    bigger = BertForMaskedLM.from_pretrained(check)          # another shape: wider and deeper
    cfg = bigger.config
    cfg.update(dict(hidden_size=64, num_hidden_layers=3, num_attention_heads=4, intermediate_size=256))
    BertForMaskedLM(cfg).save_pretrained(check)
    return {"calibration": str(calib), "check": str(check)}


def _wall_times(model: str, profile: str, build: Path) -> dict[str, float]:
    """Each chapter's wall time on ``model`` (one ``build`` command per chapter, no rendering)."""
    out = {}
    env = {**os.environ, "MLMBOOK_BUILD": str(build), "HF_HUB_OFFLINE": "1"}
    from mlmbook.pipeline.chapters import Layout, find_chapters, parameter_defaults, read_notebook
    takes = {c.slug: parameter_defaults(read_notebook(c)) for c in find_chapters(Layout.find(ROOT))}
    for slug in CHAPTERS:
        treebank = ["-p", "treebank", str(TREEBANK)] if "treebank" in takes.get(slug, {}) else []
        if "allow_unknown" in takes.get(slug, {}):          # random weights: the fit check refuses them
            treebank += ["-p", "allow_unknown", "true"]
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "mlmbook", "build", slug[:2], "--profile", profile,
                               "--no-render", "-p", "model", model, *treebank],
                              capture_output=True, text=True, cwd=ROOT, env=env)
        if proc.returncode != 0:
            raise RuntimeError(f"{slug} failed on {model}: {proc.stderr.strip().splitlines()[-1:]}")
        out[slug] = time.perf_counter() - t
    return out


def _model_seconds(model: str, profile: str) -> dict[str, float | None]:
    """Modelled model time per chapter (None where the chapter's model time is not modelled)."""
    from mlmbook.models.load import load_mlm
    from mlmbook.pipeline import cost
    from mlmbook.pipeline.chapters import Layout, find_chapters, plan_parameters
    chapters = find_chapters(Layout.find(ROOT))
    lm = load_mlm(model)
    rate = cost.tokens_per_second(lm)
    out = {}
    for chapter, values in plan_parameters(chapters, [("model", model), ("treebank", str(TREEBANK))], profile):
        work = cost.rows_for(chapter, lm, values)
        out[chapter.slug] = None if work is None else work.tokens / rate
    return out


def run(profile: str = "quick") -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        models = _models(folder)
        wall = _wall_times(models["calibration"], profile, folder / "b1")
        modelled = _model_seconds(models["calibration"], profile)
        overhead = {s: max(0.0, wall[s] - (modelled[s] or 0.0)) for s in CHAPTERS}
        path = ROOT / "results" / "timings" / "overhead.json"
        data = json.loads(path.read_text()) if path.exists() else {"seconds": {}}
        data["seconds"][profile] = {s: round(v, 1) for s, v in overhead.items()}
        data["measured"] = time.strftime("%Y-%m-%d %H:%M")
        data["how"] = ("wall time of `build N --no-render` on a random 2,000-piece WordPiece BERT (hidden 32, "
                       "2 layers) with tests/fixtures/any_model.conllu, minus the modelled model time")
        write_json_atomic(path, data, indent=1, sort_keys=True)
        check_wall = _wall_times(models["check"], profile, folder / "b2")
        check_model = _model_seconds(models["check"], profile)
    rows = []
    for s in CHAPTERS:
        estimate = overhead[s] + (check_model[s] or 0.0)
        rows.append(dict(chapter=s, calibration_wall=wall[s], overhead=overhead[s], estimate=estimate,
                         actual=check_wall[s], ratio=estimate / check_wall[s]))
    return dict(profile=profile, rows=rows)


def table(result: dict) -> list[str]:
    lines = [f"## The cost estimate against the real time ({result['profile']} profile)", "",
             "Estimate = modelled model time + the chapter's measured time outside the model (calibrated on a "
             "2,000-piece BERT), checked on a BERT of another shape (hidden 64, 3 layers, 800 pieces). Goal: "
             "within 2× either way.", "",
             "| chapter | outside the model (s) | estimate (s) | actual (s) | estimate / actual | within 2× |",
             "|---|---|---|---|---|---|"]
    for r in result["rows"]:
        ok = 0.5 <= r["ratio"] <= 2.0
        lines.append(f"| {r['chapter']} | {r['overhead']:.1f} | {r['estimate']:.1f} | {r['actual']:.1f} | "
                     f"{r['ratio']:.2f} | {'yes' if ok else 'NO'} |")
    return lines


if __name__ == "__main__":
    print("\n".join(table(run(sys.argv[1] if len(sys.argv) > 1 else "quick"))))
