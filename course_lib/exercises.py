"""Self-checks for the exercises: say what is wrong, reveal hints one try at a time, never a bare traceback.

Every exercise in the course has the same shape (CONTRIBUTING.md, "Exercises"):

1. a Markdown cell "### Exercise N.k: title" with the task;
2. a code cell tagged `solution` whose reference solution sits between the lines
   `# BEGIN SOLUTION` and `# END SOLUTION` inside a function the learner writes
   (the student edition replaces those lines with `raise NotImplementedError`);
3. a code cell calling one of the checks below, for instance
   `check_function("Exercise 3.1", chunk_count, cases)`.

How a check behaves:

- **Solved**: prints `✓ ...` and returns a true `Outcome` (which displays nothing).
- **Not attempted** (the learner's function still raises `NotImplementedError`, the stub of the student
  edition): prints "not solved yet" and returns a false `Outcome` *without raising*, so Run All goes on to the end
  of the notebook. Cells after a check must not need the stub's result: guard them with
  `if check_...(...):`.
- **Wrong**: raises `SelfCheckError`. IPython shows it as plain text (the problem and the hints), not as
  a Python traceback; nbval and pytest see an ordinary exception, so a broken reference solution fails
  the tests.

Hints come in tiers. The first wrong try shows the problem and the first hint; each further wrong try
at the same check reveals one more. A check is one call in one cell (and, for `check_function`, the
function it tests): a cell running two checks keeps two counts, and only a right answer to a check resets
its own. A message shows the first difference only (where, what came back, what was expected, and the
input's first 200 characters), so it stays short enough to read. Give hints as `hint="..."` (one tier)
or `hint=("...", "...")`; without `hint`, the tiers come from `course_lib.exercise_hints.HINTS`, so a
notebook does not print its hints in the check cell before the learner has tried.
"""

from __future__ import annotations

import math
import numbers
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

__all__ = ["NOT_SOLVED", "Outcome", "SelfCheckError", "attempt", "check_function", "check_problems", "check_true",
           "check_value"]

Hint = str | Sequence[str] | None
Key = tuple[str, str, str, int]  # (exercise, function checked or "", the calling file, its line)

INPUT_CHARS = 200  # how much of a check's input a message shows
VALUE_CHARS = 100  # how much of one value (what came back, what was expected) a message shows
PROBLEM_CHARS = 520  # the longest problem statement a message shows (its first line, before the hints)


class SelfCheckError(Exception):
    """A wrong answer: the message says what is wrong and gives the hints revealed so far."""

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of a traceback: the message alone, as plain text."""
        return str(self).splitlines()


class _NotSolved:
    """The result of `attempt` when the learner's function is still a stub (one instance, `NOT_SOLVED`)."""

    def __repr__(self) -> str:
        return "NOT_SOLVED"

    def __bool__(self) -> bool:
        return False


NOT_SOLVED = _NotSolved()


class Outcome:
    """What a check returns: true when solved, so `if check_...(...):` guards the cells after it.

    It shows nothing as a cell's last value (the check has already printed its line), so a check cell's
    output is the same whether or not its result is used.
    """

    def __init__(self, solved: bool) -> None:
        self.solved = solved

    def __bool__(self) -> bool:
        return self.solved

    def __repr__(self) -> str:
        return "solved" if self.solved else "not solved yet"

    def _ipython_display_(self) -> None:
        """Display nothing in IPython."""


_failures: dict[Key, int] = {}  # check -> wrong tries so far in this kernel


def _key(exercise: str, fn: Any = None) -> Key:
    """The check being run: the exercise, the function it tests, and the line of the cell that calls it."""
    frame = sys._getframe(2)  # _key <- the public check <- the caller
    return exercise, getattr(fn, "__name__", ""), frame.f_code.co_filename, frame.f_lineno


def _clip(text: str, limit: int) -> str:
    """`text`, or its first `limit` characters saying how many more there are."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def attempt(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`fn(*args, **kwargs)`, or `NOT_SOLVED` if `fn` is still a stub raising NotImplementedError."""
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        return NOT_SOLVED


def _tiers(exercise: str, hint: Hint) -> tuple[str, ...]:
    if hint is None:
        from course_lib.exercise_hints import HINTS

        return tuple(HINTS.get(exercise, ()))
    if isinstance(hint, str):
        return (hint,)
    if not all(isinstance(h, str) for h in hint):
        raise TypeError(f"hint must be a string or a sequence of strings, got {hint!r}")
    return tuple(hint)


