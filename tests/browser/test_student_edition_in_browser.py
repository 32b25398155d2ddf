"""The learner's copy in a real browser: what `make lab` opens, Run > Run All Cells, every cell runs.

A learner who opens their copy (`my-course/`, the student edition made by scripts/learner_copy.py) and
chooses Run All must reach the end of the notebook: each unsolved exercise's self-check reports "not
solved yet" in its output instead of raising, and no later cell needs a stub's result. Two notebooks
are checked: 00, where `make lab` starts (its preview of chunk-eval's verdict included), and 04, the
fastest with several exercises, to keep the browser tests near a minute and a half;
`tests/test_student_edition.py` and `tests/test_learner_copy.py` check every notebook without a browser.

Run with `.venv/bin/python -m pytest tests/browser` (not part of `pytest tests`).
"""

from pathlib import Path

import nbformat
import pytest

from scripts import browser_check, build_student_edition, learner_copy

ROOT = Path(__file__).resolve().parents[2]

NOTEBOOKS = [ROOT / "notebooks" / "00_start_here.ipynb",  # where `make lab` starts
             ROOT / "notebooks" / "04_recursive_splitting.ipynb"]  # 4.1 in seven parts


@pytest.fixture(scope="module")
def my_course(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("learner") / "my-course"
    report = learner_copy.update(out)  # as `make lab` does (00's map wants every notebook)
    assert report.created and {p.name for p in NOTEBOOKS} <= set(report.added)
    return out / "notebooks"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_run_all_reaches_the_end_and_reports_each_unsolved_exercise(my_course, notebook):
    exercises = build_student_edition.find_exercises(nbformat.read(notebook, as_version=4))
    assert exercises, f"{notebook.name} has no exercise to check"
    report = browser_check.run_all_in_browser(my_course / notebook.name)
    print(f"\n{report.notebook}: {report.code_cells} code cells; timings (s): {report.timings}")
    stopped = [f"cell {i}: {report.outputs.get(i, '')[:300]}" for i in report.errors]
    assert not report.not_run, (f"Run All stopped: code cells {report.not_run} never ran; "
                                f"errors shown: {stopped}")
    assert not report.errors, f"cells show an error or stderr: {stopped}"
    for exercise in exercises:
        shown = report.outputs[exercise.check]
        assert f"{exercise.name}: not solved yet" in shown, (
            f"{exercise.name}'s self-check (cell {exercise.check}) shows {shown[:300]!r}, not 'not solved yet'")
    if notebook.name.startswith("00_"):
        assert any("verdict: " in text for text in report.outputs.values()), "00 shows chunk-eval's verdict"
    assert not report.blocked_requests, f"the page tried to reach outside localhost: {report.blocked_requests}"
    assert report.screenshot is not None and report.screenshot.read_bytes().startswith(b"\x89PNG")
