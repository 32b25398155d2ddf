"""Each notebook's time, computed by one rule at a learner's pace and written wherever the course states it.

Two figures a notebook, both at the paces below (the guide, `docs/INSTRUCTOR.md`, states them as assumptions):
- **read and run**: prose at `WORDS_PER_MINUTE`, every code line read at `CODE_LINES_PER_MINUTE` (the
  solutions included), the printed output read at `OUTPUT_LINES_PER_MINUTE` (stream and `text/plain` lines;
  an HTML table counts its rows), `QUESTION_MINUTES` a "Check your understanding" question, and the run time
  measured at the last execution;
- **build**: the same, except that the learner's lines (inside `# BEGIN SOLUTION` ... `# END SOLUTION`) are
  written rather than read: each exercise part (a solution cell and its self-check) costs `PART_MINUTES` plus
  `LEARNER_LINE_MINUTES` a learner line, and each `### Exercise N.k` heading at least `MIN_EXERCISE_MINUTES`.
Cells tagged `guard` (hidden checks that keep the prose true) are not counted, nor anything under an "Extra
practice" heading (homework, up to the next heading of the same or a higher level). Each figure is rounded to
5 minutes. A notebook whose build time passes `SITTING_CAP_MINUTES` is cut into sittings by headings
"Sitting N: ..."; each sitting's build time is stated in the header and none may pass the cap. The core
(00-08) is capped at `CORE_BUILD_CAP_MINUTES` to build and `CORE_READ_CAP_MINUTES` to read and run, its prose at
`CORE_WORDS_CAP` words and `NOTEBOOK_WORDS_CAP` a notebook.

Every place states the same figures: the header's "**Time:** about 1 h 40 min to build, 55 min to read and
run.", notebook 00's map, the README's map and the instructor guide's table (its "read and run" and "build"
columns, and a "core (00-08)" row with the totals); the guide also gives the counts. The guide's prose may not
state a self-study time of its own (`stale_guide_sentences`). The headers' "Runs in" phrase and the guide's
"runs in" column state the measured run time (to 5 seconds, or to the minute from 100 seconds). Run times live
in `notebooks/run_times.json`, written by `--measure` (and by `record_run_time`, for scripts that execute
notebooks).

Usage (from the repository root):
  python -m scripts.notebook_times                  each notebook's counts and figures, the core's totals, the
                                                    caps, and every place whose stated time disagrees (exit 1)
  python -m scripts.notebook_times --check-caps     only the caps (exit 1 when the core is over them)
  python -m scripts.notebook_times --write          write the headers' Time lines, notebook 00's map,
                                                    the README's map and the instructor guide's table
  python -m scripts.notebook_times --measure [NB..] execute notebooks in memory (the files are not
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

from scripts.project import NOTEBOOKS, ROOT, course_notebooks

# The paces: assumptions, to be calibrated by timing learners (the guide says so).
WORDS_PER_MINUTE = 130  # prose dense with numbers
CODE_LINES_PER_MINUTE = 15  # given code read (and, on the read-and-run path, the solutions too)
OUTPUT_LINES_PER_MINUTE = 10  # printed output read to follow the prose
QUESTION_MINUTES = 1  # a "Check your understanding" question
PART_MINUTES = 3  # an exercise part: read its specification, run its check
LEARNER_LINE_MINUTES = 2.2  # a line the learner writes: 2.5 for algorithm lines, 1.5 for formulas, averaged
MIN_EXERCISE_MINUTES = 10  # an exercise heading, however little it asks
SITTING_CAP_MINUTES = 120  # a sitting's build time
CORE_BUILD_CAP_MINUTES = 20 * 60
CORE_READ_CAP_MINUTES = 10 * 60
CORE_WORDS_CAP = 26_000  # the core's prose, by this script's count (cells before "Extra practice")
NOTEBOOK_WORDS_CAP = 3_500  # one core notebook's prose
GUARD_TAG = "guard"
BEGIN, END = "# BEGIN SOLUTION", "# END SOLUTION"
CORE = tuple(f"{n:02d}" for n in range(9))  # 00-08
NOTEBOOKS_DIR = NOTEBOOKS
RUN_TIMES = NOTEBOOKS / "run_times.json"
README = ROOT / "README.md"
INSTRUCTOR = ROOT / "docs" / "INSTRUCTOR.md"
MAP_NOTEBOOK = "00"
READ_COLUMN = "read and run"  # the maps' and the guide's two time columns (header cells starting so)
BUILD_COLUMN = "build"
COUNTS_COLUMN = "words / given / learner / output lines / parts / questions"  # the guide's counts

_EXERCISE = re.compile(r"^###\s+Exercise\s+\d+\.\d+", re.MULTILINE)
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_EXTRA = re.compile(r"\bextra practice\b", re.IGNORECASE)
_CHECK = re.compile(r"\bcheck your understanding\b", re.IGNORECASE)
_SITTING = re.compile(r"^sitting\s+(\d+)\b", re.IGNORECASE)
_QUESTION = re.compile(r"^\d+[.)]\s+\S")  # a numbered item, not indented
_FENCE = re.compile(r"^\s*(```|~~~)")
# a table cell holding only a stated time ("| 1 h 15 min |"): not prose, so writing it changes no count
_TIME_CELL = re.compile(r"\|[ \t]*(?:about[ \t]+)?\d+[ \t]*(?:h|min)(?:[ \t]+\d+[ \t]*min)?[ \t]*(?=\|)")
# the header's Time sentence: from "**Time" to "**Runs in" or the end of the paragraph
_TIME_SENTENCE = re.compile(r"\*\*Time:?\*\*:?.*?(?=\s*\*\*Runs in|\n\n|\Z)", re.DOTALL)
# the header's Runs-in phrase: what follows "**Runs in**" up to "on 2 CPU cores"
_RUNS_IN = re.compile(r"(?P<lead>\*\*Runs in:?\*\*:?\s*)(?P<text>.*?)(?=\s+on\s+2\s+CPU)", re.DOTALL)
_TIME_PHRASE = r"\d+\s*(?:h|hours?|min|minutes)\b(?:\s*\d+\s*min)?"
# a sentence of the guide's prose that states a self-study time of its own
_STALE = re.compile(rf"[^.\n]*(?:self-study|a weekend|to build|to read and run)[^.\n]*\b{_TIME_PHRASE}[^.\n]*"
                    rf"|[^.\n]*\b{_TIME_PHRASE}[^.\n]*(?:self-study|a weekend|to build|to read and run)[^.\n]*",
                    re.IGNORECASE)


@dataclass(frozen=True)
class NotebookTime:
    """The counts of one notebook (or one of its sittings) and the two figures the rule gives it."""

    number: str
    name: str
    words: int = 0
    code_lines: int = 0  # every counted code line, the learner's included
    learner_lines: int = 0  # lines inside the solution blocks
    output_lines: int = 0
    questions: int = 0
    exercises: tuple[tuple[int, ...], ...] = ()  # per exercise heading, the learner lines of each part
    run_seconds: float | None = None
    continued: bool = False  # a sitting whose first exercise began in the sitting before (no minimum again)
    sittings: tuple[NotebookTime, ...] = ()  # the sittings' own counts, when the notebook has sittings

    def _common(self) -> float:
        return (self.words / WORDS_PER_MINUTE + self.output_lines / OUTPUT_LINES_PER_MINUTE
                + QUESTION_MINUTES * self.questions + (self.run_seconds or 0.0) / 60)

    @property
    def exercise_minutes(self) -> float:
        """What the exercises cost to write: per heading, its parts and lines, at least the minimum."""
        return sum(minutes if i == 0 and self.continued else max(MIN_EXERCISE_MINUTES, minutes)
                   for i, minutes in enumerate(sum(PART_MINUTES + LEARNER_LINE_MINUTES * n for n in parts)
                                               for parts in self.exercises))

    @property
    def exact_read(self) -> float:
        """Read and run, unrounded: prose, every code line, output, questions and the run time."""
        return self._common() + self.code_lines / CODE_LINES_PER_MINUTE

    @property
    def exact_build(self) -> float:
        """Build, unrounded: as read and run, with the learner's lines written instead of read."""
        return (self._common() + (self.code_lines - self.learner_lines) / CODE_LINES_PER_MINUTE
                + self.exercise_minutes)

    @property
    def read_minutes(self) -> int:
        return _round5(self.exact_read)

    @property
    def build_minutes(self) -> int:
        return _round5(self.exact_build)

    @property
    def parts(self) -> int:
        return sum(len(p) for p in self.exercises)

    @property
    def counts(self) -> str:
        """The guide's counts: words / given code lines / learner lines / output lines / parts / questions."""
        return (f"{self.words:,} / {self.code_lines - self.learner_lines} / {self.learner_lines} / "
                f"{self.output_lines} / {self.parts} / {self.questions}")

    @property
    def core(self) -> bool:
        return self.number in CORE


