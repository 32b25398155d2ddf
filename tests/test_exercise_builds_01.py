"""The builds of notebooks 00 and 01 cannot be fooled (issue 33).

Notebook 01: Exercise 1.1 (what the model reads: fits_window, model_input, seen_prefix, token_at, parts a-d in
section 1) and Exercise 1.2 (design B: top_k and overlaps, design_b, choose_k, parts a-c in section 3). The
notebook is run once in this process (tests/notebook_checks.py); then each part's self-check cell is run again
with the learner's functions replaced: by plausible wrong answers, which it must reject with a
`SelfCheckError`, and by the reference solution and another right answer, which it must accept. A part is picked
by its place among its exercise's solution cells; before a check runs, all the exercise's solution cells are
run again in a copy of the namespace, so that a replaced function is the one the later parts call.

Notebook 00: Exercise 0.1 (the learner cuts the manual into sections, then chunks each one). Its check runs on
three texts; the preset that put a heading on the last line of a chunk must now fail. The wrong answers already
in tests/test_exercise_checks_00_02_07_12.py stay there.
"""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

import pytest
from notebook_checks import Notebook

from course_lib import exercises
from course_lib.chunking import markdown_chunks, recursive_chunks
from course_lib.spans import Chunk
from course_lib.tokens import count_tokens
from scripts import build_student_edition as edition

FITS, INPUT, PREFIX, TOKEN = range(4)  # Exercise 1.1's parts, in notebook order
RANK, DESIGN, CHOOSE = range(3)  # Exercise 1.2's parts


@pytest.fixture(autouse=True)
def first_try():
    """Each test starts as a learner's first try: no wrong tries counted."""
    exercises._failures.clear()
    yield
    exercises._failures.clear()


@pytest.fixture(scope="module")
def nb01():
    return Notebook("01_why_chunking.ipynb")


def _parts(nb: Notebook, name: str) -> list[edition.Exercise]:
    return nb.parts(name)


def run_part(nb: Notebook, name: str, part: int, **learner) -> str:
    """Run one part's check cell with the learner's functions in place; return what it printed."""
    return nb.run_part(name, part, **learner)[0]


def accepts(nb: Notebook, name: str, part: int, **learner) -> str:
    return nb.accepts_part(name, part, **learner)


def rejects(nb: Notebook, name: str, part: int, **learner) -> str:
    return nb.rejects_part(name, part, **learner)


def test_the_exercises_have_their_parts(nb01):
    defined = {name: [set(re.findall(r"^def (\w+)", nb01.notebook.cells[e.solution].source, re.MULTILINE))
                      for e in _parts(nb01, name)] for name in ("Exercise 1.1", "Exercise 1.2")}
    assert defined == {"Exercise 1.1": [{"fits_window"}, {"model_input"}, {"seen_prefix"}, {"token_at"}],
                       "Exercise 1.2": [{"top_k", "overlaps"}, {"design_b"}, {"choose_k"}]}


@pytest.mark.parametrize("name, part", [("Exercise 1.1", p) for p in (FITS, INPUT, PREFIX, TOKEN)]
                         + [("Exercise 1.2", p) for p in (RANK, DESIGN, CHOOSE)])
def test_each_part_accepts_the_reference_solution(nb01, name, part):
    accepts(nb01, name, part)


def test_no_visible_cell_shows_a_line_of_the_solution(nb01):
    solutions, lines = set(), set()
    for name in ("Exercise 1.1", "Exercise 1.2"):
        for exercise in _parts(nb01, name):
            solutions.add(exercise.solution)
            for piece in nb01.notebook.cells[exercise.solution].source.split(edition.BEGIN)[1:]:
                lines |= {line.strip() for line in piece.split(edition.END)[0].splitlines()
                          if len(line.strip()) > 20 and not line.strip().startswith("#")}
    shown = [line for i, cell in enumerate(nb01.notebook.cells) if i not in solutions
             for line in lines if line in cell.source]
    assert not shown, f"visible cells show solution lines: {shown}"


# --- 1.1 (a) fits_window -------------------------------------------------------------------------------

def _wordpieces(nb, text):
    return nb["tokenizer"](text, add_special_tokens=False)["input_ids"]


