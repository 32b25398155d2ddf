"""The student edition: no solution code is left, and Run All reports every unsolved exercise without stopping.

A real Run All of one student notebook (04, which loads no model) must complete with every self-check
saying "not solved yet". For the other notebooks, one kernel runs the exercise cells of all of them and
the earlier cells those need (found by reading the code, not by running it), with `%reset -f` between
notebooks: every self-check must report its stub without an error. A notebook whose checks do not is run
in full before the test fails, so a trimming mistake cannot fail it. The kernel inherits the course's
quiet, offline settings from this process.
"""

from __future__ import annotations

import ast
import builtins
import json
import symtable
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager
from nbclient import NotebookClient

from scripts import build_student_edition as edition

ROOT = Path(__file__).resolve().parent.parent

NOTEBOOKS = edition.course_notebooks()
BUILTINS = set(dir(builtins))


@pytest.fixture(scope="module")
def student_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("student")
    edition.build(out)
    return out


# --- the conversion itself -------------------------------------------------------------------

def test_stub_keeps_the_signature_and_the_lines_around_the_markers():
    source = (
        "def f(x, y=2):\n"
        "    \"\"\"Doc.\"\"\"\n"
        "    # BEGIN SOLUTION\n"
        "    total = x + y\n"
        "    if total:\n"
        "        return total\n"
        "    # END SOLUTION\n"
        "    return None\n"
    )
    stub = edition.stub_source(source, "Exercise 9.1: your turn")
    assert stub == (
        "def f(x, y=2):\n"
        "    \"\"\"Doc.\"\"\"\n"
        "    raise NotImplementedError(\"Exercise 9.1: your turn\")\n"
        "    return None"
    )
    namespace: dict = {}
    exec(stub, namespace)
    with pytest.raises(NotImplementedError, match=r"Exercise 9\.1"):
        namespace["f"](1)


def test_every_solution_block_of_a_cell_is_replaced():
    source = ("def f():\n    # BEGIN SOLUTION\n    return 1\n    # END SOLUTION\n\n\n"
              "def g():\n  # BEGIN SOLUTION\n  return 2\n  # END SOLUTION")
    stub = edition.stub_source(source, "E")
    assert stub.count('raise NotImplementedError("E")') == 2
    assert "return 1" not in stub and "return 2" not in stub
    assert '\n  raise NotImplementedError("E")' in stub  # the second block's own indentation


@pytest.mark.parametrize(
    "source, problem",
    [
        ("def f():\n    return 1", "no `# BEGIN SOLUTION`"),
        ("def f():\n    # BEGIN SOLUTION\n    return 1", "never closed"),
        ("def f():\n    return 1\n    # END SOLUTION", "without a `# BEGIN SOLUTION`"),
        ("def f():\n    # BEGIN SOLUTION\n    # BEGIN SOLUTION\n    return 1\n    # END SOLUTION", "inside another"),
        ("def f():\n    return 1  # BEGIN SOLUTION\n    # END SOLUTION", "alone on its line"),
    ],
)
def test_broken_markers_are_errors(source, problem):
    with pytest.raises(edition.FormatError, match=problem):
        edition.stub_source(source, "E")


def _notebook(*cells) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    for kind, source, tags in cells:
        make = nbformat.v4.new_markdown_cell if kind == "md" else nbformat.v4.new_code_cell
        cell = make(source)
        if tags:
            cell.metadata["tags"] = tags
        notebook.cells.append(cell)
    return notebook


SOLVED = "def f():\n    # BEGIN SOLUTION\n    return 1\n    # END SOLUTION"
CHECK = 'check_value("Exercise 1.1", f(), 1, hint="return 1")'


