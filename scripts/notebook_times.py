"""Each notebook's time, computed by one rule at a learner's pace and written wherever the course states it.

The rule: prose at 130 words a minute, code at 15 non-blank lines a minute (cells tagged `guard`, which
keep the prose true, are not counted), 15 minutes an exercise (`### Exercise N.k`), one minute a question
of a "Check your understanding" section (its numbered items), plus the run time measured at the last
execution; the sum is rounded to 5 minutes. A section headed "Extra practice" (to the next heading of the
same or a higher level) is homework: its prose, code and exercises are not counted. Every place states the
same single figure: the header's "**Time:** about 1 h 40 min" ("about 45 min" under an hour), notebook 00's
map, the README's map and the instructor guide's tables; the guide also gives the breakdown (words / code
lines / exercises / questions, the run time and the minutes). The headers' "Runs in" phrase and the guide's
"runs in" column state the measured run time (to 5 seconds, or to the minute from 100 seconds). Run times
live in `notebooks/run_times.json`, written by `--measure` (and by `record_run_time`, for scripts that
execute notebooks). The caps: the core (00-08) at most 12 hours, each core notebook at most 100 minutes.

Usage:
  python scripts/notebook_times.py                  each notebook's minutes, the core's total, the caps, and
                                                    every place whose stated time disagrees (exit 1)
  python scripts/notebook_times.py --check-caps     only the caps (exit 1 when the core is over them)
  python scripts/notebook_times.py --write          write the headers' Time lines, notebook 00's map,
                                                    the README's map and the instructor guide's tables
  python scripts/notebook_times.py --measure [NB..] execute notebooks in memory (the files are not
                                                    changed) and store their run times
  --root DIR                                        work on another checkout (a temporary copy, say)
Rows a person must write (a new notebook's line in a map) are reported, never invented.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

if not __package__:  # run as `python scripts/notebook_times.py`: the repository root makes `scripts` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.project import NOTEBOOKS, ROOT, course_notebooks

WORDS_PER_MINUTE = 130
CODE_LINES_PER_MINUTE = 15
EXERCISE_MINUTES = 15
QUESTION_MINUTES = 1
GUARD_TAG = "guard"
CORE = tuple(f"{n:02d}" for n in range(9))  # 00-08
CORE_CAP_MINUTES = 12 * 60
NOTEBOOK_CAP_MINUTES = 100
NOTEBOOKS_DIR = NOTEBOOKS
RUN_TIMES = NOTEBOOKS / "run_times.json"
README = ROOT / "README.md"
INSTRUCTOR = ROOT / "docs" / "INSTRUCTOR.md"
MAP_NOTEBOOK = "00"
COUNTS_COLUMN = "words / code lines / exercises"  # a header cell starting so holds the breakdown's counts
COUNTS_HEADER = "words / code lines / exercises / questions"
GUIDE_TIME_COLUMN = "time (self-study)"

_EXERCISE = re.compile(r"^###\s+Exercise\s+\d+\.\d+", re.MULTILINE)
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_EXTRA = re.compile(r"\bextra practice\b", re.IGNORECASE)
_CHECK = re.compile(r"\bcheck your understanding\b", re.IGNORECASE)
_QUESTION = re.compile(r"^\d+[.)]\s+\S")  # a numbered item, not indented
_FENCE = re.compile(r"^\s*(```|~~~)")
# a table cell holding only a stated time ("| 1 h 15 min |"): not prose, so writing it changes no count
_TIME_CELL = re.compile(r"\|[ \t]*(?:about[ \t]+)?\d+[ \t]*(?:h|min)(?:[ \t]+\d+[ \t]*min)?[ \t]*(?=\|)")
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
    questions: int = 0

    @property
    def exact_minutes(self) -> float:
        """Reading, code, exercises, questions and running, unrounded."""
        return (self.words / WORDS_PER_MINUTE + self.code_lines / CODE_LINES_PER_MINUTE
                + EXERCISE_MINUTES * self.exercises + QUESTION_MINUTES * self.questions
                + (self.run_seconds or 0.0) / 60)

    @property
    def minutes(self) -> int:
        """The stated time: the rule's minutes to the nearest 5 (at least 5)."""
        return max(5, 5 * round(self.exact_minutes / 5))

    @property
    def counts(self) -> str:
        """Words, code lines, exercises and questions as the guide's table gives them: '3,685 / 373 / 2 / 4'."""
        return f"{self.words:,} / {self.code_lines} / {self.exercises} / {self.questions}"

    @property
    def core(self) -> bool:
        return self.number in CORE


