"""The self-checks of notebooks 09, 11 and 14 cannot be fooled (issue 33).

Each test runs an exercise's self-check cell as the notebook has it, with the learner's function replaced:
by a plausible wrong answer, which the check must reject (`SelfCheckError`), and by the notebook's reference
solution, which it must accept. The cells are run on the results files the notebooks read, so no model is
loaded. Exercises that need the model or a vector store (9.1, 13.x, 14.1, 14.3) are not covered here yet.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import numpy as np
import pytest

from course_lib import evaluation, exercises, stats
from course_lib.exercise_hints import EXPECTED
from course_lib.exercises import SelfCheckError
from course_lib.late_interaction import maxsim
from scripts import build_student_edition as edition

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


def _notebook(prefix: str) -> nbformat.NotebookNode:
    return nbformat.read(next(NOTEBOOKS.glob(f"{prefix}_*.ipynb")), as_version=4)


def _cells(prefix: str, name: str) -> tuple[str, str]:
    """The solution cell's and the self-check cell's source of one exercise."""
    notebook = _notebook(prefix)
    exercise = next(e for e in edition.find_exercises(notebook) if e.name == name)
    return notebook.cells[exercise.solution].source, notebook.cells[exercise.check].source


def _cell(prefix: str, marker: str) -> str:
    """The source of the one code cell of a notebook that contains `marker`."""
    found = [c.source for c in _notebook(prefix).cells if c.cell_type == "code" and marker in c.source]
    assert len(found) == 1, (prefix, marker, len(found))
    return found[0]


def _base() -> dict:
    return {"np": np, "json": json, "EXPECTED": EXPECTED, "check_function": exercises.check_function,
            "check_problems": exercises.check_problems, "check_true": exercises.check_true,
            "exact_budget": evaluation.exact_budget, "paired_interval": stats.paired_interval,
            "maxsim": maxsim}


def run_check(prefix: str, name: str, namespace: dict, **learner):
    """Run the exercise's check cell in `namespace` with the learner's function(s); a wrong answer raises."""
    _, check = _cells(prefix, name)
    exec(check, {**namespace, **learner})


def reference(prefix: str, name: str, function: str, namespace: dict):
    solution, _ = _cells(prefix, name)
    scope = dict(namespace)
    exec(solution, scope)
    return scope[function]


# --- notebook 09 -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def nb09() -> dict:
    """Section 6's sweep and its paired gaps, read from results/size_sweep as the notebook reads them."""
    namespace = {**_base(), "Path": Path, "RESULTS": ROOT / "results"}
    exec(_cell("09", "SIZE_RUNS = RESULTS"), namespace)
    exec(_cell("09", "gaps, tied = {}, {}"), namespace)
    return namespace


def test_9_2_rejects_a_passing_choice_that_indexes_more_vectors(nb09, capsys):
    gap = nb09["gaps"]["budget_1500", "recursive:64"]
    wrong = lambda: ("recursive:64", 1500, (round(100 * gap.low, 1), round(100 * gap.high, 1)))  # noqa: E731
    with pytest.raises(SelfCheckError):
        run_check("09", "Exercise 9.2", nb09, my_plan=wrong)


def test_9_2_rejects_a_choice_below_the_target_and_a_wrong_interval(nb09):
    gap = nb09["gaps"]["budget_1000", "recursive:256"]
    with pytest.raises(SelfCheckError):
        run_check("09", "Exercise 9.2", nb09, my_plan=lambda: ("recursive:256", 1000, (gap.low, gap.high)))
    with pytest.raises(SelfCheckError):  # the right choice, its interval as fractions instead of points
        gap = nb09["gaps"]["budget_2000", "recursive:256"]
        run_check("09", "Exercise 9.2", nb09, my_plan=lambda: ("recursive:256", 2000, (gap.low, gap.high)))


def test_9_2_accepts_the_reference(nb09, capsys):
    run_check("09", "Exercise 9.2", nb09, my_plan=reference("09", "Exercise 9.2", "my_plan", nb09))
    assert "✓ Exercise 9.2" in capsys.readouterr().out


def whole_chunks_only(token_counts, budget):
    """Wrong: the whole-chunk rule (no cut of the next chunk)."""
    return list(token_counts[:evaluation.budget_cutoff(token_counts, budget)]) if token_counts else []


def trailing_zero(token_counts, budget):
    """Wrong: keeps going once the budget is spent, so a filled budget ends in a 0."""
    taken, left = [], budget
    for n in token_counts:
        taken.append(min(n, left))
        left -= taken[-1]
    return taken


def skips_what_does_not_fit(token_counts, budget):
    """Wrong: skips a chunk that does not fit and takes later, smaller ones whole."""
    taken, left = [], budget
    for n in token_counts:
        if n <= left:
            taken.append(n)
            left -= n
    return taken


@pytest.mark.parametrize("wrong", [whole_chunks_only, trailing_zero, skips_what_does_not_fit])
def test_9_3_rejects_wrong_budgets(wrong):
    with pytest.raises(SelfCheckError):
        run_check("09", "Exercise 9.3", _base(), my_exact_budget=wrong)


