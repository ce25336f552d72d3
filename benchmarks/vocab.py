"""Chapters 1–5 (quick) on WordPiece BERTs with large vocabularies: wall time, peak memory, the estimate.

A random-weight BERT (hidden 32, 2 layers) is saved with a WordPiece vocabulary of ``V`` pieces: the words
of the shipped treebank (``tests/fixtures/any_model.conllu``) and of the toy language whole, the rest
made-up pieces, so that the model reads the treebank one piece a word while its LM head has ``V`` rows.
Each chapter is built alone (``build N --profile quick --no-render``, ``allow_unknown`` since the weights
are random) in a child process; its wall time and the largest resident memory of the process tree
(``ru_maxrss`` of the waited-for children) are measured beside ``python -m mlmbook cost``'s estimate.

``python -m benchmarks.vocab calibrate [V]`` measures how the time outside the model grows with the vocabulary
(on a 100,000-piece model by default; :func:`mlmbook.pipeline.cost.overhead_seconds` reads it), and
``python -m benchmarks.vocab memory [V]`` measures each chapter's peak memory on the calibration model and on a
``V``-piece one (100,000 by default) and records the line through them (``peak_gib``, read by
:func:`mlmbook.pipeline.cost.peak_gib`), and ``python -m benchmarks.vocab [V ...]`` (default 50,000 and 250,000,
neither the calibration's) checks the estimates: it prints a Markdown table.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREEBANK = ROOT / "tests" / "fixtures" / "any_model.conllu"
CHAPTERS = ("01", "02", "03", "04", "05")
SIZES = (50_000, 250_000)
LIMIT_S = 1800
CALIBRATE_AT = 100_000


def save_model(folder: Path, vocab_size: int) -> str:
    """A random-weight BERT whose WordPiece vocabulary has ``vocab_size`` pieces, saved in ``folder``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast

    from mlmbook.corpus import read_conllu
    from mlmbook.toy import Grammar
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = {w.lower() for s in read_conllu(TREEBANK) for w in s.words}
    words |= {w.lower() for w in Grammar.load("toy").vocab}
    pieces = specials + sorted(words)
    pieces += [f"##q{k}" if k % 2 else f"q{k}" for k in range(vocab_size - len(pieces))]
    tok = Tokenizer(models.WordPiece(vocab={p: i for i, p in enumerate(pieces)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
                                                       special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(vocab_size=len(pieces), hidden_size=32, num_hidden_layers=2,
                                       num_attention_heads=2, intermediate_size=64, max_position_embeddings=128))
    path = folder / f"wordpiece_{vocab_size}"
    model.save_pretrained(path)
    fast.save_pretrained(path)
    return str(path)


def _parameters(chapter: str, model: str) -> list[str]:
    from mlmbook.pipeline.chapters import Layout, find_chapters, parameter_defaults, read_notebook
    takes = next(parameter_defaults(read_notebook(c)) for c in find_chapters(Layout.find(ROOT))
                 if c.slug.startswith(chapter))
    out = ["-p", "model", model]
    if "treebank" in takes:
        out += ["-p", "treebank", str(TREEBANK)]
    if "allow_unknown" in takes:
        out += ["-p", "allow_unknown", "true"]
    return out


def _plan(chapter: str, model: str):
    from mlmbook.pipeline import chapters as ch
    pars = _parameters(chapter, model)
    values = list(zip(pars[1::3], pars[2::3]))
    (found, planned), = ch.plan_parameters(ch.resolve_chapters(ch.find_chapters(ch.Layout.find(ROOT)), [chapter]),
                                          values, "quick")
    return found, planned


def model_seconds(chapter: str, model: str) -> float | None:
    """The modelled model time of the chapter on ``model`` (None where its queries are not counted)."""
    from mlmbook.models.load import load_mlm
    from mlmbook.pipeline import cost
    found, planned = _plan(chapter, model)
    lm = load_mlm(model)
    work = cost.rows_for(found, lm, planned)
    if work is None:
        return None
    return work.tokens / cost.tokens_per_second(lm) if work.rows else 0.0


def estimate(chapter: str, model: str, pieces: int) -> float | None:
    """The seconds ``python -m mlmbook cost`` predicts for the chapter (model time plus the measured work
    outside the model at this vocabulary); None where it predicts none."""
    from mlmbook.pipeline import cost
    found, _ = _plan(chapter, model)
    outside = cost.overhead_seconds(found.slug, "quick", ROOT, pieces=pieces)
    if outside is None:
        return None
    return (model_seconds(chapter, model) or 0.0) + outside


def calibrate(pieces: int = CALIBRATE_AT) -> dict:
    """Measure each chapter's time outside the model on a ``pieces``-piece model and record its growth per
    piece over the calibration model's (``per_piece`` in ``results/timings/overhead.json``)."""
    from mlmbook.paths import write_json_atomic
    from mlmbook.pipeline import cost
    path = ROOT / cost.OVERHEAD_FILE
    data = json.loads(path.read_text())
    slopes = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        model = save_model(folder, pieces)
        for chapter in CHAPTERS:
            row = measure(chapter, model, folder / f"build_{chapter}")
            found, _ = _plan(chapter, model)
            base = data["seconds"]["quick"].get(found.slug)
            if not row["ok"] or base is None:
                continue
            outside = row["wall"] - (model_seconds(chapter, model) or 0.0)
            slopes[found.slug] = max(0.0, (outside - base) / (pieces - cost.CALIBRATION_PIECES))
            print(found.slug, row, f"outside {outside:.1f} s", file=sys.stderr, flush=True)
    data.setdefault("per_piece", {})["quick"] = slopes
    data["per_piece_how"] = (f"`python -m benchmarks.vocab calibrate`: time outside the model on a random "
                             f"{pieces:,}-piece WordPiece BERT (hidden 32, 2 layers) minus that on the "
                             f"{cost.CALIBRATION_PIECES:,}-piece one, per piece; measured "
                             f"{time.strftime('%Y-%m-%d %H:%M')}")
    write_json_atomic(path, data, indent=1, sort_keys=True)
    return slopes


def memory(pieces: int = CALIBRATE_AT) -> dict:
    """Measure each chapter's peak memory on the calibration model and on a ``pieces``-piece one, and record
    ``[GiB at the calibration model, GiB per further piece]`` per chapter (``peak_gib`` in
    ``results/timings/overhead.json``). Memory, unlike time, does not depend on what else the machine runs."""
    from mlmbook.paths import write_json_atomic
    from mlmbook.pipeline import cost
    path = ROOT / cost.OVERHEAD_FILE
    peaks = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for v in (cost.CALIBRATION_PIECES, pieces):
            model = save_model(folder, v)
            for chapter in CHAPTERS:
                row = measure(chapter, model, folder / f"build_{v}_{chapter}")
                found, _ = _plan(chapter, model)
                print(found.slug, v, row, file=sys.stderr, flush=True)
                if row["ok"] and row["peak_gib"] is not None:
                    peaks.setdefault(found.slug, {})[v] = row["peak_gib"]
    data = json.loads(path.read_text())
    data.setdefault("peak_gib", {})["quick"] = {
        slug: [round(p[cost.CALIBRATION_PIECES], 3),
               (p[pieces] - p[cost.CALIBRATION_PIECES]) / (pieces - cost.CALIBRATION_PIECES)]
        for slug, p in peaks.items() if len(p) == 2}
    data["peak_gib_how"] = (f"`python -m benchmarks.vocab memory`: the largest resident memory of `build N --profile "
                            f"quick` on random WordPiece BERTs (hidden 32, 2 layers) of {cost.CALIBRATION_PIECES:,} "
                            f"and {pieces:,} pieces: GiB at the first, GiB per further piece; measured "
                            f"{time.strftime('%Y-%m-%d %H:%M')}")
    write_json_atomic(path, data, indent=1, sort_keys=True)
    return data["peak_gib"]["quick"]


def measure(chapter: str, model: str, build: Path) -> dict:
    """Wall time, peak resident memory (GiB) and outcome of building ``chapter`` alone on ``model``."""
    env = {**os.environ, "MLMBOOK_BUILD": str(build), "HF_HUB_OFFLINE": "1"}
    code = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:]); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(p.returncode)")
    t = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "mlmbook", "build", chapter,
                               "--profile", "quick", "--no-render", *_parameters(chapter, model)],
                              capture_output=True, text=True, cwd=ROOT, env=env, timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        return dict(chapter=chapter, ok=False, wall=time.perf_counter() - t, peak_gib=None, why=f"over {LIMIT_S} s")
    wall = time.perf_counter() - t
    lines = proc.stderr.strip().splitlines()
    peak = int(lines[-1]) / 2 ** 20 if lines and lines[-1].isdigit() else None
    why = "" if proc.returncode == 0 else (lines[-2] if len(lines) > 1 else "failed")
    return dict(chapter=chapter, ok=proc.returncode == 0, wall=wall, peak_gib=peak, why=why)