def time_phrase(minutes: int) -> str:
    """Minutes as the course states them: '45 min', '1 h', '1 h 40 min'."""
    hours, rest = divmod(int(minutes), 60)
    if not hours:
        return f"{rest} min"
    return f"{hours} h" + (f" {rest} min" if rest else "")


def _cells(path: Path) -> list[dict]:
    return json.loads(Path(path).read_text(encoding="utf-8"))["cells"]


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def code_fingerprint(path: Path) -> str:
    """sha256 of the code cells' sources: a run time measured on other code is stale."""
    code = "\n\0".join(_source(c) for c in _cells(path) if c["cell_type"] == "code")
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


def load_run_times(path: Path | None = None) -> dict[str, dict]:
    """The stored run times, by notebook file name ({} when none were measured)."""
    path = RUN_TIMES if path is None else path
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def record_run_time(notebook: Path, seconds: float, path: Path | None = None) -> None:
    """Store how long `notebook` took to execute, with the fingerprint of its code."""
    path = RUN_TIMES if path is None else path
    if not isinstance(seconds, (int, float)) or seconds <= 0:
        raise ValueError(f"seconds={seconds!r}: give the measured, positive run time")
    times = load_run_times(path)
    times[Path(notebook).name] = {"seconds": round(float(seconds), 1), "code_sha256": code_fingerprint(notebook),
                                  "measured": time.strftime("%Y-%m-%d %H:%M")}
    path.write_text(json.dumps(dict(sorted(times.items())), indent=1) + "\n", encoding="utf-8")


def _is_guard(cell: dict) -> bool:
    return GUARD_TAG in cell.get("metadata", {}).get("tags", [])


def _sections(cells: list[dict]):
    """Each cell split into pieces, with whether a piece lies in "Extra practice" and in "Check your
    understanding": yields (cell, text, in_extra, in_check). A section runs from its heading to the next
    heading of the same or a higher level (headings inside code fences are not headings)."""
    extra = check = None  # the level of the open section's heading, or None
    for cell in cells:
        if cell["cell_type"] != "markdown":
            yield cell, _source(cell), extra is not None, check is not None
            continue
        piece: list[str] = []
        fenced = False
        for line in _source(cell).split("\n"):
            heading = None if fenced else _HEADING.match(line)
            if _FENCE.match(line):
                fenced = not fenced
            if heading:
                if piece:
                    yield cell, "\n".join(piece), extra is not None, check is not None
                    piece = []
                level = len(heading.group(1))
                if extra is not None and level <= extra:
                    extra = None
                if check is not None and level <= check:
                    check = None
                if _EXTRA.search(heading.group(2)):
                    extra = level
                elif _CHECK.search(heading.group(2)):
                    check = level
            piece.append(line)
        if piece:
            yield cell, "\n".join(piece), extra is not None, check is not None


def _questions(text: str) -> int:
    """Numbered items of a "Check your understanding" piece, outside code fences and <details> answers."""
    n, fenced, details = 0, False, 0
    for line in text.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        details += line.count("<details") - line.count("</details>")
        if not fenced and details <= 0 and _QUESTION.match(line):
            n += 1
    return n


