"""Exercise 8.2 (a) the paired bootstrap and (b) the verdict rule cannot be fooled (issues 29 and 33).

Each self-check cell of notebook 08's section 3 is run here as the notebook has it, with the learner's
function replaced: by plausible wrong implementations, which the check must reject with a `SelfCheckError`,
and by right ones (the library's `course_lib.stats`, the notebook's reference solution, and correct
bootstraps that draw their resamples another way), which it must accept. Only the cells these checks need
are run (tests/notebook_checks.py): the set-up, the ten questions of section 3 and the two solution cells.
The new functions of Exercise 8.2 (`resample_means`, `best_alone`) and Exercise 8.1 are tested in
tests/test_exercise_builds_08.py.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from notebook_checks import Notebook

from course_lib import stats
from course_lib.exercise_hints import HINTS
from scripts import build_student_edition as edition

NAME = "Exercise 8.2"
BOOTSTRAP, VERDICT = range(2)  # the parts, in notebook order: (a), (b)
CELLS = ["32e61e53", "d78679bb", "20f4fb6c", "06c60f16", "9cee7ac0"]  # set-up, ten questions, (a), C, (b)


@pytest.fixture(scope="module")
def nb08():
    return Notebook("08_measuring_chunkers.ipynb", cell_ids=CELLS)


def _parts(nb: Notebook) -> list[edition.Exercise]:
    return nb.parts(NAME)


def run_part(nb: Notebook, part: int, **learner) -> str:
    """Run one part's check cell with the learner's functions in place; return what it printed."""
    return nb.run_part(NAME, part, again=(), **learner)[0]


def accepts(nb: Notebook, part: int, **learner) -> str:
    return nb.accepts_part(NAME, part, again=(), **learner)


def rejects(nb: Notebook, part: int, **learner) -> str:
    return nb.rejects_part(NAME, part, again=(), **learner)


def _diff(a, b):
    return np.asarray(a, dtype=float) - np.asarray(b, dtype=float)


# --- (a) the paired bootstrap ---------------------------------------------------------------------

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
    raise NotImplementedError("Exercise 8.2: replace this line with your solution")


@pytest.mark.parametrize("right", [library_bootstrap, loop_bootstrap, other_draws_bootstrap],
                         ids=lambda f: f.__name__)
def test_the_bootstrap_check_accepts_a_right_bootstrap(nb08, right):
    assert "✓ Exercise 8.2: all 7 checks passed." in accepts(nb08, BOOTSTRAP, paired_bootstrap=right)


def test_the_bootstrap_check_accepts_the_reference_solution(nb08):
    accepts(nb08, BOOTSTRAP)


@pytest.mark.parametrize("wrong", [unpaired_bootstrap, two_standard_errors, two_bootstrap_deviations, ninety_percent,
                                   without_replacement, b_minus_a], ids=lambda f: f.__name__)
def test_the_bootstrap_check_rejects_a_wrong_bootstrap(nb08, wrong):
    message = rejects(nb08, BOOTSTRAP, paired_bootstrap=wrong)
    assert re.match(r"✗ Exercise 8\.2 is not solved yet: `\w+\(.*` returned .*, expected", message)


def test_the_other_draws_really_differ_from_the_library():
    # the tolerance is exercised: a right bootstrap with other draws is not equal to the library's numbers
    a = (np.random.default_rng(1).random(40) < 0.6).astype(float)
    b = np.clip(a + np.random.default_rng(2).normal(0, 0.3, 40), 0, 1)
    assert other_draws_bootstrap(a, b) != pytest.approx(library_bootstrap(a, b), abs=1e-9)
    assert other_draws_bootstrap(a, b) == pytest.approx(library_bootstrap(a, b), abs=0.01)


def test_the_bootstrap_check_reports_the_stub_without_raising(nb08):
    printed = run_part(nb08, BOOTSTRAP, paired_bootstrap=stub)
    assert "Exercise 8.2: not solved yet" in printed and "✗" not in printed
    printed = run_part(nb08, BOOTSTRAP, resample_means=stub, paired_bootstrap=stub)
    assert "Exercise 8.2: not solved yet" in printed


# --- (b) the verdict rule -------------------------------------------------------------------------

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


def test_the_verdict_check_accepts_the_library_and_the_reference_solution(nb08):
    accepts(nb08, VERDICT, decide=library_decide)
    accepts(nb08, VERDICT)


@pytest.mark.parametrize("wrong", [highest_mean_wins, separate_intervals, touching_zero_rules_out, leader_minus_other,
                                   first_name_leads, unpaired_verdict], ids=lambda f: f.__name__)
def test_the_verdict_check_rejects_a_wrong_rule(nb08, wrong):
    message = rejects(nb08, VERDICT, decide=wrong)
    assert re.match(r"✗ Exercise 8\.2 is not solved yet: `\w+\(.*` returned .*, expected", message)


def test_the_verdict_check_reports_the_stub_without_raising(nb08):
    printed = run_part(nb08, VERDICT, best_alone=stub, decide=stub)
    assert "Exercise 8.2: not solved yet" in printed and "✗" not in printed
    assert "Exercise 8.2: not solved yet" in run_part(nb08, VERDICT, decide=stub)


def test_the_verdict_cases_cover_every_outcome(nb08):
    # a winner, no decision with nothing ruled out, no decision with something ruled out, and the 90% guard
    namespace = dict(nb08.ns)
    source = nb08.notebook.cells[_parts(nb08)[VERDICT].check].source
    exec(source.split("\nverdicts = ")[0], namespace)
    outcomes = [stats.verdict(pq, costs=dict.fromkeys(pq, 0)) for pq in namespace["cases"]]
    assert any(v.winner is not None for v in outcomes)
    assert any(v.winner is None and not v.ruled_out for v in outcomes)
    assert any(v.winner is None and v.ruled_out for v in outcomes)
    assert any(v.winner is None and len(v.ruled_out) == len(v.intervals) - 1 for v in outcomes), "the 90% guard"


# --- hints ------------------------------------------------------------------------------------------

def test_every_exercise_of_notebook_08_has_tiered_hints(nb08):
    names = list(dict.fromkeys(e.name for e in edition.find_exercises(nb08.notebook)))
    assert names == [f"Exercise 8.{k}" for k in range(1, len(names) + 1)], names
    for name in names:
        assert len(HINTS.get(name, ())) >= 2, f"{name} needs hint tiers in course_lib/exercise_hints.json"
    for key in ("Exercise 8.1 (spans)", "Exercise 8.2 (verdict)"):
        assert len(HINTS.get(key, ())) >= 2, f"the part's hints {key!r} are missing"
    stale = [k for k in HINTS if k.startswith("Exercise 8.") and k.split(" (")[0] not in names]
    assert not stale, f"hints for a removed exercise: {stale}"

