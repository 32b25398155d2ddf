"""Hints for the exercises of the course notebooks, in tiers: the first wrong try reveals the first one.

Kept here, not in the notebooks' check cells, so a learner does not read them before trying
(`course_lib.exercises` looks an exercise up here when its check gives no `hint=`). Each tier says a
little more than the one before; the last comes close to the solution.
"""

from __future__ import annotations

__all__ = ["HINTS"]

HINTS: dict[str, tuple[str, ...]] = {
}
