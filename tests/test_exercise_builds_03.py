"""Notebook 03's built mechanism cannot be fooled (issue 33): Exercise 3.1 (b)-(d) and Exercise 3.2.

Exercise 3.1 builds fixed-size chunking by hand in four parts: (a) windows of characters (tested in
tests/test_exercise_checks_03.py), (b) windows of token ids, (c) token starts as character offsets, (d) cuts
moved back to word starts; Exercise 3.2 (extra practice) adds overlap to (d). The checks of (b), (d) and 3.2
compare with `fixed_size_chunks` on generated cases. Only the cells those checks need run here (no embedding
model). Each check cell then runs again with the learner's function replaced: by plausible wrong answers,
which it must reject with a `SelfCheckError`, and by the reference solution and other right answers, which it
must accept. The four parts share one heading, so a part is picked by its place among the solution cells.
"""

from __future__ import annotations

import re

import pytest
from notebook_checks import Notebook

from course_lib.exercises import SelfCheckError
from scripts import build_student_edition as edition

NAME = "Exercise 3.1"
CHARS, TOKENS, OFFSETS, WORDS = range(4)  # the parts, in notebook order: (a), (b), (c), (d)
CELLS = ["c2c4ec31", "ex31-d-sol", "ex31-d-check"]  # setup; is_word_start; library_char_windows (for 3.2)


@pytest.fixture(scope="module")
def nb03():
    return Notebook("03_fixed_size_and_overlap.ipynb", cell_ids=CELLS)


def _parts(nb: Notebook) -> list[edition.Exercise]:
    return nb.parts(NAME)


def _run(nb: Notebook, name: str, part: int, learner: dict) -> str:
    """Run a check cell after every solution cell of the notebook, with the learner's definitions in place."""
    return nb.run_part(name, part, again=tuple(nb.exercises), **learner)[0]


def run_part(nb: Notebook, part: int, **learner) -> str:
    return _run(nb, NAME, part, learner)


def run_3_2(nb: Notebook, **learner) -> str:
    return _run(nb, "Exercise 3.2", 0, learner)


def reference(nb: Notebook, solution: int) -> dict:
    namespace = dict(nb.ns)
    exec(nb.notebook.cells[solution].source, namespace)
    return namespace


def rejects(run, nb: Notebook, *args, **learner) -> str:
    with pytest.raises(SelfCheckError) as caught:
        run(nb, *args, **learner)
    return str(caught.value)


def test_the_exercise_has_four_parts_each_with_its_check(nb03):
    parts = _parts(nb03)
    defined = [set(re.findall(r"^def (\w+)", nb03.notebook.cells[e.solution].source, re.MULTILINE)) for e in parts]
    assert defined == [{"char_chunks"}, {"token_windows"}, {"token_char_offsets"},
                       {"is_word_start", "word_start_windows"}]


def test_no_visible_cell_shows_a_line_of_the_solutions(nb03):
    exercises = [*_parts(nb03), nb03.exercises["Exercise 3.2"]]
    solution_lines = set()
    for exercise in exercises:
        for piece in nb03.notebook.cells[exercise.solution].source.split(edition.BEGIN)[1:]:
            solution_lines |= {line.strip() for line in piece.split(edition.END)[0].splitlines()
                               if len(line.strip()) > 20 and not line.strip().startswith("#")}
    solutions = {i for i, c in enumerate(nb03.notebook.cells) if "solution" in c.metadata.get("tags", [])}
    shown = [line for i, cell in enumerate(nb03.notebook.cells) if i not in solutions
             for line in solution_lines if line in cell.source]
    assert not shown, f"visible cells show solution lines: {shown}"


# --- (b) token_windows -----------------------------------------------------------------------------

def _token_walk(*, next_start=lambda i, j, overlap: j - overlap, end=lambda i, size, n: min(i + size, n),
                none=()):
    def token_windows(n_ids, size, overlap=0):
        if n_ids == 0:
            return list(none)
        windows, i = [], 0
        while i < n_ids:
            j = end(i, size, n_ids)
            windows.append((i, j))
            if j >= n_ids:
                break
            i = next_start(i, j, overlap)
        return windows
    return token_windows


WRONG_TOKEN_WINDOWS = {
    "ignores the overlap (stride = size)": _token_walk(next_start=lambda i, j, overlap: j),
    "steps by the overlap (stride = overlap)": lambda n_ids, size, overlap=0: [
        (i, min(i + size, n_ids)) for i in range(0, n_ids, overlap or size)],
    "drops the shorter last window": lambda n_ids, size, overlap=0: [
        (i, i + size) for i in range(0, n_ids - size + 1, size - overlap)],
    "windows after the one that reaches the end": lambda n_ids, size, overlap=0: [
        (i, min(i + size, n_ids)) for i in range(0, n_ids, size - overlap)],
    "the last window runs past the end": _token_walk(end=lambda i, size, n: i + size),
    "overlaps one token too many": _token_walk(next_start=lambda i, j, overlap: j - overlap - 1 if overlap else j),
    "a window (0, 0) for no ids": _token_walk(none=[(0, 0)]),
}


