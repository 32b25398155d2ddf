"""Exercise 3.1 (a), the learner's character chunker, cannot be fooled (issue 33).

Parts (b)-(d) of Exercise 3.1 (token windows, token starts as character offsets, cuts at word starts) are
tested in tests/test_exercise_builds_03.py.
Only notebook 03's setup cell runs here (no embedding model); part (a)'s self-check cell then runs with
`char_chunks` replaced: by plausible wrong answers, which it must reject with a `SelfCheckError`, and by right
ones, which it must accept.
"""

from __future__ import annotations

import contextlib
import io

import pytest
from notebook_checks import Notebook, in_notebooks

from course_lib.exercises import SelfCheckError
from scripts import build_student_edition as edition

SETUP = "c2c4ec31"  # imports, the policy and the tokenizer


@pytest.fixture(scope="module")
def nb03():
    return Notebook("03_fixed_size_and_overlap.ipynb", cell_ids=[SETUP])


def _windows_part(nb: Notebook) -> edition.Exercise:
    parts = [e for e in edition.find_exercises(nb.notebook) if e.name == "Exercise 3.1"]
    assert len(parts) == 4 and "def char_chunks" in nb.notebook.cells[parts[0].solution].source
    return parts[0]


def run_check(nb: Notebook, char_chunks) -> str:
    out = io.StringIO()
    with in_notebooks(), contextlib.redirect_stdout(out):
        exec(nb.notebook.cells[_windows_part(nb).check].source, dict(nb.ns, char_chunks=char_chunks))
    return out.getvalue()


def reference(nb: Notebook):
    namespace = dict(nb.ns)
    exec(nb.notebook.cells[_windows_part(nb).solution].source, namespace)
    return namespace["char_chunks"]


def _walk(*, next_start, end_of=lambda start, size, n: min(start + size, n), empty=()):
    def char_chunks(text, size, overlap=0):
        if not text:
            return list(empty)
        spans, start = [], 0
        while start < len(text):
            end = end_of(start, size, len(text))
            spans.append((start, end))
            if end == len(text):
                break
            start = next_start(start, end, overlap)
        return spans
    return char_chunks


WRONG = {
    "ignores the overlap": _walk(next_start=lambda start, end, overlap: end),
    "windows after the one that reaches the end": lambda text, size, overlap=0: [
        (start, min(start + size, len(text))) for start in range(0, len(text), size - overlap)],
    "windows one character short": _walk(next_start=lambda start, end, overlap: end - overlap,
                                         end_of=lambda start, size, n: min(start + size - 1, n)),
    "overlaps one character too many": _walk(next_start=lambda start, end, overlap: end - overlap - 1
                                             if overlap else end),
    "an empty window for an empty text": _walk(next_start=lambda start, end, overlap: end - overlap,
                                               empty=[(0, 0)]),
}


@pytest.mark.parametrize("wrong", sorted(WRONG))
def test_3_1_a_rejects(nb03, wrong):
    with pytest.raises(SelfCheckError, match=r"` returned .*, expected"):
        run_check(nb03, WRONG[wrong])


def by_stride(text, size, overlap=0):
    """Right, written another way: starts every size - overlap characters, until a window reaches the end."""
    spans = []
    for start in range(0, len(text), size - overlap):
        spans.append((start, min(start + size, len(text))))
        if start + size >= len(text):
            break
    return spans


@pytest.mark.parametrize("right", ["reference", "by_stride"])
def test_3_1_a_accepts(nb03, right):
    function = reference(nb03) if right == "reference" else by_stride
    function.__name__ = "char_chunks"
    printed = run_check(nb03, function)
    assert "✓ Exercise 3.1: all 7 checks passed." in printed and "12 chunks of at most 150 characters" in printed


def test_3_1_a_reports_a_stub_without_raising(nb03):
    def stub(text, size, overlap=0):
        raise NotImplementedError("Exercise 3.1: replace this line with your solution")

    printed = run_check(nb03, stub)
    assert "Exercise 3.1: not solved yet" in printed and "chunks of at most" not in printed