def _fail(key: Key, problem: str, hint: Hint) -> SelfCheckError:
    """Count a wrong try at this check and build the error, with one more hint tier revealed than last time."""
    exercise = key[0]
    tries = _failures[key] = _failures.get(key, 0) + 1
    tiers = _tiers(exercise, hint)
    lines = [f"✗ {exercise} is not solved yet: {_clip(problem, PROBLEM_CHARS)}"]
    shown = tiers[:tries]
    for number, text in enumerate(shown, start=1):
        label = "Hint" if len(tiers) == 1 else f"Hint {number} of {len(tiers)}"
        lines.append(f"{label}: {text}")
    if len(shown) < len(tiers):
        lines.append("(Change your code and run the check again: each wrong try reveals the next hint.)")
    return SelfCheckError("\n".join(lines))


def _not_solved(exercise: str, what: str) -> Outcome:
    print(f"… {exercise}: not solved yet ({what} still raises NotImplementedError). Replace that line with "
          "your solution and run this cell again.")
    return Outcome(False)


def _passed(key: Key, detail: str = "correct.") -> Outcome:
    _failures.pop(key, None)
    print(f"✓ {key[0]}: {detail}")
    return Outcome(True)


def _is_bool(x: Any) -> bool:
    return isinstance(x, bool) or type(x).__name__ == "bool_"  # numpy's bool is not a Python bool


