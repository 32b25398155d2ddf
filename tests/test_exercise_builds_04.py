"""Exercise 4.1 (b) `strip_span` and Exercise 4.2 (a) `cut_between_tokens`: the two pieces of the splitter that were
given code and are now built by the learner. Their self-checks cannot be fooled (issue 33).

Notebook 04 is run once, up to the check of `cut_between_tokens` (tests/notebook_checks.py). Each check cell is then run
again with the learner's function replaced: by plausible wrong versions, which it must reject with a
`SelfCheckError`, and by the reference solution and another right version, which it must accept. A binary
search that never ends would hang the check, so here `tokens` is replaced by one that gives up after a
number of calls far above what a right answer needs.
"""

from __future__ import annotations

import contextlib
import io
import itertools

import pytest
from notebook_checks import Notebook, in_notebooks

from course_lib.exercises import SelfCheckError

NAMES = {"ex41-strip-check": "Exercise 4.1", "ex41-cut-check": "Exercise 4.2"}  # each check cell's exercise
CELLS = ["488b7894", "5240180c", "ex41-a-sol", "ex41-a-check", "ef7374fd", "ex41-strip-check", "tokens-given",
         "cut-between-tokens", "ex41-cut-check"]
STEP_LIMIT = 200_000  # calls of `tokens` in one run of the check of `cut_between_tokens`; the reference needs fewer


@pytest.fixture(scope="module")
def nb04():
    return Notebook("04_recursive_splitting.ipynb", CELLS)


def _cell(nb: Notebook, cell_id: str) -> str:
    return next(c.source for c in nb.notebook.cells if c.get("id") == cell_id)


class Counted:
    """`tokens` that counts its calls and gives up after STEP_LIMIT of them."""

    def __init__(self, tokens):
        self.tokens, self.calls = tokens, itertools.count(1)

    def __call__(self, text, a, b):
        if next(self.calls) > STEP_LIMIT:
            raise RuntimeError(f"more than {STEP_LIMIT:,} token counts: the search does not end")
        return self.tokens(text, a, b)


def run_check(nb: Notebook, cell_id: str, tokens: Counted, **learner) -> str:
    namespace = dict(nb.ns, tokens=tokens, **learner)
    out = io.StringIO()
    with in_notebooks(), contextlib.redirect_stdout(out):
        exec(_cell(nb, cell_id), namespace)
    return out.getvalue()


def accepts(nb: Notebook, cell_id: str, **learner) -> None:
    printed = run_check(nb, cell_id, Counted(nb["tokens"]), **learner)
    assert f"✓ {NAMES[cell_id]}" in printed and "not solved" not in printed, printed


def rejects(nb: Notebook, cell_id: str, **learner) -> str:
    with pytest.raises(SelfCheckError) as caught:
        run_check(nb, cell_id, Counted(nb["tokens"]), **learner)
    return str(caught.value)


def test_the_notebook_solves_both_parts(nb04):
    assert nb04["strip_ok"] and nb04["cut_ok"]


# --- 4.1 (b) strip_span ---------------------------------------------------------------------------------------

def strip_left_only(text, a, b):
    while a < b and text[a].isspace():
        a += 1
    return a, b


def strip_whole_text(text, a, b):  # strips the text, not the span: white space inside the text stays
    start, end = len(text) - len(text.lstrip()), len(text.rstrip())
    return max(a, start), min(b, end)


def strip_the_copy(text, a, b):  # strips text[a:b] and forgets that the start moved
    return a, a + len(text[a:b].strip())


def strip_end_off_by_one(text, a, b):  # looks at text[b], the first character after the span
    while a < b and text[a].isspace():
        a += 1
    while b > a and b < len(text) and text[b].isspace():
        b -= 1
    return a, b


def strip_never_empty(text, a, b):  # keeps one character of a span of white space
    while a + 1 < b and text[a].isspace():
        a += 1
    while b > a + 1 and text[b - 1].isspace():
        b -= 1
    return a, b


@pytest.mark.parametrize("wrong", [strip_left_only, strip_whole_text, strip_the_copy, strip_end_off_by_one,
                                   strip_never_empty], ids=lambda f: f.__name__)
def test_b_rejects_a_wrong_strip_span(nb04, wrong):
    assert "expected" in rejects(nb04, "ex41-strip-check", strip_span=wrong)


def strip_with_string_methods(text, a, b):
    piece = text[a:b]
    if not piece.strip():
        return b, b
    return a + len(piece) - len(piece.lstrip()), a + len(piece.rstrip())


