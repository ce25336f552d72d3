"""Words bound to answers: a sentence that cites a question may say only what its answer allows.

An answer's ``side`` (glued ``q_<key>.side``) allows words of direction ("lowers", "more … than")
for *above*/*below*, of equivalence ("as well as", "alike") for *equivalent*, neither otherwise
(:data:`ALLOWS`). :func:`claim_problems` fails a sentence or ``;``-clause citing a question with
words its answers do not allow, a heading or bold claim over an undecided answer, and a descriptive
number (a glued value that is no answer's) called by a verdict word.
"""
from __future__ import annotations

import ast
import re

__all__ = ["ALLOWS", "claim_problems", "answers_from_glue", "prose_lines", "DIRECTION",
           "EQUIVALENCE", "VERDICT_WORDS"]

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*(.*)$")
_CODE_DIRECTIVES = ("{code", "{sourcecode", "{literalinclude")


def prose_lines(text: str):
    """Lines of markdown that are prose: not inside a code fence (directive fences are prose)."""
    stack: list[tuple[str, bool]] = []  # (fence, is_code)
    for line in text.splitlines():
        m = _FENCE.match(line)
        if m:
            fence, info = m.group(1), m.group(2).strip()
            if stack and not info and fence[0] == stack[-1][0][0] and len(fence) >= len(stack[-1][0]):
                stack.pop()
                continue
            if not stack or not stack[-1][1]:
                stack.append((fence, not info.startswith("{") or info.startswith(_CODE_DIRECTIVES)))
                if info.startswith("{glue"):
                    yield line
                continue
        if not any(code for _, code in stack):
            yield line


DIRECTION = re.compile(
    r"\b(?:lower(?:s|ed)?|lift(?:s|ed)?|widen(?:s|ed)?|narrow(?:s|ed)|ahead|lead"
    r"|beat(?:s|en)?|outperform(?:s|ed)?|better|worse|more \w+(?: \w+)? than|less \w+ than|fewer \w+ than"
    r"|(?:more|less|fewer) than|exceed(?:s|ed)?|gain(?:s|ed)|improv(?:e|es|ed)|hurt(?:s)?|drop(?:s|ped)?"
    r"|increas(?:e|es|ed)|decreas(?:e|es|ed)|reduc(?:e|es|ed)|larger|smaller|greater|faster|slower"
    r"|misses|finds? edges|do(?:es)? not follow)\b", re.I)

EQUIVALENCE = re.compile(
    r"\b(?:(?:do|does|did) about as well|about as well as|as well as (?:the|a|an|its|their)|alike|equivalent"
    r"|no (?:better|worse)|on a par|on par|the same as|do(?:es)? not differ|no difference|matches the"
    r"|indistinguishable from|equally)\b", re.I)

VERDICT_WORDS = re.compile(
    r"\b(?:significant(?:ly)?|equivalent|confirm(?:s|ed)?|proves?|nearly (?:the same|equal)"
    r"|cannot decide|inconclusive)\b", re.I)
"""A verdict's words: a descriptive number (no answer behind it) may not carry them."""

ASKS = re.compile(r"\b(?:asks?|ask(?:ed)? whether|tests? whether|whether|would|declared|plan(?:s|ned)?"
                  r"|a claim about|the papers? (?:reports?|claims?|finds?|says?)"
                  r"|the (?:quick|full|extended) profile)\b",
                  re.I)
"""What a question asks, a sample would detect, a profile trains or a paper reports: no claim."""

LEAD_IN = re.compile(r"(?:What|Why|How|Where|When|Which|Who|Whether)\b")
"""A bold lead-in naming a topic ("What the full profile leaves out, and why.") claims nothing."""

_ROLE = re.compile(r"\{glue(?::\w*)?\}`([^`]+)`")
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]*\$", re.S)
_CODE = re.compile(r"``?[^`]*``?")
_Q = re.compile(r"\bQ(\d)(?:\s*[–-]\s*Q?(\d))?\b")
_BOLD = re.compile(r"\*\*(.+?)\*\*", re.S)
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.)\s+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(*\"“])")
ALLOWS = {"above": {"direction"}, "below": {"direction"}, "equivalent": {"equivalence"}}
"""The kinds of words an answer's ``side`` allows (any other side, an undecided answer: none)."""


def answers_from_glue(glued: dict) -> tuple[dict, list[str]]:
    """From a notebook's glued values (key → ``text/plain``): ``{key: {"side", "verdict"}}`` and
    the study's question order."""
    def text(v):
        try:
            return str(ast.literal_eval(v))
        except (ValueError, SyntaxError, TypeError):
            return str(v)

    answers = {}
    for name, value in glued.items():
        if name.startswith("q_") and name.endswith(".side") and value is not None:
            key = name[2:-len(".side")]
            answers[key] = {"side": text(value), "verdict": text(glued.get(f"q_{key}.verdict", "''"))}
    try:
        record = ast.literal_eval(glued.get("study") or "{}")
    except (ValueError, SyntaxError):
        record = {}
    order = list(record.get("questions", [])) if isinstance(record, dict) else []
    return answers, order


