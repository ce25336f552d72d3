"""What a reader meets first on a page, generated at staging time from what the build measured:
each chapter's card (reading and running times) and learning objectives on its first screen
(:func:`prepare_chapter`), the teachers' table of exercises (:func:`exercise_table`), the table of
build times (:func:`timings_table`) and author–year labels in the bibliography.
"""
from __future__ import annotations

import contextlib
import json
import math
import re
from collections import Counter
from pathlib import Path

__all__ = ["measured_times", "format_seconds", "reading_minutes", "chapter_card", "prepare_chapter",
           "find_exercises", "exercise_table", "exercises_anchor", "GRADE_COMMAND",
           "timings_table", "register_bibliography_style", "EXERCISES_MARKER", "TIMINGS_MARKER"]

WORDS_PER_MINUTE = 150          # technical prose with formulas
CODE_LINES_PER_MINUTE = 30      # visible code, read for its idea
EXERCISES_MARKER = "<!-- exercise-table -->"
TIMINGS_MARKER = "<!-- timings-table -->"
OBJECTIVES = re.compile(r"^(?P<fence>`{3,}|:{3,})\{admonition\}[ \t]*Learning objectives[^\n]*\n"
                        r".*?^(?P=fence)[ \t]*$\n?", re.M | re.S)


def _runs(root: Path) -> dict:
    """The reference build's recorded timings by run (``results/timings/<run>.json``)."""
    runs = {}
    for path in sorted((Path(root) / "results" / "timings").glob("*.json")):
        with contextlib.suppress(OSError, ValueError):          # an unreadable file: no run
            runs[path.stem] = json.loads(path.read_text(encoding="utf-8"))
    return runs


def measured_times(root: Path) -> dict[str, dict[str, float]]:
    """Each chapter's measured wall time, by profile: ``{slug: {"quick": s, "full": s}}``, from the
    reference build's timings with models cached (``results/timings/<profile>-cached.json``)."""
    out: dict[str, dict[str, float]] = {}
    runs = _runs(root)
    for profile in ("quick", "full"):
        for slug, seconds in runs.get(f"{profile}-cached", {}).get("chapters", {}).items():
            if slug[:2].isdigit() and isinstance(seconds, (int, float)):
                out.setdefault(slug, {})[profile] = float(seconds)
    return out


def timings_table(root: Path) -> str:
    """A Markdown table of the reference build's wall times: one row per chapter, by profile and
    model cache (``results/timings/*.json``), with the training and whole-book totals."""
    runs = _runs(root)
    if not runs:
        return "No reference build has recorded its times yet (`make reference` writes them)."
    order = [k for k in ("quick-cached", "quick-uncached", "full-cached", "full-uncached") if k in runs]
    order += [k for k in runs if k not in order]
    rows = ["| | " + " | ".join(k.replace("-", ", models ") for k in order) + " |",
            "|---" * (len(order) + 1) + "|"]
    names = sorted({n for k in order for n in runs[k].get("chapters", {})}, key=lambda n: (n != "training", n))
    for name in names + ["render", "total"]:
        key = {"render": "render_seconds", "total": "total_seconds"}.get(name)
        values = [runs[k].get(key) if key else runs[k].get("chapters", {}).get(name) for k in order]
        cells = [format_seconds(v) if isinstance(v, (int, float)) else "—" for v in values]
        label = {"training": "training the models", "render": "rendering the site",
                 "total": "**whole book**"}.get(name, name)
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    when = ", ".join(f"{k} {runs[k].get('when', '?')}" for k in order)
    return "\n".join(rows) + f"\n\nMeasured on {runs[order[0]].get('cpus', '?')} CPU cores ({when})."


def format_seconds(seconds: float) -> str:
    """``14.9 -> "15 s"``, ``126.7 -> "2 min 7 s"``, ``1260 -> "21 min"``."""
    s = int(round(seconds))
    if s < 60:
        return f"{max(s, 1)} s"
    if s < 600:
        return f"{s // 60} min {s % 60} s" if s % 60 else f"{s // 60} min"
    return f"{round(s / 60)} min"


def _plain_words(text: str) -> int:
    text = re.sub(r"\$\$.*?\$\$|\$[^$\n]*\$", " formula ", text, flags=re.S)
    text = re.sub(r"\{[\w:-]+\}`([^`<]*)(?:<[^`]*>)?`", r"\1", text)           # roles: their text
    text = re.sub(r"^\s*(`{3,}|:{3,}).*$|^:\w[\w-]*:.*$", " ", text, flags=re.M)  # fences, options
    return len(re.findall(r"[A-Za-z][\w'’-]*", text))