@pytest.mark.parametrize(
    "cells, problem",
    [
        ([("md", "### Exercise 1.1: t", None), ("code", "def f():\n    return 1", ["solution"]), ("code", CHECK, None)],
         r"cell 1 \(Exercise 1.1\): no `# BEGIN SOLUTION`"),
        ([("md", "### Exercise 1.1: t", None), ("code", SOLVED, None), ("code", CHECK, None)], "no `solution` tag"),
        ([("md", "### Exercise 1.1: t", None), ("code", SOLVED, ["solution"]), ("code", "f()", None)],
         "must call a self-check"),
        ([("md", "### Exercise 1.1: t", None), ("code", SOLVED, ["solution"])], "must call a self-check"),
        ([("code", SOLVED, ["solution"]), ("code", CHECK, None)], "no `### Exercise N.k: title` heading"),
        ([("md", "### Exercise 1.1: t", None), ("code", "f = 1", None)], "Exercise 1.1 has no code cell tagged"),
        ([("md", "### Exercise 1.1: t\n\n### Exercise 1.2: u", None), ("code", SOLVED, ["solution"]),
          ("code", CHECK, None)],
         "Exercise 1.1 has no code cell tagged"),
    ],
)
def test_a_broken_exercise_format_is_an_error(cells, problem):
    with pytest.raises(edition.FormatError, match=problem):
        edition.student_notebook(_notebook(*cells))


def test_a_notebook_with_a_broken_exercise_stops_the_build(tmp_path):
    bad = tmp_path / "99_bad.ipynb"
    nbformat.write(_notebook(("md", "### Exercise 9.1: t", None), ("code", "def f():\n    return 1", ["solution"]),
                             ("code", CHECK, None)), bad)
    with pytest.raises(edition.FormatError, match=r"99_bad\.ipynb: cell 1"):
        edition.build(tmp_path / "out", [bad])
    assert not (tmp_path / "out").exists(), "nothing is written when a notebook is broken"


def test_the_student_cell_is_shown_and_the_exercise_outputs_cleared():
    notebook = _notebook(("md", "### Exercise 1.1: t", None), ("code", SOLVED, ["solution"]), ("code", CHECK, None))
    notebook.cells[1].metadata["jupyter"] = {"source_hidden": True}
    for cell in notebook.cells[1:]:
        cell.outputs = [nbformat.v4.new_output("stream", text="✓ Exercise 1.1: correct.\n")]
        cell.execution_count = 7
    student = edition.student_notebook(notebook)
    assert "jupyter" not in student.cells[1].metadata
    assert [c.outputs for c in student.cells[1:]] == [[], []]
    assert [c.execution_count for c in student.cells[1:]] == [None, None]
    assert notebook.cells[1].source == SOLVED, "the original notebook is left as it was"


# --- the course's own notebooks ------------------------------------------------------------------

def test_the_folders_the_notebooks_read_are_found(tmp_path):
    path = tmp_path / "01_x.ipynb"
    nbformat.write(_notebook(("code", 'DATA = Path("..") / "data"\nx = open("../nope/a.txt")', None),
                             ("md", 'Path("..") / "results" and [a key](../docs/SOURCES.md#key)', None)), path)
    assert edition.folders_beside([path]) == ["data", "docs"], (
        "only existing folders: read by code cells, or linked to from Markdown")


def test_every_notebook_has_exercises_and_a_student_copy(student_dir):
    assert NOTEBOOKS, "no course notebooks found"
    assert sorted(p.name for p in (student_dir / "notebooks").glob("*.ipynb")) == [p.name for p in NOTEBOOKS]
    for folder in edition.folders_beside(NOTEBOOKS):
        assert (student_dir / folder).is_dir(), f"the notebooks read ../{folder}"
    for path in NOTEBOOKS:
        assert edition.find_exercises(nbformat.read(path, as_version=4)), f"{path.name} has no exercises"


