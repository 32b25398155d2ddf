"""Exercise 5.5 (the learner builds section 6's measures of repeated text, parts a-c) cannot be fooled (issue 33).

Notebook 05 is run once, in this process (tests/notebook_checks.py). Then each part's self-check cell is run
again with the learner's functions replaced: by plausible wrong answers, which it must reject with a
`SelfCheckError`, and by the reference solution and another right answer, which it must accept. The three
parts share one heading, so a part is picked by its place among the exercise's solution cells. Before a check
runs, all the parts' solution cells are run again in a copy of the namespace, so that the measures of part (b)
and the share of part (c) call the reference `covered` unless the test replaces it.
"""

from __future__ import annotations

import itertools
import re

import pytest
from notebook_checks import Notebook

from course_lib.exercise_hints import HINTS
from scripts import build_student_edition as edition

NAME = "Exercise 5.5"
COVERED, MEASURES, NEIGHBOURS = range(3)  # the parts, in notebook order: (a), (b), (c)


@pytest.fixture(scope="module")
def nb05():
    return Notebook("05_overlap_cost_arithmetic.ipynb")


def _parts(nb: Notebook) -> list[edition.Exercise]:
    return nb.parts(NAME)


def run_part(nb: Notebook, part: int, **learner) -> str:
    """Run one part's check cell with the learner's functions in place; return what it printed."""
    return nb.run_part(NAME, part, **learner)[0]


def accepts(nb: Notebook, part: int, **learner) -> str:
    return nb.accepts_part(NAME, part, **learner)


def rejects(nb: Notebook, part: int, **learner) -> str:
    return nb.rejects_part(NAME, part, **learner)


def test_the_exercise_has_three_parts_each_with_its_check(nb05):
    parts = _parts(nb05)
    assert len(parts) == 3
    defined = [set(re.findall(r"^def (\w+)", nb05.notebook.cells[e.solution].source, re.MULTILINE)) for e in parts]
    assert defined == [{"covered"}, {"new_text_share", "recall", "distinct_passages"}, {"neighbour_share"}]


@pytest.mark.parametrize("part", [COVERED, MEASURES, NEIGHBOURS])
def test_each_part_accepts_the_reference_solution(nb05, part):
    accepts(nb05, part)


@pytest.mark.parametrize("part", [COVERED, MEASURES, NEIGHBOURS])
def test_each_part_reports_the_stub_without_raising(nb05, part):
    def stub(*args):
        raise NotImplementedError(f"{NAME}: replace this line with your solution")

    names = {COVERED: ["covered"], MEASURES: ["new_text_share", "recall", "distinct_passages"],
             NEIGHBOURS: ["neighbour_share"]}[part]
    printed = run_part(nb05, part, **{name: stub for name in names})
    assert printed.count("not solved yet") == len(names) and "✓" not in printed, printed


def test_no_visible_cell_shows_a_line_of_the_solution(nb05):
    solution_lines = set()
    for exercise in _parts(nb05):
        for piece in nb05.notebook.cells[exercise.solution].source.split(edition.BEGIN)[1:]:
            solution_lines |= {line.strip() for line in piece.split(edition.END)[0].splitlines()
                               if len(line.strip()) > 20 and not line.strip().startswith("#")}
    solutions = {e.solution for e in edition.find_exercises(nb05.notebook)}  # every hidden solution cell
    shown = [line for i, cell in enumerate(nb05.notebook.cells) if i not in solutions
             for line in solution_lines if line in cell.source]
    assert not shown, f"visible cells show solution lines: {shown}"


def test_the_hints_come_in_three_tiers_and_stay_out_of_the_check_cells(nb05):
    for key in (NAME, f"{NAME} (measures)", f"{NAME} (neighbours)"):
        assert len(HINTS[key]) == 3, f"{key}: a nudge, a closer hint, nearly the answer"
        for exercise in _parts(nb05):
            check = nb05.notebook.cells[exercise.check].source
            assert not re.search(r"hint\s*=\s*[\"'(]", check), "hints live in course_lib/exercise_hints.json"
            assert not any(tier[:40] in check for tier in HINTS[key]), f"{key}: a hint is written in a check cell"


