"""Exercises 8.1 (the paired bootstrap) and 8.2 (the verdict rule) cannot be fooled (issue 29).

Each self-check cell of notebook 08 is run here as the notebook has it, with the learner's function
replaced: by plausible wrong implementations, which the check must reject with a `SelfCheckError`, and
by right ones (the library's `course_lib.stats`, the notebook's reference solution, and correct
bootstraps that draw their resamples another way), which it must accept. The check cells need only
numpy, `course_lib.stats` and `course_lib.exercises`, so no model is loaded.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import numpy as np
import pytest

from course_lib import stats
from course_lib.exercise_hints import HINTS
from course_lib.exercises import SelfCheckError, check_function, check_problems
from scripts import build_student_edition as edition

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "08_measuring_chunkers.ipynb"


def _cells(name: str) -> tuple[str, str]:
    """The solution cell's and the self-check cell's source of one exercise of notebook 08."""
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    exercise = next(e for e in edition.find_exercises(notebook) if e.name == name)
    return notebook.cells[exercise.solution].source, notebook.cells[exercise.check].source


def _namespace(**learner) -> dict:
    return {"np": np, "check_function": check_function, "check_problems": check_problems,
            "paired_interval": stats.paired_interval, "verdict": stats.verdict,
            "mean_intervals": stats.mean_intervals, **learner}


def run_check(name: str, **learner):
    """Run the exercise's self-check cell with the learner's function(s); return the check's outcome."""
    _, check = _cells(name)
    namespace = _namespace(**learner)
    lines = check.rstrip().splitlines()
    exec("\n".join(lines[:-1]), namespace)  # the case generators
    return eval(lines[-1].rstrip(";"), namespace)  # the check call itself


def reference(name: str, function: str):
    """The notebook's reference solution of an exercise, as a function."""
    solution, _ = _cells(name)
    namespace = _namespace()
    exec(solution, namespace)
    return namespace[function]


def _diff(a, b):
    return np.asarray(a, dtype=float) - np.asarray(b, dtype=float)


# --- Exercise 8.1: the paired bootstrap ------------------------------------------------------------

def library_bootstrap(a, b, resamples=10_000, seed=0):
    return tuple(stats.paired_interval(a, b, resamples=resamples, seed=seed))


def loop_bootstrap(a, b, resamples=10_000, seed=0):
    """Right, written as a loop: one resample at a time."""
    rng, d = np.random.default_rng(seed), _diff(a, b)
    means = [d[rng.integers(0, len(d), size=len(d))].mean() for _ in range(resamples)]
    return d.mean(), *np.percentile(means, [2.5, 97.5])


def other_draws_bootstrap(a, b, resamples=10_000, seed=0):
    """Right, but with other draws (rng.choice, another seed): not the library's numbers, within 0.01 of them."""
    rng, d = np.random.default_rng(seed + 12345), _diff(a, b)
    means = d[rng.choice(len(d), size=(resamples, len(d)))].mean(axis=1)
    return d.mean(), *np.quantile(means, [0.025, 0.975])


def unpaired_bootstrap(a, b, resamples=10_000, seed=0):
    """Wrong: resamples each strategy's questions independently, so question difficulty widens the interval."""
    rng = np.random.default_rng(seed)
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    means_a = a[rng.integers(0, len(a), size=(resamples, len(a)))].mean(axis=1)
    means_b = b[rng.integers(0, len(b), size=(resamples, len(b)))].mean(axis=1)
    return a.mean() - b.mean(), *np.percentile(means_a - means_b, [2.5, 97.5])


def two_standard_errors(a, b, resamples=10_000, seed=0):
    """Wrong: mean +- 2 standard errors, symmetric even where the differences are one-sided."""
    d = _diff(a, b)
    se = d.std(ddof=1) / np.sqrt(len(d))
    return d.mean(), d.mean() - 2 * se, d.mean() + 2 * se


