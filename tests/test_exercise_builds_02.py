"""Exercise 2.1 (characters per token, parts a-b) cannot be fooled (issue 33).

Part (a) builds the ratio of characters to tokens, part (b) `shortfall`, which section 7 used to give: how often
characters / 4 plus 20% is short of the true count, and the margin that covers 95% of the texts. The cells that
define what the checks use (the set-up, `count_each`, the FLORES text, the passages, the technical lines) are
run once in this process. Then each part's self-check cell runs as the notebook has it, with the learner's
function replaced: by plausible wrong answers, which it must reject with a `SelfCheckError` showing only the
first hint, and by the reference solution and another right answer, which it must accept. Part (b)'s check
compares with literal numbers; an implementation on the library's `count_tokens` alone passes it, so the
literals are the library's. The two parts share one heading, so a part is picked by its place among the
exercise's solution cells.
"""

from __future__ import annotations

import contextlib
import io
import re

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from notebook_checks import Notebook

from course_lib import exercises
from course_lib.exercises import SelfCheckError
from course_lib.tokens import count_tokens, get_encoding
from scripts import build_student_edition as edition

NAME = "Exercise 2.1"
RATIO, SHORTFALL = range(2)  # the parts, in notebook order: (a), (b)
# set-up, count_each, pieces, files_as_one_line, the FLORES text, the passages, the technical lines
CELLS = ["cbb1f103", "31611dab", "91f0e94c", "ea237eaa", "3282a15f", "8a4332a6", "7afcbd91"]
ASSERTS_OF_THE_TABLE = "3930ef51"


@pytest.fixture(scope="module")
def nb02():
    return Notebook("02_tokens_vs_characters.ipynb", CELLS)


@pytest.fixture(autouse=True)
def first_try():
    """Each test starts as a learner's first try: no wrong tries counted, so only hint 1 is shown."""
    exercises._failures.clear()
    yield
    exercises._failures.clear()


def _parts(nb: Notebook) -> list[edition.Exercise]:
    return nb.parts(NAME)


def run_part(nb: Notebook, part: int, **learner) -> tuple[str, dict]:
    """Run one part's check cell with the learner's functions in place; return what it printed and the namespace."""
    return nb.run_part(NAME, part, **learner)


def accepts(nb: Notebook, part: int, **learner) -> str:
    printed, _ = run_part(nb, part, **learner)
    assert f"✓ {NAME}" in printed and "not solved" not in printed, printed
    return printed


def rejects(nb: Notebook, part: int, **learner) -> str:
    with pytest.raises(SelfCheckError) as caught:
        run_part(nb, part, **learner)
    message = str(caught.value)
    assert len(re.findall(r"^Hint(?: \d+ of \d+)?: ", message, re.MULTILINE)) == 1, message  # the first hint only
    return message


def test_the_exercise_has_two_parts_each_with_its_check(nb02):
    parts = _parts(nb02)
    assert len(parts) == 2
    defined = [set(re.findall(r"^def (\w+)", nb02.notebook.cells[e.solution].source, re.MULTILINE)) for e in parts]
    assert defined == [{"chars_per_token_of"}, {"shortfall"}]


@pytest.mark.parametrize("part", [RATIO, SHORTFALL])
def test_each_part_accepts_the_reference_solution(nb02, part):
    accepts(nb02, part)


def test_no_visible_cell_shows_a_line_of_the_solution(nb02):
    solution_lines = set()
    for exercise in _parts(nb02):
        block = nb02.notebook.cells[exercise.solution].source.split(edition.BEGIN)[1]
        # long lines only: a short one such as `if tokenizer == "WordPiece":` is anyone's
        solution_lines |= {line.strip() for line in block.split(edition.END)[0].splitlines()
                           if len(line.strip()) > 40 and not line.strip().startswith("#")}
    solutions = {e.solution for e in _parts(nb02)}
    shown = [line for i, cell in enumerate(nb02.notebook.cells) if i not in solutions
             for line in solution_lines if line in cell.source]
    assert not shown, f"visible cells show solution lines: {shown}"


# --- (a) chars_per_token_of ----------------------------------------------------------------------------------

