"""The self-checks of notebooks 00, 02, 07 and 12 cannot be fooled (issue 33).

For each notebook, the few cells that define what its exercises' checks use are run once in this process
(the set-up and the cells named below by id, not the whole notebook). Then each exercise's self-check cell
runs as the notebook has it, with the learner's function replaced: by plausible wrong answers, which the
check must reject with a `SelfCheckError`, and by the notebook's reference solution, which it must accept.
The first wrong try of an exercise must not give its answer away: it shows the problem and the first hint
only.
"""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

import pytest
from notebook_checks import Notebook

from course_lib import exercises
from course_lib.chunking import recursive_chunks
from scripts.build_student_edition import find_exercises


@pytest.fixture(autouse=True)
def first_try():
    """Each test starts as a learner's first try: no wrong tries counted, so only hint 1 is shown."""
    exercises._failures.clear()
    yield
    exercises._failures.clear()


def shown_hints(message: str) -> list[str]:
    return re.findall(r"^Hint(?: \d+ of \d+)?: ", message, re.MULTILINE)


# --- notebook 00 -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def nb00():
    return Notebook("00_start_here.ipynb", ["023e490e", "a89a7d88"])


def test_00_reference_solution_passes(nb00):
    nb00.accepts("Exercise 0.1", **nb00.reference("Exercise 0.1"))


def _prose_separators(text):  # the default separators know no headings
    return recursive_chunks(text, 60)


def _too_large(text):  # the right separators, but chunks over 60 tokens
    return recursive_chunks(text, 80, separators="markdown")


def _first_chunk_dropped(text):  # leaves the title and the first section out
    return recursive_chunks(text, 60, separators="markdown")[1:]


@pytest.mark.parametrize("wrong, says", [
    (_prose_separators, "does not start a chunk"),
    (_too_large, "tokens"),
    (_first_chunk_dropped, "characters are in no chunk"),
])
def test_00_wrong_chunks_fail_without_the_answer(nb00, wrong, says):
    message = nb00.rejects("Exercise 0.1", my_chunks=wrong)
    assert says in message
    assert len(shown_hints(message)) == 1 and 'separators="markdown"' not in message, message


# --- notebook 02 -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def nb02():
    # set-up (loads FLORES and the model's tokenizer), count_each, pieces, files_as_one_line, the technical text
    return Notebook("02_tokens_vs_characters.ipynb", ["cbb1f103", "31611dab", "91f0e94c", "ea237eaa", "7afcbd91"])


# Exercise 2.1 (parts a-b) is tested in tests/test_exercise_builds_02.py.

def test_02_reference_solution_passes(nb02):
    nb02.accepts("Exercise 2.2", **nb02.reference("Exercise 2.2"))


@pytest.mark.parametrize("line, says", [
    ("Sustituya la membrana PTFE ref. 7012-0440-B cada 4.000 h de servicio o cada 12 meses, lo que ocurra antes.",
     "characters per token"),  # the course's own line: not bad enough
    ("Ref. 4471-09-B/22, RD 842/2002.", "at least 60"),  # bad enough, but too short
    ("1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17/18/19/20/21/22/23/24/25", "words"),  # codes, no line
])
def test_02_2_wrong_lines_fail(nb02, line, says):
    assert says in nb02.rejects("Exercise 2.2", technical_line=lambda: line)


# --- notebook 07 -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def nb07():
    # set-up (loads the model), the outline, section 1's helpers and heading lines, structured_chunks,
    # with_path, section 3's evaluate and results (7.1 prints them when solved), the director's letter
    nb = Notebook("07_structure_aware_chunking.ipynb",
                  ["10bd337c", "f5b0c035", "84bf1833", "3c197a03", "c0a23666", "b96d2175", "0a80884c", "13210897"])
    # Exercise 7.1 has two parts: these tests are about (a), the outline; (b) is tested in test_exercise_builds_07.py
    nb.exercises["Exercise 7.1"] = next(e for e in find_exercises(nb.notebook) if e.name == "Exercise 7.1")
    return nb


@pytest.mark.parametrize("exercise", ["Exercise 7.1", "Exercise 7.2", "Exercise 7.3", "Exercise 7.4"])
def test_07_reference_solutions_pass(nb07, exercise):
    nb07.accepts(exercise, **nb07.reference(exercise))


