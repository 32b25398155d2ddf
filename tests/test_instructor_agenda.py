"""The instructor guide's agendas fit their time: blocks of at most 30 minutes in which pairs write at most 15
lines (counted from the notebooks' solution blocks), the rest demonstrated; the minutes add up (issue 44)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from scripts import build_student_edition as edition
from scripts.notebook_times import solution_lines
from scripts.project import NOTEBOOKS

ROOT = Path(__file__).resolve().parents[1]
GUIDE = (ROOT / "docs" / "INSTRUCTOR.md").read_text(encoding="utf-8")
COLUMNS = ["start", "minutes", "notebook", "sections", "pairs write", "lines", "demonstrated"]
MAX_BLOCK_MINUTES, MAX_WRITTEN_LINES = 30, 15
WRITE = re.compile(r"Exercise (\d+)\.(\d+) \(([a-z])\)((?:, \([a-z]\))*)$")


def _section(title: str) -> str:
    start = GUIDE.index(f"## {title}")
    following = GUIDE.find("\n## ", start + 1)
    return GUIDE[start:following if following != -1 else None]


def _table(section: str) -> tuple[list[str], list[dict[str, str]]]:
    lines = [line for line in section.splitlines() if line.startswith("|")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return head, [dict(zip(head, (c.strip() for c in line.strip("|").split("|")))) for line in lines[2:]]


def part_lines(cell: str) -> int:
    """The learner's lines of the parts a "pairs write" cell names ("Exercise 4.1 (a), (b)"), from the notebook."""
    if cell == "-":
        return 0
    match = WRITE.fullmatch(cell)
    if not match:
        raise ValueError(f"pairs write {cell!r}: write 'Exercise N.k (a), (b)' or '-'")
    number, k, first, rest = match.groups()
    path = next(NOTEBOOKS.glob(f"{int(number):02d}_*.ipynb"))
    notebook = nbformat.read(path, as_version=4)
    parts = [e for e in edition.find_exercises(notebook) if e.name == f"Exercise {number}.{k}"]
    letters = [first, *re.findall(r"\(([a-z])\)", rest)]
    if any(ord(letter) - ord("a") >= len(parts) for letter in letters):
        raise ValueError(f"{cell}: Exercise {number}.{k} has {len(parts)} parts")
    return sum(solution_lines(notebook.cells[parts[ord(letter) - ord("a")].solution].source) for letter in letters)


def _check_agenda(title: str, total: int) -> list[dict[str, str]]:
    head, rows = _table(_section(title))
    assert head == COLUMNS, f"the {title} table's columns: {' | '.join(COLUMNS)}"
    assert sum(int(r["minutes"]) for r in rows) == total, f"the minutes of '{title}' must sum to {total}"
    assert any(r["demonstrated"].lower().startswith("break") for r in rows), "the agenda needs a break"
    clock = 0
    for row in rows:  # each block starts where the last one ended, is short, and asks for few lines
        hours, mins = map(int, row["start"].split(":"))
        assert hours * 60 + mins == clock, f"the block at {row['start']} should start at {clock // 60}:{clock % 60:02d}"
        clock += int(row["minutes"])
        assert int(row["minutes"]) <= MAX_BLOCK_MINUTES, f"{row['start']}: a block of at most 30 minutes"
        written = part_lines(row["pairs write"])
        assert written == int(row["lines"]), (f"{row['start']}: {row['pairs write']} is {written} learner lines in "
                                              f"the notebook, the table says {row['lines']}")
        assert written <= MAX_WRITTEN_LINES, f"{row['start']}: pairs write {written} lines, more than 15"
        assert row["demonstrated"] not in ("", "-"), f"{row['start']}: say what is demonstrated"
    return rows


def test_the_three_hour_agenda_fits_the_rule_and_teaches_01_to_06():
    rows = _check_agenda("Agenda: 3 hours", 180)
    assert {"01", "02", "03", "04", "05", "06"} <= {r["notebook"] for r in rows}


def test_the_one_day_agenda_covers_the_core_by_the_same_rule():
    rows = _check_agenda("Agenda: full day", 360)
    assert {f"{n:02d}" for n in range(9)} <= {r["notebook"] for r in rows}


def test_the_guides_table_gives_each_notebook_its_agenda_minutes():
    """The 'in a 3-hour workshop' and 'in a full day' columns add up the agendas' blocks."""
    _, notebooks = _table(_section("The notebooks and their timings"))
    for column, title in (("in a 3-hour workshop", "Agenda: 3 hours"), ("in a full day", "Agenda: full day")):
        _, rows = _table(_section(title))
        for row in notebooks:
            number = row["notebook"][:2]
            if not number.isdigit():
                continue
            minutes = sum(int(r["minutes"]) for r in rows if r["notebook"] == number)
            stated = re.match(r"(\d+) min", row[column])
            assert (int(stated.group(1)) if stated else 0) == minutes, f"{number}: {column} says {row[column]!r}"


def test_part_lines_reads_the_notebooks_and_refuses_a_bad_cell():
    assert part_lines("Exercise 4.1 (a), (b)") == 12  # split_on and first_split, 7 lines; strip_span, 5
    assert part_lines("-") == 0
    with pytest.raises(ValueError, match="has 2 parts"):
        part_lines("Exercise 4.1 (c)")
    with pytest.raises(ValueError, match="pairs write"):
        part_lines("Exercise 4.1 a-e")
