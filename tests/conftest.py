"""Shared test set-up: the course's quiet, offline settings apply to every test."""

import course_lib  # noqa: F401  (sets HF_HUB_OFFLINE and friends before anything loads a model)