def reading_minutes(nb) -> int:
    """Minutes to read a chapter: its prose and captions at :data:`WORDS_PER_MINUTE`, its visible
    code at :data:`CODE_LINES_PER_MINUTE`, rounded up to 5 minutes."""
    words, code = 0, 0
    for cell in nb.cells:
        tags = set(cell.get("metadata", {}).get("tags", []))
        if cell.cell_type == "markdown":
            words += _plain_words(cell.source)
        elif cell.cell_type == "code" and not tags & {"remove-cell", "remove-input", "injected-parameters"}:
            code += sum(1 for line in cell.source.splitlines() if line.strip())
            caption = cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("caption", "")
            words += _plain_words(str(caption))
    minutes = words / WORDS_PER_MINUTE + code / CODE_LINES_PER_MINUTE
    return max(5, 5 * math.ceil(minutes / 5))


SAME_TIME = 0.2
"""Run times of the two profiles within this fraction of each other are one time (the same work)."""


def chapter_card(nb, times: dict[str, float] | None) -> str:
    """The label under a chapter's title (Markdown): reading time · measured run times (one time
    when the two are within :data:`SAME_TIME` of each other)."""
    read = f"**About {reading_minutes(nb)} minutes to read**"
    where = "on 2 CPU cores, models cached (reference build)"
    times = times or {}
    if "quick" in times and "full" in times and abs(times["full"] - times["quick"]) <= SAME_TIME * max(
            times["quick"], times["full"]):
        return f"{read} · runs in about {format_seconds(max(times.values()))} at either profile {where}"
    shown = [f"{format_seconds(times[p])} ({p} profile)" for p in ("quick", "full") if p in times]
    if not shown:
        return f"{read} · run time not measured yet (no reference build)"
    return f"{read} · runs in {', '.join(shown)} {where}"


def prepare_chapter(nb, times: dict[str, float] | None, site: bool = True) -> bool:
    """Put the chapter card and the ``{admonition} Learning objectives`` block under the chapter's
    title, in place (``site=False``: the card in plain Markdown); False when there is no title."""
    cells = nb.cells
    first = next((k for k, c in enumerate(cells) if c.cell_type == "markdown"
                  and re.search(r"^# ", c.source, re.M)), None)
    if first is None:
        return False
    objectives = ""
    for cell in cells[first:]:
        if cell.cell_type == "code" and not set(cell.metadata.get("tags", [])) & {
                "parameters", "injected-parameters", "remove-cell"}:
            break
        if cell.cell_type == "markdown":
            m = OBJECTIVES.search(cell.source)
            if m:
                objectives = m.group(0).rstrip("\n")
                cell.source = (cell.source[:m.start()] + cell.source[m.end():]).strip("\n")
                break
    title_cell = cells[first]
    lines = title_cell.source.split("\n")
    # lines above: a target, a comment
    at = next(k for k, line in enumerate(lines) if line.startswith("# "))
    head, rest = "\n".join(lines[:at + 1]), "\n".join(lines[at + 1:])
    card = chapter_card(nb, times)
    card = f"```{{div}} mlmbook-card\n{card}\n```" if site else f"> {card}"
    title_cell.source = "\n\n".join(part for part in (head, card, objectives, rest.strip("\n")) if part)
    nb.cells = [c for c in cells if c.cell_type != "markdown" or c.source.strip()]
    return True


_EXERCISE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{exercise\}(?P<title>[^\n]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$",
                       re.M | re.S)
_LEVEL = re.compile(r"\b(warm-up|core|stretch|capstone)\b", re.I)


def find_exercises(text: str) -> list[dict]:
    """The exercises of one chapter source, in order: ``label``, ``level`` (the registry's, else a
    level word in the title or first line; or None) and ``kind``."""
    from ..exercises import registry

    graded = registry()
    found = list(_EXERCISE.finditer(text))
    out = []
    for k, m in enumerate(found):
        label = re.search(r"^:label:\s*(\S+)", m["body"], re.M)
        if not label:
            continue
        label = label.group(1)
        body = re.sub(r"^:\w[\w-]*:.*$", "", m["body"], flags=re.M).strip()
        first_line = body.splitlines()[0] if body else ""
        level = graded[label].level if label in graded else None
        if level is None:
            hit = _LEVEL.search(m["title"]) or _LEVEL.search(first_line)
            level = hit.group(1).lower() if hit else None
        upto = found[k + 1].start() if k + 1 < len(found) else len(text)
        after = text[m.end():upto]
        coding = "{code-cell}" in after or "(coding" in body.lower()
        kind = "graded" if label in graded else "coding" if coding else "pen and paper"
        out.append({"label": label, "level": level, "kind": kind})
    return out


GRADE_COMMAND = "python -m mlmbook.exercises check"