def test_the_generated_cases_hold_the_edge_cases(nb05):
    spans = nb05["SPANS"]
    assert [] in spans, "no span"
    assert any(any(b == c for (_, b), (c, _) in itertools.pairwise(s)) for s in spans), "spans that touch"
    assert any(any(a < c and d < b for a, b in s for c, d in s) for s in spans), "one span strictly inside another"
    assert any(len(s) > len(set(s)) for s in spans), "duplicates"
    assert any(s != sorted(s) for s in spans), "unsorted"
    assert any(len(s) >= 4 and all(c < b for (_, b), (c, _) in itertools.pairwise(s)) for s in spans), "a chain"
    assert max(len(s) for s in spans) >= 12
    lists = nb05["CHUNK_LISTS"]
    assert any(not cs for cs in lists) and any(len(cs) == 1 for cs in lists) and any(len(cs) == 2 for cs in lists)
    assert any(nb05["library_neighbour_share"](cs) == 1.0 for cs in lists), "a chunk wholly inside its neighbours"


# --- (a) covered ------------------------------------------------------------------------------------

def covered_with_a_set(spans):  # right, the slow way: every character position in a set
    return len(set().union(*(range(start, end) for start, end in spans)))


def sums_the_lengths(spans):  # the shared text counted every time: the cost the lesson measures, left in
    return sum(end - start for start, end in spans)


def assumes_sorted_input(spans):  # walks the spans in the order given, as if sorted by start
    total, reach = 0, 0
    for start, end in spans:
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def merges_with_the_previous_span_only(spans):  # compares with the last span, not the furthest end reached
    total, previous_end = 0, 0
    for start, end in sorted(spans):
        total += max(0, end - max(start, previous_end))
        previous_end = end
    return total


def subtracts_each_pairwise_overlap(spans):  # inclusion-exclusion stopped at pairs: a triple overlap is removed twice
    total = sum(end - start for start, end in spans)
    for i, (a, b) in enumerate(spans):
        for c, d in spans[i + 1:]:
            total -= max(0, min(b, d) - max(a, c))
    return total


def breaks_on_no_span(spans):  # starts from the first span: fails on an empty list
    ordered = sorted(spans)
    total, reach = ordered[0][1] - ordered[0][0], ordered[0][1]
    for start, end in ordered[1:]:
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


@pytest.mark.parametrize("wrong", [sums_the_lengths, assumes_sorted_input, merges_with_the_previous_span_only,
                                   subtracts_each_pairwise_overlap, breaks_on_no_span], ids=lambda f: f.__name__)
def test_a_rejects_a_wrong_covered(nb05, wrong):
    assert "is not solved yet" in rejects(nb05, COVERED, covered=wrong)


def test_a_accepts_a_set_of_characters(nb05):
    accepts(nb05, COVERED, covered=covered_with_a_set)


# --- (b) the three measures ---------------------------------------------------------------------------

def share_without_dedup(spans):  # retrieved over retrieved: always 1
    return sum(e - s for s, e in spans) / sum(e - s for s, e in spans)


def share_of_the_extent(spans):  # distinct over the stretch from the first start to the last end: gaps count
    return covered_with_a_set(spans) / (max(e for _, e in spans) - min(s for s, _ in spans))


@pytest.mark.parametrize("wrong", [share_without_dedup, share_of_the_extent], ids=lambda f: f.__name__)
def test_b_rejects_a_wrong_share(nb05, wrong):
    assert f"`{wrong.__name__}(" in rejects(nb05, MEASURES, new_text_share=wrong)


def recall_over_summed_references(spans, references):  # overlapping references counted twice in the denominator
    seen = set().union(*(range(s, e) for s, e in spans))
    wanted = set().union(*(range(s, e) for s, e in references))
    return len(seen & wanted) / sum(e - s for s, e in references)


def recall_summed_per_span(spans, references):  # each span's overlap added up: text two spans share counts twice
    wanted = set().union(*(range(s, e) for s, e in references))
    return min(1.0, sum(len(wanted & set(range(s, e))) for s, e in spans) / len(wanted))


@pytest.mark.parametrize("wrong", [recall_over_summed_references, recall_summed_per_span], ids=lambda f: f.__name__)
def test_b_rejects_a_wrong_recall(nb05, wrong):
    assert f"`{wrong.__name__}(" in rejects(nb05, MEASURES, recall=wrong)


def _passages(spans, order=lambda s: s, new=lambda seen, length: seen <= length / 2, above=lambda done: done):
    count, done = 0, []
    for start, end in order(spans):
        seen = set().union(*(range(s, e) for s, e in above(done))) & set(range(start, end))
        count += bool(new(len(seen), end - start))
        done.append((start, end))
    return count