@pytest.mark.parametrize("right", ["reference", "string methods"])
def test_b_accepts_a_right_strip_span(nb04, right):
    fn = nb04["strip_span"] if right == "reference" else strip_with_string_methods
    accepts(nb04, "ex41-strip-check", strip_span=fn)


def test_b_cases_cover_the_edges(nb04):
    cases = nb04["strip_cases"]
    assert len(cases) >= 300
    spans = [args for args, _ in cases]
    assert any(a == b for _, a, b in spans), "an empty span"
    assert any(a < b and not t[a:b].strip() for t, a, b in spans), "a span of white space only"
    for char in " \t\n":
        assert any(t[a:b].startswith(char) for t, a, b in spans) and any(t[a:b].endswith(char) for t, a, b in spans)
    assert any(t[:a].strip() and t[b:].strip() for t, a, b in spans), "text on both sides of the span"


# --- 4.2 (a) cut_between_tokens -----------------------------------------------------------------------------

def binary_search(tokens, *, round_up=True, start_hi=lambda b: b, extra=0, origin=None):
    def cut_between_tokens(text, a, b, size):
        spans = []
        while a < b:
            lo, hi = a + 1, start_hi(b)
            while lo < hi:
                mid = (lo + hi + 1) // 2 if round_up else (lo + hi) // 2
                fits = tokens(text, a if origin is None else origin, mid) <= size
                lo, hi = (mid, hi) if fits else (lo, mid - 1)
            end = min(b, max(lo, a + 1) + extra)
            spans.append((a, end))
            a = end
        return spans
    return cut_between_tokens


WRONG_CUTS = {
    "the shortest prefix": lambda tokens: lambda text, a, b, size: [(s, s + 1) for s in range(a, b)],
    "one character too long": lambda tokens: binary_search(tokens, extra=1),
    "never takes the rest whole": lambda tokens: binary_search(tokens, start_hi=lambda b: b - 1),
    "counts from the start of the text": lambda tokens: binary_search(tokens, origin=0),
    "every `size` characters": lambda tokens: lambda text, a, b, size: [(s, min(s + size, b))
                                                                       for s in range(a, b, size)],
}


@pytest.mark.parametrize("wrong", sorted(WRONG_CUTS))
def test_c_rejects_a_wrong_cut_between_tokens(nb04, wrong):
    tokens = Counted(nb04["tokens"])
    with pytest.raises(SelfCheckError) as caught:
        run_check(nb04, "ex41-cut-check", tokens, cut_between_tokens=WRONG_CUTS[wrong](tokens))
    assert "cut_between_tokens(" in str(caught.value)


def test_c_rejects_a_binary_search_that_never_ends(nb04):
    # mid rounded down: with hi = lo + 1 and a prefix up to lo that fits, lo = mid changes nothing
    tokens = Counted(nb04["tokens"])
    with pytest.raises(SelfCheckError) as caught:
        run_check(nb04, "ex41-cut-check", tokens, cut_between_tokens=binary_search(tokens, round_up=False))
    assert "does not end" in str(caught.value)


def linear_search(tokens):  # right too, only slower: grow each cut while one more character fits
    def cut_between_tokens(text, a, b, size):
        spans = []
        while a < b:
            end = a + 1
            while end < b and tokens(text, a, end + 1) <= size:
                end += 1
            spans.append((a, end))
            a = end
        return spans
    return cut_between_tokens


@pytest.mark.parametrize("right", ["reference", "binary search written again", "linear search"])
def test_c_accepts_a_right_cut_between_tokens(nb04, right):
    tokens = Counted(nb04["tokens"])
    fn = {"reference": nb04["cut_between_tokens"], "binary search written again": binary_search(tokens),
          "linear search": linear_search(tokens)}[right]
    printed = run_check(nb04, "ex41-cut-check", tokens, cut_between_tokens=fn)
    assert f"✓ {NAMES['ex41-cut-check']}" in printed, printed


def test_c_cases_cover_the_edges(nb04):
    words, tokens = nb04["WORDS"], nb04["tokens"]
    assert any(len(w) == 1 for w in words), "an empty span"
    assert any(tokens(w, 1, len(w)) <= 20 for w in words if len(w) > 1), "a span that already fits"
    assert any(tokens(w, 1, 2) > 1 for w in words if len(w) > 1), "a character that alone takes two tokens"
    assert not any(c.isspace() for w in words for c in w), "no white space: no separator would cut"
    assert any(not w.isascii() for w in words) and any(tokens(w, 1, len(w)) > 20 for w in words)
