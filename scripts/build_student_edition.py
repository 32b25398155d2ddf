"""Build the student edition: every notebook with its exercise solutions replaced by stubs.

Usage: python -m scripts.build_student_edition [--out build/student] [notebooks/NN_name.ipynb ...]

Writes OUT/notebooks/NN_name.ipynb, copies what their Markdown shows or links inside notebooks/
(figures/) next to them, and the folders the notebooks read through `..` (data/, results/) beside
them, so their relative paths work unchanged. In each cell tagged
`solution`, the lines from `# BEGIN SOLUTION` to `# END SOLUTION` become
`raise NotImplementedError(...)` at the same indentation; the cell is no longer collapsed, and its
outputs and those of its self-check cell (the next code cell) are cleared; cells tagged `guard` (hidden
checks that keep the prose true) are left out. A notebook that breaks
the exercise format of CONTRIBUTING.md is an error.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import nbformat

from scripts.project import (
    COPY_IGNORE,
    ROOT,
    course_notebooks,
    empty_output_folder,
    folders_beside,
)

DEFAULT_OUT = ROOT / "build" / "student"
BEGIN, END = "# BEGIN SOLUTION", "# END SOLUTION"
EXERCISE_HEADING = re.compile(r"^###\s+(Exercise\s+\d+\.\d+)\b", re.MULTILINE)
MARKER = ".student-edition"  # marks a folder this script may empty and rebuild
# `![alt](figures/x.svg "title")`, `[text](x.pdf)`, `<img src="figures/x.svg">`: paths a Markdown cell shows or links
MARKDOWN_TARGET = re.compile(r"""\]\(\s*<?([^)\s>]+)|\b(?:src|href)\s*=\s*["']([^"']+)""", re.IGNORECASE)


class FormatError(ValueError):
    """A notebook's exercises do not follow the format of CONTRIBUTING.md."""


@dataclass(frozen=True)
class Exercise:
    """Where one exercise lives in a notebook: its name and the indices of its cells."""

    name: str  # "Exercise 3.1"
    solution: int  # index of the cell tagged `solution`
    check: int  # index of the self-check cell (the next code cell)


def stub_source(source: str, message: str) -> str:
    """Replace each `# BEGIN SOLUTION` ... `# END SOLUTION` block by `raise NotImplementedError(message)`."""
    out: list[str] = []
    indent: str | None = None
    blocks = 0
    for number, line in enumerate(source.splitlines(), start=1):
        marker = line.strip()
        if marker == BEGIN:
            if indent is not None:
                raise FormatError(f"line {number}: `{BEGIN}` inside another solution block; "
                                  f"close it with `{END}` first")
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}raise NotImplementedError({json.dumps(message, ensure_ascii=False)})")
            blocks += 1
        elif marker == END:
            if indent is None:
                raise FormatError(f"line {number}: `{END}` without a `{BEGIN}` before it")
            indent = None
        elif BEGIN in line or END in line:
            raise FormatError(f"line {number}: a solution marker must be alone on its line: {line.strip()!r}")
        elif indent is None:
            out.append(line)
    if indent is not None:
        raise FormatError(f"`{BEGIN}` is never closed: add `{END}` after the solution")
    if blocks == 0:
        raise FormatError(f"no `{BEGIN}` / `{END}` lines around the reference solution")
    return "\n".join(out)


def find_exercises(notebook: nbformat.NotebookNode) -> list[Exercise]:
    """The notebook's exercises; raises FormatError where the exercise format is broken."""
    exercises: list[Exercise] = []
    current: str | None = None  # the latest "### Exercise N.k" heading
    solved: set[str] = set()
    cells = notebook.cells
    for index, cell in enumerate(cells):
        where = f"cell {index}"
        if cell.cell_type == "markdown":
            headings = EXERCISE_HEADING.findall(cell.source)
            for heading in headings:
                if current is not None and current not in solved:
                    raise FormatError(f"{where}: {current} has no code cell tagged `solution` before the next exercise")
                current = " ".join(heading.split())
            continue
        if cell.cell_type != "code":
            continue
        is_solution = "solution" in cell.metadata.get("tags", [])
        if not is_solution:
            if BEGIN in cell.source or END in cell.source:
                raise FormatError(f"{where} has solution markers but no `solution` tag: tag it or remove the markers")
            continue
        if current is None:
            raise FormatError(f"{where} is tagged `solution` but no `### Exercise N.k: title` heading comes before it")
        try:
            stub_source(cell.source, current)
        except FormatError as error:
            raise FormatError(f"{where} ({current}): {error}") from None
        check = next((j for j in range(index + 1, len(cells))
                      if cells[j].cell_type == "code" and not is_guard(cells[j])), None)
        if check is None or "solution" in cells[check].metadata.get("tags", []) or "check_" not in cells[check].source:
            raise FormatError(f"{where} ({current}): the next code cell must call a self-check "
                              "from course_lib.exercises")
        exercises.append(Exercise(current, index, check))
        solved.add(current)
    if current is not None and current not in solved:
        raise FormatError(f"{current} has no code cell tagged `solution`")
    return exercises


