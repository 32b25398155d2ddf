"""The self-checks of notebooks 01, 03, 04 and 10 cannot be fooled (issue 33).

Each notebook is run once, in this process, cell by cell, as the notebook has it (it reads the course's
data through `course_lib.datasets` and loads the embedding model where the notebook does). Then each
exercise's self-check cell is run again, as the notebook has it, with the learner's function replaced: by
plausible wrong answers, which the check must reject with a `SelfCheckError`, and by the notebook's
reference solution, which it must accept. Replacements go into a copy of the notebook's namespace, so
one test's answer never leaks into the next.
"""

from __future__ import annotations

import math
import re

import nbformat
import pytest
from notebook_checks import NOTEBOOKS, Notebook

from course_lib.tokens import count_tokens
from scripts import build_student_edition as edition


@pytest.fixture(scope="module")
def nb01():
    return Notebook("01_why_chunking.ipynb")


@pytest.fixture(scope="module")
def nb03():
    return Notebook("03_fixed_size_and_overlap.ipynb")


@pytest.fixture(scope="module")
def nb04():
    return Notebook("04_recursive_splitting.ipynb")


@pytest.fixture(scope="module")
def nb10():
    return Notebook("10_context_for_chunks.ipynb")


def test_every_exercise_of_these_notebooks_is_tested():
    # 4.1-4.4 (the learner's recursive splitter) have their own file, tests/test_exercise_checks_04.py, and 1.1 and
    # 1.2's builds theirs, tests/test_exercise_builds_01.py
    tested = {f"Exercise {n}" for n in ("1.1", "1.2", "1.3", "3.1", "3.2", "3.3", "3.4", "4.1", "4.2", "4.3",
                                        "4.4", "4.5", "4.6", "4.7", "4.8", "10.1", "10.2", "10.3", "10.4")}
    found = set()
    for name in ("01_why_chunking", "03_fixed_size_and_overlap", "04_recursive_splitting", "10_context_for_chunks"):
        notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
        found |= {e.name for e in edition.find_exercises(notebook)}
    assert found == tested, "a new exercise needs its wrong answers here"


# --- notebook 01 -------------------------------------------------------------------------------------

# Exercise 1.1 (what the model reads, four parts in section 1) and parts (a) and (b) of Exercise 1.2 have their
# own file, tests/test_exercise_builds_01.py (the word count, len(text.split()) + 2, is refused there); here the
# choice of k, part (c), and Exercise 1.3.

def test_1_2_rejects_the_sections_k_and_an_unaffordable_k(nb01):
    for k in (3, 7, 10, 0, "6"):
        nb01.rejects("Exercise 1.2", choose_k=lambda k=k: k)


def test_1_2_accepts_the_reference(nb01):
    nb01.accepts("Exercise 1.2", **nb01.reference("Exercise 1.2"))


def test_1_3_rejects(nb01):
    embed, np_ = nb01["embed"], nb01["np"]

    def least_similar(question, chunks, vectors):
        return chunks[int(np_.argmin(vectors @ embed([question])[0]))]

    def first_chunk(question, chunks, vectors):
        return chunks[0]

    def its_text(question, chunks, vectors):
        return chunks[int(np_.argmax(vectors @ embed([question])[0]))].text

    for wrong in (least_similar, first_chunk, its_text):
        nb01.rejects("Exercise 1.3", best_chunk=wrong)


def test_1_3_accepts_the_reference(nb01):
    nb01.accepts("Exercise 1.3", **nb01.reference("Exercise 1.3"))


# --- notebook 03 -------------------------------------------------------------------------------------

# Exercise 3.1 (b)-(d) and Exercise 3.2 are tested in tests/test_exercise_builds_03.py, 3.1 (a) in
# tests/test_exercise_checks_03.py.


def test_3_4_rejects(nb03):
    def letters_only(text, cuts):
        return sum(0 < p < len(text) and text[p - 1].isalpha() and text[p].isalpha() for p in cuts)

    def no_bounds(text, cuts):
        return sum(text[p - 1].isalnum() and text[p].isalnum() for p in cuts)

    def every_cut(text, cuts):
        return sum(0 < p < len(text) for p in cuts)

    for wrong in (letters_only, no_bounds, every_cut):
        nb03.rejects("Exercise 3.4", cut_words=wrong)