def count(path: Path, run_times: dict[str, dict] | None = None) -> NotebookTime:
    """Count a notebook's prose words, non-blank code lines (not `guard` cells), exercises and
    "Check your understanding" questions, leaving out an "Extra practice" section; attach its run time."""
    cells = _cells(path)
    first = next((i for i, c in enumerate(cells) if c["cell_type"] == "markdown"), None)
    if first is not None:  # the Time sentence and the run time are not counted, so writing them changes no count
        header = _TIME_SENTENCE.sub("", _source(cells[first]), count=1)
        cells[first] = dict(cells[first], source=_RUNS_IN.sub(lambda m: m.group("lead"), header, count=1))
    words = code_lines = exercises = questions = 0
    for cell, text, in_extra, in_check in _sections(cells):
        if in_extra:
            continue
        if cell["cell_type"] == "code":
            if not _is_guard(cell):
                code_lines += sum(1 for line in text.splitlines() if line.strip())
            continue
        if cell["cell_type"] != "markdown":
            continue
        words += len(_TIME_CELL.sub("|", text).split())
        exercises += len(_EXERCISE.findall(text))
        if in_check:
            questions += _questions(text)
    run = (load_run_times() if run_times is None else run_times).get(Path(path).name)
    return NotebookTime(number=Path(path).name[:2], name=Path(path).name, words=words, code_lines=code_lines,
                        exercises=exercises, run_seconds=run["seconds"] if run else None, questions=questions)


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
    """The header's generated Time sentence: one figure ('**Time:** about 1 h 40 min.'); the guide's
    table gives its breakdown."""
    return f"**Time:** about {time_phrase(t.minutes)}."


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
            "docs/INSTRUCTOR.md": (INSTRUCTOR, GUIDE_TIME_COLUMN, False),
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
        elif (sentence := _TIME_SENTENCE.search(_header(path)).group(0).strip()) != time_sentence(t):
            problems.append(f"{path.name}: header's Time sentence {sentence[:60]!r}... is not the single figure "
                            f"{time_sentence(t)!r}")
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
                problems.append(f"{place}: no row for {t.name} (write its line; the time is "
                                f"{time_phrase(t.minutes)})")
            elif parse_minutes(_cell(text, rows[t.number])) != t.minutes:
                problems.append(f"{place}: {t.number} says {_cell(text, rows[t.number])!r}, the rule gives "
                                f"{time_phrase(t.minutes)!r}")
            if t.number in runs and t.run_seconds is not None and \
                    _cell(text, runs[t.number]) != run_phrase(t.run_seconds, short=True):
                problems.append(f"{place}: {t.number} runs in {_cell(text, runs[t.number])!r}, measured "
                                f"{run_phrase(t.run_seconds, short=True)!r}")
            if t.number in counts and _cell(text, counts[t.number]) != t.counts:
                problems.append(f"{place}: {t.number} counts {_cell(text, counts[t.number])!r}, the notebook has "
                                f"{t.counts!r}")
            elif source == INSTRUCTOR and t.number in rows and t.number not in counts:
                problems.append(f"{place}: {t.number}'s row has no '{COUNTS_HEADER}' column (--write adds it)")
        if source == INSTRUCTOR and any(h.lower() == COUNTS_COLUMN for h in _headers(text)):
            problems.append(f"{place}: the counts column is headed '{COUNTS_COLUMN}', not '{COUNTS_HEADER}'")
    return problems


def _headers(text: str) -> list[str]:
    """Every header cell of every Markdown table in `text`."""
    heads, inside = [], False
    for line in text.split("\n"):
        if line.startswith("|") and not inside:
            heads += [c.strip() for c in line.strip().strip("|").split("|")]
        inside = line.startswith("|")
    return heads


def _add_counts_column(text: str) -> str:
    """Give every table with a 'time (self-study)' column the breakdown's counts column, just before it,
    and the old three-count header its fourth count."""
    lines = text.split("\n")
    index = None  # the column to insert at in the current table, or -1 for none
    for i, line in enumerate(lines):
        if not line.startswith("|"):
            index = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if index is None:
            heads = [c.lower() for c in cells]
            if COUNTS_COLUMN in heads:
                cells[heads.index(COUNTS_COLUMN)] = COUNTS_HEADER
                lines[i] = "| " + " | ".join(cells) + " |"
            has_counts = any(h.startswith(COUNTS_COLUMN) for h in heads)
            index = next((j for j, h in enumerate(heads) if h.startswith(GUIDE_TIME_COLUMN)), -1)
            if has_counts or index < 0:
                index = -1
                continue
            value = COUNTS_HEADER
        else:
            if index < 0:
                continue
            value = "---" if set("".join(cells)) <= set("-:") else ""
        cells.insert(index, value)
        lines[i] = "|" + "|".join(cells) + "|" if value == "---" else "| " + " | ".join(cells) + " |"
    return "\n".join(lines)


