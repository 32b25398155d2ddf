"""Run a notebook's cells once in this process, then its exercises' self-check cells with a learner's answers.

Used by the tests that feed each self-check plausible wrong answers (tests/test_exercise_checks_*.py).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import matplotlib.pyplot as plt
import nbformat
import pytest

from course_lib.exercises import SelfCheckError
from scripts import build_student_edition as edition

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


@contextlib.contextmanager
def in_notebooks():
    """Run in the notebooks' folder, as the notebooks do (they read ../data and ../results)."""
    here = os.getcwd()
    os.chdir(NOTEBOOKS)
    try:
        yield
    finally:
        os.chdir(here)


PROBLEM_LIMIT = 600  # characters: the most a check may say about what is wrong (issue 47), hints aside


def _short_enough(message: str) -> str:
    """The message of a rejected answer, after checking that what it says is wrong (its first line) is short."""
    problem = message.split("\nHint")[0]
    assert len(problem) <= PROBLEM_LIMIT, f"a {len(problem):,}-character message: {problem[:300]}…"
    return message


class Notebook:
    """A notebook's code cells (all, or those named by id) run once: the namespace its exercises' checks need."""

    def __init__(self, name: str, cell_ids: list[str] | None = None) -> None:
        self.notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
        self.exercises = {e.name: e for e in edition.find_exercises(self.notebook)}
        by_id = {cell.get("id"): cell for cell in self.notebook.cells}
        cells = ([c for c in self.notebook.cells if c.cell_type == "code"] if cell_ids is None
                 else [by_id[cell_id] for cell_id in cell_ids])
        self.ns: dict = {"__name__": "__main__"}
        # rc_context: a notebook's plt.rcParams settings (05 sets font sizes) must not leak into later tests
        with in_notebooks(), contextlib.redirect_stdout(io.StringIO()), plt.rc_context():
            for cell in cells:
                exec(compile(cell.source, f"{name}:{cell.get('id')}", "exec"), self.ns)
        plt.close("all")

    def __getitem__(self, key: str):
        return self.ns[key]

    def check(self, exercise: str, **learner) -> str:
        """Run the exercise's self-check cell with the learner's definitions; return what it printed."""
        namespace = dict(self.ns, **learner)
        out = io.StringIO()
        with in_notebooks(), contextlib.redirect_stdout(out):
            exec(self.notebook.cells[self.exercises[exercise].check].source, namespace)
        plt.close("all")
        return out.getvalue()

    def parts(self, exercise: str) -> list[edition.Exercise]:
        """An exercise's parts in notebook order: each of its solution cells with its self-check cell."""
        return [e for e in edition.find_exercises(self.notebook) if e.name == exercise]

    def run_part(self, exercise: str, part: int, *, again: tuple[str, ...] | None = None,
                 before: tuple[str, ...] = (), **learner) -> tuple[str, dict]:
        """Run one part's self-check cell with the learner's definitions in place; return what it printed and
        the namespace it ran in. In a copy of the notebook's namespace the given cells `before` (ids) run first,
        then the solution cells of the exercises named in `again` (by default this exercise), so that a replaced
        function is the one the other parts call."""
        namespace = dict(self.ns)
        by_id = {cell.get("id"): cell for cell in self.notebook.cells}
        with in_notebooks(), contextlib.redirect_stdout(io.StringIO()):
            for cell_id in before:
                exec(by_id[cell_id].source, namespace)
            for name in (exercise,) if again is None else again:
                for solved in self.parts(name):
                    exec(self.notebook.cells[solved.solution].source, namespace)
        namespace.update(learner)
        out = io.StringIO()
        with in_notebooks(), contextlib.redirect_stdout(out):
            exec(self.notebook.cells[self.parts(exercise)[part].check].source, namespace)
        plt.close("all")
        return out.getvalue(), namespace

    def accepts_part(self, exercise: str, part: int, **kwargs) -> str:
        """Run one part's check as `run_part` does and assert that every self-check in it passed; return what it
        printed."""
        printed = self.run_part(exercise, part, **kwargs)[0]
        source = self.notebook.cells[self.parts(exercise)[part].check].source
        checks = len(re.findall(r"\bcheck_(?:function|problems)\(", source))
        assert printed.count(f"✓ {exercise}") == checks and "not solved" not in printed, printed
        return printed

    def rejects_part(self, exercise: str, part: int, **kwargs) -> str:
        """Run one part's check as `run_part` does, expect a SelfCheckError and return its message."""
        with pytest.raises(SelfCheckError) as caught:
            self.run_part(exercise, part, **kwargs)
        return _short_enough(str(caught.value))

    def reference(self, exercise: str) -> dict:
        """What the exercise's solution cell defines, from the notebook's reference solution."""
        namespace = dict(self.ns)
        with contextlib.redirect_stdout(io.StringIO()):
            exec(self.notebook.cells[self.exercises[exercise].solution].source, namespace)
        return {k: v for k, v in namespace.items() if k not in self.ns or self.ns[k] is not v}

    def accepts(self, exercise: str, **learner) -> None:
        printed = self.check(exercise, **learner)
        assert f"✓ {exercise}" in printed, printed

    def rejects(self, exercise: str, **learner) -> str:
        with pytest.raises(SelfCheckError) as caught:
            self.check(exercise, **learner)
        return _short_enough(str(caught.value))
