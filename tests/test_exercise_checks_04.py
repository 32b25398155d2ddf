"""Exercises 4.1-4.4 (the learner builds the recursive splitter, in seven parts) cannot be fooled (issue 33).

The splitter is four exercise headings (issue 44): 4.1 splits a span ((a) `split_on` and `first_split`, (b)
`strip_span`), 4.2 is the last resort and the recursion ((a) `cut_between_tokens`, (b) `split_without_merge`),
4.3 merges ((a) `merge`, (b) `split_recursive`), 4.4 carries the overlap tail (`tail_start`). Notebook 04 is run
once, in this process (tests/notebook_checks.py). Then each part's self-check cell is run again with the
learner's functions replaced: by plausible wrong answers, which it must reject with a `SelfCheckError`, and by the
reference solution and other right answers, which it must accept. Before a check runs, the solution cells of all
four exercises are run again in a copy of the namespace, so that a replaced function is the one the others call
(`hand_chunks` calls `split_recursive`, which calls `merge`, which calls `tail_start`). `strip_span` and
`cut_between_tokens` are fed wrong versions in tests/test_exercise_builds_04.py.
"""

from __future__ import annotations

import re

import pytest
import regex
from notebook_checks import Notebook

from scripts import build_student_edition as edition
from scripts.notebook_times import solution_lines

SPLITTER = ("Exercise 4.1", "Exercise 4.2", "Exercise 4.3", "Exercise 4.4")
# the parts, in notebook order, as (exercise, its part)
PARTS = SPLIT_ON, STRIP, CUT, NO_MERGE, MERGE, RECURSE, TAIL = (
    ("Exercise 4.1", 0), ("Exercise 4.1", 1), ("Exercise 4.2", 0), ("Exercise 4.2", 1), ("Exercise 4.3", 0),
    ("Exercise 4.3", 1), ("Exercise 4.4", 0))


@pytest.fixture(scope="module")
def nb04():
    return Notebook("04_recursive_splitting.ipynb")


def _parts(nb: Notebook) -> list[edition.Exercise]:
    return [nb.parts(name)[k] for name, k in PARTS]


def run_part(nb: Notebook, part: tuple[str, int], **learner) -> str:
    """Run one part's check cell with the learner's functions in place; return what it printed."""
    return nb.run_part(*part, again=SPLITTER, **learner)[0]


def accepts(nb: Notebook, part: tuple[str, int], **learner) -> str:
    return nb.accepts_part(*part, again=SPLITTER, **learner)


def rejects(nb: Notebook, part: tuple[str, int], **learner) -> str:
    return nb.rejects_part(*part, again=SPLITTER, **learner)


def test_the_splitter_is_four_exercises_of_seven_parts_each_with_its_check(nb04):
    assert [len(nb04.parts(name)) for name in SPLITTER] == [2, 2, 2, 1]
    parts = _parts(nb04)
    defined = [set(re.findall(r"^def (\w+)", nb04.notebook.cells[e.solution].source, re.MULTILINE)) for e in parts]
    assert defined == [{"split_on", "first_split"}, {"strip_span"}, {"cut_between_tokens"}, {"split_without_merge"},
                       {"merge"}, {"split_recursive", "hand_chunks"}, {"tail_start"}]
    checks = [nb04.notebook.cells[e.check].source for e in parts]
    assert all(re.search(rf"check_\w+\(\"{name}\"", check) for (name, _), check in zip(PARTS, checks)), \
        "each part's check names its own exercise"


@pytest.mark.parametrize("part", PARTS, ids=lambda p: f"{p[0][-3:]}-{'ab'[p[1]]}")
def test_each_part_accepts_the_reference_solution(nb04, part):
    accepts(nb04, part)


def test_no_visible_cell_shows_a_line_of_the_solution(nb04):
    solution_lines = set()
    for exercise in _parts(nb04):
        block = nb04.notebook.cells[exercise.solution].source.split(edition.BEGIN)[1:]
        for piece in block:
            solution_lines |= {line.strip() for line in piece.split(edition.END)[0].splitlines()
                               if len(line.strip()) > 20 and not line.strip().startswith("#")}
    solutions = {e.solution for e in _parts(nb04)}
    shown = [line for i, cell in enumerate(nb04.notebook.cells) if i not in solutions
             for line in solution_lines if line in cell.source]
    assert not shown, f"visible cells show solution lines: {shown}"


# --- 4.1 (a) split_on and first_split ---------------------------------------------------------------------

def split_at_match_end(text, a, b, separator):  # the separator closes the piece instead of opening the next
    cuts = [m.end() for m in regex.compile(separator).finditer(text, a, b) if a < m.end() < b]
    return list(zip([a, *cuts], [*cuts, b]))


def cut_at_a_too(text, a, b, separator):  # a match at `a` gives an empty first piece
    cuts = [m.start() for m in regex.compile(separator).finditer(text, a, b)]
    return list(zip([a, *cuts], [*cuts, b]))