def run(sizes=SIZES) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for v in sizes:
            model = save_model(folder, v)
            for chapter in CHAPTERS:
                row = measure(chapter, model, folder / f"build_{v}_{chapter}")
                row.update(vocab=v, estimate=estimate(chapter, model, v))
                print(row, file=sys.stderr, flush=True)
                rows.append(row)
    return rows


def table(rows: list[dict]) -> list[str]:
    lines = ["## Chapters on large vocabularies (quick profile, random-weight WordPiece BERTs)", "",
             "Hidden 32, 2 layers; the treebank's words are whole pieces, the rest of the vocabulary made up. "
             "Peak: the largest resident memory of the build's process tree. The estimate's growth with the "
             f"vocabulary was calibrated at {CALIBRATE_AT:,} pieces, a size not in this table. Goal: every chapter "
             "runs within 24 GiB, the `cost` estimate within 2× of the wall time.", "",
             "| pieces | chapter | ran | wall (s) | peak (GiB) | estimate (s) | estimate / wall |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = f"{r['estimate'] / r['wall']:.2f}" if r["estimate"] else "—"
        est = f"{r['estimate']:.0f}" if r["estimate"] else "—"
        peak = f"{r['peak_gib']:.2f}" if r["peak_gib"] is not None else "—"
        ran = "yes" if r["ok"] else f"no: {r['why']}"
        lines.append(f"| {r['vocab']:,} | {r['chapter']} | {ran} | {r['wall']:.0f} | {peak} | {est} | {ratio} |")
    return lines


if __name__ == "__main__":
    if sys.argv[1:2] == ["calibrate"]:
        print(calibrate(int(sys.argv[2]) if len(sys.argv) > 2 else CALIBRATE_AT))
    elif sys.argv[1:2] == ["memory"]:
        print(memory(int(sys.argv[2]) if len(sys.argv) > 2 else CALIBRATE_AT))
    else:
        print("\n".join(table(run(tuple(int(a) for a in sys.argv[1:]) or SIZES))))
