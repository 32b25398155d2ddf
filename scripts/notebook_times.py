"""Each notebook's time, computed by one rule and written wherever the course states it.

The rule (docs/INSTRUCTOR.md): prose at 200 words a minute, code at 30 non-blank lines a minute,
the run time measured at the last execution, and 10-15 minutes an exercise (12.5 counted), rounded
to 5 minutes. The headers' "Runs in" phrase and the guide's "runs in" column state that measured run
time (to 5 seconds, or to the minute from 100 seconds). Run times live in `notebooks/run_times.json`,
written by `--measure` (and by `record_run_time`, for scripts that execute notebooks).

Usage:
  python scripts/notebook_times.py                  report every place whose stated time disagrees (exit 1)
  python scripts/notebook_times.py --write          write the headers' Time lines, notebook 00's map,
                                                    the README's map and the instructor guide's table
  python scripts/notebook_times.py --measure [NB..] execute notebooks in memory (the files are not
                                                    changed) and store their run times
Rows a person must write (a new notebook's line in a map) are reported, never invented.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from course_lib.project import NOTEBOOKS, ROOT, course_notebooks

WORDS_PER_MINUTE = 200
CODE_LINES_PER_MINUTE = 30
EXERCISE_MINUTES = (10, 15)
RUN_TIMES = NOTEBOOKS / "run_times.json"
README = ROOT / "README.md"
INSTRUCTOR = ROOT / "docs" / "INSTRUCTOR.md"
MAP_NOTEBOOK = "00"
COUNTS_COLUMN = "words / code lines / exercises"

_EXERCISE = re.compile(r"^###\s+Exercise\s+\d+\.\d+", re.MULTILINE)
_NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
# the header's Time sentence: from "**Time" to "**Runs in" or the end of the paragraph
_TIME_SENTENCE = re.compile(r"\*\*Time:?\*\*:?.*?(?=\s*\*\*Runs in|\n\n|\Z)", re.DOTALL)
# the header's Runs-in phrase: what follows "**Runs in**" up to "on 2 CPU cores"
_RUNS_IN = re.compile(r"(?P<lead>\*\*Runs in:?\*\*:?\s*)(?P<text>.*?)(?=\s+on\s+2\s+CPU)", re.DOTALL)


@dataclass(frozen=True)
class NotebookTime:
    """The counts of one notebook and the time the rule gives it."""

    number: str
    name: str
    words: int
    code_lines: int
    exercises: int
    run_seconds: float | None

    def _fixed(self) -> float:
        return (self.words / WORDS_PER_MINUTE + self.code_lines / CODE_LINES_PER_MINUTE
                + (self.run_seconds or 0.0) / 60)

    @property
    def minutes(self) -> int:
        """The stated time: reading, code, running and 12.5 minutes an exercise, to the nearest 5."""
        middle = sum(EXERCISE_MINUTES) / 2
        return max(5, 5 * round((self._fixed() + middle * self.exercises) / 5))

    @property
    def counts(self) -> str:
        """Words, code lines and exercises as the instructor guide's table gives them: '3,685 / 373 / 2'."""
        return f"{self.words:,} / {self.code_lines} / {self.exercises}"

    @property
    def range(self) -> tuple[int, int]:
        """The rule's low and high ends (10 and 15 minutes an exercise), unrounded minutes."""
        low, high = EXERCISE_MINUTES
        return (math.floor(self._fixed() + low * self.exercises), math.ceil(self._fixed() + high * self.exercises))


def _cells(path: Path) -> list[dict]:
    return json.loads(Path(path).read_text(encoding="utf-8"))["cells"]


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def code_fingerprint(path: Path) -> str:
    """sha256 of the code cells' sources: a run time measured on other code is stale."""
    code = "\n\0".join(_source(c) for c in _cells(path) if c["cell_type"] == "code")
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