def test_9_3_accepts_the_reference_and_the_library(capsys):
    run_check("09", "Exercise 9.3", _base(), my_exact_budget=reference("09", "Exercise 9.3", "my_exact_budget", {}))
    run_check("09", "Exercise 9.3", _base(), my_exact_budget=evaluation.exact_budget)
    assert capsys.readouterr().out.count("✓ Exercise 9.3") == 2


# --- notebook 11 -------------------------------------------------------------------------------------

def _maxsim_keeping_special_rows(q, c):
    q, c = np.asarray(q), np.asarray(c)
    q, c = q / np.linalg.norm(q, axis=1, keepdims=True), c / np.linalg.norm(c, axis=1, keepdims=True)
    return float((q @ c.T).max(axis=1).sum())


def _maxsim_unnormalized(q, c):
    q, c = np.asarray(q)[1:-1], np.asarray(c)[1:-1]
    return float((q @ c.T).max(axis=1).sum())


def _maxsim_wrong_axis(q, c):
    q, c = np.asarray(q)[1:-1], np.asarray(c)[1:-1]
    q, c = q / np.linalg.norm(q, axis=1, keepdims=True), c / np.linalg.norm(c, axis=1, keepdims=True)
    return float((q @ c.T).max(axis=0).sum())


@pytest.mark.parametrize("wrong", [_maxsim_keeping_special_rows, _maxsim_unnormalized, _maxsim_wrong_axis])
def test_11_1_rejects_wrong_maxsim(wrong):
    with pytest.raises(SelfCheckError):
        run_check("11", "Exercise 11.1", _base(), my_maxsim=wrong)


def test_11_1_accepts_the_reference(capsys):
    run_check("11", "Exercise 11.1", _base(), my_maxsim=reference("11", "Exercise 11.1", "my_maxsim", {"np": np}))
    assert "✓ Exercise 11.1" in capsys.readouterr().out


@pytest.fixture(scope="module")
def nb11() -> dict:
    results = ROOT / "results"
    li = {n: json.loads((results / f"late_interaction_{n}.json").read_text(encoding="utf-8"))
          for n in ("collection", "reports", "chroma_subset")}
    return {**_base(), "li": li, "c_li": {k: v["methods"] for k, v in li.items()}}


def ignores_the_interval(table, max_index_ratio):
    """Wrong: the largest gain within the budget, whether or not its interval clears zero."""
    ok = {m: r for m, r in table.items() if r["gain"] > 0 and r["index_ratio"] <= max_index_ratio}
    return max(ok, key=lambda m: ok[m]["gain"]) if ok else "naive"


def ignores_the_budget(table, max_index_ratio):
    """Wrong: the largest gain clear of zero, whatever its index costs."""
    ok = {m: r for m, r in table.items() if r["low"] > 0}
    return max(ok, key=lambda m: ok[m]["gain"]) if ok else "naive"


@pytest.mark.parametrize("wrong", [ignores_the_interval, ignores_the_budget])
def test_11_2_rejects_wrong_rules(nb11, wrong):
    with pytest.raises(SelfCheckError):
        run_check("11", "Exercise 11.2", nb11, choose=wrong)


def test_11_2_accepts_the_reference(nb11, capsys):
    run_check("11", "Exercise 11.2", nb11, choose=reference("11", "Exercise 11.2", "choose", {}))
    assert "✓ Exercise 11.2" in capsys.readouterr().out


# --- notebook 14 -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def nb14() -> dict:
    namespace = {**_base(), "RESULTS": ROOT / "results"}
    source = _cell("14", "def rate(stage, workers")
    exec(source[:source.index("print(")], namespace)  # the results file and `rate`, without the table
    return namespace


def _hours_per_minute(n_docs, chars_per_doc, chars_per_s, workers):
    return n_docs * chars_per_doc / (chars_per_s * workers) / 60


def _hours_without_workers(n_docs, chars_per_doc, chars_per_s, workers):
    return n_docs * chars_per_doc / chars_per_s / 3600


def _workers_at_one_worker_rate(namespace):
    def workers_for_a_day():
        per_worker, workers = namespace["rate"]("chunk+embed+store", 1), 1
        while 10_000_000 * 5_000 / (per_worker * workers) / 3600 > 24:
            workers += 1
        return workers
    return workers_for_a_day


@pytest.mark.parametrize("wrong", [_hours_per_minute, _hours_without_workers])
def test_14_2_rejects_wrong_hours(nb14, wrong):
    right_workers = lambda: EXPECTED["Exercise 14.2"]["workers"]  # noqa: E731
    with pytest.raises(SelfCheckError):
        run_check("14", "Exercise 14.2", nb14, embedding_hours=wrong, workers_for_a_day=right_workers)


def test_14_2_rejects_the_rate_of_a_worker_alone(nb14):
    hours = reference("14", "Exercise 14.2", "embedding_hours", nb14)
    with pytest.raises(SelfCheckError):
        run_check("14", "Exercise 14.2", nb14, embedding_hours=hours,
                  workers_for_a_day=_workers_at_one_worker_rate(nb14))


def test_14_2_accepts_the_reference(nb14, capsys):
    scope = dict(nb14)
    exec(_cells("14", "Exercise 14.2")[0], scope)
    run_check("14", "Exercise 14.2", nb14, embedding_hours=scope["embedding_hours"],
              workers_for_a_day=scope["workers_for_a_day"])
    assert capsys.readouterr().out.count("✓ Exercise 14.2") == 2