def _outline(text, *, fences=True, pop=True, newline=1, drop_blank=True):
    # heading_sections with one mistake switched on: the reference is _outline(text)
    sections, path, start, offset, in_code = [], [], 0, 0, False
    for line in text.split("\n"):
        if fences and line.startswith("```"):
            in_code = not in_code
        heading = None if in_code else re.match(r"(#{1,6}) ", line)
        if heading:
            if offset > start:
                sections.append((start, offset, path))
            level = len(heading.group(1))
            path = ([h for h in path if len(h.split()[0]) < level] if pop else path) + [line.strip()]
            start = offset
        offset += len(line) + newline
    sections.append((start, len(text), path))
    return [(a, b, p) for a, b, p in sections if not drop_blank or text[a:b].strip()]


def _lstrip_headings(text):  # any line whose stripped text starts with # counts, even ###No-space
    return [(a, b, p) for a, b, p in _outline(re.sub(r"(?m)^(#{1,6})(?=[^# \n])", r"\1 ", text))]


def test_07_1_the_mistakes_switched_off_pass(nb07):
    nb07.accepts("Exercise 7.1", heading_sections=_outline)


@pytest.mark.parametrize("wrong", [
    lambda text: _outline(text, fences=False),  # a # comment inside a code block becomes a heading
    lambda text: _outline(text, pop=False),  # the path only grows: siblings pile up
    lambda text: _outline(text, newline=0),  # forgets the line break in the running offset
    lambda text: _outline(text, drop_blank=False),  # keeps a section of white space only
    _lstrip_headings,  # "###No space" read as a heading
    lambda text: [(a, b, p[-1:]) for a, b, p in _outline(text)],  # the last heading, not the path
])
def test_07_1_wrong_outlines_fail(nb07, wrong):
    message = nb07.rejects("Exercise 7.1", heading_sections=wrong)
    assert len(shown_hints(message)) == 1, message


def _sections_offsets_not_moved(text, size):  # offsets stay relative to the section
    from course_lib.chunking import Chunk, fixed_size_chunks, markdown_sections

    return [Chunk(c.text, c.start, c.end, c.n_tokens, {"headings": path})
            for a, b, path in markdown_sections(text) for c in fixed_size_chunks(text[a:b], size)]


def _whole_text_with_paths(text, size):  # fixed-size chunks of the whole text, labelled afterwards
    from course_lib.chunking import Chunk, fixed_size_chunks, markdown_sections

    sections = markdown_sections(text)
    return [Chunk(c.text, c.start, c.end, c.n_tokens,
                  {"headings": next(p for a, b, p in sections if a <= c.start < b)})
            for c in fixed_size_chunks(text, size)]


def _last_heading_only(text, size):  # metadata holds the last heading, not the path
    from course_lib.chunking import Chunk, fixed_size_chunks, markdown_sections

    return [Chunk(c.text, a + c.start, a + c.end, c.n_tokens, {"headings": path[-1:]})
            for a, b, path in markdown_sections(text) for c in fixed_size_chunks(text[a:b], size)]


@pytest.mark.parametrize("wrong, says", [
    (_sections_offsets_not_moved, "is not text["),
    (_whole_text_with_paths, "chunks, but fixed_size_chunks of each section gives"),
    (_last_heading_only, "not the path of its section"),
])
def test_07_4_wrong_chunkers_fail(nb07, wrong, says):
    assert says in nb07.rejects("Exercise 7.4", section_fixed_chunks=wrong)


def _no_comment(source, start):  # never moves
    return start


def _one_line_only(source, start):  # stops after the first comment line
    line_start = source.rfind("\n", 0, start) + 1
    previous_start = source.rfind("\n", 0, max(line_start - 1, 0)) + 1
    previous = source[previous_start:max(line_start - 1, 0)]
    return previous_start + len(previous) - len(previous.lstrip()) if previous.strip().startswith("#") else start


def _through_blank_lines(source, start):  # a blank line does not end the block
    begin, line_start = start, source.rfind("\n", 0, start) + 1
    while line_start > 0:
        previous_start = source.rfind("\n", 0, line_start - 1) + 1
        previous = source[previous_start:line_start - 1]
        if previous.strip() and not previous.strip().startswith("#"):
            break
        if previous.strip():
            begin = previous_start + len(previous) - len(previous.lstrip())
        line_start = previous_start
    return begin


def _line_start_not_hash(source, start):  # returns where the comment's line starts, indentation included
    begin, line_start = start, source.rfind("\n", 0, start) + 1
    while line_start > 0:
        previous_start = source.rfind("\n", 0, line_start - 1) + 1
        if not source[previous_start:line_start - 1].strip().startswith("#"):
            break
        begin = line_start = previous_start
    return begin


@pytest.mark.parametrize("wrong", [_no_comment, _one_line_only, _through_blank_lines, _line_start_not_hash])
def test_07_2_wrong_comment_starts_fail(nb07, wrong):
    nb07.rejects("Exercise 7.2", comment_start=wrong)


