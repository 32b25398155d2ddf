"""The learner's own copy of the course (`make lab`), `make fresh NB=..` and `make lab-solutions`.

`make lab` opens my-course/: the student edition (no solution code), written on first use and never
overwritten, with links to data/ and results/ so the notebooks' relative paths work. A second build, or
a new version of the course, keeps every notebook the learner has byte for byte and only adds the
missing ones; `make clean` leaves the copy alone; the solved notebooks open from a separate copy.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import nbformat
import pytest

from scripts import build_student_edition as edition
from scripts import learner_copy
from tests.test_student_edition import _solution_lines, run, unreported_checks

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = edition.course_notebooks()
SMALL = [p for p in NOTEBOOKS if p.name[:2] in ("00", "04")]  # a small course for the build tests
RUN_ALL = ROOT / "notebooks" / "04_recursive_splitting.ipynb"  # no model: Run All in about 10 s


def _student_bytes(path: Path, tmp: Path) -> bytes:
    """The student edition of one notebook, as `make student` writes it."""
    (written,) = edition.build(tmp / "student", [path])
    return written.read_bytes()


@pytest.fixture(scope="module")
def full_copy(tmp_path_factory) -> tuple[Path, learner_copy.CopyReport]:
    out = tmp_path_factory.mktemp("learner") / "my-course"
    return out, learner_copy.update(out)


def _small_course(tmp_path: Path) -> list[Path]:
    """A copy of two course notebooks in tmp_path/course/ (with the figures they show), which a test may change
    as a new version would."""
    folder = tmp_path / "course"
    folder.mkdir()
    edition.copy_inside(edition.files_inside(SMALL), folder)
    return [Path(shutil.copy(path, folder / path.name)) for path in SMALL]


# --- the first build --------------------------------------------------------------------------------------

def test_the_copy_is_the_student_edition_with_links_to_the_course_folders(full_copy, tmp_path):
    out, report = full_copy
    assert report.created and report.added == [p.name for p in NOTEBOOKS] and not report.kept
    assert sorted(p.name for p in (out / "notebooks").glob("*.ipynb")) == [p.name for p in NOTEBOOKS]
    for path in SMALL:  # byte for byte what `make student` writes
        assert (out / "notebooks" / path.name).read_bytes() == _student_bytes(path, tmp_path / path.stem)
    for folder in edition.folders_beside(NOTEBOOKS):  # ../data, ../results: linked, not copied
        link = out / folder
        assert link.is_symlink() and not os.path.isabs(os.readlink(link)), f"{folder} should be a relative link"
        assert link.resolve() == (ROOT / folder).resolve()
    figures = out / "notebooks" / "figures"  # what the Markdown shows: copied (JupyterLab serves no link out)
    assert not figures.is_symlink() and sorted(report.figures) == sorted(
        f"figures/{p.name}" for p in (ROOT / "notebooks" / "figures").glob("*.svg"))
    assert (out / "notebooks" / ".." / "data" / "xr12_manual.md").is_file()
    assert (out / "notebooks" / ".." / "results" / "capstone_chunk_eval.json").is_file()
    lines = "\n".join(report.lines())
    assert "never overwritten" in lines and "make fresh NB=" in lines and "make lab-solutions" in lines


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_copy_holds_no_solution_code(full_copy, path):
    out, _ = full_copy
    original = nbformat.read(path, as_version=4)
    text = (out / "notebooks" / path.name).read_text(encoding="utf-8")
    assert edition.BEGIN not in text and edition.END not in text
    mine = nbformat.reads(text, as_version=4)
    for exercise, at in zip(edition.find_exercises(original), edition.student_exercises(original)):
        stub = mine.cells[at.solution].source
        assert "raise NotImplementedError" in stub, f"{path.name}, {exercise.name}: no stub"
        for line in _solution_lines(original.cells[exercise.solution].source):
            assert line not in stub, f"{path.name}, {exercise.name}: solution line in the learner's copy: {line!r}"


def test_run_all_in_the_copy_reaches_the_end_and_reports_each_unsolved_exercise(tmp_path):
    out = tmp_path / "my-course"
    learner_copy.update(out, [RUN_ALL])
    path = out / "notebooks" / RUN_ALL.name
    notebook = run(nbformat.read(path, as_version=4), path.parent, allow_errors=False)  # ../data through the link
    exercises = edition.find_exercises(nbformat.read(RUN_ALL, as_version=4))
    assert exercises and not unreported_checks(notebook, {e.check: e.name for e in exercises})


# --- later builds: the learner's notebooks are never written again ----------------------------------------

def _edit(path: Path) -> bytes:
    """What a learner does: an answer in the first stub, saved by JupyterLab (its own formatting)."""
    notebook = nbformat.read(path, as_version=4)
    cell = next(c for c in notebook.cells if "raise NotImplementedError" in c.source)
    cell.source = cell.source.replace("raise NotImplementedError", "return []  # my answer\n    # raise Not")
    data = nbformat.writes(notebook, version=4).replace("\n", "\r\n").encode("utf-8") + b"   "
    path.write_bytes(data)
    return data


def test_a_second_build_keeps_an_edited_notebook_byte_for_byte(tmp_path):
    course = _small_course(tmp_path)
    out = tmp_path / "my-course"
    learner_copy.update(out, course)
    mine = out / "notebooks" / course[1].name
    edited = _edit(mine)
    before = {p.name: p.read_bytes() for p in (out / "notebooks").glob("*.ipynb")}

    report = learner_copy.update(out, course)  # the second `make lab`
    assert not report.created and not report.added and sorted(report.kept) == sorted(p.name for p in course)
    assert mine.read_bytes() == edited
    assert {p.name: p.read_bytes() for p in (out / "notebooks").glob("*.ipynb")} == before
    assert not report.links and not report.figures, "nothing new to link or copy"


def test_a_later_run_brings_the_figures_up_to_date_and_keeps_files_of_yours(tmp_path):
    course = _small_course(tmp_path)
    out = tmp_path / "my-course"
    learner_copy.update(out, course)
    figures = tmp_path / "course" / "figures"
    shown = sorted(p.name for p in figures.iterdir())
    (figures / shown[0]).write_text("<svg>corrected</svg>", encoding="utf-8")  # the course corrects a figure
    (out / "notebooks" / "figures" / "mine.png").write_bytes(b"\x89PNG mine")  # a file of the learner's
    report = learner_copy.update(out, course)
    assert report.figures == [f"figures/{shown[0]}"]
    assert (out / "notebooks" / "figures" / shown[0]).read_text(encoding="utf-8") == "<svg>corrected</svg>"
    assert (out / "notebooks" / "figures" / "mine.png").read_bytes() == b"\x89PNG mine"
    assert f"The course's figures brought up to date in {out / 'notebooks'}/: figures/{shown[0]}" in report.lines()


def test_a_new_version_of_the_course_adds_notebooks_and_changes_none_of_yours(tmp_path):
    course = _small_course(tmp_path)
    out = tmp_path / "my-course"
    learner_copy.update(out, course)
    edited = _edit(out / "notebooks" / course[1].name)
    untouched = (out / "notebooks" / course[0].name).read_bytes()
    for path in course:  # the new version changes both notebooks ...
        notebook = nbformat.read(path, as_version=4)
        notebook.cells.append(nbformat.v4.new_markdown_cell("A paragraph added in a new version of the course."))
        nbformat.write(notebook, path)
    added = Path(shutil.copy(course[1], course[1].parent / "15_new_notebook.ipynb"))  # ... and adds one
    mine_only = out / "notebooks" / "16_renamed_since.ipynb"  # a notebook the course no longer has
    mine_only.write_text("{}", encoding="utf-8")

    report = learner_copy.update(out, [*course, added])
    assert report.added == [added.name]
    assert (out / "notebooks" / added.name).read_bytes() == _student_bytes(added, tmp_path / "new")
    assert (out / "notebooks" / course[1].name).read_bytes() == edited, "an edited notebook is never rewritten"
    assert (out / "notebooks" / course[0].name).read_bytes() == untouched, "nor an untouched one"
    assert sorted(report.newer) == sorted(p.name for p in course)
    assert report.not_in_course == [mine_only.name] and mine_only.read_text(encoding="utf-8") == "{}"
    assert "make fresh NB=00" in "\n".join(report.lines())


def test_a_missing_notebook_is_added_and_the_others_are_left_alone(tmp_path):
    course = _small_course(tmp_path)
    out = tmp_path / "my-course"
    learner_copy.update(out, course)
    edited = _edit(out / "notebooks" / course[1].name)
    (out / "notebooks" / course[0].name).unlink()
    report = learner_copy.update(out, course)
    assert report.added == [course[0].name] and report.kept == [course[1].name]
    assert (out / "notebooks" / course[0].name).read_bytes() == _student_bytes(course[0], tmp_path / "s")
    assert (out / "notebooks" / course[1].name).read_bytes() == edited


def test_fresh_replaces_one_notebook_and_keeps_yours_in_replaced(tmp_path):
    course = _small_course(tmp_path)
    out = tmp_path / "my-course"
    learner_copy.update(out, course)
    edited = _edit(out / "notebooks" / course[1].name)
    other = (out / "notebooks" / course[0].name).read_bytes()

    report = learner_copy.fresh([course[1].name[:2]], out, course)  # `make fresh NB=04`
    assert (out / "notebooks" / course[1].name).read_bytes() == _student_bytes(course[1], tmp_path / "s")
    ((name, backup),) = report.replaced
    assert name == course[1].name and backup.parent == out / "replaced" and backup.read_bytes() == edited
    assert (out / "notebooks" / course[0].name).read_bytes() == other
    assert "is kept as" in "\n".join(report.lines())

    report = learner_copy.fresh(["4"], out, course)  # unchanged since: nothing of the learner's to keep
    assert report.replaced == [(course[1].name, None)] and len(list((out / "replaced").iterdir())) == 1
    for selector in ("99", "nope"):
        with pytest.raises(ValueError, match="give its number"):
            learner_copy.find_notebook(selector, NOTEBOOKS)
    assert learner_copy.find_notebook("notebooks/04_recursive_splitting.ipynb", NOTEBOOKS) == RUN_ALL


# --- where the copy lives, the Makefile, the solutions -------------------------------------------------

def test_the_copy_lives_at_the_top_git_ignored_and_make_clean_keeps_it(tmp_path):
    assert learner_copy.LEARNER_COPY.parent == ROOT and learner_copy.LEARNER_COPY.name == "my-course"
    ignored = subprocess.run(["git", "check-ignore", "-q", "my-course/notebooks/00_start_here.ipynb"], cwd=ROOT)
    assert ignored.returncode == 0, "my-course/ must be git-ignored"
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")  # `make clean` run for real, in a scratch folder
    for folder in (".venv", "build/student", "my-course/notebooks"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "x.ipynb").write_text("{}", encoding="utf-8")
    subprocess.run(["make", "--no-print-directory", "clean"], cwd=tmp_path, check=True, capture_output=True)
    assert not (tmp_path / "build").exists() and not (tmp_path / ".venv").exists()
    assert (tmp_path / "my-course" / "notebooks" / "x.ipynb").read_text(encoding="utf-8") == "{}"


def _make_n(*targets: str) -> str:
    done = subprocess.run(["make", "-n", "--no-print-directory", *targets], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_make_lab_opens_the_learner_copy_and_lab_solutions_the_solved_copy():
    lab = _make_n("lab").splitlines()
    build = next(i for i, line in enumerate(lab) if "-m scripts.learner_copy --out my-course" in line)
    start = next(i for i, line in enumerate(lab) if "jupyter lab " in line)
    assert build < start and "--notebook-dir=my-course/notebooks" in lab[start]
    assert "my-course/notebooks/00_start_here.ipynb" in lab[start]
    solutions = _make_n("lab-solutions")
    assert "-m scripts.learner_copy --solutions --out build/solutions" in solutions
    assert "--notebook-dir=build/solutions/notebooks" in solutions
    assert "-m scripts.learner_copy --out my-course --fresh 03" in _make_n("fresh", "NB=03")


def test_the_solutions_copy_is_solved_read_only_and_rebuilt(tmp_path):
    out = tmp_path / "build" / "solutions"
    committed = {p.name: p.read_bytes() for p in SMALL}
    for _ in range(2):  # the second run empties the first (read-only files included)
        written = learner_copy.solutions(out, SMALL)
    assert [p.name for p in written] == [p.name for p in SMALL]
    for path in written:
        notebook = nbformat.read(path, as_version=4)
        solved = [c for c in notebook.cells if "solution" in c.metadata.get("tags", [])]
        assert solved and all(edition.BEGIN in c.source for c in solved)
        assert all("source_hidden" not in str(c.metadata) for c in solved), "the solutions are shown, not collapsed"
        assert not path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    assert (out / "data").resolve() == (ROOT / "data").resolve()
    assert {p.name: p.read_bytes() for p in SMALL} == committed, "the committed notebooks are never written"
