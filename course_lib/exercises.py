"""Self-checks for the exercises: say what is wrong and give a hint, never a bare AssertionError.

Every exercise in the course has the same shape:

1. a Markdown cell "### Exercise N.k: title" with the task;
2. a code cell tagged `solution` whose reference solution sits between the lines
   `# BEGIN SOLUTION` and `# END SOLUTION` inside a function the learner writes
   (the student edition replaces those lines with `raise NotImplementedError`);
3. a code cell calling one of the checks below, for instance
   `check_function("Exercise 3.1", chunk_count, cases, hint="...")`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any


class SelfCheckError(Exception):
    """An exercise is not solved yet; the message says what is wrong and how to proceed."""


def _fail(exercise: str, problem: str, hint: str) -> SelfCheckError:
    return SelfCheckError(f"{exercise} is not solved yet: {problem}\nHint: {hint}")


def _same(got: Any, expected: Any, rel_tol: float | None) -> bool:
    if rel_tol is not None and isinstance(expected, (int, float)) and isinstance(got, (int, float)):
        return math.isclose(got, expected, rel_tol=rel_tol, abs_tol=rel_tol)
    return got == expected


def check_value(exercise: str, got: Any, expected: Any, *, hint: str, rel_tol: float | None = None) -> None:
    """Check one answer; with `rel_tol`, numbers only need to be that close."""
    if not _same(got, expected, rel_tol):
        raise _fail(exercise, f"your answer is {got!r}, expected {expected!r}.", hint)
    print(f"✓ {exercise}: correct.")


def check_function(
    exercise: str,
    fn: Callable[..., Any],
    cases: Iterable[tuple[tuple, Any]],
    *,
    hint: str,
    rel_tol: float | None = None,
) -> None:
    """Call `fn(*args)` for each `(args, expected)` case and compare the results."""
    cases = list(cases)
    for args, expected in cases:
        shown = ", ".join(repr(a) if len(repr(a)) < 60 else repr(a)[:57] + "..." for a in args)
        try:
            got = fn(*args)
        except NotImplementedError:
            raise _fail(exercise, f"`{fn.__name__}` is still a stub.", hint) from None
        except Exception as exc:  # the learner's code failed: show how, keep the hint
            raise _fail(exercise, f"`{fn.__name__}({shown})` raised {type(exc).__name__}: {exc}", hint) from exc
        if not _same(got, expected, rel_tol):
            raise _fail(exercise, f"`{fn.__name__}({shown})` returned {got!r}, expected {expected!r}.", hint)
    print(f"✓ {exercise}: all {len(cases)} checks passed.")


def check_true(exercise: str, condition: bool, *, problem: str, hint: str) -> None:
    """Check a condition that has no single expected value; `problem` says what failed."""
    if not condition:
        raise _fail(exercise, problem, hint)
    print(f"✓ {exercise}: correct.")