@pytest.mark.parametrize("wrong", sorted(WRONG_TOKEN_WINDOWS))
def test_b_rejects(nb03, wrong):
    function = WRONG_TOKEN_WINDOWS[wrong]
    function.__name__ = "token_windows"
    assert "expected" in rejects(run_part, nb03, TOKENS, token_windows=function)


def token_windows_by_stride(n_ids, size, overlap=0):
    """Right, written another way: starts every size - overlap ids, until a window reaches the end."""
    windows = []
    for i in range(0, n_ids, size - overlap):
        windows.append((i, min(i + size, n_ids)))
        if i + size >= n_ids:
            break
    return windows


@pytest.mark.parametrize("right", ["reference", "by_stride"])
def test_b_accepts(nb03, right):
    function = (reference(nb03, _parts(nb03)[TOKENS].solution)["token_windows"] if right == "reference"
                else token_windows_by_stride)
    printed = run_part(nb03, TOKENS, token_windows=function)
    assert "✓ Exercise 3.1: all 17 checks passed." in printed, printed


# --- (c) token_char_offsets (moved here from tests/test_exercise_checks_early.py) ----------------------

def test_c_rejects(nb03):
    enc = nb03["enc"]

    def byte_offsets(text, ids):  # forgets to turn bytes into characters
        offsets, byte = [], 0
        for t in ids:
            offsets.append(byte)
            byte += len(enc.decode_single_token_bytes(t))
        return offsets

    def decoded_lengths(text, ids):  # adds up the decoded tokens' lengths, U+FFFD and all, never None
        offsets, pos = [], 0
        for t in ids:
            offsets.append(pos)
            pos += len(enc.decode([t]))
        return offsets

    def never_inside(text, ids):  # decodes with errors="ignore": a split character never gives None
        data, offsets, byte = text.encode("utf-8"), [], 0
        for t in ids:
            offsets.append(len(data[:byte].decode("utf-8", errors="ignore")))
            byte += len(enc.decode_single_token_bytes(t))
        return offsets

    def token_ends(text, ids):  # off by one token: where each token ends
        data, offsets, byte = text.encode("utf-8"), [], 0
        for t in ids:
            byte += len(enc.decode_single_token_bytes(t))
            starts = byte == len(data) or (data[byte] & 0xC0) != 0x80
            offsets.append(len(data[:byte].decode("utf-8")) if starts else None)
        return offsets

    for wrong in (byte_offsets, decoded_lengths, never_inside, token_ends):
        rejects(run_part, nb03, OFFSETS, token_char_offsets=wrong)


def test_c_accepts_the_reference(nb03):
    printed = run_part(nb03, OFFSETS, **{k: v for k, v in reference(nb03, _parts(nb03)[OFFSETS].solution).items()
                                         if k == "token_char_offsets"})
    assert "✓ Exercise 3.1: all 8 checks passed." in printed, printed


# --- (d) word_start_windows --------------------------------------------------------------------------

def _word_walk(choose):
    """Windows without overlap whose end, when it falls before the end of the text, is `choose(text, start, end)`."""
    def word_start_windows(text, size):
        spans, start = [], 0
        while start < len(text):
            end = min(start + size, len(text))
            if end < len(text):
                end = choose(text, start, end)
            spans.append((start, end))
            start = end
        return spans
    return word_start_windows


def _is_word_start(text, pos):
    return pos in (0, len(text)) or (text[pos] == " " and not text[pos - 1].isspace())


def _word_starts(text, start, end):
    return [p for p in range(start + 1, end + 1) if _is_word_start(text, p)]


def _after_the_space(text, start, end):  # the older convention: cut just after the last space in the window
    space = text.rfind(" ", start, end)
    return space + 1 if space > start else end


def _past_a_long_word(text, start, end):  # keeps a word longer than the window whole, over the size
    starts = _word_starts(text, start, end)
    return starts[-1] if starts else next(p for p in range(end, len(text) + 1) if _is_word_start(text, p))


