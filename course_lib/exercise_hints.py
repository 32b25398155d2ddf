"""Hints for the exercises of the course notebooks, in tiers: the first wrong try reveals the first one.

Kept out of the notebooks' check cells, so a learner does not read them before trying
(`course_lib.exercises` looks an exercise up here when its check gives no `hint=`). The tiers are prose, so
they live in `exercise_hints.json` beside this file (`{"Exercise 4.1": ["nudge", ..., "nearly the answer"]}`):
each says a little more than the one before. `EXPECTED` holds the values a check compares with that the
learner should find, not read, so they stay out of the check cells.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["EXPECTED", "HINTS"]

_TIERS = json.loads(Path(__file__).with_name("exercise_hints.json").read_text(encoding="utf-8"))
HINTS: dict[str, tuple[str, ...]] = {name: tuple(tiers) for name, tiers in _TIERS.items()}

# What a check compares with, by exercise: values the learner finds in the notebook's own outputs.
EXPECTED: dict[str, dict[str, object]] = {
    # notebooks/06_late_chunking_xr12.ipynb: the overlap that gives the handbook's 3,186 tokens in windows of
    # 510 at least 100 tokens of context and reads at most 1.5 times them (at 100 it reads 1.60: none)
    "Exercise 6.2": {"overlap": None},
    # notebooks/09_semantic_chunking.ipynb: the (strategy, budget) with the fewest vectors whose span recall
    # reaches 95% and whose paired interval against the best at that budget reaches 0 (results/size_sweep;
    # tests/test_exercise_expected_09.py recomputes it)
    "Exercise 9.2": {"strategy": "recursive:256", "budget": 2000},
    # notebooks/10_context_for_chunks.ipynb (results/context_collection.json and context_chroma.json;
    # tests/test_exercise_expected_10.py recomputes both). 10.3: the option the collection's outputs do not rule
    # out. 10.4: the methods whose paired interval against naive lies above zero on each corpus for MRR or span
    # recall and below zero for neither (ship), and those with an interval below zero anywhere (rule_out).
    "Exercise 10.3": {"mechanism": "b"},
    "Exercise 10.4": {"ship": ("hybrid+headers",), "rule_out": ("bm25", "late", "parent-child")},
    # notebooks/13_your_documents.ipynb: q19's cause under recursive:128 at k=1 (grid.results[...].causes)
    "Exercise 13.2": {"cause": "wrong_document"},
    # notebooks/14_from_notebook_to_production.ipynb: the smallest number of workers that embed 10 million
    # documents of 5,000 characters in 24 hours at results/batch_throughput.json's 2-worker rate shared out
    # (18,714 / 2 characters a second a worker: 61.8, rounded up)
    "Exercise 14.2": {"workers": 62},
}