def test_3_4_accepts_the_reference(nb03):
    nb03.accepts("Exercise 3.4", **nb03.reference("Exercise 3.4"))


def test_3_3_rejects_without_giving_the_answer_away(nb03):
    reference = nb03.reference("Exercise 3.3")["smallest_overlap"]
    answer = reference(nb03["policy"], nb03["SIZE"], nb03["CLAIM"], nb03["EXCEPTION"])
    wrong = {
        "the pair's length": lambda text, size, claim, exception: count_tokens(claim + ", " + exception),
        "the section's overlap": lambda text, size, claim, exception: 20,
        "the claim's length": lambda text, size, claim, exception: count_tokens(claim),
        "the answer at the default size, fixed": lambda text, size, claim, exception: answer,
        "searches downward from the pair's length": lambda text, size, claim, exception: next(
            m for m in range(count_tokens(claim + ", " + exception), -1, -1)
            if any(claim in c.text and exception in c.text for c in nb03["fixed_size_chunks"](text, size, m))),
    }
    for name, function in wrong.items():
        message = nb03.rejects("Exercise 3.3", smallest_overlap=function)
        problem = re.sub(r"returned \S+", "returned ...", message.splitlines()[0])  # the learner's own number
        assert not re.search(rf"\b{answer}\b", problem), f"{name}: the message gives the answer: {problem}"


def test_3_3_accepts_the_reference(nb03):
    nb03.accepts("Exercise 3.3", **nb03.reference("Exercise 3.3"))


# --- notebook 04 -------------------------------------------------------------------------------------

def test_4_5_rejects(nb04):
    separators = nb04["SEPARATORS"]
    for wrong in (separators["prose"], separators["markdown"], [r"\n(?=CAPÍTULO )", *separators["prose"]]):
        nb04.rejects("Exercise 4.5", ordinance_separators=lambda wrong=wrong: list(wrong))


def test_4_5_accepts_the_reference(nb04):
    nb04.accepts("Exercise 4.5", **nb04.reference("Exercise 4.5"))


def test_4_6_rejects(nb04):
    split_sentences = nb04["split_sentences"]

    def one_sentence_each(text, max_tokens, language="en"):
        return list(split_sentences(text, language))

    def five_sentences(text, max_tokens, language="en"):
        sentences = split_sentences(text, language)
        return [(group[0][0], group[-1][1]) for group in (sentences[i:i + 5] for i in range(0, len(sentences), 5))]

    for wrong in (one_sentence_each, five_sentences):
        nb04.rejects("Exercise 4.6", capped_sentence_chunks=wrong)


def test_4_6_accepts_the_reference(nb04):
    nb04.accepts("Exercise 4.6", **nb04.reference("Exercise 4.6"))


def test_4_7_rejects(nb04):
    pattern_chunk = nb04["pattern_chunk"]

    def only_offsets_fixed(text, chunk_size=500, overlap=50):
        chunks = pattern_chunk(text, chunk_size, overlap)
        for c in chunks:
            c["start_char"] = text.find(c["text"], c["start_char"])
        return chunks

    for wrong in (pattern_chunk, only_offsets_fixed):
        nb04.rejects("Exercise 4.7", fixed_pattern_chunk=wrong)


def test_4_7_accepts_the_reference(nb04):
    nb04.accepts("Exercise 4.7", **nb04.reference("Exercise 4.7"))


def test_4_8_rejects(nb04):
    def strictly_below(token_counts, size):
        chunks, current = 0, None
        for n in token_counts:
            if current is not None and current + n < size:
                current += n
            else:
                chunks, current = chunks + 1, n
        return chunks

    def forgets_the_last(token_counts, size):
        chunks, current = 0, 0
        for n in token_counts:
            if current + n > size:
                chunks, current = chunks + 1, 0
            current += n
        return chunks

    def total_over_size(token_counts, size):
        return math.ceil(sum(token_counts) / size)

    for wrong in (strictly_below, forgets_the_last, total_over_size):
        nb04.rejects("Exercise 4.8", merge_count=wrong)