def _keeps_underline(text):  # adds the # but leaves the underline line in the text
    lines = text.split("\n")
    for k in range(1, len(lines)):
        if re.fullmatch(r" {0,3}(=+|-+)[ \t]*", lines[k]) and lines[k - 1].strip() and not lines[k - 1].startswith("#"):
            lines[k - 1] = ("# " if "=" in lines[k] else "## ") + lines[k - 1].strip()
    return "\n".join(lines)


def _every_rule_a_heading(text):  # also turns a --- below a blank line (a horizontal rule) into a heading
    out = []
    for line in text.split("\n"):
        if re.fullmatch(r" {0,3}(=+|-+)[ \t]*", line) and out:
            out[-1] = ("# " if "=" in line else "## ") + out[-1].strip()
        else:
            out.append(line)
    return "\n".join(out)


def _equals_only(text):  # converts === underlines, forgets ---
    out = []
    for line in text.split("\n"):
        if re.fullmatch(r" {0,3}=+[ \t]*", line) and out and out[-1].strip():
            out[-1] = "# " + out[-1].strip()
        else:
            out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("wrong", [_keeps_underline, _every_rule_a_heading, _equals_only])
def test_07_3_wrong_normalisers_fail(nb07, wrong):
    nb07.rejects("Exercise 7.3", atx_headings=wrong)


# --- notebook 12 -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def nb12():
    # set-up, the PDF read by the course's reader (several seconds), the page of section 4
    return Notebook("12_documents_with_pages.ipynb", ["e999514f", "12429c01", "bfbcb9e6"])


@pytest.mark.parametrize("exercise", ["Exercise 12.1", "Exercise 12.2"])
def test_12_reference_solutions_pass(nb12, exercise):
    nb12.accepts(exercise, **nb12.reference(exercise))


def _exact_find(text, quote):  # text.find: fails where the text breaks a line or a page
    from rag_tools.readers import normalize_quote

    at = text.find(normalize_quote(quote))
    return (at, at + len(normalize_quote(quote))) if at >= 0 else None


def _single_white_space(text, quote):  # one white-space character between words, not a run
    from rag_tools.readers import normalize_quote

    found = re.search(r"\s".join(map(re.escape, normalize_quote(quote).split())), text)
    return (found.start(), found.end()) if found else None


def _end_from_quote_length(text, quote):  # the end computed from the quote, not from the match
    from rag_tools.readers import normalize_quote

    found = re.search(r"\s+".join(map(re.escape, normalize_quote(quote).split())), text)
    return (found.start(), found.start() + len(normalize_quote(quote))) if found else None


def _not_folded(text, quote):  # forgets normalize_quote: a typed ligature never matches
    found = re.search(r"\s+".join(map(re.escape, quote.split())), text)
    return (found.start(), found.end()) if found else None


@pytest.mark.parametrize("wrong", [_exact_find, _single_white_space, _end_from_quote_length, _not_folded])
def test_12_1_wrong_finders_fail(nb12, wrong):
    nb12.rejects("Exercise 12.1", find_quote=wrong)


def _first_line(page):  # the first line, blank or not
    return page.split("\n")[0].strip()


def _first_non_blank(page):
    return next((line.strip() for line in page.split("\n") if line.strip()), "")


def _strictly_more(pages, share):  # more than share, where the task says share or more
    from collections import Counter

    firsts = Counter(_first_non_blank(page) for page in pages)
    return {line for line, n in firsts.items() if line and n > share * len(pages)}


def _blank_first_line(pages, share):  # takes the first line even when it is blank
    from collections import Counter

    firsts = Counter(_first_line(page) for page in pages)
    return {line for line, n in firsts.items() if line and n >= share * len(pages)}


def _not_stripped(pages, share):  # keeps the spaces around the line
    from collections import Counter

    firsts = Counter(next((line for line in page.split("\n") if line.strip()), "") for page in pages)
    return {line for line, n in firsts.items() if line and n >= share * len(pages)}


def _every_line(pages, share):  # counts every line of the page, not the one that opens it
    from collections import Counter

    counts = Counter(line.strip() for page in pages for line in set(page.split("\n")) if line.strip())
    return {line for line, n in counts.items() if n >= share * len(pages)}


def _keeps_empty(pages, share):  # lets "nothing" be a header when blank pages are common
    from collections import Counter

    firsts = Counter(_first_non_blank(page) for page in pages)
    return {line for line, n in firsts.items() if n >= share * len(pages)}


@pytest.mark.parametrize("wrong", [_strictly_more, _blank_first_line, _not_stripped, _every_line, _keeps_empty])
def test_12_2_wrong_header_rules_fail(nb12, wrong):
    nb12.rejects("Exercise 12.2", running_headers=wrong)