def student_exercises(original: nbformat.NotebookNode) -> list[Exercise]:
    """The original's exercises, with their cells' places in the student edition, which leaves out guard cells."""
    kept = [i for i, cell in enumerate(original.cells) if not is_guard(cell)]
    at = {i: k for k, i in enumerate(kept)}
    return [Exercise(e.name, at[e.solution], at[e.check]) for e in find_exercises(original)]


def is_guard(cell: nbformat.NotebookNode) -> bool:
    """A hidden cell that keeps the prose true (tagged `guard`): nbval runs it; learners never see it."""
    return cell.cell_type == "code" and "guard" in cell.metadata.get("tags", [])


def _clear(cell: nbformat.NotebookNode) -> None:
    cell.outputs = []
    cell.execution_count = None
    cell.metadata.pop("execution", None)


def student_notebook(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of `notebook` with the solutions stubbed out and the exercise outputs cleared."""
    student = copy.deepcopy(notebook)
    for exercise in find_exercises(notebook):
        cell = student.cells[exercise.solution]
        cell.source = stub_source(cell.source, f"{exercise.name}: replace this line with your solution")
        jupyter = cell.metadata.get("jupyter", {})
        jupyter.pop("source_hidden", None)
        if not jupyter:
            cell.metadata.pop("jupyter", None)
        _clear(cell)
        _clear(student.cells[exercise.check])
    student.cells = [cell for cell in student.cells if not is_guard(cell)]
    return student


def markdown_targets(source: str) -> list[str]:
    """The relative paths a Markdown cell shows or links (images, links, `<img src>`), anchors and queries cut;
    web addresses, absolute paths, in-page anchors and `../` paths (see `folders_beside`) are left out."""
    found = []
    for match in MARKDOWN_TARGET.finditer(source):
        target = unquote((match[1] or match[2]).split("#")[0].split("?")[0])
        if target and not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:|/|\.\./", target):
            found.append(target.removeprefix("./"))
    return found


def files_inside(notebooks: list[Path]) -> list[Path]:
    """What the notebooks' Markdown shows or links inside their own folder, other notebooks aside: the
    top-level files and folders of notebooks/ to put next to a copy of the notebooks (e.g. figures/).

    Raises FormatError for a path that does not exist, naming the notebook."""
    found: set[Path] = set()
    for path in notebooks:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "markdown":
                continue
            for target in markdown_targets(cell.source):
                if target.endswith(".ipynb") and "/" not in target:
                    continue  # a link to another notebook: copied as a notebook
                if not (path.parent / target).exists():
                    raise FormatError(f"{path.name}: its Markdown shows or links {target}, which does not exist "
                                      f"in {path.parent}")
                found.add(path.parent / target.split("/")[0])
    return sorted(found)


def copy_inside(sources: list[Path], folder: Path) -> list[str]:
    """Copy each file or folder of `sources` (from `files_inside`) into `folder`, writing only the files that are
    missing there or differ; files of `folder` the course does not have are left alone. Returns the paths written
    (relative to `folder`). A copy, never a link: JupyterLab refuses a file reached through a link that leaves the
    folder it serves (403, tornado >= 6.5.9), so a linked figure would not show."""
    written: list[str] = []

    def copy_if_changed(source: str, target: str) -> str:
        if not (Path(target).is_file() and Path(target).read_bytes() == Path(source).read_bytes()):
            shutil.copyfile(source, target)
            written.append(Path(target).relative_to(folder).as_posix())
        return target

    for source in sources:
        target = folder / source.name
        if target.is_symlink():  # a link made by an earlier version of the scripts: JupyterLab cannot serve it
            target.unlink()
        if source.is_dir():
            shutil.copytree(source, target, ignore=COPY_IGNORE, copy_function=copy_if_changed, dirs_exist_ok=True)
        else:
            copy_if_changed(str(source), str(target))
    return written


def build(out: Path = DEFAULT_OUT, notebooks: list[Path] | None = None) -> list[Path]:
    """Write the student edition to `out` (emptied first) and return the notebooks written."""
    notebooks = course_notebooks() if notebooks is None else notebooks
    if not notebooks:
        raise FileNotFoundError(f"no notebooks given and none match {ROOT / 'notebooks'}/[0-9][0-9]_*.ipynb")
    students = {}
    for path in notebooks:  # check every notebook before writing anything
        try:
            students[path.name] = student_notebook(nbformat.read(path, as_version=4))
        except FormatError as error:
            raise FormatError(f"{path.name}: {error}") from None
    inside = files_inside(notebooks)
    empty_output_folder(out, MARKER)
    (out / "notebooks").mkdir()
    copy_inside(inside, out / "notebooks")  # the figures the Markdown shows
    for folder in folders_beside(notebooks):  # the notebooks' `../data` etc. work unchanged
        shutil.copytree(ROOT / folder, out / folder, ignore=COPY_IGNORE)
    written = []
    for name, student in students.items():
        nbformat.write(student, out / "notebooks" / name)
        written.append(out / "notebooks" / name)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks to convert (default: all)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default: build/student)")
    args = parser.parse_args(argv)
    try:
        written = build(args.out.resolve(), [p.resolve() for p in args.notebooks] or None)
    except (FormatError, FileExistsError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for path in written:
        print(path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path)
    print(f"student edition: {len(written)} notebooks in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
