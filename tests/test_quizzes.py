"""The "Check your understanding" quizzes cannot be answered by position, by length, nor from a solved exercise.

Issue 47.

Every notebook's quiz is parsed (both formats: `- (a) ...` with `- **(a) Right.**`, and 08's `- a) ...` with
`- **a) Yes.**`). The right answers spread over the letters: no letter is right in more than half of a
notebook's questions nor in more than 40% of the course's, and the right option is the longest in at most 40%
of a notebook's questions. No question (its stem and options) quotes a number that only a solved exercise
prints: such numbers come from cells that need the learner's solution (found below), which print nothing in
the student edition.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from scripts.claims import _backed, _code_literals, _numbers_in, _output_text, _tolerance, number_values, prose_numbers
from scripts.project import course_notebooks

OPTION = re.compile(r"^(\s+- )\(?([a-e])\) (.*)$")
EXPLANATION_RIGHT = re.compile(r"^- \*\*\(?([a-e])\)")
QUESTION = re.compile(r"^\d+\. ")


@dataclass
class Question:
    stem: str
    options: dict[str, str] = field(default_factory=dict)
    right: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return " ".join([self.stem, *self.options.values()])


def parse_quiz(markdown: str) -> list[Question]:
    """The questions of a "## Check your understanding" cell: stem, options by letter, the right letter(s)."""
    questions: list[Question] = []
    option, in_answer = None, False
    for line in markdown.splitlines():
        if line.startswith("<details"):
            in_answer, option = True, None
        elif line.startswith("</details"):
            in_answer = False
        elif line.startswith("#") and questions and not in_answer:
            break  # the next section (## Exercises) follows the last question
        elif QUESTION.match(line) and not in_answer:
            questions.append(Question(line))
            option = None
        elif not questions:
            continue
        elif in_answer:
            if m := EXPLANATION_RIGHT.match(line):
                questions[-1].right.append(m.group(1))
        elif m := OPTION.match(line):
            option = m.group(2)
            questions[-1].options[option] = m.group(3).strip()
        elif option and line.startswith(" " * 5) and line.strip():
            questions[-1].options[option] += " " + line.strip()
        elif option is None and line.strip():
            questions[-1].stem += " " + line.strip()
    return questions


def _source(cell: dict) -> str:
    return cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])


def quiz(path: Path) -> list[Question]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [q for c in cells if c["cell_type"] == "markdown" and "## Check your understanding" in _source(c)
            for q in parse_quiz(_source(c))]


QUIZZES = {path.name: quiz(path) for path in course_notebooks()}


def longest(q: Question) -> str:
    return max(q.options, key=lambda letter: len(q.options[letter]))


def test_every_notebook_has_a_quiz_with_one_right_answer_per_question():
    assert len(QUIZZES) == 15
    for name, questions in QUIZZES.items():
        assert len(questions) >= 4, name
        for n, q in enumerate(questions, 1):
            assert len(q.options) >= 2 and len(q.right) == 1 and q.right[0] in q.options, (name, n, q)


@pytest.mark.parametrize("name", sorted(QUIZZES))
def test_no_letter_is_right_in_more_than_half_of_a_notebooks_questions(name):
    letters = Counter(q.right[0] for q in QUIZZES[name])
    assert max(letters.values()) <= len(QUIZZES[name]) / 2, (name, dict(letters))


def test_no_letter_is_right_in_more_than_40_percent_of_the_course():
    letters = Counter(q.right[0] for questions in QUIZZES.values() for q in questions)
    assert max(letters.values()) <= 0.4 * sum(letters.values()), dict(letters)


@pytest.mark.parametrize("name", sorted(QUIZZES))
def test_the_right_option_is_the_longest_in_at_most_40_percent(name):
    right_longest = [n for n, q in enumerate(QUIZZES[name], 1) if longest(q) == q.right[0]]
    assert len(right_longest) <= 0.4 * len(QUIZZES[name]), (name, "right and longest in questions", right_longest)


# --- numbers only a solved exercise prints ----------------------------------------------------------------

def _top_level_bindings(tree: ast.Module) -> set[str]:
    """Names a cell binds at module level (not inside its functions, lambdas or comprehensions)."""
    found: set[str] = set()
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif not isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            stack.extend(ast.iter_child_nodes(node))
    return found


def _free_reads(tree: ast.Module) -> set[str]:
    """Names a cell reads that it does not bind itself anywhere (loop variables, arguments, locals)."""
    loads = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    bound |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments)
              for a in [*n.posonlyargs, *n.args, *n.kwonlyargs, n.vararg, n.kwarg] if a is not None}
    return loads - bound


def solution_dependent(cells: list[dict]) -> set[int]:
    """Indices of the code cells whose output needs a learner's solution: the solution cells, the self-check
    cells, and every cell that reads a name one of those defined (transitively, in notebook order)."""
    tainted: set[str] = set()
    dependent: set[int] = set()
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        source = _source(cell)
        try:
            tree = ast.parse("\n".join(line for line in source.splitlines()
                                        if not line.lstrip().startswith(("%", "!"))))
        except SyntaxError:
            continue
        reads, writes = _free_reads(tree), _top_level_bindings(tree)
        if ("solution" in cell.get("metadata", {}).get("tags", []) or re.search(r"\bcheck_\w+\(", source)
                or reads & tainted):
            dependent.add(i)
            tainted |= writes
        else:
            tainted -= writes  # a name given again without a solution no longer needs one
    return dependent


def free_numbers(path: Path) -> list[float]:
    """The numbers a learner sees before solving anything, sorted: the outputs of cells that need no solution,
    and the literals of every code cell but the solution cells."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    dependent = solution_dependent(cells)
    values: list[float] = []
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code" or "solution" in cell.get("metadata", {}).get("tags", []):
            continue
        values.extend(_code_literals(_source(cell)))  # the student edition shows these cells' code
        if i not in dependent:
            values.extend(v for output in cell.get("outputs", []) for v in _numbers_in(_output_text(output)))
    return sorted(v for v in values if math.isfinite(v))


def test_solution_dependent_cells_are_found():
    cells = [{"cell_type": "code", "metadata": {"tags": ["solution"]}, "source": "def mine(x):\n    return x\n"},
             {"cell_type": "code", "metadata": {}, "source": "ok = check_function('Exercise 1.1', mine, [])"},
             {"cell_type": "code", "metadata": {}, "source": "if ok:\n    shares = mine(3)\n    print(shares)"},
             {"cell_type": "code", "metadata": {}, "source": "print(shares * 2)"},
             {"cell_type": "code", "metadata": {}, "source": "print(64)"}]
    assert solution_dependent(cells) == {0, 1, 2, 3}


@pytest.mark.parametrize("path", course_notebooks(), ids=lambda p: p.name[:2])
def test_no_question_quotes_a_number_only_a_solved_exercise_prints(path):
    stored = free_numbers(path)
    quoted = [(token, q.stem[:80]) for q in QUIZZES[path.name] for token, _ in prose_numbers(q.text)
              if not _backed(number_values(token), _tolerance(token), stored)]
    assert not quoted, f"{path.name}: numbers printed only once an exercise is solved (or nowhere): {quoted}"