def _round5(minutes: float) -> int:
    """Minutes to the nearest 5 (at least 5)."""
    return max(5, 5 * round(minutes / 5))


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


def _is_solution(cell: dict) -> bool:
    return "solution" in cell.get("metadata", {}).get("tags", [])


@dataclass(frozen=True)
class _Piece:
    """A cell, or the part of a Markdown cell between two headings, with where it lies."""

    cell: dict
    text: str
    in_extra: bool
    in_check: bool
    sitting: int  # 1 until the first "Sitting N" heading
    heading: str | None  # the heading that opens this piece, if any


def _sections(cells: list[dict]):
    """Each cell split into pieces at its headings, with whether a piece lies in "Extra practice", in "Check
    your understanding", and in which sitting. A section runs from its heading to the next heading of the same
    or a higher level (headings inside code fences are not headings)."""
    extra = check = None  # the level of the open section's heading, or None
    sitting = 1
    for cell in cells:
        if cell["cell_type"] != "markdown":
            yield _Piece(cell, _source(cell), extra is not None, check is not None, sitting, None)
            continue
        piece: list[str] = []
        opened: str | None = None
        fenced = False
        for line in _source(cell).split("\n"):
            heading = None if fenced else _HEADING.match(line)
            if _FENCE.match(line):
                fenced = not fenced
            if heading:
                if piece:
                    yield _Piece(cell, "\n".join(piece), extra is not None, check is not None, sitting, opened)
                    piece = []
                level, title = len(heading.group(1)), heading.group(2)
                if extra is not None and level <= extra:
                    extra = None
                if check is not None and level <= check:
                    check = None
                if _EXTRA.search(title):
                    extra = level
                elif _CHECK.search(title):
                    check = level
                if (number := _SITTING.match(title)) and extra is None:
                    sitting = int(number.group(1))
                opened = title
            piece.append(line)
        if piece:
            yield _Piece(cell, "\n".join(piece), extra is not None, check is not None, sitting, opened)


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