def load_run_times(path: Path = RUN_TIMES) -> dict[str, dict]:
    """The stored run times, by notebook file name ({} when none were measured)."""
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def record_run_time(notebook: Path, seconds: float, path: Path = RUN_TIMES) -> None:
    """Store how long `notebook` took to execute, with the fingerprint of its code."""
    if not isinstance(seconds, (int, float)) or seconds <= 0:
        raise ValueError(f"seconds={seconds!r}: give the measured, positive run time")
    times = load_run_times(path)
    times[Path(notebook).name] = {"seconds": round(float(seconds), 1), "code_sha256": code_fingerprint(notebook),
                                  "measured": time.strftime("%Y-%m-%d %H:%M")}
    path.write_text(json.dumps(dict(sorted(times.items())), indent=1) + "\n", encoding="utf-8")


def count(path: Path, run_times: dict[str, dict] | None = None) -> NotebookTime:
    """Count a notebook's prose words, non-blank code lines and exercises; attach its run time."""
    cells = _cells(path)
    markdown = [_source(c) for c in cells if c["cell_type"] == "markdown"]
    if markdown:  # the Time sentence and the run time are not counted, so writing them does not change the count
        markdown[0] = _RUNS_IN.sub(lambda m: m.group("lead"), _TIME_SENTENCE.sub("", markdown[0], count=1), count=1)
    code = [_source(c) for c in cells if c["cell_type"] == "code"]
    run = (load_run_times() if run_times is None else run_times).get(Path(path).name)
    return NotebookTime(number=Path(path).name[:2], name=Path(path).name,
                        words=sum(len(m.split()) for m in markdown),
                        code_lines=sum(1 for c in code for line in c.splitlines() if line.strip()),
                        exercises=sum(len(_EXERCISE.findall(m)) for m in markdown),
                        run_seconds=run["seconds"] if run else None)


def parse_minutes(text: str) -> int | None:
    """Minutes in a stated time: '45 min', 'about 1 hour 50 minutes', 'an hour', '1 h 50 min'."""
    text = text.lower()
    hours = re.search(r"\b(\d+|an|one)\s*(?:hours?|h)\b", text)
    minutes = re.search(r"\b(\d+)\s*(?:minutes?|min)\b", text)
    if not hours and not minutes:
        return None
    total = 0
    if hours:
        total += 60 * (1 if hours.group(1) in ("an", "one") else int(hours.group(1)))
    if minutes:
        total += int(minutes.group(1))
    return total


def time_sentence(t: NotebookTime) -> str:
    """The header's generated Time sentence."""
    run = "" if t.run_seconds is None else f", {max(1, round(t.run_seconds / 60))} to run it"
    exercises = "" if not t.exercises else (
        f", about {round(sum(EXERCISE_MINUTES) / 2 * t.exercises)} for the "
        f"{_NUMBER_WORDS.get(t.exercises, t.exercises)} exercise{'s' if t.exercises > 1 else ''}")
    return (f"**Time:** about {t.minutes} minutes: {round(t.words / WORDS_PER_MINUTE)} to read the prose "
            f"({t.words:,} words), {round(t.code_lines / CODE_LINES_PER_MINUTE)} for the {t.code_lines} lines "
            f"of code{run}{exercises}.")


def run_phrase(seconds: float, short: bool = False) -> str:
    """A measured run time as the course states it: 'about 15 seconds' ('~15 s'), 'about 2 minutes'."""
    if seconds < 100:
        n = max(5, 5 * round(seconds / 5))
        return f"~{n} s" if short else f"about {n} seconds"
    n = round(seconds / 60)
    return f"~{n} min" if short else f"about {n} minutes"


def stated_runs_in(path: Path) -> str | None:
    """The header's Runs-in phrase ('about 15 seconds'), or None when the header has none."""
    match = _RUNS_IN.search(_header(path))
    return " ".join(match.group("text").split()) if match else None


def _header(path: Path) -> str:
    return next(_source(c) for c in _cells(path) if c["cell_type"] == "markdown")


def stated_header(path: Path) -> int | None:
    """The minutes the notebook's header states."""
    match = _TIME_SENTENCE.search(_header(path))
    return parse_minutes(re.sub(r"^\*\*Time:?\*\*:?", "", match.group(0)).split(":")[0]) if match else None