WRONG_WORD_WINDOWS = {
    "blind cuts (part (a) without overlap)": _word_walk(lambda text, start, end: end),
    "cuts after the space, not before it": _word_walk(_after_the_space),
    "the first word start instead of the last": _word_walk(
        lambda text, start, end: (_word_starts(text, start, end) or [end])[0]),
    "keeps a long word whole, past the size": _word_walk(_past_a_long_word),
    "a space at the window's end is not a cut": _word_walk(
        lambda text, start, end: ([p for p in _word_starts(text, start, end) if p < end] or [end])[-1]),
}


@pytest.mark.parametrize("wrong", sorted(WRONG_WORD_WINDOWS))
def test_d_rejects(nb03, wrong):
    function = WRONG_WORD_WINDOWS[wrong]
    function.__name__ = "word_start_windows"
    assert "expected" in rejects(run_part, nb03, WORDS, word_start_windows=function)


def word_start_windows_backwards(text, size):
    """Right, written another way: step back from the window's end until a word start (or the window's start)."""
    spans, start = [], 0
    while start < len(text):
        end = min(start + size, len(text))
        cut = end
        while cut < len(text) and cut > start and not _is_word_start(text, cut):
            cut -= 1
        end = cut if cut > start else end
        spans.append((start, end))
        start = end
    return spans


@pytest.mark.parametrize("right", ["reference", "backwards"])
def test_d_accepts(nb03, right):
    function = (reference(nb03, _parts(nb03)[WORDS].solution)["word_start_windows"] if right == "reference"
                else word_start_windows_backwards)
    printed = run_part(nb03, WORDS, word_start_windows=function)
    assert "✓ Exercise 3.1: all 15 checks passed." in printed, printed


# --- Exercise 3.2 (extra practice): word_start_chunks, (d) with overlap ------------------------------

def _window_end(text, start, size):
    end = min(start + size, len(text))
    starts = _word_starts(text, start, end)
    return starts[-1] if end < len(text) and starts else end


def _overlap_walk(next_start):
    def word_start_chunks(text, size, overlap=0):
        spans, start = [], 0
        while start < len(text):
            end = _window_end(text, start, size)
            spans.append((start, end))
            if end == len(text):
                break
            start = next_start(text, start, end, size, overlap)
        return spans
    return word_start_chunks


def _zone(text, start, end, overlap):
    return [p for p in range(max(start + 1, end - overlap), end) if _is_word_start(text, p)]


WRONG_WORD_CHUNKS = {
    "ignores the overlap": _overlap_walk(lambda text, start, end, size, overlap: end),
    "any word start in the overlap, even one whose window ends no later": _overlap_walk(
        lambda text, start, end, size, overlap: (_zone(text, start, end, overlap) or [end])[0]),
    "the last usable word start instead of the first": _overlap_walk(
        lambda text, start, end, size, overlap: ([p for p in _zone(text, start, end, overlap)
                                                 if _window_end(text, p, size) > end] or [end])[-1]),
    "starts exactly `overlap` characters back, word start or not": _overlap_walk(
        lambda text, start, end, size, overlap: max(start + 1, end - overlap) if overlap else end),
}


@pytest.mark.parametrize("wrong", sorted(WRONG_WORD_CHUNKS))
def test_3_2_rejects(nb03, wrong):
    function = WRONG_WORD_CHUNKS[wrong]
    function.__name__ = "word_start_chunks"
    assert "expected" in rejects(run_3_2, nb03, word_start_chunks=function)


def test_3_2_accepts_the_reference(nb03):
    function = reference(nb03, nb03.exercises["Exercise 3.2"].solution)["word_start_chunks"]
    printed = run_3_2(nb03, word_start_chunks=function)
    assert "✓ Exercise 3.2: all 16 checks passed." in printed, printed


# --- stubs -------------------------------------------------------------------------------------------

def _stub(*args, **kwargs):
    raise NotImplementedError("replace this line with your solution")


@pytest.mark.parametrize("part, name", [(TOKENS, "token_windows"), (WORDS, "word_start_windows")])
def test_a_stub_is_reported_without_raising(nb03, part, name):
    assert "Exercise 3.1: not solved yet" in run_part(nb03, part, **{name: _stub})


def test_3_2_stub_is_reported_without_raising(nb03):
    assert "Exercise 3.2: not solved yet" in run_3_2(nb03, word_start_chunks=_stub)


def test_3_2_lies_in_extra_practice(nb03):
    """Issue 44: 3.2 asks for the library's exact quirk with overlap, so it is homework, outside the lesson's time."""
    from test_learner_share import in_extra_practice

    extra = in_extra_practice(nb03.notebook)
    exercise = nb03.exercises["Exercise 3.2"]
    assert extra[exercise.solution] and extra[exercise.check]
    assert not any(extra[e.solution] for e in _parts(nb03)), "Exercise 3.1 stays in the lesson"