def two_bootstrap_deviations(a, b, resamples=10_000, seed=0):
    """Wrong: paired resamples, but the interval as mean +- 2 of their standard deviations, not percentiles."""
    d = _diff(a, b)
    means = d[np.random.default_rng(seed).integers(0, len(d), size=(resamples, len(d)))].mean(axis=1)
    return d.mean(), d.mean() - 2 * means.std(), d.mean() + 2 * means.std()


def ninety_percent(a, b, resamples=10_000, seed=0):
    """Wrong: the middle 90% (percentiles 5 and 95) instead of 95%."""
    d = _diff(a, b)
    means = d[np.random.default_rng(seed).integers(0, len(d), size=(resamples, len(d)))].mean(axis=1)
    return d.mean(), *np.percentile(means, [5, 95])


def without_replacement(a, b, resamples=10_000, seed=0):
    """Wrong: draws without replacement, so every resample is the same questions and the interval collapses."""
    rng, d = np.random.default_rng(seed), _diff(a, b)
    means = [d[rng.permutation(len(d))].mean() for _ in range(200)]
    return d.mean(), *np.percentile(means, [2.5, 97.5])


def b_minus_a(a, b, resamples=10_000, seed=0):
    """Wrong: the difference the other way round."""
    return library_bootstrap(b, a, resamples, seed)


def stub(*args, **kwargs):
    raise NotImplementedError("Exercise 8: replace this line with your solution")


@pytest.mark.parametrize("right", [library_bootstrap, loop_bootstrap, other_draws_bootstrap],
                         ids=lambda f: f.__name__)
def test_the_bootstrap_check_accepts_a_right_bootstrap(right, capsys):
    assert run_check("Exercise 8.1", paired_bootstrap=right)
    assert "✓ Exercise 8.1: all 7 checks passed." in capsys.readouterr().out


def test_the_bootstrap_check_accepts_the_reference_solution():
    assert run_check("Exercise 8.1", paired_bootstrap=reference("Exercise 8.1", "paired_bootstrap"))


@pytest.mark.parametrize("wrong", [unpaired_bootstrap, two_standard_errors, two_bootstrap_deviations, ninety_percent,
                                   without_replacement, b_minus_a], ids=lambda f: f.__name__)
def test_the_bootstrap_check_rejects_a_wrong_bootstrap(wrong):
    with pytest.raises(SelfCheckError, match=r"Exercise 8\.1 is not solved yet: `\w+\(.*` returned .*, expected"):
        run_check("Exercise 8.1", paired_bootstrap=wrong)


def test_the_other_draws_really_differ_from_the_library():
    # the tolerance is exercised: a right bootstrap with other draws is not equal to the library's numbers
    a = (np.random.default_rng(1).random(40) < 0.6).astype(float)
    b = np.clip(a + np.random.default_rng(2).normal(0, 0.3, 40), 0, 1)
    assert other_draws_bootstrap(a, b) != pytest.approx(library_bootstrap(a, b), abs=1e-9)
    assert other_draws_bootstrap(a, b) == pytest.approx(library_bootstrap(a, b), abs=0.01)


def test_the_bootstrap_check_reports_the_stub_without_raising(capsys):
    assert not run_check("Exercise 8.1", paired_bootstrap=stub)
    assert "Exercise 8.1: not solved yet" in capsys.readouterr().out


# --- Exercise 8.2: the verdict rule ----------------------------------------------------------------

def _leader(per_question):
    return max(per_question, key=lambda s: np.mean(per_question[s]))


def library_decide(per_question):
    v = stats.verdict(per_question, costs=dict.fromkeys(per_question, 0))
    return v.winner, sorted(v.ruled_out)


def highest_mean_wins(per_question):
    """Wrong: calls the highest mean the winner even when an interval against it contains 0."""
    leader = _leader(per_question)
    return leader, sorted(s for s in per_question if s != leader)


