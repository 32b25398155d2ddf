"""scripts/move_guards.py: asserts that keep the prose true move to hidden `guard` cells; the lesson's stay."""

from __future__ import annotations

import copy

import nbformat
import pytest

from scripts import move_guards

CELL = '''# NBVAL_IGNORE_OUTPUT
recall = {"a": 0.5, "b": 0.7}
assert recall["b"] > 0.6, "the text says b passes 0.6"
best = max(recall, key=recall.get)
assert (recall[best]
        - recall["a"]) > 0.1, (
    "the summary says b leads by more than 10 points")
assert best == "b", "b must win"  # a teaching assert: it stays
for name, value in recall.items():
    assert value < 1, "the text says no strategy is perfect"
print(best)'''


def _notebook(*sources, outputs=True):
    cells = [nbformat.v4.new_markdown_cell("# 99 · Demo")]
    for source in sources:
        cell = nbformat.v4.new_code_cell(source, execution_count=1)
        if outputs:
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="b\n")]
        cells.append(cell)
    return nbformat.v4.new_notebook(cells=cells)


def test_prose_asserts_move_to_a_hidden_guard_cell_right_after():
    notebook = _notebook(CELL)
    report = move_guards.move_guards(notebook, "99_demo.ipynb")
    assert (report.moved, report.cells) == (2, 1)
    lesson, guard = notebook.cells[1], notebook.cells[2]
    assert lesson.source == '''# NBVAL_IGNORE_OUTPUT
recall = {"a": 0.5, "b": 0.7}
best = max(recall, key=recall.get)
assert best == "b", "b must win"  # a teaching assert: it stays
for name, value in recall.items():
    assert value < 1, "the text says no strategy is perfect"
print(best)'''
    assert lesson.outputs[0]["text"] == "b\n"  # the lesson's cell keeps its outputs
    assert guard.source == '''assert recall["b"] > 0.6, "the text says b passes 0.6"
assert (recall[best]
        - recall["a"]) > 0.1, (
    "the summary says b leads by more than 10 points")'''  # the multi-line assert is whole
    assert guard.metadata == {"tags": ["guard"], "jupyter": {"source_hidden": True}}
    assert guard.outputs == [] and guard.execution_count == 1 and guard.id == lesson.id + "-guard"
    assert report.left == [f"cell 1 ({lesson.id}) line 10: inside a block (value < 1)"]
    nbformat.validate(notebook)


def test_the_cells_run_the_same_checks_after_the_move():
    notebook = _notebook(CELL)
    move_guards.move_guards(notebook)
    namespace: dict = {}
    for cell in notebook.cells[1:]:
        exec(cell.source, namespace)
    assert namespace["best"] == "b"


def test_running_it_twice_changes_nothing_more():
    notebook = _notebook(CELL, "x = 3\nassert x == 3, 'the text says three'\ny = x + 1")
    move_guards.move_guards(notebook)
    once = copy.deepcopy(notebook)
    report = move_guards.move_guards(notebook)
    assert report.moved == 0 and notebook == once


def test_a_marked_assert_moves_and_a_cell_of_guards_becomes_the_guard():
    notebook = _notebook("x = 3\nassert x * 2 == 6  # guard: the prose's 6\nprint(x)",
                         "# the text's numbers\nassert 1 < 2, 'the text says one is less than two'\n",
                         outputs=False)
    report = move_guards.move_guards(notebook)
    assert report.moved == 2 and len(notebook.cells) == 4
    assert notebook.cells[1].source == "x = 3\nprint(x)"
    assert notebook.cells[2].source == "assert x * 2 == 6  # guard: the prose's 6"
    whole = notebook.cells[3]
    assert whole.source.startswith("# the text's numbers") and move_guards.is_guard(whole)
    assert whole.metadata["jupyter"] == {"source_hidden": True}


def test_asserts_that_cannot_move_safely_stay_and_are_listed():
    changed_later = "xs = [1, 2]\nassert len(xs) == 2, 'the text says two'\nxs.append(3)\nprint(xs)"
    ends_on_value = "xs = [1, 2]\nlen(xs)\nassert len(xs) == 2, 'the text says two'"
    shares_a_line = "xs = [1, 2]; assert len(xs) == 2, 'the text says two'"
    read_only_later = "xs = [1, 2]\nassert len(xs) == 2, 'the text says two'\nprint(xs.count(1), [x for x in xs])"
    notebook = _notebook(changed_later, ends_on_value, shares_a_line, read_only_later, outputs=False)
    report = move_guards.move_guards(notebook)
    assert report.moved == 1  # only the last: a read-only method and a comprehension change nothing
    reasons = [line.split(": ", 1)[1] for line in report.left]
    assert reasons == ["a later statement changes xs (len(xs) == 2)",
                       "the cell would end on an expression, which Jupyter would display (len(xs) == 2)",
                       "shares a line with another statement (len(xs) == 2)"]
    assert [c.source for c in notebook.cells[1:4]] == [changed_later, ends_on_value, shares_a_line]


def test_teaching_asserts_and_magics_are_left_alone():
    notebook = _notebook("assert 2 + 2 == 4, 'addition works'", "%timeit sum(range(9))", outputs=False)
    before = copy.deepcopy(notebook)
    report = move_guards.move_guards(notebook)
    assert (report.moved, report.left) == (0, []) and notebook == before


@pytest.mark.parametrize(("message", "guard"), [
    ("the text says 0.38", True), ("the prose rounds it", True), ("The summary's claim", True),
    ("section 1 says 60, 80 and 150", True), ("the text: hybrid gains", True), ("the table says so", True),
    ("the offsets must point at the chunk's text", False), ("[Late glossary]: 0.382", False),
    ("every question must have its reference text", False)])
def test_the_rule_reads_the_message(message, guard):
    source = f"assert True, {message!r}"
    node = __import__("ast").parse(source).body[0]
    assert move_guards.is_prose_guard(node, source) is guard


def test_dry_run_changes_no_file_and_out_writes_copies(tmp_path, capsys):
    path = tmp_path / "99_demo.ipynb"
    path.write_text(nbformat.writes(_notebook(CELL)) + "\n", encoding="utf-8")
    before = path.read_text(encoding="utf-8")
    assert move_guards.main([str(path), "--dry-run"]) == 0
    assert path.read_text(encoding="utf-8") == before
    assert "99_demo.ipynb: 2 asserts into 1 guard cells, 1 left" in capsys.readouterr().out
    assert move_guards.main([str(path), "--out", str(tmp_path / "out")]) == 0
    moved = nbformat.read(tmp_path / "out" / "99_demo.ipynb", as_version=4)
    assert sum(move_guards.is_guard(c) for c in moved.cells) == 1 and path.read_text(encoding="utf-8") == before
