"""Exercise 9.2's stored answer is what the size sweep's results say (so it cannot drift from the data)."""

import json
from pathlib import Path

import numpy as np

from course_lib.exercise_hints import EXPECTED
from course_lib.stats import paired_interval

SWEEP = Path(__file__).resolve().parents[1] / "results" / "size_sweep"


def cheapest_passing(target: float = 0.95) -> tuple[str, int]:
    """The (strategy, budget) with the fewest vectors that reaches `target` span recall and is not
    clearly worse than the best strategy at its budget (paired interval's upper end at least 0)."""
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(SWEEP.glob("*.json"))]
    sweep = {r["config"]["strategy"]: r for r in runs if "strategy" in r.get("config", {})}
    candidates = []
    for budget in (1000, 1500, 2000):
        per = {s: r["per_question"][f"budget_{budget}"]["span_recall"] for s, r in sweep.items()}
        best = max(per, key=lambda s: np.mean(per[s]))
        for s, scores in per.items():
            if np.mean(scores) >= target and paired_interval(scores, per[best]).high >= 0:
                candidates.append((sweep[s]["chunks"]["total"], budget, s))
    _, budget, strategy = min(candidates)
    return strategy, budget


def test_exercise_9_2_expected_matches_the_sweep():
    expected = EXPECTED["Exercise 9.2"]
    assert cheapest_passing() == (expected["strategy"], expected["budget"])


def test_a_stricter_target_changes_the_answer():
    # the rule reads the data: at 97% recursive:256 (96.5% at 2,000 tokens) no longer qualifies
    assert cheapest_passing(0.97) == ("recursive:64", 2000)