def drops_the_separator(text, a, b, separator):  # the pieces leave the separators out: they no longer tile
    pieces, start = [], a
    for m in regex.compile(separator).finditer(text, a, b):
        if m.start() > a:
            pieces.append((start, m.start()))
            start = m.end()
    return [*pieces, (start, b)]


@pytest.mark.parametrize("wrong", [split_at_match_end, cut_at_a_too, drops_the_separator],
                         ids=lambda f: f.__name__)
def test_a_rejects_a_wrong_split_on(nb04, wrong):
    assert "expected" in rejects(nb04, SPLIT_ON, split_on=wrong)


def _first_split_with(order, lower):
    def first_split(text, a, b, separators):
        split_on = _reference(SPLIT_ON)["split_on"]
        for level in order(range(len(separators))):
            pieces = split_on(text, a, b, separators[level])
            if len(pieces) > 1:
                return pieces, lower(separators, level)
        return None, []
    return first_split


_REFERENCE: dict = {}


def _reference(part: tuple[str, int]) -> dict:
    """What a part's solution cell defines, from a fresh run of the notebook's reference solution."""
    return _REFERENCE[part]


@pytest.fixture(scope="module", autouse=True)
def _references(nb04):
    for part, exercise in zip(PARTS, _parts(nb04)):
        namespace = dict(nb04.ns)
        exec(nb04.notebook.cells[exercise.solution].source, namespace)
        _REFERENCE[part] = namespace


WRONG_FIRST_SPLITS = {
    "lowest separator first": _first_split_with(reversed, lambda seps, level: seps[level + 1:]),
    "keeps the separator just used": _first_split_with(lambda r: r, lambda seps, level: seps[level:]),
    "hands back every separator": _first_split_with(lambda r: r, lambda seps, level: list(seps)),
}


@pytest.mark.parametrize("wrong", sorted(WRONG_FIRST_SPLITS))
def test_a_rejects_a_wrong_first_split(nb04, wrong):
    assert "expected" in rejects(nb04, SPLIT_ON, first_split=WRONG_FIRST_SPLITS[wrong])


def test_a_rejects_a_first_split_that_uses_a_separator_that_does_not_cut(nb04):
    def first_separator_always(text, a, b, separators):
        if not separators:
            return None, []
        return _reference(SPLIT_ON)["split_on"](text, a, b, separators[0]), separators[1:]

    rejects(nb04, SPLIT_ON, first_split=first_separator_always)


# --- 4.2 (b) split_without_merge -----------------------------------------------------------------------------

def _no_merge(*, check_whole=True, recurse=True, fits=lambda n, size: n <= size, last_resort=True,
              strip=False, lower_only=True):
    def split_without_merge(text, a, b, separators, size):
        ns = _reference(SPLIT_ON)
        tokens, strip_span = ns["tokens"], ns["strip_span"]
        if check_whole and fits(tokens(text, a, b), size):
            return [strip_span(text, a, b) if strip else (a, b)]
        pieces, lower = ns["first_split"](text, a, b, separators)
        if pieces is None:
            return ns["cut_between_tokens"](text, a, b, size) if last_resort else [(a, b)]
        fragments = []
        for s, e in pieces:
            if not recurse or fits(tokens(text, s, e), size):
                fragments.append(strip_span(text, s, e) if strip else (s, e))
            else:
                fragments += split_without_merge(text, s, e, lower if lower_only else separators, size)
        return fragments
    return split_without_merge


WRONG_NO_MERGE = {
    "splits a span that fits": _no_merge(check_whole=False),
    "keeps pieces that are too big": _no_merge(recurse=False),
    "a limit of size - 1": _no_merge(fits=lambda n, size: n < size),
    "no last resort": _no_merge(last_resort=False),
    "strips the fragments": _no_merge(strip=True),
}


@pytest.mark.parametrize("wrong", sorted(WRONG_NO_MERGE))
def test_d_rejects_a_wrong_recursion(nb04, wrong):
    assert "expected" in rejects(nb04, NO_MERGE, split_without_merge=WRONG_NO_MERGE[wrong])


def test_d_accepts_a_recursion_that_passes_every_separator_down(nb04):
    # right too, only slower: the separator just used no longer cuts a piece it made
    accepts(nb04, NO_MERGE, split_without_merge=_no_merge(lower_only=False))


# --- 4.3 (a) merge and (b) split_recursive -----------------------------------------------------------------

def _merge(*, grow, strip=True):
    def merge(text, pieces, size, overlap=0):
        ns = _reference(SPLIT_ON)
        chunks, i = [], 0
        while i < len(pieces):
            j = grow(ns["tokens"], text, pieces, i, size)
            start, end = ns["strip_span"](text, pieces[i][0], pieces[j - 1][1]) if strip else \
                (pieces[i][0], pieces[j - 1][1])
            if start < end:
                chunks.append((start, end))
            i = j
        return chunks
    return merge


def _grow_while_the_chunk_so_far_fits(tokens, text, pieces, i, size):  # takes one piece too many
    j = i + 1
    while j < len(pieces) and tokens(text, pieces[i][0], pieces[j - 1][1]) <= size:
        j += 1
    return j