def solution_lines(source: str) -> int:
    """Non-blank lines inside the cell's solution blocks, the markers excluded."""
    inside, n = False, 0
    for line in source.splitlines():
        marker = line.strip()
        if marker == BEGIN:
            inside = True
        elif marker == END:
            inside = False
        elif inside and marker:
            n += 1
    return n


def _text_lines(value) -> int:
    text = value if isinstance(value, str) else "".join(value)
    return len(text.rstrip("\n").split("\n")) if text.strip() else 0


def output_lines(cell: dict) -> int:
    """Lines of a code cell's printed output: stream and `text/plain` lines; an HTML table counts its rows."""
    n = 0
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            n += _text_lines(output.get("text", ""))
        elif output.get("output_type") in ("execute_result", "display_data"):
            data = output.get("data", {})
            html = data.get("text/html", "")
            html = html if isinstance(html, str) else "".join(html)
            if "<tr" in html:
                n += html.count("<tr")
            elif "text/plain" in data and not any(k.startswith("image/") for k in data):
                n += _text_lines(data["text/plain"])
    return n


def _strip_header(cells: list[dict]) -> list[dict]:
    """The cells with the header's Time sentence and Runs-in phrase left out, so writing them changes no count."""
    cells = list(cells)
    first = next((i for i, c in enumerate(cells) if c["cell_type"] == "markdown"), None)
    if first is not None:
        header = _TIME_SENTENCE.sub("", _source(cells[first]), count=1)
        cells[first] = dict(cells[first], source=_RUNS_IN.sub(lambda m: m.group("lead"), header, count=1))
    return cells