def _counts(nb02, texts, tokenizer, *, special=False):
    """Token counts of each text, by the library; WordPiece with its [CLS] and [SEP] when `special`."""
    if tokenizer == "WordPiece":
        return [len(ids) for ids in nb02["wordpiece"](list(texts), add_special_tokens=special)["input_ids"]]
    return [count_tokens(text, tokenizer) for text in texts]


def _library_ratio(nb02):  # another right answer: the library's count_tokens, text by text
    wordpiece = nb02["wordpiece"]
    return lambda texts, tokenizer: (sum(map(len, texts)) / sum(
        count_tokens(t, wordpiece if tokenizer == "WordPiece" else tokenizer) for t in texts))


def test_a_accepts_the_library_count(nb02):
    accepts(nb02, RATIO, chars_per_token_of=_library_ratio(nb02))


def _mean_of_ratios(nb02):  # the mean of per-text ratios, not the ratio of the totals
    return lambda texts, tokenizer: float(np.mean([len(t) / max(n, 1) for t, n in
                                                   zip(texts, _counts(nb02, texts, tokenizer), strict=True)]))


def _joined(nb02):  # counts the texts as one text, not each on its own
    return lambda texts, tokenizer: sum(map(len, texts)) / sum(_counts(nb02, [" ".join(texts)], tokenizer))


def _always_cl100k(nb02):  # ignores the tokenizer it is given
    return lambda texts, tokenizer: sum(map(len, texts)) / sum(_counts(nb02, texts, "cl100k_base"))


def _wordpiece_as_cl100k(nb02):  # no WordPiece branch: falls back to cl100k_base
    return lambda texts, tokenizer: sum(map(len, texts)) / sum(
        _counts(nb02, texts, "cl100k_base" if tokenizer == "WordPiece" else tokenizer))


def _with_special_tokens(nb02):  # WordPiece counted with its [CLS] and [SEP] around every text
    return lambda texts, tokenizer: sum(map(len, texts)) / sum(_counts(nb02, texts, tokenizer, special=True))


def _pieces_characters(nb02):  # WordPiece: counts the characters of its lower-cased, accent-free pieces
    wordpiece = nb02["wordpiece"]

    def ratio(texts, tokenizer):
        if tokenizer != "WordPiece":
            return sum(map(len, texts)) / sum(_counts(nb02, texts, tokenizer))
        pieces = [p for text in texts for p in wordpiece.tokenize(text)]
        return sum(len(p.removeprefix("##")) for p in pieces) / len(pieces)
    return ratio


def _bytes(nb02):  # counts UTF-8 bytes, not characters
    return lambda texts, tokenizer: sum(len(t.encode("utf-8")) for t in texts) / sum(_counts(nb02, texts, tokenizer))


def _upside_down(nb02):  # tokens per character
    return lambda texts, tokenizer: sum(_counts(nb02, texts, tokenizer)) / sum(map(len, texts))


def _encode_with_specials(nb02):  # tiktoken's encode: a special-token string in the text raises
    def ratio(texts, tokenizer):
        if tokenizer == "WordPiece":
            return sum(map(len, texts)) / sum(_counts(nb02, texts, tokenizer))
        return sum(map(len, texts)) / sum(len(get_encoding(tokenizer).encode(t)) for t in texts)
    return ratio


def _skips_empty_texts_badly(nb02):  # divides text by text and fails on the empty one
    return lambda texts, tokenizer: sum(len(t) / n for t, n in zip(texts, _counts(nb02, texts, tokenizer),
                                                                   strict=True)) / len(texts)


WRONG_RATIOS = [_mean_of_ratios, _joined, _always_cl100k, _wordpiece_as_cl100k, _with_special_tokens,
                _pieces_characters, _bytes, _upside_down, _encode_with_specials, _skips_empty_texts_badly]


@pytest.mark.parametrize("make", WRONG_RATIOS, ids=lambda f: f.__name__.strip("_"))
def test_a_rejects_a_wrong_ratio(nb02, make):
    rejects(nb02, RATIO, chars_per_token_of=make(nb02))