def _solution_lines(source: str) -> list[str]:
    lines, inside = [], False
    for line in source.splitlines():
        if line.strip() in (edition.BEGIN, edition.END):
            inside = line.strip() == edition.BEGIN
        elif inside and line.strip():
            lines.append(line.strip())
    return lines


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_solution_code_remains(student_dir, path):
    original = nbformat.read(path, as_version=4)
    student_text = (student_dir / "notebooks" / path.name).read_text(encoding="utf-8")
    assert "BEGIN SOLUTION" not in student_text and "END SOLUTION" not in student_text
    student = nbformat.reads(student_text, as_version=4)
    elsewhere = "\n".join(  # text that is in the original outside the solution cells
        json.dumps(c.get("outputs", [])) + c.source
        for c in original.cells if "solution" not in c.metadata.get("tags", [])
    )
    for exercise, at in zip(edition.find_exercises(original), edition.student_exercises(original)):
        stub = student.cells[at.solution]
        assert "raise NotImplementedError" in stub.source and "source_hidden" not in json.dumps(stub.metadata)
        assert stub.outputs == [] and student.cells[at.check].outputs == []
        for line in _solution_lines(original.cells[exercise.solution].source):
            assert line not in stub.source, f"{exercise.name}: solution line left in the stub: {line!r}"
            if line not in elsewhere:
                assert line not in student_text, f"{exercise.name}: solution line in the student edition: {line!r}"


# --- every self-check fails with its hint on the stub ------------------------------------------

def _python(source: str) -> str:
    return TransformerManager().transform_cell(source)  # IPython magics become plain calls


def _reads_in(table: symtable.SymbolTable, top: bool) -> set[str]:
    names = {s.get_name() for s in table.get_symbols() if s.is_referenced() and (top or s.is_global())}
    for child in table.get_children():
        names |= _reads_in(child, False)
    return names


def _changed_names(stmt: ast.AST) -> set[str]:
    """Names whose object a statement changes in place (`x[k] = v`, `x.a = v`, `x += v`), outside functions."""
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
    names, todo = set(), [] if isinstance(stmt, scopes) else [stmt]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.AugAssign):
            target = node.target
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Store):
            target = node
        else:
            target = None
        while isinstance(target, (ast.Attribute, ast.Subscript)):
            target = target.value
        if isinstance(target, ast.Name):
            names.add(target.id)
        todo.extend(child for child in ast.iter_child_nodes(node) if not isinstance(child, scopes))
    return names