def _grow_by_summed_counts(tokens, text, pieces, i, size):  # counts pieces apart, not the joined span
    j, total = i + 1, tokens(text, *pieces[i])
    while j < len(pieces) and total + tokens(text, *pieces[j]) <= size:
        total += tokens(text, *pieces[j])
        j += 1
    return j


def _grow_right(tokens, text, pieces, i, size):
    j = i + 1
    while j < len(pieces) and tokens(text, pieces[i][0], pieces[j][1]) <= size:
        j += 1
    return j


def _grow_while_under_the_size(tokens, text, pieces, i, size):  # `<` for `<=`: a chunk exactly at the size is refused
    j = i + 1
    while j < len(pieces) and tokens(text, pieces[i][0], pieces[j][1]) < size:
        j += 1
    return j


WRONG_MERGES = {
    "overshoots by one piece": _merge(grow=_grow_while_the_chunk_so_far_fits),
    "stops one token under the size": _merge(grow=_grow_while_under_the_size),
    "adds up the pieces' counts": _merge(grow=_grow_by_summed_counts),
    "does not strip the chunks": _merge(grow=_grow_right, strip=False),
}


@pytest.mark.parametrize("wrong", sorted(WRONG_MERGES))
def test_e_rejects_a_wrong_merge(nb04, wrong):
    assert "expected" in rejects(nb04, MERGE, merge=WRONG_MERGES[wrong])


def test_f_rejects_a_split_that_merges_only_once_at_the_top(nb04):
    ns = _reference(MERGE)

    def split_recursive(text, a, b, separators, size, overlap=0):
        fragments = _reference(NO_MERGE)["split_without_merge"](text, a, b, separators, size)
        return ns["merge"](text, fragments, size, overlap)

    message = rejects(nb04, RECURSE, split_recursive=split_recursive)
    assert "`hand_chunks(" in message


def test_f_rejects_a_split_that_leaves_a_whole_text_unstripped(nb04):
    ns = _reference(RECURSE)
    right = ns["split_recursive"]

    def split_recursive(text, a, b, separators, size, overlap=0):
        return [(a, b)] if ns["tokens"](text, a, b) <= size else right(text, a, b, separators, size, overlap)

    rejects(nb04, RECURSE, split_recursive=split_recursive)


def test_no_part_asks_for_more_than_15_lines(nb04):
    """Issue 44: exercises in bites; the merge (22 lines) became Exercise 4.3 (a) and (b)."""
    sizes = [solution_lines(nb04.notebook.cells[e.solution].source) for e in _parts(nb04)]
    assert max(sizes) <= 15, sizes


# --- 4.4 tail_start ----------------------------------------------------------------------------------------

def _tail(*, within=lambda tokens, text, pieces, k, j, overlap: tokens(text, pieces[k][0], pieces[j - 1][1]) <= overlap,
          fits_next=True, above=lambda k, i: k - 1 > i):
    def tail_start(text, pieces, i, j, size, overlap):
        tokens = _reference(SPLIT_ON)["tokens"]
        k = j
        while (above(k, i) and within(tokens, text, pieces, k - 1, j, overlap)
               and (not fits_next or tokens(text, pieces[k - 1][0], pieces[j][1]) <= size)):
            k -= 1
        return k
    return tail_start


WRONG_TAILS = {
    "overlap counted in characters": _tail(within=lambda tokens, text, pieces, k, j, overlap:
                                           len(text[pieces[k][0]:pieces[j - 1][1]].strip()) <= overlap),
    "a tail longer than the overlap": _tail(within=lambda tokens, text, pieces, k, j, overlap:
                                            tokens(text, pieces[k][0], pieces[j - 1][1]) <= 2 * overlap),
    "a limit of overlap - 1": _tail(within=lambda tokens, text, pieces, k, j, overlap:
                                    tokens(text, pieces[k][0], pieces[j - 1][1]) < overlap),
    "the tail may be the whole chunk": _tail(above=lambda k, i: k - 1 >= i),
    "forgets that the next piece must fit": _tail(fits_next=False),
    "always one piece": lambda text, pieces, i, j, size, overlap: j - 1 if j - 1 > i else j,
}


@pytest.mark.parametrize("wrong", sorted(WRONG_TAILS))
def test_g_rejects_a_wrong_tail(nb04, wrong):
    assert "expected" in rejects(nb04, TAIL, tail_start=WRONG_TAILS[wrong])


def test_g_the_right_tail_written_another_way_passes(nb04):
    accepts(nb04, TAIL, tail_start=_tail())


def test_the_checks_compare_only_where_the_library_agrees_with_exact_counting(nb04):
    # the cases of 4.3 (b) and 4.4 are ones where the library's one-tokenization estimate and the exact
    # count pick the same pieces; elsewhere (the town report at 40 tokens, say) they may differ by design
    ns = _reference(RECURSE)
    text = nb04["city"]
    assert ns["hand_chunks"](text, 40) != nb04["as_spans"](text, nb04["recursive_chunks"](text, 40))