def exercises_anchor(slug: str) -> str:
    """The label of a chapter's section on the teachers' page: ``exercises-ch1``."""
    return f"exercises-ch{int(slug[:2])}"


def exercise_table(chapters: list[tuple[str, str, str]], repository: dict | None = None) -> str:
    """The teachers' page's exercises: one section per chapter ``(slug, title, source text)``
    (labelled :func:`exercises_anchor`) with a table of its exercises, the command that grades a
    notebook and, where ``repository`` (``_config.yml``'s) is on GitHub, the student edition."""
    url = str((repository or {}).get("url") or "").rstrip("/")
    branch = (repository or {}).get("branch") or "notebooks"
    github = re.match(r"^https://github\.com/([^/]+/[^/]+)$", url)            # owner/repository
    out = []
    for slug, title, text in chapters:
        rows = ["| exercise | level | kind |", "|---|---|---|"]
        for ex in find_exercises(text):
            kind = {"graded": "code, graded by the truth", "coding": "code",
                    "pen and paper": "pen and paper"}[ex["kind"]]
            rows.append(f"| {{numref}}`{ex['label']}` | {ex['level'] or '—'} | {kind} |")
        block = [f"({exercises_anchor(slug)})=", f"### {int(slug[:2])} {title}", "", *rows, "",
                 f"Grade a notebook: `{GRADE_COMMAND} {slug}.ipynb`"]
        if github:
            path = f"{github[1]}/blob/{branch}/student/{slug}.ipynb"
            binder = f"https://mybinder.org/v2/gh/{github[1]}/{branch}?labpath=student/{slug}.ipynb"
            links = [f"[notebook](https://github.com/{path})",
                     f"[Colab](https://colab.research.google.com/github/{path})",
                     f"[Binder]({binder})"]
            block[-1] += f" · student edition (no solutions): {' · '.join(links)}"
        out.append("\n".join(block))
    return "\n\n".join(out)


def _surname(person) -> str:
    """"de Marneffe", "Torroba Hennigen": the prelast and last names, LaTeX markup removed."""
    name = " ".join(person.prelast_names + person.last_names)
    with contextlib.suppress(Exception):  # a name pybtex cannot parse is shown as written
        from pybtex.richtext import Text

        name = str(Text.from_latex(name))
    return re.sub(r"[{}]", "", name).strip() or str(person)


def _author_year(entry) -> str:
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [_surname(p) for p in persons]
    others = any(n.lower() == "others" for n in names)
    names = [n for n in names if n.lower() != "others"]
    year = entry.fields.get("year", "n.d.")
    if not names:
        return f"{entry.fields.get('title', entry.key)}, {year}"
    if len(names) >= 3 or others:
        return f"{names[0]} et al., {year}"
    return f"{' and '.join(names)}, {year}"          # one name, or two


def register_bibliography_style() -> None:
    """Register the pybtex style ``mlmbook`` (``bibtex_default_style``): entries sorted by author
    and year, labelled "Devlin et al., 2019" like the citations."""
    from pybtex.plugin import register_plugin
    from pybtex.style.formatting.unsrt import Style as Unsrt
    from pybtex.style.labels import BaseLabelStyle
    from pybtex.style.template import FieldIsMissing, join, node, sentence

    class AuthorYearLabels(BaseLabelStyle):
        def format_labels(self, sorted_entries):
            labels = [_author_year(e) for e in sorted_entries]
            seen, suffix = Counter(labels), Counter()
            for label in labels:
                suffix[label] += 1                  # "Wang and Cho, 2019a", "..., 2019b"
                letter = "abcdefghijklmnopqrstuvwxyz"[suffix[label] - 1] if seen[label] > 1 else ""
                yield label + letter

    @node
    def names_et_al(children, context, role, **kwargs):
        """The authors' names, with BibTeX's ``and others`` written "et al." (not "and others")."""
        persons = context["entry"].persons.get(role)
        if persons is None:
            raise FieldIsMissing(role, context["entry"])
        style = context["style"]
        named = [p for p in persons if _surname(p).lower() != "others"]
        shown = [style.format_name(p, style.abbreviate_names) for p in named]
        if len(named) < len(persons):
            return join(sep=" ")[join(sep=", ")[shown], "et al."].format_data(context)
        return join(**kwargs)[shown].format_data(context)

    class AuthorYearStyle(Unsrt):
        default_label_style = AuthorYearLabels
        default_sorting_style = "author_year_title"

        def format_names(self, role, as_sentence=True):
            formatted = names_et_al(role, sep=", ", sep2=" and ", last_sep=", and ")
            return sentence[formatted] if as_sentence else formatted

    register_plugin("pybtex.style.formatting", "mlmbook", AuthorYearStyle, force=True)