def separate_intervals(per_question):
    """Wrong: compares each strategy's own interval (unpaired), so it misses differences that pairing shows."""
    own, leader = stats.mean_intervals(per_question), _leader(per_question)
    out = sorted(s for s in per_question if s != leader and own[s].high < own[leader].low)
    return (leader if len(out) == len(per_question) - 1 else None), out


def touching_zero_rules_out(per_question):
    """Wrong: rules a strategy out when its interval only reaches 0 (high <= 0), not when it lies below."""
    leader = _leader(per_question)
    out = sorted(s for s in per_question
                 if s != leader and stats.paired_interval(per_question[s], per_question[leader]).high <= 0)
    return (leader if len(out) == len(per_question) - 1 else None), out


def leader_minus_other(per_question):
    """Wrong: the interval of leader - other, read as if it were other - leader."""
    leader = _leader(per_question)
    out = sorted(s for s in per_question
                 if s != leader and stats.paired_interval(per_question[leader], per_question[s]).high < 0)
    return (leader if len(out) == len(per_question) - 1 else None), out


def first_name_leads(per_question):
    """Wrong: takes the first strategy given as the leader instead of the highest mean."""
    leader = next(iter(per_question))
    out = sorted(s for s in per_question
                 if s != leader and stats.paired_interval(per_question[s], per_question[leader]).high < 0)
    return (leader if len(out) == len(per_question) - 1 else None), out


def unpaired_verdict(per_question):
    """Wrong: the rule right, but on unpaired intervals (each strategy's questions resampled on its own)."""
    leader = _leader(per_question)
    out = sorted(s for s in per_question
                 if s != leader and unpaired_bootstrap(per_question[s], per_question[leader])[2] < 0)
    return (leader if len(out) == len(per_question) - 1 else None), out


def test_the_verdict_check_accepts_the_library_and_the_reference_solution(capsys):
    assert run_check("Exercise 8.2", decide=library_decide)
    assert run_check("Exercise 8.2", decide=reference("Exercise 8.2", "decide"))
    assert capsys.readouterr().out.count("✓ Exercise 8.2: all 6 checks passed.") == 2


@pytest.mark.parametrize("wrong", [highest_mean_wins, separate_intervals, touching_zero_rules_out, leader_minus_other,
                                   first_name_leads, unpaired_verdict], ids=lambda f: f.__name__)
def test_the_verdict_check_rejects_a_wrong_rule(wrong):
    with pytest.raises(SelfCheckError, match=r"Exercise 8\.2 is not solved yet: `\w+\(.*` returned .*, expected"):
        run_check("Exercise 8.2", decide=wrong)


def test_the_verdict_check_reports_the_stub_without_raising(capsys):
    assert not run_check("Exercise 8.2", decide=stub)
    assert "Exercise 8.2: not solved yet" in capsys.readouterr().out


def test_the_verdict_cases_cover_every_outcome():
    # a winner, no decision with nothing ruled out, and no decision with something ruled out
    _, check = _cells("Exercise 8.2")
    namespace = _namespace()
    exec(check.rstrip().rsplit("\n", 1)[0], namespace)
    outcomes = [expected for _, expected in namespace["verdict_cases"]()]
    assert any(w is not None for w, _ in outcomes)
    assert any(w is None and not out for w, out in outcomes)
    assert any(w is None and out for w, out in outcomes)


# --- hints ------------------------------------------------------------------------------------------

def test_every_exercise_of_notebook_08_has_tiered_hints():
    names = [e.name for e in edition.find_exercises(nbformat.read(NOTEBOOK, as_version=4))]
    assert names == [f"Exercise 8.{k}" for k in range(1, len(names) + 1)], names
    for name in names:
        assert len(HINTS.get(name, ())) >= 2, f"{name} needs hint tiers in course_lib/exercise_hints.json"
    assert not [k for k in HINTS if k.startswith("Exercise 8.") and k not in names], "hints for a removed exercise"