def wrong_fits(nb):
    return {
        "counts words": lambda text, n: len(text.split()) + 2 <= n,
        "counts cl100k_base tokens": lambda text, n: count_tokens(text) + 2 <= n,
        "four characters a token": lambda text, n: len(text) / 4 + 2 <= n,
        "forgets [CLS] and [SEP]": lambda text, n: len(_wordpieces(nb, text)) <= n,
        "counts the special tokens twice": lambda text, n: len(nb["tokenizer"](text)["input_ids"]) + 2 <= n,
        "one place short (< instead of <=)": lambda text, n: len(_wordpieces(nb, text)) + 2 < n,
        "assumes a window of 256": lambda text, n: len(_wordpieces(nb, text)) + 2 <= 256,
    }


@pytest.mark.parametrize("wrong", sorted(wrong_fits(None)))
def test_1_1_a_rejects(nb01, wrong):
    rejects(nb01, "Exercise 1.1", FITS, fits_window=wrong_fits(nb01)[wrong])


def test_1_1_a_has_a_case_where_words_undercount_the_tokens(nb01):
    # the Spanish policy: its 200 words fit a window of 256 as words, not as WordPiece tokens
    spanish = nb01["spanish"]
    assert len(spanish.split()) + 2 <= 256 < len(_wordpieces(nb01, spanish)) + 2


def test_1_1_a_accepts_counting_with_the_special_tokens(nb01):
    accepts(nb01, "Exercise 1.1", FITS, fits_window=lambda text, n: len(nb01["tokenizer"](text)["input_ids"]) <= n)


# --- 1.1 (b) model_input -------------------------------------------------------------------------------

def wrong_inputs(nb):
    tok = nb["tokenizer"] if nb else None
    cls, sep = (tok.cls_token_id, tok.sep_token_id) if tok else (None, None)
    return {
        "forgets the markers": lambda text, n: _wordpieces(nb, text)[: n - 2],
        "keeps max_seq_length tokens of text": lambda text, n: [cls, *_wordpieces(nb, text)[:n], sep],
        "off by one": lambda text, n: [cls, *_wordpieces(nb, text)[: n - 1], sep],
        "drops [SEP] when it cuts": lambda text, n: [cls, *_wordpieces(nb, text)[: n - 2]]
        + ([sep] if len(_wordpieces(nb, text)) <= n - 2 else []),
        "keeps the end of the text": lambda text, n: [cls, *_wordpieces(nb, text)[-(n - 2):], sep],
    }


@pytest.mark.parametrize("wrong", sorted(wrong_inputs(None)))
def test_1_1_b_rejects(nb01, wrong):
    rejects(nb01, "Exercise 1.1", INPUT, model_input=wrong_inputs(nb01)[wrong])


def test_1_1_b_accepts_another_right_answer(nb01):
    tok = nb01["tokenizer"]

    def listed(text, n):
        return [tok.cls_token_id, *list(_wordpieces(nb01, text))[:max(0, n - 2)], tok.sep_token_id]

    accepts(nb01, "Exercise 1.1", INPUT, model_input=listed)


# --- 1.1 (c) seen_prefix -------------------------------------------------------------------------------

def wrong_prefixes(nb):
    def spans(text):
        return nb["wordpieces"](text)[1]

    def as_given_before(text, n):  # the notebook's former given code: offsets[-1] on an empty text
        offsets = spans(text)
        return text[: offsets[min(n - 2, len(offsets)) - 1][1]]

    def off_by_one(text, n):
        offsets = spans(text)
        k = min(n - 1, len(offsets))
        return text[: offsets[k - 1][1]] if k else ""

    def forgets_the_markers(text, n):
        offsets = spans(text)
        k = min(n, len(offsets))
        return text[: offsets[k - 1][1]] if k else ""

    def up_to_the_next_token(text, n):  # cuts where the first token not read starts: keeps the space before it
        offsets = spans(text)
        return text[: offsets[n - 2][0]] if len(offsets) > n - 2 else text

    def whole_text_when_it_fits(text, n):
        offsets = spans(text)
        return text if len(offsets) <= n - 2 else text[: offsets[n - 3][1]]

    return {f.__name__: f for f in (as_given_before, off_by_one, forgets_the_markers, up_to_the_next_token,
                                    whole_text_when_it_fits)} | {
        "four characters a token": lambda text, n: text[: 4 * (n - 2)]}


@pytest.mark.parametrize("wrong", sorted(wrong_prefixes(None)))
def test_1_1_c_rejects(nb01, wrong):
    rejects(nb01, "Exercise 1.1", PREFIX, seen_prefix=wrong_prefixes(nb01)[wrong])