def _table_rows(text: str, column: str) -> dict[str, tuple[int, int]]:
    """In every Markdown table of `text` with a header cell starting with `column`:
    notebook number -> (line index, column index) of that cell."""
    lines = text.split("\n")
    rows: dict[str, tuple[int, int]] = {}
    index = None
    for i, line in enumerate(lines):
        if not line.startswith("|"):
            index = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if index is None:
            heads = [c.lower() for c in cells]
            index = next((j for j, c in enumerate(heads) if c.startswith(column)), -1)
            continue
        first = re.match(r"\[?\**(\d\d)\b", cells[0])
        if index >= 0 and first and index < len(cells):
            rows[first.group(1)] = (i, index)
    return rows


def _cell(text: str, where: tuple[int, int]) -> str:
    line, column = where
    return [c.strip() for c in text.split("\n")[line].strip().strip("|").split("|")][column]


def _set_cell(text: str, where: tuple[int, int], value: str, keep_note: bool = True) -> str:
    lines = text.split("\n")
    line, column = where
    cells = [c.strip() for c in lines[line].strip().strip("|").split("|")]
    old = cells[column]
    m = re.match(r"\s*\d+\s*(?:h|min)(?:\s*\d+\s*min)?", old)
    note = old[len(m.group(0)):] if keep_note and m else ""
    cells[column] = value + note
    lines[line] = "| " + " | ".join(cells) + " |"
    return "\n".join(lines)


# The places that state times: name -> (how to read the text, the column, which notebooks it lists)
def _places(notebooks: list[Path]) -> dict[str, tuple]:
    map_nb = next((p for p in notebooks if p.name.startswith(MAP_NOTEBOOK + "_")), None)
    return {"README.md": (README, "time", False),
            "docs/INSTRUCTOR.md": (INSTRUCTOR, "time (self-study)", False),
            f"{map_nb.name if map_nb else MAP_NOTEBOOK} map": (map_nb, "time", True)}


def _map_cell(path: Path) -> tuple[int, str] | None:
    for i, cell in enumerate(_cells(path)):
        if cell["cell_type"] == "markdown" and re.search(r"^##\s.*\bmap\b", _source(cell), re.MULTILINE | re.I):
            return i, _source(cell)
    return None


def disagreements(notebooks: list[Path] | None = None, run_times: dict[str, dict] | None = None) -> list[str]:
    """Every place whose stated time differs from the rule's, and every missing row or run time."""
    notebooks = course_notebooks() if notebooks is None else notebooks
    run_times = load_run_times() if run_times is None else run_times
    problems = []
    times = [count(p, run_times) for p in notebooks]
    for path, t in zip(notebooks, times):
        stored = run_times.get(path.name)
        if stored is None:
            problems.append(f"{path.name}: no measured run time "
                            f"(run scripts/notebook_times.py --measure notebooks/{path.name})")
        elif stored["code_sha256"] != code_fingerprint(path):
            problems.append(f"{path.name}: run time measured on older code (measure again)")
        stated = stated_header(path)
        if stated != t.minutes:
            problems.append(f"{path.name}: header says {stated} min, the rule gives {t.minutes}")
        runs_in = stated_runs_in(path)
        if runs_in is None:
            problems.append(f"{path.name}: the header has no '**Runs in** ... on 2 CPU cores' line")
        elif t.run_seconds is not None and runs_in != run_phrase(t.run_seconds):
            problems.append(f"{path.name}: header runs in {runs_in!r}, measured {run_phrase(t.run_seconds)!r}")
    for place, (source, column, is_map) in _places(notebooks).items():
        if source is None or not Path(source).exists():
            problems.append(f"{place}: not found")
            continue
        text = _map_cell(source)[1] if is_map else Path(source).read_text(encoding="utf-8")
        rows = _table_rows(text, column)
        runs, counts = _table_rows(text, "runs in"), _table_rows(text, COUNTS_COLUMN)
        for t in times:
            if is_map and t.number == MAP_NOTEBOOK:
                continue
            if t.number not in rows:
                problems.append(f"{place}: no row for {t.name} (write its line; the time is {t.minutes} min)")
            elif parse_minutes(_cell(text, rows[t.number])) != t.minutes:
                problems.append(f"{place}: {t.number} says {_cell(text, rows[t.number])!r}, the rule gives "
                                f"{t.minutes} min")
            if t.number in runs and t.run_seconds is not None and \
                    _cell(text, runs[t.number]) != run_phrase(t.run_seconds, short=True):
                problems.append(f"{place}: {t.number} runs in {_cell(text, runs[t.number])!r}, measured "
                                f"{run_phrase(t.run_seconds, short=True)!r}")
            if t.number in counts and _cell(text, counts[t.number]) != t.counts:
                problems.append(f"{place}: {t.number} counts {_cell(text, counts[t.number])!r}, the notebook has "
                                f"{t.counts!r}")
    return problems


