"""Each notebook's exercise ids start with its own number: `### Exercise 13.2` only in `13_*.ipynb`.

Checked in the notebooks (the `### Exercise N.k` headings, and the ids in code cells, such as
`check_function("Exercise 13.2", ...)` or `EXPECTED["Exercise 13.2"]`) and in the keys of
`course_lib.exercise_hints` (each must name an exercise that its notebook has), so that renumbering a
notebook cannot leave an id, a check or a hint behind. Markdown may still mention another notebook's
exercise in prose ("as in Exercise 6.3").
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from course_lib.exercise_hints import EXPECTED, HINTS
from scripts import build_student_edition as edition

NOTEBOOKS = edition.course_notebooks()
QUOTED_ID = re.compile(r"""["'](Exercise\s+(\d+)\.\d+)""")  # an id in a string literal of a code cell
HINT_KEY = re.compile(r"^(Exercise (\d+)\.\d+)\b")


def misnumbered_ids(path: Path, notebook: nbformat.NotebookNode | None = None) -> list[str]:
    """The exercise ids in notebook `path` that do not start with its number, each with where it is."""
    number = int(path.name[:2])
    notebook = nbformat.read(path, as_version=4) if notebook is None else notebook
    wrong = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "markdown":
            found = [(" ".join(h.split()), int(h.split()[-1].split(".")[0]))
                     for h in edition.EXERCISE_HEADING.findall(cell.source)]
            kind = "heading"
        elif cell.cell_type == "code":
            found = [(" ".join(m.group(1).split()), int(m.group(2))) for m in QUOTED_ID.finditer(cell.source)]
            kind = "code"
        else:
            continue
        wrong += [f"{path.name}, cell {index} ({kind}): {name!r} should start with {number}"
                  for name, first in found if first != number]
    return wrong


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_exercise_id_starts_with_its_notebooks_number(path):
    wrong = misnumbered_ids(path)
    assert not wrong, (f"{path.name}: exercise ids must start with {int(path.name[:2])} "
                       "(renumber them, and their keys in course_lib/exercise_hints.json and .py):\n"
                       + "\n".join(wrong))


def test_every_hint_key_names_an_exercise_of_its_notebook():
    exercises = {int(p.name[:2]): {e.name for e in edition.find_exercises(nbformat.read(p, as_version=4))}
                 for p in NOTEBOOKS}
    problems = []
    for key in list(HINTS) + list(EXPECTED):
        match = HINT_KEY.match(key)
        if not match:
            problems.append(f"{key!r} is not of the form 'Exercise N.k'")
        elif match.group(1) not in exercises.get(int(match.group(2)), set()):
            notebook = next((p.name for p in NOTEBOOKS if int(p.name[:2]) == int(match.group(2))), "no notebook")
            problems.append(f"{key!r}: {notebook} has no '### {match.group(1)}' heading")
    assert not problems, "course_lib/exercise_hints.json / .py:\n" + "\n".join(problems)


def test_a_misnumbered_id_is_reported_with_its_notebook_and_cell(tmp_path):
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("### Exercise 13.1: fine\n\n### Exercise 11.2: left behind"),
        nbformat.v4.new_code_cell('check_value("Exercise 11.2", f(), 1)\nEXPECTED["Exercise 13.1"]'),
        nbformat.v4.new_markdown_cell("As in Exercise 6.3 of notebook 06 (prose may cite another notebook)."),
    ])
    assert misnumbered_ids(tmp_path / "13_your_documents.ipynb", notebook) == [
        "13_your_documents.ipynb, cell 0 (heading): 'Exercise 11.2' should start with 13",
        "13_your_documents.ipynb, cell 1 (code): 'Exercise 11.2' should start with 13",
    ]