def test_1_1_c_accepts_another_right_answer(nb01):
    def by_the_model_input(text, n):  # the characters of the tokens read, found from the end of the last one
        offsets = nb01["wordpieces"](text)[1]
        ends = [end for _, end in offsets[: n - 2]]
        return text[: max(ends, default=0)]

    accepts(nb01, "Exercise 1.1", PREFIX, seen_prefix=by_the_model_input)


# --- 1.1 (d) token_at ----------------------------------------------------------------------------------

def wrong_token_at(nb):
    def spans(text):
        return nb["wordpieces"](text)[1]

    def counts_cls(text, position):
        k = nb["token_at"](text, position)
        return None if k is None else k + 1

    def end_inclusive(text, position):
        return next((k for k, (s, e) in enumerate(spans(text)) if s <= position <= e), None)

    def next_token_start(text, position):  # the former given code: the first token starting at or after it
        return next((k for k, (s, _) in enumerate(spans(text)) if s >= position), None)

    def minus_one_for_none(text, position):
        k = nb["token_at"](text, position)
        return -1 if k is None else k

    return {f.__name__: f for f in (counts_cls, end_inclusive, next_token_start, minus_one_for_none)}


@pytest.mark.parametrize("wrong", sorted(wrong_token_at(None)))
def test_1_1_d_rejects(nb01, wrong):
    rejects(nb01, "Exercise 1.1", TOKEN, token_at=wrong_token_at(nb01)[wrong])


def test_1_1_d_accepts_another_right_answer(nb01):
    import bisect

    def by_bisection(text, position):
        offsets = nb01["wordpieces"](text)[1]
        k = bisect.bisect_right([s for s, _ in offsets], position) - 1
        return k if k >= 0 and offsets[k][0] <= position < offsets[k][1] else None

    accepts(nb01, "Exercise 1.1", TOKEN, token_at=by_bisection)


# --- 1.2 (a) top_k and overlaps ------------------------------------------------------------------------

def wrong_top_k(nb):
    np = nb["np"] if nb else None
    return {
        "worst first": lambda q, v, k=3: [int(i) for i in np.argsort(v @ q, kind="stable")[:k]],
        "higher index first on a tie": lambda q, v, k=3: [int(i) for i in np.argsort(v @ q, kind="stable")[::-1][:k]],
        "skips the best": lambda q, v, k=3: [int(i) for i in np.argsort(-(v @ q), kind="stable")[1:k + 1]],
        "one too many": lambda q, v, k=3: [int(i) for i in np.argsort(-(v @ q), kind="stable")[:k + 1]],
    }


def wrong_overlaps():
    return {
        "touching ranges count": lambda c, refs: any(c.start <= r["end_index"] and r["start_index"] <= c.end
                                                     for r in refs),
        "only a chunk inside an excerpt": lambda c, refs: any(r["start_index"] <= c.start and c.end <= r["end_index"]
                                                              for r in refs),
        "only the chunk's start": lambda c, refs: any(r["start_index"] <= c.start < r["end_index"] for r in refs),
        "only the first excerpt": lambda c, refs: c.start < refs[0]["end_index"] and refs[0]["start_index"] < c.end,
    }


@pytest.mark.parametrize("wrong", sorted(wrong_top_k(None)))
def test_1_2_a_rejects_a_wrong_top_k(nb01, wrong):
    rejects(nb01, "Exercise 1.2", RANK, top_k=wrong_top_k(nb01)[wrong])


@pytest.mark.parametrize("wrong", sorted(wrong_overlaps()))
def test_1_2_a_rejects_a_wrong_overlaps(nb01, wrong):
    rejects(nb01, "Exercise 1.2", RANK, overlaps=wrong_overlaps()[wrong])


def test_1_2_a_accepts_other_right_answers(nb01):
    def sorted_by_score(q, v, k=3):
        scores = [float(s) for s in v @ q]
        return sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:k]

    def no_gap(chunk, references):
        return any(not (chunk.end <= r["start_index"] or r["end_index"] <= chunk.start) for r in references)

    accepts(nb01, "Exercise 1.2", RANK, top_k=sorted_by_score, overlaps=no_gap)


# --- 1.2 (b) design_b ----------------------------------------------------------------------------------