def reads_and_binds(source: str) -> tuple[set[str], set[str]]:
    """Names a cell reads from the notebook's namespace before binding them, and names it binds or changes."""
    reads: set[str] = set()
    bound: set[str] = set()

    def block(stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            if isinstance(stmt, (ast.For, ast.While, ast.If, ast.With, ast.Try)):  # header first, then body
                header = [getattr(stmt, "iter", None), getattr(stmt, "test", None)]
                header += [item.context_expr for item in getattr(stmt, "items", [])]
                for expr in filter(None, header):
                    reads.update(_reads_in(symtable.symtable(ast.unparse(expr), "<cell>", "exec"), True) - bound)
                for target in [getattr(stmt, "target", None)] + [i.optional_vars for i in getattr(stmt, "items", [])]:
                    if target is not None:
                        bound.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
                for handler in getattr(stmt, "handlers", []):
                    block([ast.Expr(handler.type)] if handler.type else [])
                    bound.update([handler.name] if handler.name else [])
                    block(handler.body)
                for part in ("body", "orelse", "finalbody"):
                    block(getattr(stmt, part, []))
                continue
            table = symtable.symtable(ast.unparse(stmt), "<cell>", "exec")
            changed = _changed_names(stmt)
            reads.update((_reads_in(table, True) | changed) - bound)
            bound.update(s.get_name() for s in table.get_symbols()
                         if s.is_assigned() or s.is_imported() or s.is_namespace())
            bound.update(changed)

    block(ast.parse(source).body)
    return reads - BUILTINS, bound


def test_reads_and_binds_follows_python_scopes():
    reads, binds = reads_and_binds(
        "x = [a for a in items]\n"        # `a` is the comprehension's own
        "def f(q):\n    d = {}\n    d[1] = q + z\n    return d\n"  # `z` is read when f runs; `d` is local
        "for i in range(3):\n    total += i\n"  # `total` is read and changed, `i` is bound by the loop
        "table[k] = x\n"                  # changing `table` needs it first
        "y = x + 1\n"
    )
    assert reads == {"items", "z", "total", "table", "k"}
    assert {"x", "f", "i", "total", "table", "y"} <= binds


def test_the_trimmed_notebook_keeps_only_what_the_checks_need():
    notebook = _notebook(
        ("code", "import math\nslow = sum(range(10))", None),
        ("code", "small = 2\nunused = 3", None),
        ("md", "### Exercise 1.1: t", None),
        ("code", SOLVED, ["solution"]),
        ("code", 'check_function("Exercise 1.1", f, [((), small)])', None),
        ("code", "print(slow)", None),
    )
    student = edition.student_notebook(notebook)
    small, checks = trimmed(student, edition.find_exercises(notebook))
    assert [c.source for c in small.cells] == [student.cells[i].source for i in (1, 3, 4)], \
        "only the exercise cells and what they read; not `slow`, read after the exercise"
    assert checks == {2: "Exercise 1.1"}


def trimmed(notebook: nbformat.NotebookNode, exercises) -> tuple[nbformat.NotebookNode, dict[int, str]]:
    """The exercise cells and the earlier cells they need; and where each check went."""
    code = [i for i, c in enumerate(notebook.cells) if c.cell_type == "code"]
    checks = {e.check for e in exercises}
    exercise_cells = checks | {e.solution for e in exercises}
    keep: set[int] = set()
    needed: set[str] = set()
    for i in reversed(code):
        source = _python(notebook.cells[i].source)
        reads, binds = reads_and_binds(source)
        if i in exercise_cells or binds & needed:
            keep.add(i)
            needed |= reads
    small = nbformat.v4.new_notebook(metadata=notebook.metadata)
    small.cells = [notebook.cells[i] for i in sorted(keep)]
    position = {i: k for k, i in enumerate(sorted(keep))}
    return small, {position[e.check]: e.name for e in exercises}


def run(notebook: nbformat.NotebookNode, folder: Path, allow_errors: bool = True) -> nbformat.NotebookNode:
    NotebookClient(notebook, timeout=600, kernel_name="python3", allow_errors=allow_errors,
                   resources={"metadata": {"path": str(folder)}}).execute()
    return notebook


def _text(outputs) -> str:
    return "".join(o.get("text", "") for o in outputs if o.output_type == "stream")


def unreported_checks(notebook: nbformat.NotebookNode, checks: dict[int, str]) -> list[str]:
    """The self-checks that did not report "not solved yet" on the stub, each with what happened instead."""
    wrong = []
    for index, name in checks.items():
        outputs = notebook.cells[index].outputs
        errors = [o for o in outputs if o.output_type == "error"]
        if errors:
            advice = (": call the stub inside the check (check_function, check_problems, or attempt()), "
                      "not before it" if errors[0].ename == "NotImplementedError" else "")
            wrong.append(f"{name}: raised {errors[0].ename}: {errors[0].evalue.strip()[:300]}{advice}")
        elif f"{name}: not solved yet" not in _text(outputs):
            wrong.append(f"{name}: printed no 'not solved yet' on the stub: {_text(outputs)[:200]!r}")
    return wrong


def test_unreported_checks_reads_outputs():
    notebook = _notebook(("code", "a", None), ("code", "b", None), ("code", "c", None))
    notebook.cells[0].outputs = [nbformat.v4.new_output("stream", text="… Exercise 1.1: not solved yet (x)\n")]
    notebook.cells[1].outputs = [nbformat.v4.new_output("error", ename="NotImplementedError", evalue="E", traceback=[])]
    notebook.cells[2].outputs = [nbformat.v4.new_output("stream", text="✓ Exercise 1.3: correct.\n")]
    wrong = unreported_checks(notebook, {0: "Exercise 1.1", 1: "Exercise 1.2", 2: "Exercise 1.3"})
    assert len(wrong) == 2 and "call the stub inside the check" in wrong[0] and "Exercise 1.3" in wrong[1]


RUN_ALL = "04_recursive_splitting.ipynb"  # no model: a real Run All in about 10 s


def test_run_all_completes_on_a_student_notebook(student_dir):
    path = student_dir / "notebooks" / RUN_ALL
    student = nbformat.read(path, as_version=4)
    exercises = edition.student_exercises(nbformat.read(ROOT / "notebooks" / RUN_ALL, as_version=4))
    run(student, path.parent, allow_errors=False)  # raises CellExecutionError if any cell fails
    assert not unreported_checks(student, {e.check: e.name for e in exercises})
    assert len(exercises) >= 3


@pytest.fixture(scope="module")
def shared_kernel_run(student_dir) -> dict[str, tuple[nbformat.NotebookNode, dict[int, str]]]:
    """Every student notebook's exercise cells (and what they need) run in one kernel, notebook by notebook."""
    combined = nbformat.v4.new_notebook()
    where: dict[str, dict[int, str]] = {}
    for path in NOTEBOOKS:
        if path.name == RUN_ALL:
            continue
        student = nbformat.read(student_dir / "notebooks" / path.name, as_version=4)
        combined.metadata = student.metadata
        small, checks = trimmed(student, edition.student_exercises(nbformat.read(path, as_version=4)))
        combined.cells.append(nbformat.v4.new_code_cell("%reset -f"))
        offset = len(combined.cells)
        combined.cells += small.cells
        where[path.name] = {offset + i: name for i, name in checks.items()}
    run(combined, student_dir / "notebooks")
    return {name: (combined, checks) for name, checks in where.items()}


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.name != RUN_ALL], ids=lambda p: p.stem)
def test_each_self_check_reports_its_stub_without_stopping(shared_kernel_run, student_dir, path):
    combined, checks = shared_kernel_run[path.name]
    if not unreported_checks(combined, checks):
        return
    # Confirm on the whole notebook, as a learner runs it, before failing.
    student_path = student_dir / "notebooks" / path.name
    full = run(nbformat.read(student_path, as_version=4), student_path.parent)
    exercises = edition.student_exercises(nbformat.read(path, as_version=4))
    wrong = unreported_checks(full, {e.check: e.name for e in exercises})
    errors = [f"cell {i}: {o.ename}" for i, c in enumerate(full.cells) if c.cell_type == "code"
              for o in c.get("outputs", []) if o.output_type == "error"]
    assert not wrong and not errors, f"{path.name}, run in full:\n" + "\n".join(wrong + errors)


