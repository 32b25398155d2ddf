"""The student edition in a real browser: a fresh copy, Run > Run All Cells, every cell runs.

A learner who opens the student edition and chooses Run All must reach the end of the notebook:
each unsolved exercise's self-check reports "not solved yet" in its output instead of raising, and
no later cell needs a stub's result. One notebook is checked (the fastest with exercises, to keep the
browser tests near a minute); `tests/test_student_edition.py` checks the stubs of every notebook
without a browser.

Run with `.venv/bin/python -m pytest tests/browser` (not part of `pytest tests`).
"""

from pathlib import Path

import nbformat
import pytest

from scripts import browser_check, build_student_edition

ROOT = Path(__file__).resolve().parents[2]

NOTEBOOK = ROOT / "notebooks" / "04_recursive_splitting.ipynb"  # three exercises, runs in about 5 s


@pytest.fixture(scope="module")
def student_copy(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("student")
    (written,) = build_student_edition.build(out, [NOTEBOOK])
    return written


def test_run_all_reaches_the_end_and_reports_each_unsolved_exercise(student_copy):
    exercises = build_student_edition.find_exercises(nbformat.read(NOTEBOOK, as_version=4))
    assert exercises, f"{NOTEBOOK.name} has no exercise to check"
    report = browser_check.run_all_in_browser(student_copy)
    print(f"\n{report.notebook}: {report.code_cells} code cells; timings (s): {report.timings}")
    stopped = [f"cell {i}: {report.outputs.get(i, '')[:300]}" for i in report.errors]
    assert not report.not_run, (f"Run All stopped: code cells {report.not_run} never ran; "
                                f"errors shown: {stopped}")
    assert not report.errors, f"cells show an error or stderr: {stopped}"
    for exercise in exercises:
        shown = report.outputs[exercise.check]
        assert f"{exercise.name}: not solved yet" in shown, (
            f"{exercise.name}'s self-check (cell {exercise.check}) shows {shown[:300]!r}, not 'not solved yet'")
    assert not report.blocked_requests, f"the page tried to reach outside localhost: {report.blocked_requests}"
    assert report.screenshot is not None and report.screenshot.read_bytes().startswith(b"\x89PNG")