def test_4_8_accepts_the_reference(nb04):
    nb04.accepts("Exercise 4.8", **nb04.reference("Exercise 4.8"))


# --- notebook 10 -------------------------------------------------------------------------------------

WRONG_HEADERS = {
    "title only, no heading path": lambda title, headings: (title or "").strip(),
    "heading path only": lambda title, headings: " > ".join(h.strip() for h in headings if h.strip()),
    "repeats the title": lambda title, headings: " > ".join(p.strip() for p in [title or "", *headings] if p.strip()),
    "joins without tidying": lambda title, headings: " > ".join(str(p) for p in [title, *headings]),
    "another separator": lambda title, headings: " / ".join(
        dict.fromkeys(p.strip() for p in [title or "", *headings] if p.strip())),
}


@pytest.mark.parametrize("wrong", sorted(WRONG_HEADERS))
def test_10_1_rejects(nb10, wrong):
    nb10.rejects("Exercise 10.1", make_header=WRONG_HEADERS[wrong])


def test_10_1_accepts_the_reference_and_the_library(nb10):
    nb10.accepts("Exercise 10.1", **nb10.reference("Exercise 10.1"))
    nb10.accepts("Exercise 10.1", make_header=nb10["contextual_header"])


def _scores(rankings, term):
    scores = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + term(rank)
    return scores


WRONG_FUSIONS = {
    "k = 0 whatever k says": lambda rankings, k=60: sorted(
        (s := _scores(rankings, lambda r: 1 / r)), key=lambda i: -s[i]),
    "sums the ranks": lambda rankings, k=60: sorted((s := _scores(rankings, lambda r: r)), key=lambda i: s[i]),
    "ranks from 0": lambda rankings, k=60: sorted(
        (s := _scores(rankings, lambda r: 1 / (k + r - 1))), key=lambda i: -s[i]),
    "ties by id": lambda rankings, k=60: sorted(
        (s := _scores(rankings, lambda r: 1 / (k + r))), key=lambda i: (-s[i], i)),
    "counts the lists": lambda rankings, k=60: sorted(
        (s := _scores(rankings, lambda r: 1)), key=lambda i: -s[i]),
    "first list first": lambda rankings, k=60: list(dict.fromkeys(i for r in rankings for i in r)),
}


@pytest.mark.parametrize("wrong", sorted(WRONG_FUSIONS))
def test_10_2_rejects(nb10, wrong):
    nb10.rejects("Exercise 10.2", fuse=WRONG_FUSIONS[wrong])


def test_10_2_accepts_the_reference_and_the_library(nb10):
    nb10.accepts("Exercise 10.2", **nb10.reference("Exercise 10.2"))
    nb10.accepts("Exercise 10.2", fuse=nb10["reciprocal_rank_fusion"])


def test_10_3_rejects(nb10):
    for letter in ("a", "c", "d", "B", "b)"):
        nb10.rejects("Exercise 10.3", explanation=lambda letter=letter: letter)


def test_10_3_accepts_the_reference(nb10):
    nb10.accepts("Exercise 10.3", **nb10.reference("Exercise 10.3"))


def test_10_4_rejects(nb10):
    defence = "ship the method with the best numbers on both corpora"
    wrong = [
        (set(), {"bm25", "late"}, defence),  # misses parent-child's span recall on the collection
        ({"headers", "hybrid+headers"}, {"bm25", "late", "parent-child"}, defence),  # headers: nothing on Chroma
        ({"hybrid+headers"}, {"bm25", "late", "parent-child"}, "ship it"),  # no defence
    ]
    for answer in wrong:
        nb10.rejects("Exercise 10.4", my_decision=lambda answer=answer: answer)


def test_10_4_accepts_the_reference(nb10):
    nb10.accepts("Exercise 10.4", **nb10.reference("Exercise 10.4"))