def test_a_wrong_solution_still_fails_in_the_instructor_edition(tmp_path):
    # the instructor edition, with Exercise 4.1's reference solution replaced by a wrong one
    notebook = nbformat.read(ROOT / "notebooks" / RUN_ALL, as_version=4)
    exercise = next(e for e in edition.find_exercises(notebook) if e.name == "Exercise 4.1")
    cell = notebook.cells[exercise.solution]
    begin, end = cell.source.index(edition.BEGIN), cell.source.index(edition.END) + len(edition.END)
    cell.source = cell.source[:begin] + "return -1  # wrong on purpose" + cell.source[end:]
    small, checks = trimmed(notebook, [exercise])
    errors = [o for o in run(small, ROOT / "notebooks").cells[next(iter(checks))].outputs if o.output_type == "error"]
    assert errors and errors[0].ename == "SelfCheckError" and "returned -1" in errors[0].evalue
    assert "Traceback" not in "".join(errors[0].traceback), "shown as plain text, not as a traceback"


def test_guard_cells_are_left_out_of_the_student_edition():
    guard = nbformat.v4.new_code_cell("assert answer == 42, 'the text says 42'")
    guard.metadata["tags"] = ["guard"]
    notebook = _notebook(("code", "answer = 42", None))
    notebook.cells.insert(1, guard)
    student = edition.student_notebook(notebook)
    assert all("guard" not in c.metadata.get("tags", []) for c in student.cells)
    assert [c.source for c in student.cells] == ["answer = 42"]