def _blocks(lines):
    """(heading or None, [block text, ...]) per section; a block is a paragraph or a list item."""
    sections, heading, blocks, current = [], None, [], []

    def close():
        if current:
            blocks.append(" ".join(s.strip() for s in current))
            current.clear()
    for line in lines:
        h = _HEADING.match(line)
        if h:
            close()
            sections.append((heading, blocks))
            heading, blocks = h.group(2).strip(), []
        elif not line.strip() or line.startswith(("+++", ":::", "```", "~~~")):
            close()
        elif _ITEM.match(line):
            close()
            current.append(_ITEM.sub("", line))
        else:
            current.append(line)
    close()
    sections.append((heading, blocks))
    return sections


def _cited(text: str, answers: dict, order: list[str]) -> list[str]:
    """The question keys a text cites: ``Qn`` (by the study's order) and glued ``q_<key>...``."""
    keys = []
    for m in _Q.finditer(_ROLE.sub(" ", text)):
        first, last = int(m.group(1)), int(m.group(2) or m.group(1))
        keys += [order[i - 1] for i in range(first, last + 1)
                 # unasked on this model: no words
                 if 1 <= i <= len(order) and order[i - 1] in answers]
    by_length = sorted(answers, key=len, reverse=True)
    for role in _ROLE.findall(text):
        name = role.split(":")[0].strip()
        for key in by_length:
            if name == f"q_{key}" or name.startswith((f"q_{key}.", f"q_{key}_")):
                keys.append(key)
                break
    return list(dict.fromkeys(keys))


def _words(text: str) -> str:
    """The words of a text: glued values, math and code out."""
    return _CODE.sub(" ", _MATH.sub(" ", _ROLE.sub(" ", text))).replace("*", "")


def claim_problems(markdown: list[str], answers: dict, order: list[str]) -> list[str]:
    """What the prose of ``markdown`` (a chapter's Markdown cells) claims beyond its ``answers``
    (``{key: {"side", "verdict"}}``), with ``order`` the study's question keys (``Q1`` first)."""
    out = []
    lines = [line for cell in markdown for line in prose_lines(cell)]
    for heading, blocks in _blocks(lines):
        section_keys = [k for b in blocks for k in _cited(b, answers, order)]
        undecided_section = [k for k in section_keys if answers[k]["side"] not in ALLOWS]
        if heading and undecided_section and (DIRECTION.search(_words(heading))
                                              or EQUIVALENCE.search(_words(heading))):
            out.append(f"a heading claims over an undecided answer (q_{undecided_section[0]}: "
                       f"{answers[undecided_section[0]]['verdict']}): {heading[:100]!r}")
        for block in blocks:
            keys = _cited(block, answers, order)
            undecided = [k for k in keys if answers[k]["side"] not in ALLOWS]
            if undecided:
                for bold in _BOLD.findall(block):
                    words = _words(bold)
                    if words.rstrip().endswith(".") and len(re.findall(r"[A-Za-z]{2,}", words)) >= 3 \
                            and not LEAD_IN.match(words.strip()) \
                            and ".verdict" not in bold \
                            and not re.search(r"cannot decide|inconclusive", words):
                        k = undecided[0]
                        out.append(f"a bold claim over an undecided answer (q_{k}: {answers[k]['verdict']}): "
                                   f"{bold[:80]!r}")
            for sentence in _SENTENCE.split(block):
                out += _sentence_problems(sentence, answers, order)
    return out


def _sentence_problems(sentence: str, answers, order) -> list[str]:
    out = []
    keys = _cited(sentence, answers, order)
    if not keys:
        if _ROLE.search(sentence) and not ASKS.search(_words(sentence)):
            m = VERDICT_WORDS.search(_words(sentence))
            if m:
                out.append(f"a descriptive number called by a verdict word ({m.group(0)!r}; only an answer "
                           f"has a verdict): {_show(sentence)!r}")
        return out
    for clause in re.split(r";\s+", sentence):
        ks = _cited(clause, answers, order) or keys
        words = _words(clause)
        if ASKS.search(words):
            continue
        may = set().union(*(ALLOWS.get(answers[k]["side"], set()) for k in ks))
        found = [(kind, m.group(0)) for kind, pattern in (("direction", DIRECTION), ("equivalence", EQUIVALENCE))
                 for m in [pattern.search(words)] if m and kind not in may]
        for kind, word in found:
            out.append(f"{kind} words ({word!r}) beside "
                       + ", ".join(f"q_{k}: {answers[k]['verdict']}" for k in ks)
                       + f" (the answer allows {' or '.join(sorted(may)) or 'no claim'}): {_show(clause)!r}")
    return out


def _show(text: str) -> str:
    return re.sub(r"\s+", " ", _ROLE.sub(lambda m: "{" + m.group(1).split(":")[0] + "}", text)).strip()[:160]
