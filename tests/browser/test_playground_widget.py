"""The chunk playground in a real browser: its controls change the chunks it shows.

A one-cell notebook (the playground on the course's annual report, as notebook 07 ends) is executed,
then opened in JupyterLab in headless Chromium and run. Choosing another strategy in the drop-down,
then typing another size in the number box, must each change the coloured chunks on the page, and
scrolling the chunks must leave the controls in sight. A small notebook keeps this check to seconds;
`tests/test_playground.py` tests the same widget without a browser.

Run with `.venv/bin/python -m pytest tests/browser` (not part of `pytest tests`).
"""

from pathlib import Path

import nbclient
import nbformat

from scripts import browser_check

ROOT = Path(__file__).resolve().parents[2]

CELL = """from pathlib import Path
from course_lib.playground import playground

playground(Path("../data/annual_report.md").read_text(encoding="utf-8"), strategy="markdown", size=60, overlap=0)"""


def test_the_playground_controls_change_the_chunks(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(CELL)],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()  # reads ../data
    (output,) = notebook.cells[0].outputs
    assert browser_check.WIDGET_VIEW in output.data and "VBox" not in output.data["text/plain"]
    assert "markdown:60 · " in output.data["text/html"], "the stored picture is the starting view"
    path = folder / "playground.ipynb"
    nbformat.write(notebook, path)

    report = browser_check.run_notebook_in_browser(path)
    print(f"\n{report}")
    assert report.widget_changed.startswith("markdown -> ") and "; number 60 -> 67" in report.widget_changed
    assert report.widget_scrolls_under_controls, "the chunks should scroll inside the view, under the controls"
    assert not report.blocked_requests, f"the page tried to reach outside localhost: {report.blocked_requests}"