def _is_number(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not _is_bool(x)


def _same(got: Any, expected: Any, rel_tol: float | None = None, abs_tol: float = 0.0) -> bool:
    """Whether `got` answers `expected`: numbers within the tolerances, containers element by element.

    `rel_tol` is relative (a share of the larger magnitude) and `abs_tol` absolute, as in `math.isclose`;
    without either, numbers must be equal. Booleans never match numbers (True is not 1.0 here).
    """
    if hasattr(got, "tolist") and not isinstance(got, (str, bytes)):  # numpy arrays and scalars
        got = got.tolist()
    if _is_bool(expected) or _is_bool(got):
        return _is_bool(got) and _is_bool(expected) and bool(got) == bool(expected)
    if _is_number(expected) and _is_number(got):
        if rel_tol is None and not abs_tol:
            return got == expected
        return math.isclose(got, expected, rel_tol=rel_tol or 0.0, abs_tol=abs_tol)
    if isinstance(expected, (list, tuple)) and isinstance(got, (list, tuple)):
        return len(got) == len(expected) and all(_same(g, e, rel_tol, abs_tol) for g, e in zip(got, expected))
    if isinstance(expected, Mapping) and isinstance(got, Mapping):
        return got.keys() == expected.keys() and all(_same(got[k], expected[k], rel_tol, abs_tol) for k in expected)
    try:
        return bool(got == expected)
    except (TypeError, ValueError):  # e.g. an array compared with something it cannot be compared with
        return False


def _check_tolerances(rel_tol: float | None, abs_tol: float) -> None:
    if rel_tol is not None and not (0 <= rel_tol < 1):
        raise ValueError(f"rel_tol={rel_tol!r} must be a share in [0, 1), e.g. 1e-6; for an absolute "
                         "tolerance use abs_tol")
    if abs_tol < 0:
        raise ValueError(f"abs_tol={abs_tol!r} must be >= 0")


def check_value(exercise: str, got: Any, expected: Any, *, hint: Hint = None, rel_tol: float | None = None,
                abs_tol: float = 0.0) -> Outcome:
    """Check one answer; numbers only need to be within `rel_tol` (relative) or `abs_tol` (absolute).

    `got` may be `NOT_SOLVED` (from `attempt`), which reports the exercise as not solved yet.
    """
    _check_tolerances(rel_tol, abs_tol)
    key = _key(exercise)
    if got is NOT_SOLVED:
        return _not_solved(exercise, "your function")
    if not _same(got, expected, rel_tol, abs_tol):
        raise _fail(key, f"your answer {_difference(got, expected, rel_tol, abs_tol, verb='is')}.", hint)
    return _passed(key)


def _one_line(value: Any) -> str:
    """`repr(value)` on one line: numpy and long containers wrap their repr over several."""
    return " ".join(repr(value).split())


def _short(value: Any, limit: int = VALUE_CHARS) -> str:
    return _clip(_one_line(value), limit)


def _plain(x: Any) -> Any:
    return x.tolist() if hasattr(x, "tolist") and not isinstance(x, (str, bytes)) else x


def _first_difference(got: Any, expected: Any, rel_tol: float | None, abs_tol: float) -> tuple[str, Any, Any]:
    """Where `got` first differs from `expected` (a path such as "[3][0]" or "['recall']", or ""), and the two
    values there."""
    got, expected = _plain(got), _plain(expected)
    if isinstance(expected, (list, tuple)) and isinstance(got, (list, tuple)):
        for i, (g, e) in enumerate(zip(got, expected)):
            if not _same(g, e, rel_tol, abs_tol):
                path, g, e = _first_difference(g, e, rel_tol, abs_tol)
                return f"[{i}]{path}", g, e
    if isinstance(expected, Mapping) and isinstance(got, Mapping) and got.keys() == expected.keys():
        for k in expected:
            if not _same(got[k], expected[k], rel_tol, abs_tol):
                path, g, e = _first_difference(got[k], expected[k], rel_tol, abs_tol)
                return f"[{k!r}]{path}", g, e
    return "", got, expected


def _difference(got: Any, expected: Any, rel_tol: float | None, abs_tol: float, verb: str = "returned") -> str:
    """'returned X, expected Y', or where a container first differs: 'returned ... that differs first at [3]'."""
    path, g, e = _first_difference(got, expected, rel_tol, abs_tol)
    lengths = isinstance(g, (list, tuple)) and isinstance(e, (list, tuple)) and len(g) != len(e)
    where = f"a result that differs first at {path}: " if path else ""
    if lengths:
        common = min(len(g), len(e))
        extra = _short((g if len(g) > common else e)[common])
        agree = f"the first {common} agree, then {'yours has' if len(g) > common else 'expected has'} {extra}"
        return f"{verb} {where}{len(g)} items, expected {len(e)} ({agree})"
    if path:
        return f"{verb} {where}got {_short(g)}, expected {_short(e)}"
    return f"{verb} {_short(g)}, expected {_short(e)}"


def _where(exc: BaseException) -> str:
    """' (line N of `name`)' for the deepest frame of the learner's code, or ''."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "course_lib" not in f.filename.replace("\\", "/")]
    return f" (line {frames[-1].lineno} of `{frames[-1].name}`)" if frames else ""


def check_function(
    exercise: str,
    fn: Callable[..., Any],
    cases: Iterable[tuple[tuple, Any]],
    *,
    hint: Hint = None,
    rel_tol: float | None = None,
    abs_tol: float = 0.0,
) -> Outcome:
    """Call `fn(*args)` for each `(args, expected)` case and compare the results."""
    _check_tolerances(rel_tol, abs_tol)
    key = _key(exercise, fn)
    cases = list(cases)
    name = getattr(fn, "__name__", "your function")
    for number, (args, expected) in enumerate(cases, start=1):
        shown = _clip(", ".join(_one_line(a) for a in args), INPUT_CHARS)
        try:
            got = fn(*args)
        except NotImplementedError:
            return _not_solved(exercise, f"`{name}`")
        except Exception as exc:  # the learner's code failed: say how and where, keep the hints
            raise _fail(key, f"`{name}({shown})` raised {type(exc).__name__}: {_clip(str(exc), VALUE_CHARS)}"
                        f"{_where(exc)} (case {number} of {len(cases)}).", hint) from None
        if not _same(got, expected, rel_tol, abs_tol):
            raise _fail(key, f"`{name}({shown})` {_difference(got, expected, rel_tol, abs_tol)} "
                        f"(case {number} of {len(cases)}).", hint)
    return _passed(key, f"all {len(cases)} checks passed.")


def check_true(exercise: str, condition: bool | Callable[[], bool], *, problem: str | Callable[[], str],
               hint: Hint = None) -> Outcome:
    """Check a condition that has no single expected value; `problem` says what failed.

    `condition` may be a function of no arguments, called here: if it meets a stub (NotImplementedError)
    or is `NOT_SOLVED`, the exercise is reported as not solved yet. `problem` may be a function too, called
    only when the condition is false (so it can describe a result that exists only then).
    """
    key = _key(exercise)
    if callable(condition):
        try:
            condition = condition()
        except NotImplementedError:
            return _not_solved(exercise, "your function")
        except Exception as exc:  # the learner's code failed inside the check
            raise _fail(key, f"your code raised {type(exc).__name__}: {_clip(str(exc), VALUE_CHARS)}{_where(exc)}",
                        hint) from None
    if condition is NOT_SOLVED:
        return _not_solved(exercise, "your function")
    if not condition:
        raise _fail(key, problem() if callable(problem) else problem, hint)
    return _passed(key)


def check_problems(exercise: str, find_problems: Callable[[], Iterable[str]], *, hint: Hint = None) -> Outcome:
    """Check a solution against rules: `find_problems()` lists what breaks them (nothing: solved).

    Meant for answers with many right forms (a list of chunks, a set of separators): each problem is a
    sentence a learner can act on, such as "chunk 3 ends with the heading '## Setup'". The first three are
    shown, each cut to its first 200 characters. A stub met inside `find_problems` reports the exercise as
    not solved yet.
    """
    key = _key(exercise)
    try:
        problems = [str(p) for p in find_problems()]
    except NotImplementedError:
        return _not_solved(exercise, "your function")
    except Exception as exc:  # the learner's code failed inside the check
        raise _fail(key, f"your code raised {type(exc).__name__}: {_clip(str(exc), VALUE_CHARS)}{_where(exc)}",
                    hint) from None
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise _fail(key, "; ".join(_clip(p, INPUT_CHARS) for p in problems[:3]) + more + ".", hint)
    return _passed(key)
