"""Graded exercises from a terminal.

``python -m mlmbook.exercises list [N]`` lists the graded exercises (of chapter N);
``python -m mlmbook.exercises check FILE`` grades a notebook or Python file
(:func:`mlmbook.exercises.grading.grade_file`): one line per exercise, exit status 0 when all pass.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import registry
from .grading import grade_file


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mlmbook.exercises", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    lst = sub.add_parser("list", help="list the graded exercises")
    lst.add_argument("chapter", nargs="?", type=int, help="a chapter number (default: all)")
    chk = sub.add_parser("check", help="grade a notebook or a Python file")
    chk.add_argument("file", help="the student's notebook (.ipynb) or Python file (.py)")
    args = parser.parse_args(argv)
    if args.command == "list":
        for name, ex in sorted(registry().items()):
            if args.chapter is None or name.startswith(f"ch{args.chapter}-"):
                print(f"{name:22s} {ex.level:9s} {ex.what}")
        return 0
    path = Path(args.file)
    if not path.is_file():
        print(f"no such file: {path}", file=sys.stderr)
        return 2
    grades = grade_file(path)
    if not grades:
        print(f"{path.name}: no check calls found (a cell like exercises.check(\"ch1-cmi\", my_cmi))")
        return 1
    for grade in grades:
        print(grade.message)
    return 0 if all(g.passed for g in grades) else 1


if __name__ == "__main__":
    sys.exit(main())