def count(path: Path, run_times: dict[str, dict] | None = None) -> NotebookTime:
    """Count a notebook's prose words, code lines (not `guard` cells), learner lines, output lines, exercise
    parts and "Check your understanding" questions, leaving out an "Extra practice" section, per sitting;
    attach its run time (to the first sitting)."""
    number, name = Path(path).name[:2], Path(path).name
    tallies: dict[int, dict] = {}
    for piece in _sections(_strip_header(_cells(path))):
        if piece.in_extra:
            continue
        t = tallies.setdefault(piece.sitting, {"words": 0, "code_lines": 0, "learner_lines": 0, "output_lines": 0,
                                               "questions": 0, "exercises": [], "continued": False})
        cell = piece.cell
        if cell["cell_type"] == "code":
            if _is_guard(cell):
                continue
            t["code_lines"] += sum(1 for line in piece.text.splitlines() if line.strip())
            t["output_lines"] += output_lines(cell)
            if _is_solution(cell):
                lines = solution_lines(piece.text)
                t["learner_lines"] += lines
                if not t["exercises"]:  # an exercise begun in an earlier sitting goes on here
                    if not any(s["exercises"] for s in tallies.values()):
                        raise ValueError(f"{name}: a solution cell comes before any '### Exercise N.k' heading")
                    t["exercises"].append([])
                    t["continued"] = True
                t["exercises"][-1].append(lines)
            continue
        if cell["cell_type"] != "markdown":
            continue
        t["words"] += len(_TIME_CELL.sub("|", piece.text).split())
        t["exercises"] += [[] for _ in _EXERCISE.findall(piece.text)]
        if piece.in_check:
            t["questions"] += _questions(piece.text)
    run = (load_run_times() if run_times is None else run_times).get(name)
    seconds = run["seconds"] if run else None
    sittings = tuple(NotebookTime(number, name, **dict(t, exercises=tuple(tuple(p) for p in t["exercises"])),
                                  run_seconds=seconds if i == 0 else None)
                     for i, (_, t) in enumerate(sorted(tallies.items())))
    if not sittings:
        return NotebookTime(number, name, run_seconds=seconds)
    exercises: list[tuple[int, ...]] = []
    for s in sittings:  # an exercise that goes on into the next sitting is one exercise of the notebook
        if s.continued:
            exercises[-1] += s.exercises[0]
        exercises += s.exercises[1:] if s.continued else s.exercises
    whole = NotebookTime(number, name, words=sum(s.words for s in sittings),
                         code_lines=sum(s.code_lines for s in sittings),
                         learner_lines=sum(s.learner_lines for s in sittings),
                         output_lines=sum(s.output_lines for s in sittings),
                         questions=sum(s.questions for s in sittings), exercises=tuple(exercises),
                         run_seconds=seconds, sittings=sittings if len(sittings) > 1 else ())
    return whole


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


_WORDS = {2: "two", 3: "three", 4: "four", 5: "five"}


