"""The parts that notebook 07's learner builds from given code cannot be fooled (issue 33).

Exercise 7.1 (b), `with_path`: the text embedded for a Markdown chunk, its heading path then the chunk, checked
against the library's `headed_texts`. Exercise 7.5, `line_starts` and `definition_spans`: the character span
of each function and class the parser finds, from the first decorator to the end of the last line, checked on
modules built from known pieces (decorators over several lines, `async def`, a nested function, a class with
methods, non-ASCII text, module code right below a definition). Notebook 07's set-up cell and the reference
of 7.5 run once, in this process (tests/notebook_checks.py); then each part's self-check cell runs with the
learner's functions replaced: by plausible wrong ones, which it must reject with a `SelfCheckError`, and by the
reference and another right one, which it must accept. Exercise 7.1 has two parts under one heading, so a
part is picked by its place among the exercise's solution cells.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re

import pytest
from notebook_checks import Notebook, in_notebooks

from course_lib.exercises import SelfCheckError
from scripts import build_student_edition as edition

SETUP, SPANS = "10bd337c", "4e65fe2a"  # the set-up cell; 7.5's solution cell, which later cells use


@pytest.fixture(scope="module")
def nb07():
    return Notebook("07_structure_aware_chunking.ipynb", [SETUP, SPANS])


def part(nb: Notebook, name: str, k: int) -> edition.Exercise:
    return [e for e in edition.find_exercises(nb.notebook) if e.name == name][k]


def run_check(nb: Notebook, name: str, k: int, **learner) -> str:
    namespace = dict(nb.ns, **learner)
    out = io.StringIO()
    with in_notebooks(), contextlib.redirect_stdout(out):
        exec(nb.notebook.cells[part(nb, name, k).check].source, namespace)
    return out.getvalue()


def reference(nb: Notebook, name: str, k: int) -> dict:
    namespace = dict(nb.ns)
    exec(nb.notebook.cells[part(nb, name, k).solution].source, namespace)
    return namespace


def accepts(nb: Notebook, name: str, k: int, **learner) -> None:
    printed = run_check(nb, name, k, **learner)
    source = nb.notebook.cells[part(nb, name, k).check].source
    checks = source.count("check_function(") + source.count("check_problems(")
    assert printed.count(f"✓ {name}") == checks and "not solved" not in printed, printed


def rejects(nb: Notebook, name: str, k: int, **learner) -> str:
    with pytest.raises(SelfCheckError) as caught:
        run_check(nb, name, k, **learner)
    return str(caught.value)


def test_the_exercises_have_their_parts_each_with_its_check(nb07):
    # issue 44: the chunker, once 7.5 (b), is Exercise 7.6 under Extra practice; 7.5 keeps the spans
    for name, defined in [("Exercise 7.1", [{"heading_sections"}, {"with_path"}]),
                          ("Exercise 7.5", [{"line_starts", "definition_spans"}]),
                          ("Exercise 7.6", [{"python_chunks"}])]:
        parts = [e for e in edition.find_exercises(nb07.notebook) if e.name == name]
        assert [set(re.findall(r"^def (\w+)", nb07.notebook.cells[e.solution].source, re.MULTILINE))
                for e in parts] == defined


def test_no_visible_cell_shows_a_line_of_the_new_solutions(nb07):
    solutions = {part(nb07, "Exercise 7.1", 1).solution, part(nb07, "Exercise 7.5", 0).solution}
    lines = set()
    for i in solutions:
        block = nb07.notebook.cells[i].source.split(edition.BEGIN)[1:]
        for piece in block:
            lines |= {line.strip() for line in piece.split(edition.END)[0].splitlines() if len(line.strip()) > 20}
    shown = [line for i, cell in enumerate(nb07.notebook.cells) if i not in solutions and cell.cell_type == "code"
             for line in lines if line in cell.source]
    assert not shown, shown


def test_the_stubs_are_reported_as_not_solved(nb07):
    def stub(*args, **kwargs):
        raise NotImplementedError

    assert "Exercise 7.1: not solved yet" in run_check(nb07, "Exercise 7.1", 1, with_path=stub)
    printed = run_check(nb07, "Exercise 7.5", 0, line_starts=stub, definition_spans=stub)
    assert printed.count("Exercise 7.5: not solved yet") == 2, printed


# --- 7.1 (b) with_path ------------------------------------------------------------------------------------

def _with_path(*, unmark=lambda h: h.lstrip("#").strip(), pick=lambda path: path, between="\n\n", empty=False):
    def with_path(chunk):
        path = " > ".join(unmark(h) for h in pick(chunk.metadata["headings"]))
        return f"{path}{between}{chunk.text}" if path or empty else chunk.text
    return with_path


WRONG_PATHS = {
    "keeps the # marks": _with_path(unmark=str.strip),
    "removes every # (C# loses its #)": _with_path(unmark=lambda h: h.replace("#", "").strip()),
    "the last heading only": _with_path(pick=lambda path: path[-1:]),
    "one line break, no blank line": _with_path(between="\n"),
    "puts an empty path in front": _with_path(empty=True),
    "the deepest heading first": _with_path(pick=lambda path: path[::-1]),
}


@pytest.mark.parametrize("wrong", sorted(WRONG_PATHS))
def test_7_1_b_rejects(nb07, wrong):
    assert "expected" in rejects(nb07, "Exercise 7.1", 1, with_path=WRONG_PATHS[wrong])


def test_7_1_b_accepts_the_reference(nb07):
    accepts(nb07, "Exercise 7.1", 1, with_path=reference(nb07, "Exercise 7.1", 1)["with_path"])


def test_7_1_b_accepts_a_version_written_another_way(nb07):
    def with_path(chunk):
        names = [re.sub(r"^#+\s*", "", h) for h in chunk.metadata["headings"]]
        return "\n\n".join([" > ".join(names), chunk.text]) if names else chunk.text

    accepts(nb07, "Exercise 7.1", 1, with_path=with_path)


# --- 7.5 line_starts and definition_spans ----------------------------------------------------------------

def _right_line_starts(source):
    starts = [0] + [i + 1 for i, ch in enumerate(source) if ch == "\n"]
    return starts if starts[-1] == len(source) else [*starts, len(source)]


WRONG_LINE_STARTS = {
    "no closing entry": lambda source: [0] + [m.end() for m in re.finditer("\n", source)],
    "always a closing entry": lambda source: [0] + [m.end() for m in re.finditer("\n", source)] + [len(source)],
    "the line breaks, not the line starts": lambda source: [0] + [m.start() for m in re.finditer("\n", source)]
    + [len(source)],
}


@pytest.mark.parametrize("wrong", sorted(WRONG_LINE_STARTS))
def test_7_5_rejects_wrong_line_starts(nb07, wrong):
    assert "expected" in rejects(nb07, "Exercise 7.5", 0, line_starts=WRONG_LINE_STARTS[wrong])


DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _spans(*, kinds=DEFINITIONS, walk=False, decorators=True, end_shift=0, strip=True, prefixed=True,
           columns=False):
    """definition_spans with one mistake switched on; with the defaults it is right."""
    def definition_spans(source, nodes, starts, prefix=""):
        found = [n for top in nodes for n in ast.walk(top)] if walk else nodes
        spans = []
        for node in found:
            if not isinstance(node, kinds):
                continue
            first = min([node.lineno] + [d.lineno for d in node.decorator_list]) if decorators else node.lineno
            if columns:  # col_offset counts UTF-8 bytes, not characters
                a = starts[first - 1] + min([node.col_offset] + [d.col_offset - 1 for d in node.decorator_list])
                b = starts[node.end_lineno - 1] + node.end_col_offset
            else:
                a, b = starts[first - 1], starts[max(0, min(node.end_lineno + end_shift, len(starts) - 1))]
            if strip:
                text = source[a:b]
                a, b = a + len(text) - len(text.lstrip()), a + len(text.rstrip())
            spans.append((a, b, (prefix if prefixed else "") + node.name, node))
        return spans
    return definition_spans


WRONG_SPANS = {
    "ignores the decorators": _spans(decorators=False),
    "walks every node, nested ones too": _spans(walk=True),
    "ends a line early": _spans(end_shift=-1),
    "ends a line late": _spans(end_shift=1),
    "forgets async def": _spans(kinds=(ast.FunctionDef, ast.ClassDef)),
    "uses col_offset (bytes)": _spans(columns=True),
    "does not strip": _spans(strip=False),
    "forgets the prefix": _spans(prefixed=False),
}


@pytest.mark.parametrize("wrong", sorted(WRONG_SPANS))
def test_7_5_rejects_wrong_spans(nb07, wrong):
    message = rejects(nb07, "Exercise 7.5", 0, definition_spans=WRONG_SPANS[wrong])
    assert "MODULES[" in message and "expected" in message, message


def test_7_5_the_mistakes_switched_off_pass(nb07):
    accepts(nb07, "Exercise 7.5", 0, line_starts=_right_line_starts, definition_spans=_spans())


def test_7_5_accepts_the_reference(nb07):
    ns = reference(nb07, "Exercise 7.5", 0)
    accepts(nb07, "Exercise 7.5", 0, line_starts=ns["line_starts"], definition_spans=ns["definition_spans"])


def test_7_5_accepts_spans_found_from_the_lines(nb07):
    def definition_spans(source, nodes, starts, prefix=""):  # strips line by line, ends at the last line's end
        out = []
        for node in nodes:
            if isinstance(node, DEFINITIONS):
                first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
                last = source[starts[node.end_lineno - 1]:starts[node.end_lineno]].rstrip()
                a = starts[first - 1] + len(source[starts[first - 1]:]) - len(source[starts[first - 1]:].lstrip())
                out.append((a, starts[node.end_lineno - 1] + len(last), prefix + node.name, node))
        return out

    accepts(nb07, "Exercise 7.5", 0, definition_spans=definition_spans)