def passages_half_is_a_copy(spans):  # "at least half seen" is a copy: a span exactly half seen is lost
    return _passages(spans, new=lambda seen, length: seen < length / 2)


def passages_previous_only(spans):  # compares with the span ranked just above, not with all of them
    return _passages(spans, above=lambda done: done[-1:])


def passages_sorted_first(spans):  # sorts by start, losing the rank order the generator reads
    return _passages(spans, order=sorted)


@pytest.mark.parametrize("wrong", [passages_half_is_a_copy, passages_previous_only, passages_sorted_first],
                         ids=lambda f: f.__name__)
def test_b_rejects_a_wrong_passage_count(nb05, wrong):
    assert f"`{wrong.__name__}(" in rejects(nb05, MEASURES, distinct_passages=wrong)


def test_b_accepts_measures_written_with_sets(nb05):
    accepts(nb05, MEASURES, new_text_share=lambda spans: covered_with_a_set(spans) / sum(e - s for s, e in spans),
            recall=lambda spans, refs: (len(set().union(*(range(s, e) for s, e in spans))
                                            & set().union(*(range(s, e) for s, e in refs))) / covered_with_a_set(refs)),
            distinct_passages=_passages)


def test_b_rejects_measures_built_on_a_wrong_covered(nb05):
    """The reference measures, on top of a covered that sums the lengths, are caught by part (b) too."""
    assert "is not solved yet" in rejects(nb05, MEASURES, covered=sums_the_lengths)


# --- (c) neighbour_share ------------------------------------------------------------------------------

def _share(chunk, neighbours):
    held = set().union(*(range(n.start, n.end) for n in neighbours)) & set(range(chunk.start, chunk.end))
    return len(held) / (chunk.end - chunk.start)


def neighbours_with_sets(chunks):  # right: the union of both neighbours' characters
    return max((_share(c, chunks[max(0, k - 1):k] + chunks[k + 1:k + 2]) for k, c in enumerate(chunks)), default=0.0)


def previous_neighbour_only(chunks):
    return max((_share(c, chunks[max(0, k - 1):k]) for k, c in enumerate(chunks)), default=0.0)


def sums_both_overlaps(chunks):  # the text both neighbours hold counted twice
    return max((sum(_share(c, [n]) for n in chunks[max(0, k - 1):k] + chunks[k + 1:k + 2])
                for k, c in enumerate(chunks)), default=0.0)


def inner_chunks_only(chunks):  # skips the first and the last chunk, which have one neighbour each
    return max((_share(c, [chunks[k - 1], chunks[k + 1]]) for k, c in enumerate(chunks) if 0 < k < len(chunks) - 1),
               default=0.0)


def mean_share(chunks):  # the typical chunk instead of the worst
    shares = [_share(c, chunks[max(0, k - 1):k] + chunks[k + 1:k + 2]) for k, c in enumerate(chunks)]
    return sum(shares) / len(shares) if shares else 0.0


@pytest.mark.parametrize("wrong", [previous_neighbour_only, sums_both_overlaps, inner_chunks_only, mean_share],
                         ids=lambda f: f.__name__)
def test_c_rejects_a_wrong_neighbour_share(nb05, wrong):
    assert f"`{wrong.__name__}(" in rejects(nb05, NEIGHBOURS, neighbour_share=wrong)


def test_c_accepts_neighbours_with_sets(nb05):
    accepts(nb05, NEIGHBOURS, neighbour_share=neighbours_with_sets)


def test_the_notebook_measures_with_the_library_after_the_exercise(nb05):
    """What section 6 prints comes from span_scores and the check's library_passages, not from the learner's code."""
    cells, parts = nb05.notebook.cells, _parts(nb05)
    exercise_cells = {i for e in edition.find_exercises(nb05.notebook) for i in (e.solution, e.check)}
    after = "\n".join(c.source for i, c in enumerate(cells)
                      if i > parts[0].solution and c.cell_type == "code" and i not in exercise_cells)
    for name in ("covered(", "new_text_share(", "distinct_passages(", "neighbour_share(", " recall("):
        assert not re.search(rf"(?<![\w.]){re.escape(name.strip())}", after), f"{name} is used after the exercise"
