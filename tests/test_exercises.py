"""course_lib.exercises: tolerances, tiered hints, stubs reported without raising, plain-text errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from IPython.core.interactiveshell import InteractiveShell

from course_lib import exercises
from course_lib.exercise_hints import HINTS
from course_lib.exercises import (
    NOT_SOLVED,
    SelfCheckError,
    _same,
    attempt,
    check_function,
    check_problems,
    check_true,
    check_value,
)

_names = (f"Exercise 99.{k}" for k in itertools.count())


@pytest.fixture
def name() -> str:
    """A fresh exercise name, so the count of wrong tries starts at zero."""
    return next(_names)


def stub(*args):
    raise NotImplementedError("Exercise 99: replace this line with your solution")


# --- _same: what counts as the same answer --------------------------------------------------------

def test_rel_tol_is_relative_not_absolute():
    # the old code used rel_tol as an absolute tolerance too: 0.0001 "equalled" 0.0 with rel_tol=1e-3
    assert not _same(1e-4, 0.0, rel_tol=1e-3)
    assert not _same(0.0101, 0.01, rel_tol=1e-3)  # 1 % off a small number
    assert _same(1000.5, 1000.0, rel_tol=1e-3)  # 0.05 % off a large number
    assert not _same(1002.0, 1000.0, rel_tol=1e-3)


def test_abs_tol_is_absolute():
    assert _same(1e-4, 0.0, abs_tol=1e-3)
    assert not _same(2e-3, 0.0, abs_tol=1e-3)


def test_float32_answers_pass_with_a_relative_tolerance():
    exact = 0.1 + 0.2
    assert not _same(np.float32(exact), exact)  # float32 cannot hold it exactly
    assert _same(np.float32(exact), exact, rel_tol=1e-6)
    assert _same(np.array([0.5, np.float32(exact)], dtype=np.float32), [0.5, exact], rel_tol=1e-6)


def test_without_tolerance_numbers_must_be_equal():
    assert _same(3, 3.0) and _same(np.int64(7), 7)
    assert not _same(0.30000000000000004, 0.3)


def test_booleans_never_match_numbers():
    assert not _same(1, True) and not _same(True, 1.0) and not _same(0.0, False, abs_tol=0.5)
    assert _same(np.bool_(True), True) and _same(False, False)


def test_containers_compare_element_by_element():
    assert _same([1.0, (2.0, 3.0)], [1.0, [2.0 + 1e-12, 3.0]], rel_tol=1e-9)
    assert not _same([1.0, 2.0], [1.0, 2.0, 3.0])
    assert _same({"a": 1.0, "b": [2.0]}, {"b": [2.0 + 1e-12], "a": 1.0}, rel_tol=1e-9)
    assert not _same({"a": 1.0}, {"a": 1.0, "b": 2.0})
    assert _same("abc", "abc") and not _same("abc", ["a", "b", "c"])
    assert not _same(np.array([1, 2]), "x")


@given(st.floats(min_value=1e-3, max_value=1e6), st.sampled_from([1, -1]), st.floats(min_value=1e-9, max_value=0.1))
def test_same_agrees_with_math_isclose(magnitude, sign, rel_tol):
    x = sign * magnitude
    y = x * (1 + rel_tol / 2)  # within rel_tol of x
    z = x * (1 + 3 * rel_tol)  # outside
    assert _same(y, x, rel_tol=rel_tol) == math.isclose(y, x, rel_tol=rel_tol)
    assert _same(y, x, rel_tol=rel_tol)
    assert not _same(z, x, rel_tol=rel_tol)


def test_bad_tolerances_are_errors(name):
    with pytest.raises(ValueError, match="abs_tol"):
        check_value(name, 1.0, 1.0, rel_tol=1.5)
    with pytest.raises(ValueError, match="abs_tol"):
        check_value(name, 1.0, 1.0, abs_tol=-1)


# --- passing, failing and not-yet-solved ----------------------------------------------------------

def test_a_right_answer_prints_a_tick_and_returns_true(name, capsys):
    assert bool(check_value(name, 4, 4, hint="h")) is True
    assert bool(check_function(name, lambda x: x * 2, [((1,), 2), ((2,), 4)], hint="h")) is True
    assert bool(check_true(name, True, problem="p", hint="h")) is True
    out = capsys.readouterr().out
    assert out.count(f"✓ {name}") == 3 and "all 2 checks passed" in out


def test_a_stub_is_reported_without_raising(name, capsys):
    assert bool(check_function(name, stub, [((1,), 2)], hint="h")) is False
    assert bool(check_value(name, attempt(stub, 1), 2, hint="h")) is False
    assert bool(check_true(name, lambda: stub() == 2, problem="p", hint="h")) is False
    assert bool(check_true(name, attempt(stub), problem="p", hint="h")) is False
    out = capsys.readouterr().out
    assert out.count(f"{name}: not solved yet") == 4 and "`stub` still raises NotImplementedError" in out
    assert "Hint" not in out, "no hint before the learner has tried"


def test_attempt_returns_the_result_or_not_solved():
    assert attempt(lambda a, b=0: a + b, 1, b=2) == 3
    assert attempt(stub, 1) is NOT_SOLVED and not NOT_SOLVED and repr(NOT_SOLVED) == "NOT_SOLVED"
    with pytest.raises(ZeroDivisionError):  # only a stub is swallowed, not a bug
        attempt(lambda: 1 / 0)


def double(x):
    return 5  # wrong on purpose


def test_a_wrong_answer_raises_with_the_problem(name):
    with pytest.raises(SelfCheckError, match=r"your answer is 3, expected 4\.\nHint: add one"):
        check_value(name, 3, 4, hint="add one")
    with pytest.raises(SelfCheckError, match=r"`double\(2\)` returned 5, expected 4"):
        check_function(name, double, [((2,), 4)], hint="h")
    with pytest.raises(SelfCheckError, match="too long"):
        check_true(name, False, problem="too long", hint="h")


def test_problem_may_be_computed_only_when_the_check_fails(name):
    assert check_true(name, True, problem=lambda: 1 / 0, hint="h")
    with pytest.raises(SelfCheckError, match="3 chunks"):
        check_true(name, False, problem=lambda: f"{1 + 2} chunks", hint="h")


def test_an_error_in_the_learners_code_names_the_line(name):
    def buggy(x):
        y = x + 1
        return y / 0

    with pytest.raises(SelfCheckError, match=r"raised ZeroDivisionError: division by zero \(line \d+ of `buggy`\)"):
        check_function(name, buggy, [((1,), 2)], hint="h")
    with pytest.raises(SelfCheckError, match="raised ZeroDivisionError"):
        check_true(name, lambda: buggy(1) > 0, problem="p", hint="h")


# --- tiered hints ---------------------------------------------------------------------------------

def test_each_wrong_try_reveals_one_more_hint(name):
    tiers = ("look at the ends", "the last chunk is missing", "append the remainder after the loop")
    messages = []
    for _ in range(4):
        with pytest.raises(SelfCheckError) as caught:
            check_value(name, 1, 2, hint=tiers)
        messages.append(str(caught.value))
    assert "Hint 1 of 3: look at the ends" in messages[0] and "Hint 2" not in messages[0]
    assert "each wrong try reveals the next hint" in messages[0]
    assert "Hint 2 of 3: the last chunk is missing" in messages[1] and "Hint 3" not in messages[1]
    assert all(t in messages[2] for t in tiers) and "reveals the next" not in messages[2]
    assert messages[3] == messages[2], "after the last tier the message stays the same"


def test_solving_resets_the_tries(name):
    def answer(got):  # one check (one line of code), answered three times
        return check_value(name, got, 2, hint=("a", "b"))

    for _ in range(2):
        with pytest.raises(SelfCheckError):
            answer(1)
    answer(2)
    with pytest.raises(SelfCheckError) as caught:
        answer(1)
    assert "Hint 1 of 2: a" in str(caught.value) and "Hint 2" not in str(caught.value)


TWO_CHECKS = """
def first(x):
    return x + 1