def _rewrite_tables(text: str, column: str, times: list[NotebookTime]) -> str:
    rows, runs, counts = _table_rows(text, column), _table_rows(text, "runs in"), _table_rows(text, COUNTS_COLUMN)
    for t in times:
        if t.number in counts:
            text = _set_cell(text, counts[t.number], t.counts, keep_note=False)
        if t.number in rows:
            text = _set_cell(text, rows[t.number], time_phrase(t.minutes))
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
            text = Path(source).read_text(encoding="utf-8")
            if source == INSTRUCTOR:
                text = _add_counts_column(text)
            Path(source).write_text(_rewrite_tables(text, column, times), encoding="utf-8")
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


def cap_problems(times: list[NotebookTime]) -> list[str]:
    """The caps the core keeps: at most 12 hours in all (00-08) and 100 minutes a notebook."""
    core = [t for t in times if t.core]
    problems = [f"{t.name}: {time_phrase(t.minutes)}, over the cap of {NOTEBOOK_CAP_MINUTES} min for a core notebook"
                for t in core if t.minutes > NOTEBOOK_CAP_MINUTES]
    total = sum(t.minutes for t in core)
    if total > CORE_CAP_MINUTES:
        problems.append(f"the core (00-08): {time_phrase(total)}, over the cap of {time_phrase(CORE_CAP_MINUTES)}")
    return problems


def report(times: list[NotebookTime]) -> list[str]:
    """One line a notebook (its counts, minutes and figure), then the core's and the course's totals."""
    lines = []
    for t in times:
        run = "no run time" if t.run_seconds is None else f"runs {t.run_seconds:.0f} s"
        lines.append(f"{t.name}: {t.words:,} words, {t.code_lines} code lines, {t.exercises} exercises, "
                     f"{t.questions} questions, {run} -> {t.exact_minutes:.1f} min, stated "
                     f"{time_phrase(t.minutes)}{'' if t.core else ' (beyond the core)'}")
    core = sum(t.minutes for t in times if t.core)
    lines.append(f"core (00-08): {time_phrase(core)} ({core} min); beyond: "
                 f"{time_phrase(sum(t.minutes for t in times if not t.core))}; "
                 f"course: {time_phrase(sum(t.minutes for t in times))}")
    return lines


def _use_root(root: Path) -> None:
    """Point the module at another checkout (its notebooks, run times, README and guide)."""
    global NOTEBOOKS_DIR, RUN_TIMES, README, INSTRUCTOR
    root = Path(root).resolve()
    NOTEBOOKS_DIR, RUN_TIMES = root / "notebooks", root / "notebooks" / "run_times.json"
    README, INSTRUCTOR = root / "README.md", root / "docs" / "INSTRUCTOR.md"


def _notebooks() -> list[Path]:
    return course_notebooks() if NOTEBOOKS_DIR == NOTEBOOKS else sorted(NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="write every stated time from the rule")
    mode.add_argument("--check-caps", action="store_true", help="only check the core's caps (exit 1 when over)")
    mode.add_argument("--measure", nargs="*", type=Path, metavar="NB", help="measure run times (default: all)")
    parser.add_argument("--root", type=Path, help="another checkout of the course (default: this one)")
    args = parser.parse_args(argv)
    if args.root:
        _use_root(args.root)
    notebooks = _notebooks()
    if args.measure is not None:
        measure(args.measure or notebooks)
        return 0
    run_times = load_run_times(RUN_TIMES)
    if args.write:
        left = write(notebooks, run_times)
        for line in left:
            print(line)
        return 1 if left else 0
    times = [count(p, run_times) for p in notebooks]
    caps = cap_problems(times)
    if args.check_caps:
        for line in caps or ["the core fits its caps"]:
            print(line)
        return 1 if caps else 0
    for line in report(times):
        print(line)
    for line in caps:
        print("  cap: " + line)
    problems = disagreements(notebooks, run_times)
    for line in problems:
        print("  " + line)
    return 1 if problems or caps else 0


if __name__ == "__main__":
    sys.exit(main())