def time_sentence(t: NotebookTime) -> str:
    """The header's generated Time sentence: the build figure (with its sittings) and the read-and-run figure."""
    sittings = ""
    if t.sittings:
        each = ", ".join(time_phrase(s.build_minutes) for s in t.sittings)
        sittings = f" in {_WORDS.get(len(t.sittings), len(t.sittings))} sittings ({each})"
    return (f"**Time:** about {time_phrase(t.build_minutes)} to build{sittings}, "
            f"{time_phrase(t.read_minutes)} to read and run.")


def run_phrase(seconds: float, short: bool = False) -> str:
    """A measured run time as the course states it: 'about 15 seconds' ('~15 s'), 'about 2 minutes'."""
    if seconds < 100:
        n = max(5, 5 * round(seconds / 5))
        return f"~{n} s" if short else f"about {n} seconds"
    n = round(seconds / 60)
    return f"~{n} min" if short else f"about {n} minutes"


def _header(path: Path) -> str:
    return next(_source(c) for c in _cells(path) if c["cell_type"] == "markdown")


def stated_runs_in(path: Path) -> str | None:
    """The header's Runs-in phrase ('about 15 seconds'), or None when the header has none."""
    match = _RUNS_IN.search(_header(path))
    return " ".join(match.group("text").split()) if match else None


def stated_sentence(path: Path) -> str | None:
    """The header's Time sentence, or None when it has none."""
    match = _TIME_SENTENCE.search(_header(path))
    return " ".join(match.group(0).split()) if match else None


_ROW = re.compile(r"\[?\**(?:(\d\d)\b|(core)\b)", re.IGNORECASE)


def _table_rows(text: str, column: str) -> dict[str, tuple[int, int]]:
    """In every Markdown table of `text` with a header cell starting with `column`: notebook number (or
    "core" for a row starting so) -> (line index, column index) of that cell."""
    rows: dict[str, tuple[int, int]] = {}
    index = None
    for i, line in enumerate(text.split("\n")):
        if not line.startswith("|"):
            index = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if index is None:
            index = next((j for j, c in enumerate(cells) if c.lower().startswith(column)), -1)
            continue
        first = _ROW.match(cells[0])
        if index >= 0 and first and index < len(cells):
            rows[(first.group(1) or first.group(2)).lower()] = (i, index)
    return rows


def _cell(text: str, where: tuple[int, int]) -> str:
    line, column = where
    return [c.strip() for c in text.split("\n")[line].strip().strip("|").split("|")][column]


def _set_cell(text: str, where: tuple[int, int], value: str, keep_note: bool = True) -> str:
    lines = text.split("\n")
    line, column = where
    cells = [c.strip() for c in lines[line].strip().strip("|").split("|")]
    old = cells[column]
    m = re.match(r"\s*\**\d+\s*(?:h|min)(?:\s*\d+\s*min)?\**", old)
    note = old[len(m.group(0)):] if keep_note and m else ""
    bold = "**" if old.startswith("**") else ""
    cells[column] = bold + value + bold + note
    lines[line] = "| " + " | ".join(cells) + " |"
    return "\n".join(lines)


def _places(notebooks: list[Path]) -> dict[str, tuple]:
    """The places that state times: name -> (the file, whether it is notebook 00's map)."""
    map_nb = next((p for p in notebooks if p.name.startswith(MAP_NOTEBOOK + "_")), None)
    return {"README.md": (README, False), "docs/INSTRUCTOR.md": (INSTRUCTOR, False),
            f"{map_nb.name if map_nb else MAP_NOTEBOOK} map": (map_nb, True)}


def _map_cell(path: Path) -> tuple[int, str] | None:
    for i, cell in enumerate(_cells(path)):
        if cell["cell_type"] == "markdown" and re.search(r"^##\s.*\bmap\b", _source(cell), re.MULTILINE | re.I):
            return i, _source(cell)
    return None


