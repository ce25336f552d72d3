"""Grading a student's notebook from a terminal: ``python -m mlmbook.exercises check FILE``."""
import json

from mlmbook.exercises.__main__ import main
from mlmbook.exercises.grading import grade_file

SCAFFOLD = '''def my_kl(p, q):
    """KL(p || q)."""
    raise NotImplementedError
'''
RIGHT = '''import numpy as np

def my_kl(p, q):
    keep = p > 0
    return float(np.sum(p[keep] * np.log(p[keep] / q[keep])))
'''
WRONG = '''import numpy as np

def my_bayes_loss(grammar, words):
    return 0.0
'''


def _notebook(path, *cells):
    nb = {"cells": [{"cell_type": "code", "source": c, "metadata": {}, "outputs": [], "execution_count": None}
                    for c in cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb))
    return path


def test_a_notebook_is_graded_by_its_own_check_cells_the_last_definition_winning(tmp_path):
    nb = _notebook(tmp_path / "answers.ipynb", SCAFFOLD, 'exercises.check("ch0-kl", my_kl)', RIGHT,
                   "%matplotlib inline\nheavy = train_a_model()",        # not run: only imports and functions
                   WRONG, 'exercises.check("ch0-bayes-loss", my_bayes_loss)')
    grades = {g.name: g for g in grade_file(nb)}
    assert grades["ch0-kl"].passed
    assert grades["ch0-bayes-loss"].attempted and not grades["ch0-bayes-loss"].passed


def test_the_command_line_says_one_line_per_exercise_and_fails_unless_all_pass(tmp_path, capsys):
    unfinished = _notebook(tmp_path / "student.ipynb", SCAFFOLD, 'exercises.check("ch0-kl", my_kl)')
    assert main(["check", str(unfinished)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("○ ch0-kl: waiting for your function") and "Passing reads: ✓ ch0-kl" in out
    done = tmp_path / "done.py"
    done.write_text(RIGHT + '\nexercises.check("ch0-kl", my_kl)\n')
    assert main(["check", str(done)]) == 0
    assert capsys.readouterr().out.startswith("✓ ch0-kl")
    assert main(["list", "0"]) == 0 and "ch0-bayes-loss" in capsys.readouterr().out
