"""scripts/notebook_times.py: one rule for every stated notebook time, and the places agree with it."""

import importlib.util
import json
import sys

import pytest

from course_lib.project import ROOT

_spec = importlib.util.spec_from_file_location("notebook_times", ROOT / "scripts" / "notebook_times.py")
times = sys.modules.setdefault("notebook_times", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(times)  # scripts/ is not a package: load the file itself


def _write_notebook(folder, name, header, words=400, code_lines=60, exercises=2, extra=()):
    cells = [{"cell_type": "markdown", "source": header},
             {"cell_type": "markdown", "source": " ".join(["word"] * words)},
             {"cell_type": "code", "source": "\n".join(f"x = {i}\n" for i in range(code_lines)), "outputs": [],
              "execution_count": 1}]
    cells += [{"cell_type": "markdown", "source": f"### Exercise 1.{i + 1}: task"} for i in range(exercises)]
    cells += [{"cell_type": "markdown", "source": text} for text in extra]
    path = folder / name
    path.write_text(json.dumps({"cells": [dict(c, id=f"c{i}", metadata={}) for i, c in enumerate(cells)],
                                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    return path


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A tiny course: notebook 00 with a map, 01 and 02, a README and an instructor guide."""
    header = "# NN · T\n\n**Time:** about 15 minutes: all of it. **Runs in:** 5 seconds on 2 CPU cores."
    map_cell = ("## 2. The map of the course\n\n| notebook | question | time |\n|---|---|---|\n"
                "| 01 One | why? | 45 min |\n| 02 Two | how? | 1 h 50 min |\n")
    nbs = [_write_notebook(tmp_path, "00_start.ipynb", header, exercises=1, extra=[map_cell]),
           _write_notebook(tmp_path, "01_one.ipynb", header),
           _write_notebook(tmp_path, "02_two.ipynb", header.replace("**Time:**", "**Time**"), exercises=4)]
    readme = tmp_path / "README.md"
    readme.write_text("| notebook | what | time |\n|---|---|---|\n| [00 S](notebooks/00_start.ipynb) | a | 15 min |\n"
                      "| [01 One](notebooks/01_one.ipynb) | b | 45 min |\n| [02 Two](x) | c | 60 min |\n\nAfter.\n",
                      encoding="utf-8")
    guide = tmp_path / "INSTRUCTOR.md"
    guide.write_text("| notebook | what | time (self-study) | runs in |\n|---|---|---|---|\n"
                     "| 00 S | a | 15 min | 5 s |\n| 01 One | b | 45 min (exercises later) | 5 s |\n"
                     "| 02 Two | c | 60 min | 5 s |\n", encoding="utf-8")
    monkeypatch.setattr(times, "README", readme)
    monkeypatch.setattr(times, "INSTRUCTOR", guide)
    run_times = {}
    for nb in nbs:
        run_times[nb.name] = {"seconds": 90.0, "code_sha256": times.code_fingerprint(nb)}
    return nbs, run_times


@pytest.mark.parametrize(("text", "minutes"), [("45 min", 45), ("about 1 hour 50 minutes", 110),
                                               ("about an hour", 60), ("1 h 50 min", 110), ("110 min (later)", 110),
                                               ("50 min, more for your own folder", 50), ("take home", None)])
def test_parse_minutes(text, minutes):
    assert times.parse_minutes(text) == minutes


def test_the_rule(course):
    nbs, run_times = course
    t = times.count(nbs[1], run_times)
    assert (t.words, t.code_lines, t.exercises, t.run_seconds) == (418, 60, 2, 90.0)  # + header and headings
    # 418 / 200 + 60 / 30 + 90 / 60 + 2 * 12.5 = 30.6 -> 30; the range uses 10 and 15 an exercise
    assert t.minutes == 30 and t.range == (25, 36)
    assert times.count(nbs[1], {}).run_seconds is None


def test_disagreements_then_write_then_agreement(course):
    nbs, run_times = course
    problems = times.disagreements(nbs, run_times)
    assert "01_one.ipynb: header says 15 min, the rule gives 30" in problems
    assert any(p.startswith("README.md: 02 says '60 min'") for p in problems)
    assert any(p.startswith("00_start.ipynb map: 02 says '1 h 50 min'") for p in problems)
    assert "01_one.ipynb: header runs in '5 seconds', measured 'about 90 seconds'" in problems
    assert "docs/INSTRUCTOR.md: 02 runs in '5 s', measured '~90 s'" in problems
    assert times.write(nbs, run_times) == []
    assert times.disagreements(nbs, run_times) == []
    guide = times.INSTRUCTOR.read_text(encoding="utf-8")
    assert "| 01 One | b | 30 min (exercises later) | ~90 s |" in guide  # the note after the time is kept
    assert times.README.read_text(encoding="utf-8").endswith("\n\nAfter.\n")
    header = "".join(json.loads(nbs[2].read_text(encoding="utf-8"))["cells"][0]["source"])
    assert header.startswith("# NN · T\n\n**Time:** about 55 minutes: 2 to read the prose (426 words), 2 for the 60 "
                             "lines of code, 2 to run it, about 50 for the four exercises. "
                             "**Runs in:** about 90 seconds on 2 CPU")


@pytest.mark.parametrize(("seconds", "long", "short"), [(3.6, "about 5 seconds", "~5 s"),
                                                      (53.2, "about 55 seconds", "~55 s"),
                                                      (104.3, "about 2 minutes", "~2 min"),
                                                      (263.5, "about 4 minutes", "~4 min")])
def test_run_phrase(seconds, long, short):
    assert (times.run_phrase(seconds), times.run_phrase(seconds, short=True)) == (long, short)


def test_a_header_without_runs_in_is_reported(course):
    nbs, run_times = course
    bare = _write_notebook(nbs[0].parent, "01_one.ipynb", "# NN · T\n\n**Time:** about 30 minutes.")
    assert "01_one.ipynb: the header has no '**Runs in** ... on 2 CPU cores' line" in \
        times.disagreements([nbs[0], bare, nbs[2]], run_times)


def test_a_new_notebook_is_reported_not_invented(course):
    nbs, run_times = course
    times.write(nbs, run_times)
    new = _write_notebook(nbs[0].parent, "13_new.ipynb", "# 13 · New\n\n**Time:** about 30 minutes.")
    left = times.write([*nbs, new], run_times)
    assert "13_new.ipynb: no measured run time (run scripts/notebook_times.py --measure notebooks/13_new.ipynb)" in left
    assert sum("no row for 13_new.ipynb" in p for p in left) == 3  # README, guide and 00's map need a person


def test_stale_run_time_and_bad_seconds(course, tmp_path):
    nbs, run_times = course
    stale = dict(run_times, **{"01_one.ipynb": dict(run_times["01_one.ipynb"], code_sha256="0" * 64)})
    assert "01_one.ipynb: run time measured on older code (measure again)" in times.disagreements(nbs, stale)
    with pytest.raises(ValueError, match="seconds"):
        times.record_run_time(nbs[1], 0, tmp_path / "r.json")
    times.record_run_time(nbs[1], 12.34, tmp_path / "r.json")
    assert times.load_run_times(tmp_path / "r.json")["01_one.ipynb"]["seconds"] == 12.3


def test_the_course_states_the_rules_times():
    problems = times.disagreements()
    assert not problems, "\n".join(problems)


def test_the_guides_counts_column_is_written_and_checked(course):
    nbs, run_times = course
    times.INSTRUCTOR.write_text("| notebook | what | words / code lines / exercises | time (self-study) |\n"
                                "|---|---|---|---|\n| 01 One | b | 700 / 45 / 1 | 45 min |\n", encoding="utf-8")
    assert "docs/INSTRUCTOR.md: 01 counts '700 / 45 / 1', the notebook has '418 / 60 / 2'" in \
        times.disagreements(nbs, run_times)
    times.write(nbs, run_times)
    assert "| 01 One | b | 418 / 60 / 2 | 30 min |" in times.INSTRUCTOR.read_text(encoding="utf-8")