def core_totals(times: list[NotebookTime]) -> tuple[int, int]:
    """The core's read-and-run and build minutes: the sums of its notebooks' stated figures."""
    core = [t for t in times if t.core]
    return sum(t.read_minutes for t in core), sum(t.build_minutes for t in core)


def _expected(times: list[NotebookTime]) -> dict[str, tuple[int, int]]:
    """Row key -> (read-and-run, build) minutes, the core's row included."""
    return {**{t.number: (t.read_minutes, t.build_minutes) for t in times}, "core": core_totals(times)}


def stale_guide_sentences(text: str) -> list[str]:
    """Sentences of the guide's prose (not its tables) that state a self-study time of their own: the tables'
    figures are the only ones the rule writes."""
    prose = "\n".join(line for line in text.split("\n") if not line.startswith("|"))
    return [" ".join(m.group(0).split()) for m in _STALE.finditer(prose)]


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
                            f"(run python -m scripts.notebook_times --measure notebooks/{path.name})")
        elif stored["code_sha256"] != code_fingerprint(path):
            problems.append(f"{path.name}: run time measured on older code (measure again)")
        if (stated := stated_sentence(path)) != time_sentence(t):
            problems.append(f"{path.name}: header says {stated!r}, the rule gives {time_sentence(t)!r}")
        runs_in = stated_runs_in(path)
        if runs_in is None:
            problems.append(f"{path.name}: the header has no '**Runs in** ... on 2 CPU cores' line")
        elif t.run_seconds is not None and runs_in != run_phrase(t.run_seconds):
            problems.append(f"{path.name}: header runs in {runs_in!r}, measured {run_phrase(t.run_seconds)!r}")
    expected = _expected(times)
    for place, (source, is_map) in _places(notebooks).items():
        if source is None or not Path(source).exists():
            problems.append(f"{place}: not found")
            continue
        text = _map_cell(source)[1] if is_map else Path(source).read_text(encoding="utf-8")
        columns = {READ_COLUMN: _table_rows(text, READ_COLUMN), BUILD_COLUMN: _table_rows(text, BUILD_COLUMN)}
        runs = _table_rows(text, "runs in")
        for key, figures in expected.items():
            if is_map and key == MAP_NOTEBOOK:
                continue
            for (column, rows), minutes in zip(columns.items(), figures):
                if key not in rows:
                    problems.append(f"{place}: no '{column}' cell for {key} (write its row; the figure is "
                                    f"{time_phrase(minutes)})")
                elif parse_minutes(_cell(text, rows[key])) != minutes:
                    problems.append(f"{place}: {key} {column} says {_cell(text, rows[key])!r}, the rule gives "
                                    f"{time_phrase(minutes)!r}")
        for t in times:
            if t.number in runs and t.run_seconds is not None and \
                    _cell(text, runs[t.number]) != run_phrase(t.run_seconds, short=True):
                problems.append(f"{place}: {t.number} runs in {_cell(text, runs[t.number])!r}, measured "
                                f"{run_phrase(t.run_seconds, short=True)!r}")
        if source == INSTRUCTOR:
            counts = _table_rows(text, COUNTS_COLUMN)
            for t in times:
                if t.number not in counts:
                    problems.append(f"{place}: {t.number} has no '{COUNTS_COLUMN}' cell")
                elif _cell(text, counts[t.number]) != t.counts:
                    problems.append(f"{place}: {t.number} counts {_cell(text, counts[t.number])!r}, the notebook "
                                    f"has {t.counts!r}")
            problems += [f"{place}: a time the rule does not write: {s!r}" for s in stale_guide_sentences(text)]
    return problems