ok = check_function("{name}", first, [((1,), 2)]) and check_function("{name}", second, [((1,), 2), ((2,), 4)])
"""


def test_hints_advance_in_a_cell_that_runs_two_checks(name, capsys):
    # the first check passes every time; before, its pass reset the count, so every try showed "Hint 1 of 3"
    shell = InteractiveShell.instance()
    shell.user_ns.update(check_function=check_function, second=lambda x: x + 2)
    shell.user_ns["HINTS"] = HINTS
    tiers = ("one", "two", "three")
    shown = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(HINTS, name, tiers)
        for _ in range(3):
            result = shell.run_cell(TWO_CHECKS.format(name=name))
            assert isinstance(result.error_in_exec, SelfCheckError)
            shown.append(str(result.error_in_exec))
    assert [f"Hint {n} of 3" in m and f"Hint {n + 1}" not in m for n, m in zip((1, 2, 3), shown)] == [True] * 3, shown
    assert capsys.readouterr().out.count(f"✓ {name}") == 3, "the first check passed each time"


def test_a_check_keeps_its_own_count_beside_another_in_the_same_cell(name):
    def cell(second_answer):  # two checks of one exercise in one cell, the first one wrong
        with pytest.raises(SelfCheckError) as caught:
            check_value(name, 1, 2, hint=("a", "b", "c")) and check_value(name, second_answer, 2, hint=("a", "b", "c"))
        return str(caught.value)

    assert "Hint 1 of 3" in cell(2) and "Hint 2 of 3" in cell(2) and "Hint 3 of 3" in cell(2)


def test_a_message_shows_the_first_difference_not_the_whole_result(name):
    expected = [(i, i + 10) for i in range(0, 4000, 10)]
    got = [*expected[:137], (1370, 1381), *expected[138:]]
    with pytest.raises(SelfCheckError) as caught:
        check_function(name, lambda text: got, [(("x" * 5000,), expected)], hint="h")
    message = str(caught.value)
    assert "differs first at [137][1]: got 1381, expected 1380" in message, message
    assert "'" + "x" * 199 + "… (4,802 more characters)" in message, "the input's first 200 characters"
    assert len(message) < 600, (len(message), message)
    with pytest.raises(SelfCheckError) as caught:
        check_function(name, lambda text: expected[:-3], [(("x",), expected)], hint="h")
    assert "397 items, expected 400 (the first 397 agree, then expected has (3970, 3980))" in str(caught.value)


def test_a_long_list_of_problems_is_cut(name):
    with pytest.raises(SelfCheckError) as caught:
        check_problems(name, lambda: ["chunk 1 is " + "y" * 3000, "b"], hint="h")
    assert len(str(caught.value)) < 600 and "more characters)" in str(caught.value)


def test_without_hint_the_tiers_come_from_the_hints_module(monkeypatch, name):
    monkeypatch.setitem(HINTS, name, ("first", "second"))
    for tier in ("Hint 1 of 2: first", "Hint 2 of 2: second"):
        with pytest.raises(SelfCheckError, match=tier):
            check_value(name, 1, 2)


def test_a_string_hint_still_works_as_one_tier(name):
    with pytest.raises(SelfCheckError) as caught:
        check_value(name, 1, 2, hint="just this")
    assert str(caught.value).endswith("Hint: just this")


def test_hints_must_be_strings(name):
    with pytest.raises(TypeError, match="hint must be a string"):
        check_value(name, 1, 2, hint=[1, 2])


def test_every_stored_hint_has_tiers():
    for exercise, tiers in HINTS.items():
        assert exercise.startswith("Exercise ") and tiers and all(isinstance(t, str) and t for t in tiers)


# --- shown in IPython without a traceback ---------------------------------------------------------

def test_ipython_shows_the_message_not_a_traceback(name, capsys):
    shell = InteractiveShell.instance()
    shell.user_ns["check_value"] = check_value
    result = shell.run_cell(f'check_value("{name}", 1, 2, hint="try again")')
    out = capsys.readouterr()
    shown = out.out + out.err
    assert isinstance(result.error_in_exec, SelfCheckError), "the cell still fails (nbval sees it)"
    assert f"✗ {name} is not solved yet" in shown and "Hint: try again" in shown
    assert "Traceback" not in shown and "exercises.py" not in shown
    assert exercises.SelfCheckError("a\nb")._render_traceback_() == ["a", "b"]


def test_check_problems_lists_what_breaks_the_rules(name, capsys):
    assert bool(check_problems(name, list, hint="h")) is True
    assert bool(check_problems(name, lambda: stub() or [], hint="h")) is False
    with pytest.raises(SelfCheckError, match=r"chunk 1 is empty; chunk 2 is too long; a \(and 2 more\)\.") as caught:
        check_problems(name, lambda: ["chunk 1 is empty", "chunk 2 is too long", "a", "b", "c"], hint="h")
    assert "Hint: h" in str(caught.value)
    with pytest.raises(SelfCheckError, match="raised KeyError"):
        check_problems(name, lambda: {}["x"], hint="h")
    assert "not solved yet" in capsys.readouterr().out


def test_a_check_shows_nothing_as_the_last_value_of_a_cell(name):
    # a kernel sends no execute_result when the formatted data is empty: no "True" under the tick
    shell = InteractiveShell.instance()
    assert shell.display_formatter.format(check_value(name, 2, 2)) == ({}, {})
    assert repr(check_value(name, 2, 2)) == "solved" and not exercises.Outcome(False)


@given(st.integers(0, 6000), st.integers(1, 15))
def test_what_is_wrong_never_takes_more_than_600_characters(length, name_length):
    exercise, problem = "Exercise " + "9" * name_length, "é" * length
    with pytest.raises(SelfCheckError) as caught:
        check_true(exercise, False, problem=problem, hint="h")
    assert len(str(caught.value).split("\nHint")[0]) <= 600
