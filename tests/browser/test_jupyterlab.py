"""The learner's main path in a real browser: JupyterLab on localhost, headless Chromium, Shift+Enter.

Checked here: notebook 00 as committed (the instructor's executed copy), each cell's page output against
its stored output. `make lab` opens the learner's copy of it (solutions removed), whose Run All is checked
in test_student_edition_in_browser.py. The chunk playground has its own browser test
(test_playground_widget.py, on a one-cell notebook); `python scripts/browser_check.py` with no argument also
runs the first notebook with a widget, which ends with the playground.

Run with `.venv/bin/python -m pytest tests/browser` (not part of `pytest tests`). Without Chromium or
the Playwright driver the test fails and says how to install them; it never skips.
"""

import sys
from pathlib import Path

import pytest

from scripts import browser_check

ROOT = Path(__file__).resolve().parents[2]


def test_the_script_checks_the_first_notebook_and_the_playground_notebook():
    first, with_widget = browser_check.default_notebooks()
    assert first == browser_check.FIRST_NOTEBOOK
    assert "course_lib.playground" in with_widget.read_text(encoding="utf-8")


@pytest.mark.parametrize("notebook", [browser_check.FIRST_NOTEBOOK], ids=lambda p: p.stem)
def test_a_notebook_runs_and_renders_in_jupyterlab(notebook):
    report = browser_check.run_notebook_in_browser(notebook)
    print(f"\n{report}")
    assert report.outputs_checked > 0 and report.texts_compared > 0
    stored = notebook.read_text(encoding="utf-8")
    assert bool(report.widget_changed) == (browser_check.WIDGET_VIEW in stored), "a widget was found and changed"
    assert report.screenshot is not None and report.screenshot.stat().st_size > 10_000
    assert report.screenshot.read_bytes().startswith(b"\x89PNG")
    assert not report.blocked_requests, f"the page tried to reach outside localhost: {report.blocked_requests}"


def test_missing_chromium_or_playwright_fails_with_the_install_commands(monkeypatch):
    monkeypatch.setattr(browser_check, "CHROMIUM_PATHS", ("/nonexistent/chromium",))
    try:
        browser_check.find_chromium()
    except browser_check.BrowserCheckError as error:
        assert "apt-get install -y chromium" in str(error) and "requirements-browser.txt" in str(error)
    else:
        raise AssertionError("find_chromium() must fail when Chromium is missing")
    monkeypatch.setitem(sys.modules, "playwright.sync_api", None)  # as if playwright were not installed
    try:
        browser_check.import_playwright()
    except browser_check.BrowserCheckError as error:
        assert "pip install -r requirements-browser.txt" in str(error)
    else:
        raise AssertionError("import_playwright() must fail when playwright is missing")
