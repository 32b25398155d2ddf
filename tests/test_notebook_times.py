"""scripts/notebook_times.py: one rule, two figures (read and run, build) for every notebook, and the places
that state them agree with it."""

import json
from types import SimpleNamespace

import pytest

from scripts import notebook_times as times


def _md(source):
    return {"cell_type": "markdown", "source": source}


def _code(source, tags=(), outputs=()):
    return {"cell_type": "code", "source": source, "outputs": list(outputs), "execution_count": 1,
            "metadata": {"tags": list(tags)}}


def _solution(lines, given=2):
    body = "\n".join(f"    y{i} = {i}" for i in range(lines))
    return _code("def f():\n    # BEGIN SOLUTION\n" + body + "\n\n    # END SOLUTION\n" + "\n".join(
        f"z{i} = 1" for i in range(given - 1)), tags=["solution"])


def _check():
    return _code('check_function("Exercise 1.1", f, [])')


def _stream(n):
    return {"output_type": "stream", "name": "stdout", "text": "".join(f"line {i}\n" for i in range(n))}


def _write_notebook(folder, name, header, words=400, code_lines=60, cells=()):
    nb_cells = [_md(header), _md(" ".join(["word"] * words)),
                _code("\n".join(f"x = {i}\n" for i in range(code_lines)))]
    nb_cells += list(cells)
    path = folder / name
    path.write_text(json.dumps({"cells": [dict({"metadata": {}}, **c, id=f"c{i}") for i, c in enumerate(nb_cells)],
                                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    return path


def _exercise(k, *parts):
    """An exercise heading with one solution cell (and its check) per part, each with that many learner lines."""
    cells = [_md(f"### Exercise 1.{k}: task")]
    for lines in parts:
        cells += [_solution(lines), _check()]
    return cells


HEADER = "# NN · T\n\n**Time:** about 15 minutes: all of it. **Runs in:** 5 seconds on 2 CPU cores."


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A tiny course: notebook 00 with a map, 01 and 02, a README and an instructor guide."""
    map_cell = ("## 2. The map of the course\n\n| notebook | question | read and run | build |\n|---|---|---|---|\n"
                "| 01 One | why? | 45 min | 45 min |\n| 02 Two | how? | 1 h 50 min | 1 h 50 min |\n"
                "| **core (00-08)** | all | 5 min | 5 min |\n")
    nbs = [_write_notebook(tmp_path, "00_start.ipynb", HEADER, cells=[*_exercise(1, 2), _md(map_cell)]),
           _write_notebook(tmp_path, "01_one.ipynb", HEADER, cells=[*_exercise(1, 4), *_exercise(2, 1)]),
           _write_notebook(tmp_path, "02_two.ipynb", HEADER.replace("**Time:**", "**Time**"),
                           cells=[*_exercise(1, 5, 3), *_exercise(2, 9)])]
    readme = tmp_path / "README.md"
    readme.write_text("| notebook | what | read and run | build |\n|---|---|---|---|\n"
                      "| [00 S](notebooks/00_start.ipynb) | a | 15 min | 15 min |\n"
                      "| [01 One](notebooks/01_one.ipynb) | b | 45 min | 45 min |\n| [02 Two](x) | c | 60 min | 1 h |\n"
                      "| **core (00-08)** | d | 1 h | 2 h |\n\nAfter.\n", encoding="utf-8")
    guide = tmp_path / "INSTRUCTOR.md"
    guide.write_text(f"Paces: 130 words a minute.\n\n| notebook | what | {times.COUNTS_COLUMN} | read and run | "
                     "build | runs in |\n|---|---|---|---|---|---|\n| 00 S | a | 1 | 15 min | 15 min | 5 s |\n"
                     "| 01 One | b | 2 | 45 min | 45 min (exercises later) | 5 s |\n"
                     "| 02 Two | c | 3 | 60 min | 1 h | 5 s |\n| **core (00-08)** | all | | 1 h | 2 h | |\n",
                     encoding="utf-8")
    monkeypatch.setattr(times, "README", readme)
    monkeypatch.setattr(times, "INSTRUCTOR", guide)
    run_times = {nb.name: {"seconds": 90.0, "code_sha256": times.code_fingerprint(nb)} for nb in nbs}
    return nbs, run_times


@pytest.mark.parametrize(("text", "minutes"), [("45 min", 45), ("about 1 hour 50 minutes", 110),
                                               ("about an hour", 60), ("1 h 50 min", 110), ("110 min (later)", 110),
                                               ("50 min, more for your own folder", 50), ("take home", None)])
def test_parse_minutes(text, minutes):
    assert times.parse_minutes(text) == minutes


def test_the_two_figures(tmp_path):
    """Read and run reads every line; build writes the learner's lines at 2.2 minutes each, 3 minutes a part,
    at least 10 minutes a heading."""
    cells = [*_exercise(1, 4, 6), *_exercise(2, 1), _code("print(1)", outputs=[_stream(25)])]
    path = _write_notebook(tmp_path, "01_one.ipynb", "# 01 · T", words=390, code_lines=30, cells=cells)
    t = times.count(path, {path.name: {"seconds": 60.0, "code_sha256": ""}})
    words = 390 + 4 + 4 * 2  # the header's "# 01 · T" and each heading's "### Exercise 1.k: task"
    # code: 30 given + 3 solution cells of (def, markers, a given line, learner lines) + 3 checks + print
    assert (t.words, t.learner_lines, t.output_lines, t.questions) == (words, 11, 25, 0)
    assert t.exercises == ((4, 6), (1,)) and t.parts == 3
    assert t.code_lines == 30 + (4 + 4) + (4 + 6) + (4 + 1) + 3 + 1
    common = words / 130 + 25 / 10 + 1  # prose, output, the minute of run time
    assert t.exact_read == pytest.approx(common + t.code_lines / 15)
    # Exercise 1.1: two parts, 3 + 2.2 x 4 and 3 + 2.2 x 6 = 28; Exercise 1.2: 3 + 2.2 = 5.2, raised to 10
    assert t.exercise_minutes == pytest.approx(28 + 10)
    assert t.exact_build == pytest.approx(common + (t.code_lines - 11) / 15 + 38)
    assert (t.read_minutes, t.build_minutes) == (5 * round(t.exact_read / 5), 5 * round(t.exact_build / 5))
    assert t.counts == f"{words} / {t.code_lines - 11} / 11 / 25 / 3 / 0"


def test_output_lines_count_streams_text_and_table_rows_not_pictures():
    table = {"output_type": "execute_result", "data": {"text/plain": "a\nb", "text/html": "<table><tr>1</tr>"
                                                       "<tr>2</tr><tr>3</tr></table>"}}
    plain = {"output_type": "execute_result", "data": {"text/plain": ["(1,\n", " 2)"]}}
    picture = {"output_type": "display_data", "data": {"image/png": "xx", "text/plain": "<Figure>"}}
    assert times.output_lines(_code("x", outputs=[_stream(4), table, plain, picture])) == 4 + 3 + 2


@pytest.mark.parametrize(("minutes", "phrase"), [(5, "5 min"), (45, "45 min"), (60, "1 h"), (100, "1 h 40 min"),
                                                 (125, "2 h 5 min"), (720, "12 h")])
def test_time_phrase(minutes, phrase):
    assert times.time_phrase(minutes) == phrase
    assert times.parse_minutes(phrase) == minutes


def test_guard_cells_and_their_output_are_not_counted(tmp_path):
    guard = _code("assert x == 1, 'the text says one'\nassert y == 2, 'the text says two'", tags=["guard"],
                  outputs=[_stream(3)])
    plain = _code("assert x == 1\n\nprint(x)", outputs=[_stream(1)])
    path = _write_notebook(tmp_path, "01_one.ipynb", "# 01 · T", words=0, code_lines=3, cells=[guard, plain])
    t = times.count(path, {})
    assert (t.code_lines, t.output_lines) == (3 + 2, 1)


def test_extra_practice_is_homework(tmp_path):
    extra = [_md("## Exercises"), *_exercise(1, 3),
             _md("## Extra practice\nFor later, at home."), *_exercise(2, 12),
             _code("a = 1\nb = 2", outputs=[_stream(9)])]
    path = _write_notebook(tmp_path, "01_one.ipynb", "# 01 · T", words=10, code_lines=4, cells=extra)
    t = times.count(path, {})
    assert (t.exercises, t.learner_lines, t.output_lines) == (((3,),), 3, 0)
    after = _write_notebook(tmp_path, "02_two.ipynb", "# 02 · T", words=0, code_lines=0,
                            cells=[*extra, _md("## Back in the lesson"), *_exercise(3, 2)])
    assert times.count(after, {}).exercises == ((3,), (2,))


def test_check_your_understanding_questions_are_counted(tmp_path):
    check = _md("## Check your understanding\n1. Why chunk?\n2. What does overlap cost?\n   1. a sub-point\n"
                "<details><summary>Answers</summary>\n\n1. Because.\n2. Chunks.\n</details>\n\n"
                "```\n3. not a question\n```\n")
    more = _md("3. A third question, in the next cell.\n\n## Summary\n1. not a question")
    path = _write_notebook(tmp_path, "01_one.ipynb", "# 01 · T", words=0, code_lines=0, cells=[check, more])
    t = times.count(path, {})
    assert t.questions == 3
    assert t.exact_read == pytest.approx(t.words / 130 + 3)


def test_sittings_are_timed_one_by_one(tmp_path, monkeypatch):
    monkeypatch.setattr(times, "README", tmp_path / "none.md")
    monkeypatch.setattr(times, "INSTRUCTOR", tmp_path / "none.md")
    header = "# 01 · T\n\n**Time:** about 3 hours. **Runs in:** about 60 seconds on 2 CPU cores."
    cells = [*_exercise(1, 15, 15), _md("## Sitting 2: the second half\nOn we go."), *_exercise(2, 15, 14)]
    path = _write_notebook(tmp_path, "01_one.ipynb", header, words=1300, code_lines=150, cells=cells)
    run_times = {path.name: {"seconds": 60.0, "code_sha256": times.code_fingerprint(path)}}
    t = times.count(path, run_times)
    first, second = t.sittings
    assert first.exercises == ((15, 15),) and second.exercises == ((15, 14),)
    assert (first.run_seconds, second.run_seconds) == (60.0, None)  # the run time is charged once
    assert t.exact_build == pytest.approx(first.exact_build + second.exact_build)
    assert t.build_minutes > times.SITTING_CAP_MINUTES >= max(first.build_minutes, second.build_minutes)
    times.write([path], run_times)
    text = "".join(json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"])
    assert (f"**Time:** about {times.time_phrase(t.build_minutes)} to build in two sittings "
            f"({times.time_phrase(first.build_minutes)}, {times.time_phrase(second.build_minutes)}), "
            f"{times.time_phrase(t.read_minutes)} to read and run. **Runs in:** about 60 seconds") in text
    assert times.count(path, run_times) == t  # writing the figures changes no count
    assert not times.cap_problems([t])
    one = _write_notebook(tmp_path, "02_two.ipynb", header, words=1300, code_lines=150,
                          cells=[*_exercise(1, 15, 15), *_exercise(2, 15, 14)])
    assert times.cap_problems([times.count(one, run_times)]) == [
        f"02_two.ipynb: one sitting takes {times.time_phrase(t.build_minutes)} to build, over the cap of 2 h "
        "(add a 'Sitting N: ...' heading at a break)"]


def test_an_exercise_may_go_on_into_the_next_sitting(tmp_path):
    """Its parts are charged where they are; the heading's minimum is not charged twice."""
    cells = [*_exercise(1, 1), _md("## Sitting 2: later"), _solution(3), _check(), _solution(2), _check()]
    path = _write_notebook(tmp_path, "01_one.ipynb", "# 01 · T", cells=cells)
    t = times.count(path, {})
    first, second = t.sittings
    assert (first.exercises, second.exercises, second.continued) == (((1,),), ((3, 2),), True)
    assert first.exercise_minutes == 10 and second.exercise_minutes == pytest.approx(6 + 2.2 * 5)
    assert t.exercises == ((1, 3, 2),) and t.exercise_minutes == pytest.approx(9 + 2.2 * 6)
    orphan = _write_notebook(tmp_path, "02_two.ipynb", "# 02 · T", cells=[_solution(3), _check()])
    with pytest.raises(ValueError, match=r"before any '### Exercise N\.k' heading"):
        times.count(orphan, {})


def test_disagreements_then_write_then_agreement(course):
    nbs, run_times = course
    problems = times.disagreements(nbs, run_times)
    t1, t2 = times.count(nbs[1], run_times), times.count(nbs[2], run_times)
    assert f"01_one.ipynb: header says '**Time:** about 15 minutes: all of it.', the rule gives " \
           f"{times.time_sentence(t1)!r}" in problems
    assert any(p.startswith("README.md: 02 build says '1 h'") for p in problems)
    assert any(p.startswith("00_start.ipynb map: 02 read and run says '1 h 50 min'") for p in problems)
    assert any(p.startswith("docs/INSTRUCTOR.md: core build says '2 h'") for p in problems)
    assert "01_one.ipynb: header runs in '5 seconds', measured 'about 90 seconds'" in problems
    assert "docs/INSTRUCTOR.md: 02 runs in '5 s', measured '~90 s'" in problems
    assert "docs/INSTRUCTOR.md: 01 counts '2', the notebook has " + repr(t1.counts) in problems
    assert times.write(nbs, run_times) == []
    assert times.disagreements(nbs, run_times) == []
    assert times.write(nbs, run_times) == [] and times.disagreements(nbs, run_times) == []  # idempotent
    guide = times.INSTRUCTOR.read_text(encoding="utf-8")
    b1 = times.time_phrase(t1.build_minutes)
    assert f"| 01 One | b | {t1.counts} | {times.time_phrase(t1.read_minutes)} | {b1} (exercises later) | ~90 s |" \
        in guide  # the note is kept
    read, build = times.core_totals([times.count(p, run_times) for p in nbs])
    assert read == sum(times.count(p, run_times).read_minutes for p in nbs)
    assert f"| **core (00-08)** | all |  | {times.time_phrase(read)} | {times.time_phrase(build)} |" in guide
    readme = times.README.read_text(encoding="utf-8")
    assert f"| [02 Two](x) | c | {times.time_phrase(t2.read_minutes)} | {times.time_phrase(t2.build_minutes)} |" \
        in readme and readme.endswith("\n\nAfter.\n")
    map_cell = "".join(json.loads(nbs[0].read_text(encoding="utf-8"))["cells"][-1]["source"])
    assert f"| 02 Two | how? | {times.time_phrase(t2.read_minutes)} | {times.time_phrase(t2.build_minutes)} |" \
        in map_cell
    header = "".join(json.loads(nbs[2].read_text(encoding="utf-8"))["cells"][0]["source"])
    assert header == f"# NN · T\n\n{times.time_sentence(t2)} **Runs in:** about 90 seconds on 2 CPU cores."


def test_the_guide_may_not_state_a_time_of_its_own(course):
    nbs, run_times = course
    times.write(nbs, run_times)
    text = times.INSTRUCTOR.read_text(encoding="utf-8")
    times.INSTRUCTOR.write_text(text + "\nSelf-study takes about 11 h 50 min for these notebooks: a weekend.\n",
                                encoding="utf-8")
    assert times.disagreements(nbs, run_times) == [
        "docs/INSTRUCTOR.md: a time the rule does not write: "
        "'Self-study takes about 11 h 50 min for these notebooks: a weekend'"]
    assert times.stale_guide_sentences("A 3-hour workshop in 30-minute blocks.") == []


def test_a_missing_core_row_is_reported(course):
    nbs, run_times = course
    times.README.write_text(times.README.read_text(encoding="utf-8").replace("| **core (00-08)** | d | 1 h | 2 h |\n",
                                                                             ""), encoding="utf-8")
    assert sum(p.startswith("README.md: no '") and "for core" in p for p in times.write(nbs, run_times)) == 2


def test_the_caps():
    def t(number, build, read):  # a stand-in with the figures the caps read
        return SimpleNamespace(number=number, name=f"{number}_x.ipynb", build_minutes=build, read_minutes=read,
                               sittings=(), core=number in times.CORE, words=0)

    fits = [t(f"{n:02d}", 120, 60) for n in range(9)] + [t("09", 300, 300)]  # 9 x 120 = 18 h; 09 is beyond
    assert times.cap_problems(fits) == []
    over = [t(f"{n:02d}", 115, 70) for n in range(8)] + [t("08", 125, 70)]
    assert times.cap_problems(over) == [
        "08_x.ipynb: one sitting takes 2 h 5 min to build, over the cap of 2 h (add a 'Sitting N: ...' heading at a "
        "break)",
        "the core (00-08): 10 h 30 min to read and run, over the cap of 10 h"]
    assert times.cap_problems([t(f"{n:02d}", 120, 50) for n in range(9)] + [t("00", 120, 5)] * 2) == [
        "the core (00-08): 22 h to build, over the cap of 20 h"]


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
    assert "13_new.ipynb: no measured run time (run python -m scripts.notebook_times --measure " \
           "notebooks/13_new.ipynb)" in left
    assert sum("cell for 13 " in p for p in left) == 6  # two columns in README, guide and 00's map


def test_stale_run_time_and_bad_seconds(course, tmp_path):
    nbs, run_times = course
    stale = dict(run_times, **{"01_one.ipynb": dict(run_times["01_one.ipynb"], code_sha256="0" * 64)})
    assert "01_one.ipynb: run time measured on older code (measure again)" in times.disagreements(nbs, stale)
    with pytest.raises(ValueError, match="seconds"):
        times.record_run_time(nbs[1], 0, tmp_path / "r.json")
    times.record_run_time(nbs[1], 12.34, tmp_path / "r.json")
    assert times.load_run_times(tmp_path / "r.json")["01_one.ipynb"]["seconds"] == 12.3


def test_the_course_states_the_rules_times():
    """Every header, README's map, 00's map and the guide's table and prose agree with the rule."""
    problems = times.disagreements()
    assert not problems, "\n".join(problems)


def test_the_core_keeps_its_caps():
    """Words (26,000 in all, 3,500 a notebook), build (20 h), read and run (10 h), sittings (2 h each)."""
    core = [times.count(p) for p in times.course_notebooks() if p.name[:2] in times.CORE]
    problems = times.cap_problems(core)
    assert not problems, "\n".join(problems)


def test_the_word_caps():
    def t(number, words):
        return times.NotebookTime(number, f"{number}_x.ipynb", words=words)

    assert times.cap_problems([t(f"{n:02d}", 2_800) for n in range(9)]) == []
    over = [t(f"{n:02d}", 2_800) for n in range(8)] + [t("08", 3_700)]
    assert times.cap_problems(over) == [
        "08_x.ipynb: 3,700 words of prose, over the cap of 3,500 for a core notebook",
        "the core (00-08): 26,100 words of prose, over the cap of 26,000"]


def test_root_points_at_another_checkout(tmp_path, monkeypatch):
    for name in ("NOTEBOOKS_DIR", "RUN_TIMES", "README", "INSTRUCTOR"):
        monkeypatch.setattr(times, name, getattr(times, name))  # restored after the test
    (tmp_path / "notebooks").mkdir()
    _write_notebook(tmp_path / "notebooks", "01_one.ipynb", "# 01 · T\n\n**Time:** about 5 min.")
    times._use_root(tmp_path)
    assert [p.name for p in times._notebooks()] == ["01_one.ipynb"]
    assert tmp_path.resolve() / "README.md" == times.README
