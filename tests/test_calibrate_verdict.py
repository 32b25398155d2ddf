"""benchmarks/calibrate_verdict.py's calibration: on synthetic sets whose truth is known, and its argument checks."""

import importlib.util
import re
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "calibrate_verdict.py"
_spec = importlib.util.spec_from_file_location("calibrate_verdict", SCRIPT)
bench = sys.modules.setdefault("calibrate_verdict", importlib.util.module_from_spec(_spec))  # dataclasses look it up
_spec.loader.exec_module(bench)
calibrate_verdict, CalibrationRow = bench.calibrate_verdict, bench.CalibrationRow


def _bernoulli_set(rates, n=472, seed=0):
    rng = np.random.default_rng(seed)
    return {name: (rng.random(n) < rate).astype(float) for name, rate in rates.items()}


def test_calibration_names_the_true_winner_and_is_never_contradicted():
    per_question = _bernoulli_set({"a": 0.9, "b": 0.4, "c": 0.45})
    rows = calibrate_verdict(per_question, sizes=(30, 60), subsets=25, resamples=1_000)
    assert [r.questions for r in rows] == [30, 60]
    for row in rows:
        assert row.subsets == 25 and row.named + row.no_winner == 25
        # b and c are contradicted on the whole set (a's interval lies above both): naming them would count
        assert row.contradicted == 0 and row.contradicted_share == 0.0
        assert row.leader_ruled_out == 0 and set(row.winners) <= {"a"}
    assert rows[1].named == 25 and rows[1].winners == {"a": 25}  # 60 questions always separate 0.9 from 0.45


def test_calibration_counts_no_winner_when_strategies_are_the_same():
    values = _bernoulli_set({"a": 0.6})["a"]
    rows = calibrate_verdict({"a": values, "b": values.copy()}, sizes=(30,), subsets=20, resamples=500)
    assert rows == [CalibrationRow(questions=30, subsets=20, named=0, contradicted=0, no_winner=20,
                                   leader_ruled_out=0, winners={})]
    assert rows[0].contradicted_share is None and rows[0].no_winner_share == 1.0


def test_calibration_counts_a_winner_the_truth_contradicts():
    per_question = _bernoulli_set({"a": 0.9, "b": 0.3})
    truth = {"a": per_question["b"], "b": per_question["a"]}  # on the "whole set", b is clearly better
    [row] = calibrate_verdict(per_question, sizes=(60,), subsets=10, truth=truth, resamples=500)
    assert row.named == 10 and row.contradicted == 10 and row.contradicted_share == 1.0
    assert row.winners == {"a": 10} and row.leader_ruled_out == 10  # b, the truth's leader, ruled out each time




@pytest.mark.parametrize(("call", "message"), [
    (lambda: calibrate_verdict({"a": [1, 2, 3], "b": [1, 2, 3]}, sizes=(4,)), "from 2 to the 3"),
    (lambda: calibrate_verdict({"a": [1, 2], "b": [1, 2]}, sizes=(2,), subsets=0), "subsets=0"),
    (lambda: calibrate_verdict({"a": [1, 2], "b": [1, 2]}, sizes=(2,), truth={"a": [1, 2], "c": [1, 2]}),
     "same strategies"),
])
def test_bad_input_is_refused_with_a_message(call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call()