def _rewrite_tables(text: str, column: str, times: list[NotebookTime]) -> str:
    rows, runs, counts = _table_rows(text, column), _table_rows(text, "runs in"), _table_rows(text, COUNTS_COLUMN)
    for t in times:
        if t.number in counts:
            text = _set_cell(text, counts[t.number], t.counts, keep_note=False)
        if t.number in rows:
            text = _set_cell(text, rows[t.number], f"{t.minutes} min")
        if t.number in runs and t.run_seconds is not None:
            text = _set_cell(text, runs[t.number], run_phrase(t.run_seconds, short=True), keep_note=False)
    return text


def write(notebooks: list[Path] | None = None, run_times: dict[str, dict] | None = None) -> list[str]:
    """Write every stated time from the rule; return what is left for a person to write."""
    notebooks = course_notebooks() if notebooks is None else notebooks
    run_times = load_run_times() if run_times is None else run_times
    times = [count(p, run_times) for p in notebooks]
    for path, t in zip(notebooks, times):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        header = next(c for c in notebook["cells"] if c["cell_type"] == "markdown")
        old = _source(header)
        new = _TIME_SENTENCE.sub(lambda _m, t=t: time_sentence(t), old, count=1)
        if t.run_seconds is not None:
            new = _RUNS_IN.sub(lambda m, t=t: m.group("lead") + run_phrase(t.run_seconds), new, count=1)
        if is_map := (path.name.startswith(MAP_NOTEBOOK + "_") and _map_cell(path)):
            i = is_map[0]
            cell = notebook["cells"][i]
            cell["source"] = _rewrite_tables(_source(cell), "time", times).splitlines(keepends=True)
        if new != old or is_map:
            header["source"] = new.splitlines(keepends=True)  # a list of lines, as nbformat writes it
            path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for source, column, is_map in _places(notebooks).values():
        if not is_map and source is not None and Path(source).exists():
            Path(source).write_text(_rewrite_tables(Path(source).read_text(encoding="utf-8"), column, times),
                                    encoding="utf-8")
    return [p for p in disagreements(notebooks, run_times) if "no row" in p or "run time" in p]


def measure(paths: list[Path]) -> None:
    """Execute each notebook in memory in a fresh course kernel (its file is not changed) and record its time."""
    import nbformat
    from nbclient import NotebookClient

    from course_lib.settings import apply_quiet_offline_env

    apply_quiet_offline_env()
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        began = time.perf_counter()
        try:
            NotebookClient(notebook, timeout=900, kernel_name="python3", record_timing=False,
                           resources={"metadata": {"path": str(path.parent)}}).execute()
        except Exception as error:  # a failing notebook has no run time; the others are still measured
            print(f"{path.name}: not recorded, it failed: {type(error).__name__}: {str(error)[-300:]}", flush=True)
            continue
        seconds = time.perf_counter() - began
        record_run_time(path, seconds)
        print(f"{path.name}: {seconds:.1f} s", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="write every stated time from the rule")
    mode.add_argument("--measure", nargs="*", type=Path, metavar="NB", help="measure run times (default: all)")
    args = parser.parse_args(argv)
    if args.measure is not None:
        measure(args.measure or course_notebooks())
        return 0
    if args.write:
        left = write()
        for line in left:
            print(line)
        return 1 if left else 0
    for t in (count(p) for p in course_notebooks()):
        run = "no run time" if t.run_seconds is None else f"runs {t.run_seconds:.0f} s"
        print(f"{t.name}: {t.words} words, {t.code_lines} code lines, {t.exercises} exercises, {run} "
              f"-> {t.minutes} min (rule {t.range[0]}-{t.range[1]})")
    problems = disagreements()
    for line in problems:
        print("  " + line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