def wrong_designs(nb):
    def measured(k, *, total=False, count_chunks=False, extra=0):
        ns = nb.ns
        sent, found = [], 0
        for q, vec in zip(ns["questions"], ns["question_vecs"]):
            top = [ns["chunks"][i] for i in ns["top_k"](vec, ns["chunk_vecs"], k + extra)]
            sent.append(sum(c.n_tokens for c in top))
            hits = [ns["overlaps"](c, q["references"]) for c in top]
            found += sum(hits) if count_chunks else any(hits)
        return (float(sum(sent)) if total else float(sum(sent) / len(sent))), found

    return {
        "total tokens, not the mean": lambda k: measured(k, total=True),
        "counts relevant chunks, not questions": lambda k: measured(k, count_chunks=True),
        "one chunk too many": lambda k: measured(k, extra=1),
    }


@pytest.mark.parametrize("wrong", sorted(wrong_designs(None)))
def test_1_2_b_rejects(nb01, wrong):
    rejects(nb01, "Exercise 1.2", DESIGN, design_b=wrong_designs(nb01)[wrong])


def test_1_2_b_sees_a_wrong_top_k_through_design_b(nb01):
    # design_b calls the learner's top_k: a top_k that ranks worst first makes design_b wrong too
    rejects(nb01, "Exercise 1.2", DESIGN, top_k=wrong_top_k(nb01)["worst first"])


# --- 1.2 (c) choose_k (the fixed answers are in tests/test_exercise_checks_early.py) ------------------

def test_1_2_c_rejects_a_k_past_the_budget_and_the_dearer_of_a_tie(nb01):
    rejects(nb01, "Exercise 1.2", CHOOSE, choose_k=lambda: nb01["choose_k"]() + 1)
    # a measurement under which k = 2 and k = 3 find as many questions, with a budget that affords k = 3
    real = nb01["design_b"]

    def tied(k):
        tokens, found = real(k)
        return tokens, (real(2)[1] if k == 3 else found)

    budget = tied(3)[0] * 30_000 * nb01["EXAMPLE_PRICE_PER_MILLION_TOKENS"] / 1e6
    assert tied(1)[1] <= tied(2)[1] == tied(3)[1]
    same = {"design_b": tied, "library_design_b": tied, "MONTHLY_BUDGET": budget}
    assert "✓ Exercise 1.2" in run_part(nb01, "Exercise 1.2", CHOOSE, choose_k=lambda: 2, **same)
    assert "as many questions as a cheaper k" in rejects(nb01, "Exercise 1.2", CHOOSE, choose_k=lambda: 3, **same)
    accepts(nb01, "Exercise 1.2", CHOOSE, **same)  # the reference keeps the cheaper k


# --- notebook 00, Exercise 0.1 -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def nb00():
    return Notebook("00_start_here.ipynb", ["023e490e", "a89a7d88"])


def _by_sections(size=60, shift=True, first=True, off=0):
    def my_chunks(text):
        starts = [m.start() + off for m in re.finditer(r"(?m)^#+ ", text) if m.start() > 0]
        starts = ([0] if first else []) + starts
        chunks = []
        for start, end in zip(starts, [*starts[1:], len(text)]):
            for c in recursive_chunks(text[start:end], size=size):
                chunks.append(Chunk(c.text, start + c.start, start + c.end, c.n_tokens) if shift else c)
        return chunks
    return my_chunks


@pytest.mark.parametrize("wrong, says", [
    (lambda text: recursive_chunks(text, 60, separators="markdown"), "'## Service life' does not start a chunk"),
    (_by_sections(shift=False), "does not match source"),
    (_by_sections(first=False), "characters are in no chunk"),
    (_by_sections(off=1), "does not start a chunk"),
    (_by_sections(size=80), "tokens"),
], ids=["the markdown preset", "offsets left inside the section", "the text before the first heading left out",
        "cut one character late", "sections cut at 80 tokens"])
def test_0_1_rejects(nb00, wrong, says):
    assert says in nb00.rejects("Exercise 0.1", my_chunks=wrong)


def test_0_1_the_preset_passes_the_first_two_sections_but_not_the_whole_manual(nb00):
    # why the check runs on more than the text above it: the old one-line answer passed there
    preset = recursive_chunks(nb00["text"], 60, separators="markdown")
    assert {c.start for c in preset} >= {m.start() for m in re.finditer(r"(?m)^#+ ", nb00["text"])}


@pytest.mark.parametrize("right", [_by_sections(), lambda text: markdown_chunks(text, 60)],
                         ids=["the reference's method", "markdown_chunks of notebook 07"])
def test_0_1_accepts(nb00, right):
    nb00.accepts("Exercise 0.1", my_chunks=right)


def test_0_1_accepts_the_reference(nb00):
    nb00.accepts("Exercise 0.1", **nb00.reference("Exercise 0.1"))