def test_a_names_the_special_token_failure(nb02):
    assert "raised ValueError" in rejects(nb02, RATIO, chars_per_token_of=_encode_with_specials(nb02))


# --- (b) shortfall ---------------------------------------------------------------------------------------------

def _shortfall(nb02, *, chars=len, short=lambda needed: needed > 1.2, factor=lambda tokens, chars: tokens / (chars / 4),
               margin=lambda needed: np.quantile(needed, 0.95) - 1, joined=False):
    wordpiece = nb02["wordpiece"]

    def shortfall(texts, tokenizer):
        texts = [" ".join(texts)] if joined else list(texts)
        tokens = np.array([count_tokens(t, wordpiece if tokenizer == "WordPiece" else tokenizer) for t in texts])
        needed = factor(tokens, np.array([chars(t) for t in texts]))
        return float(np.mean(short(needed))), float(margin(needed))
    return shortfall


def test_b_accepts_another_right_answer_on_the_library_alone(nb02):
    # count_tokens itself, the comparison without a division, np.percentile: the check's literals are the library's
    def shortfall(texts, tokenizer):
        wordpiece = nb02["wordpiece"]
        tokens = np.array([count_tokens(t, wordpiece if tokenizer == "WordPiece" else tokenizer) for t in texts])
        chars = np.array([len(t) for t in texts])
        return float(np.sum(tokens * 4 > 1.2 * chars) / len(texts)), float(np.percentile(tokens * 4 / chars, 95) - 1)

    accepts(nb02, SHORTFALL, shortfall=shortfall)
    accepts(nb02, SHORTFALL, shortfall=_shortfall(nb02))


WRONG_SHORTFALLS = {
    "counts a text exactly at the limit as short": dict(short=lambda needed: needed >= 1.2),
    "counts UTF-8 bytes, not characters": dict(chars=lambda t: len(t.encode("utf-8"))),
    "divides the wrong way (estimate over tokens)": dict(factor=lambda tokens, chars: (chars / 4) / tokens,
                                                         short=lambda needed: needed < 1 / 1.2),
    "estimates characters x 4": dict(factor=lambda tokens, chars: tokens / (chars * 4)),
    "forgets the - 1": dict(margin=lambda needed: np.quantile(needed, 0.95)),
    "the mean, not the quantile": dict(margin=lambda needed: np.mean(needed) - 1),
    "the wrong tail": dict(margin=lambda needed: np.quantile(needed, 0.05) - 1),
    "the median": dict(margin=lambda needed: np.median(needed) - 1),
    "forgets the 20%": dict(short=lambda needed: needed > 1),
    "counts the texts joined": dict(joined=True),
}


@pytest.mark.parametrize("wrong", sorted(WRONG_SHORTFALLS))
def test_b_rejects_a_wrong_shortfall(nb02, wrong):
    assert "expected" in rejects(nb02, SHORTFALL, shortfall=_shortfall(nb02, **WRONG_SHORTFALLS[wrong]))


def test_b_the_share_as_a_count_is_rejected(nb02):
    def counts_them(texts, tokenizer):
        share, margin = _shortfall(nb02)(texts, tokenizer)
        return share * len(texts), margin

    rejects(nb02, SHORTFALL, shortfall=counts_them)


def test_b_stub_is_not_solved_and_the_table_asserts_are_skipped(nb02):
    def stub(texts, tokenizer):
        raise NotImplementedError

    printed, namespace = run_part(nb02, SHORTFALL, shortfall=stub)
    assert "not solved yet" in printed and namespace["rows"] == {}, printed
    cell = next(c for c in nb02.notebook.cells if c.get("id") == ASSERTS_OF_THE_TABLE)
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(cell.source, namespace)
    assert out.getvalue() == ""


def test_b_the_solved_table_backs_the_prose(nb02):
    printed, namespace = run_part(nb02, SHORTFALL)
    rows = namespace["rows"]
    assert len(rows) == 13
    assert rows["spa", "sentences", "cl100k_base"][0] == pytest.approx(267 / 2009)
    assert rows["spa", "500-token passages", "cl100k_base"][0] == pytest.approx(1 / 163)
    assert "Spanish technical lines" in printed
