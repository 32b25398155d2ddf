"""The instructor guide's agendas teach what the course promises, in the time they state."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GUIDE = (ROOT / "docs" / "INSTRUCTOR.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = GUIDE.index(f"## {title}")
    following = GUIDE.find("\n## ", start + 1)
    return GUIDE[start:following if following != -1 else None]


def _rows(section: str) -> list[list[str]]:
    lines = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]  # after header and rule


def test_the_three_hour_agenda_fills_180_minutes_and_teaches_01_to_06():
    rows = _rows(_section("Agenda: 3 hours"))
    assert rows, "the 3-hour agenda has no table"
    assert [len(r) for r in rows] == [5] * len(rows), "columns: start | minutes | notebook | sections | what happens"
    assert sum(int(r[1]) for r in rows) == 180, "the minutes of the 3-hour agenda must sum to 180"
    notebooks = {r[2] for r in rows}
    assert {"01", "02", "03", "04", "05", "06"} <= notebooks, f"the five promised topics need 01-06: {notebooks}"
    assert all(re.fullmatch(r"\d\d|-", n) for n in notebooks), "the notebook column holds two-digit numbers"
    assert any("break" in r[4].lower() for r in rows), "three hours need a break"
    clock = 0
    for start, minutes, *_ in rows:  # each block starts where the last one ended
        hours, mins = map(int, start.split(":"))
        assert hours * 60 + mins == clock, f"the block at {start} should start at {clock // 60}:{clock % 60:02d}"
        clock += int(minutes)


def test_the_full_day_covers_the_core():
    day = _section("Agenda: full day")
    assert all(f"**{n:02d}**" in day for n in range(9)), "the full day goes through every core notebook, 00-08"
