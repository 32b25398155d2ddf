"""The course in order: file names follow the map, and measurement is not used before notebook 08 teaches it."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
STATS_IMPORT = re.compile(r"course_lib\.stats|from course_lib import [^\n]*\bstats\b|import course_lib\.stats")


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _map_numbers(text: str) -> list[str]:
    """The two-digit numbers that open the rows of the first Markdown table listing the notebooks."""
    return re.findall(r"^\|\s*\[?(\d\d) [A-Z]", text, flags=re.MULTILINE)


def test_the_files_are_numbered_00_to_14_without_gaps():
    assert [p.name[:2] for p in NOTEBOOKS] == [f"{i:02d}" for i in range(len(NOTEBOOKS))]


def test_every_map_lists_the_notebooks_in_file_order():
    files = [p.name[:2] for p in NOTEBOOKS]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start_here = "".join("".join(c["source"]) for c in _cells(NOTEBOOKS[0]) if c["cell_type"] == "markdown")
    assert _map_numbers(readme) == files, "README's course map"
    assert ["00", *_map_numbers(start_here)] == files, "notebook 00's map (its own row is not listed)"
    links = re.findall(r"\]\(notebooks/(\d\d_[a-z0-9_]+\.ipynb)\)", readme)
    assert [name for name in links if name[:2] in files][:len(files)] == [p.name for p in NOTEBOOKS]
    guide = (ROOT / "docs" / "INSTRUCTOR.md").read_text(encoding="utf-8")
    assert re.findall(r"^\| (\d\d) [A-Z]", guide, flags=re.MULTILINE)[:len(files)] == files, "the guide's tables"


def test_notebooks_00_to_07_use_nothing_from_course_lib_stats():
    early = [p for p in NOTEBOOKS if p.name[:2] <= "07"]
    used = [f"{p.name}, cell {i}" for p in early for i, c in enumerate(_cells(p))
            if c["cell_type"] == "code" and STATS_IMPORT.search("".join(c["source"]))]
    assert not used, "measurement is taught in notebook 08; these use course_lib.stats before it: " + "; ".join(used)


def test_each_notebook_title_carries_its_number():
    for path in NOTEBOOKS:
        first = "".join(_cells(path)[0]["source"]).splitlines()[0]
        assert first.startswith(f"# {path.name[:2]} · "), f"{path.name} opens with {first!r}"
