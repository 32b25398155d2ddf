"""scripts/notebook_times.py: one rule for every stated notebook time, and the places agree with it."""

import json

import pytest

from scripts import notebook_times as times


def _write_notebook(folder, name, header, words=400, code_lines=60, exercises=2, extra=(), cells=()):
    nb_cells = [{"cell_type": "markdown", "source": header},
                {"cell_type": "markdown", "source": " ".join(["word"] * words)},
                {"cell_type": "code", "source": "\n".join(f"x = {i}\n" for i in range(code_lines)), "outputs": [],
                 "execution_count": 1}]
    nb_cells += [{"cell_type": "markdown", "source": f"### Exercise 1.{i + 1}: task"} for i in range(exercises)]
    nb_cells += [{"cell_type": "markdown", "source": text} for text in extra]
    nb_cells += list(cells)
    path = folder / name
    path.write_text(json.dumps({"cells": [dict({"metadata": {}}, **c, id=f"c{i}") for i, c in enumerate(nb_cells)],
                                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    return path


def _code(source, tags=()):
    return {"cell_type": "code", "source": source, "outputs": [], "execution_count": 1,
            "metadata": {"tags": list(tags)}}


def _md(source):
    return {"cell_type": "markdown", "source": source}


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
    assert (t.words, t.code_lines, t.exercises, t.questions, t.run_seconds) == (418, 60, 2, 0, 90.0)
    # 418 / 130 + 60 / 15 + 2 * 15 + 90 / 60 = 38.7 -> 40
    assert t.exact_minutes == pytest.approx(418 / 130 + 4 + 30 + 1.5) and t.minutes == 40
    assert t.counts == "418 / 60 / 2 / 0"
    assert times.count(nbs[1], {}).run_seconds is None


@pytest.mark.parametrize(("minutes", "phrase"), [(5, "5 min"), (45, "45 min"), (60, "1 h"), (100, "1 h 40 min"),
                                                 (125, "2 h 5 min"), (720, "12 h")])
def test_time_phrase(minutes, phrase):
    assert times.time_phrase(minutes) == phrase
    assert times.parse_minutes(phrase) == minutes


def test_guard_cells_are_not_counted(tmp_path):
    guard = _code("assert x == 1, 'the text says one'\nassert y == 2, 'the text says two'", tags=["guard"])
    plain = _code("assert x == 1\n\nprint(x)")
    path = _write_notebook(tmp_path, "01_one.ipynb", "# 01 · T", words=0, code_lines=3, exercises=0,
                           cells=[guard, plain])
    assert times.count(path, {}).code_lines == 3 + 2  # blank lines and the guard cell's two lines left out


def test_extra_practice_is_homework(tmp_path):
    extra = [_md("## Exercises\n\n### Exercise 1.1: counted\nDo it."),
             _md("## Extra practice\nFor later, at home.\n\n### Exercise 1.2: homework\nMore words here."),
             _code("a = 1\nb = 2"),
             _md("### Exercise 1.3: homework too")]
    path = _write_notebook(tmp_path, "01_one.ipynb", "# 01 · T", words=10, code_lines=4, exercises=0, cells=extra)
    t = times.count(path, {})
    assert (t.exercises, t.code_lines) == (1, 4)
    assert t.words == 4 + 10 + len("## Exercises ### Exercise 1.1: counted Do it.".split())
    # a heading of the same level ends the section: what follows is counted again
    after = _write_notebook(tmp_path, "02_two.ipynb", "# 02 · T", words=0, code_lines=0, exercises=0,
                            cells=[*extra, _md("## Back in the lesson\n### Exercise 2.1: counted")])
    assert times.count(after, {}).exercises == 2


def test_check_your_understanding_questions_are_counted(tmp_path):
    check = _md("## Check your understanding\n1. Why chunk?\n2. What does overlap cost?\n   1. a sub-point\n"
                "<details><summary>Answers</summary>\n\n1. Because.\n2. Chunks.\n</details>\n\n"
                "```\n3. not a question\n```\n")
    more = _md("3. A third question, in the next cell.\n\n## Summary\n1. not a question")
    path = _write_notebook(tmp_path, "01_one.ipynb", "# 01 · T", words=0, code_lines=0, exercises=0,
                           cells=[check, more])
    t = times.count(path, {})
    assert t.questions == 3
    assert t.exact_minutes == pytest.approx(t.words / 130 + 3)


def test_the_header_states_one_figure(tmp_path, monkeypatch):
    monkeypatch.setattr(times, "README", tmp_path / "none.md")
    monkeypatch.setattr(times, "INSTRUCTOR", tmp_path / "none.md")
    header = ("# 01 · T\n\n**Time:** about 30 minutes: 4 to read the prose (794 words), 2 for the 47 lines of "
              "code. **Runs in:** about 5 seconds on 2 CPU cores.")
    # 1,950 words (+ header) / 130 + 600 lines / 15 + 3 exercises + 2 questions + 60 s: 15.1 + 40 + 45 + 2 + 1
    path = _write_notebook(tmp_path, "01_one.ipynb", header, words=1950, code_lines=600, exercises=3,
                           cells=[_md("## Check your understanding\n1. One?\n2. Two?")])
    run_times = {path.name: {"seconds": 60.0, "code_sha256": times.code_fingerprint(path)}}
    t = times.count(path, run_times)
    assert t.minutes == 105
    times.write([path], run_times)
    text = "".join(json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"])
    assert text.endswith("**Time:** about 1 h 45 min. **Runs in:** about 60 seconds on 2 CPU cores.")
    assert times.count(path, run_times) == t  # writing the figure changes no count
    assert not [p for p in times.disagreements([path], run_times) if p.startswith("01_one")]


def test_a_breakdown_in_the_headers_own_terms_is_reported(course):
    nbs, run_times = course
    times.write(nbs, run_times)
    notebook = json.loads(nbs[1].read_text(encoding="utf-8"))
    notebook["cells"][0]["source"] = ("# NN · T\n\n**Time:** about 40 minutes: 3 to read the prose (418 words), "
                                      "4 for the 60 lines of code. **Runs in:** about 90 seconds on 2 CPU cores.")
    nbs[1].write_text(json.dumps(notebook), encoding="utf-8")
    problems = times.disagreements(nbs, run_times)
    assert any(p.startswith("01_one.ipynb: header's Time sentence") and "about 40 min." in p for p in problems)


def test_disagreements_then_write_then_agreement(course):
    nbs, run_times = course
    problems = times.disagreements(nbs, run_times)
    assert "01_one.ipynb: header says 15 min, the rule gives 40" in problems
    assert any(p.startswith("README.md: 02 says '60 min'") for p in problems)
    assert any(p.startswith("00_start.ipynb map: 02 says '1 h 50 min'") for p in problems)
    assert "01_one.ipynb: header runs in '5 seconds', measured 'about 90 seconds'" in problems
    assert "docs/INSTRUCTOR.md: 02 runs in '5 s', measured '~90 s'" in problems
    assert "docs/INSTRUCTOR.md: 01's row has no 'words / code lines / exercises / questions' column (--write adds it)" \
        in problems
    assert times.write(nbs, run_times) == []
    assert times.disagreements(nbs, run_times) == []
    assert times.write(nbs, run_times) == [] and times.disagreements(nbs, run_times) == []  # idempotent
    guide = times.INSTRUCTOR.read_text(encoding="utf-8")
    assert guide.startswith("| notebook | what | words / code lines / exercises / questions | time (self-study) | "
                            "runs in |\n|---|---|---|---|---|\n")
    assert "| 01 One | b | 418 / 60 / 2 / 0 | 40 min (exercises later) | ~90 s |" in guide  # the note is kept
    t2 = times.count(nbs[2], run_times)  # 4 exercises: 60 + 4.3 + 4 + 1.5 = 69.8 -> 70
    assert t2.minutes == 70
    assert f"| 02 Two | c | {t2.counts} | 1 h 10 min | ~90 s |" in guide
    readme = times.README.read_text(encoding="utf-8")
    assert "| [02 Two](x) | c | 1 h 10 min |" in readme and readme.endswith("\n\nAfter.\n")
    map_cell = "".join(json.loads(nbs[0].read_text(encoding="utf-8"))["cells"][4]["source"])
    assert "| 02 Two | how? | 1 h 10 min |" in map_cell
    header = "".join(json.loads(nbs[2].read_text(encoding="utf-8"))["cells"][0]["source"])
    assert header == "# NN · T\n\n**Time:** about 1 h 10 min. **Runs in:** about 90 seconds on 2 CPU cores."


def test_the_caps(tmp_path):
    def t(number, minutes):
        return times.NotebookTime(number, f"{number}_x.ipynb", words=0, code_lines=0, exercises=0,
                                  run_seconds=minutes * 60.0)

    fits = [t(f"{n:02d}", 80) for n in range(9)] + [t("09", 300)]  # 9 x 80 = 720 = 12 h; 09 is beyond the core
    assert times.cap_problems(fits) == []
    over = [t(f"{n:02d}", 85) for n in range(8)] + [t("08", 105)]
    assert times.cap_problems(over) == [
        "08_x.ipynb: 1 h 45 min, over the cap of 100 min for a core notebook",
        "the core (00-08): 13 h 5 min, over the cap of 12 h"]
    assert times.report(over)[-1] == "core (00-08): 13 h 5 min (785 min); beyond: 0 min; course: 13 h 5 min"


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


def test_the_core_keeps_its_caps():
    """The core (00-08) states at most 12 hours and each of its notebooks at most 100 minutes (issue 30)."""
    problems = times.cap_problems([times.count(p) for p in times.course_notebooks()])
    assert not problems, "\n".join(problems)


def test_the_guides_old_counts_column_gets_its_questions(course):
    nbs, run_times = course
    times.INSTRUCTOR.write_text("| notebook | what | words / code lines / exercises | time (self-study) |\n"
                                "|---|---|---|---|\n| 01 One | b | 700 / 45 / 1 | 45 min |\n", encoding="utf-8")
    problems = times.disagreements(nbs, run_times)
    assert "docs/INSTRUCTOR.md: 01 counts '700 / 45 / 1', the notebook has '418 / 60 / 2 / 0'" in problems
    assert any("headed 'words / code lines / exercises', not" in p for p in problems)
    times.write(nbs, run_times)
    assert times.INSTRUCTOR.read_text(encoding="utf-8").startswith(
        "| notebook | what | words / code lines / exercises / questions | time (self-study) |\n|---|---|---|---|\n"
        "| 01 One | b | 418 / 60 / 2 / 0 | 40 min |")


def test_root_points_at_another_checkout(tmp_path, monkeypatch):
    for name in ("NOTEBOOKS_DIR", "RUN_TIMES", "README", "INSTRUCTOR"):
        monkeypatch.setattr(times, name, getattr(times, name))  # restored after the test
    (tmp_path / "notebooks").mkdir()
    _write_notebook(tmp_path / "notebooks", "01_one.ipynb", "# 01 · T\n\n**Time:** about 5 min.")
    times._use_root(tmp_path)
    assert [p.name for p in times._notebooks()] == ["01_one.ipynb"]
    assert tmp_path.resolve() / "README.md" == times.README