def _rewrite_tables(text: str, times: list[NotebookTime], counts: bool) -> str:
    expected = _expected(times)
    for index, column in enumerate((READ_COLUMN, BUILD_COLUMN)):
        for key, where in _table_rows(text, column).items():
            if key in expected:
                text = _set_cell(text, where, time_phrase(expected[key][index]))
    runs = _table_rows(text, "runs in")
    for t in times:
        if t.number in runs and t.run_seconds is not None:
            text = _set_cell(text, runs[t.number], run_phrase(t.run_seconds, short=True), keep_note=False)
    if counts:
        rows = _table_rows(text, COUNTS_COLUMN)
        for t in times:
            if t.number in rows:
                text = _set_cell(text, rows[t.number], t.counts, keep_note=False)
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
        changed = new != old
        header["source"] = new.splitlines(keepends=True)  # a list of lines, as nbformat writes it
        if path.name.startswith(MAP_NOTEBOOK + "_") and (found := _map_cell(path)):
            cell = notebook["cells"][found[0]]
            table = _rewrite_tables(found[1], times, counts=False)
            changed |= table != found[1]
            cell["source"] = table.splitlines(keepends=True)
        if changed:
            path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for source, is_map in _places(notebooks).values():
        if not is_map and source is not None and Path(source).exists():
            text = Path(source).read_text(encoding="utf-8")
            Path(source).write_text(_rewrite_tables(text, times, counts=source == INSTRUCTOR), encoding="utf-8")
    return [p for p in disagreements(notebooks, run_times)
            if "no '" in p or "run time" in p or "does not write" in p]


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
    """The caps the core keeps: its build and read-and-run totals, its words (in all and a notebook), and no
    sitting (or notebook without sittings) over the sitting cap."""
    problems = []
    for t in (t for t in times if t.core):
        for i, s in enumerate(t.sittings or (t,), start=1):
            if s.build_minutes > SITTING_CAP_MINUTES:
                where = f"sitting {i}" if t.sittings else "one sitting"
                problems.append(f"{t.name}: {where} takes {time_phrase(s.build_minutes)} to build, over the cap of "
                                f"{time_phrase(SITTING_CAP_MINUTES)} (add a 'Sitting N: ...' heading at a break)")
    core = [t for t in times if t.core]
    problems += [f"{t.name}: {t.words:,} words of prose, over the cap of {NOTEBOOK_WORDS_CAP:,} for a core notebook"
                 for t in core if t.words > NOTEBOOK_WORDS_CAP]
    if (words := sum(t.words for t in core)) > CORE_WORDS_CAP:
        problems.append(f"the core (00-08): {words:,} words of prose, over the cap of {CORE_WORDS_CAP:,}")
    read, build = core_totals(times)
    if build > CORE_BUILD_CAP_MINUTES:
        problems.append(f"the core (00-08): {time_phrase(build)} to build, over the cap of "
                        f"{time_phrase(CORE_BUILD_CAP_MINUTES)}")
    if read > CORE_READ_CAP_MINUTES:
        problems.append(f"the core (00-08): {time_phrase(read)} to read and run, over the cap of "
                        f"{time_phrase(CORE_READ_CAP_MINUTES)}")
    return problems


def report(times: list[NotebookTime]) -> list[str]:
    """One line a notebook (its counts and both figures), then the core's and the course's totals."""
    lines = []
    for t in times:
        run = "no run time" if t.run_seconds is None else f"runs {t.run_seconds:.0f} s"
        sittings = f" (sittings {', '.join(f'{s.exact_build:.1f}' for s in t.sittings)})" if t.sittings else ""
        lines.append(f"{t.name}: {t.words:,} words, {t.code_lines - t.learner_lines} given + {t.learner_lines} "
                     f"learner code lines, {t.output_lines} output lines, {len(t.exercises)} exercises in "
                     f"{t.parts} parts, {t.questions} questions, {run} -> read and run {t.exact_read:.1f} min, "
                     f"build {t.exact_build:.1f} min{sittings}{'' if t.core else ' (beyond the core)'}")
    read, build = core_totals(times)
    lines.append(f"core (00-08): {time_phrase(read)} to read and run ({read} min), {time_phrase(build)} to build "
                 f"({build} min); beyond: {time_phrase(sum(t.build_minutes for t in times if not t.core))} to build")
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
