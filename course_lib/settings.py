"""Quiet, offline settings for the whole course, kept in one place.

`import course_lib` applies them (without overriding anything the user set), so a
notebook that imports the course package first never tries to reach a model hub
and never writes progress bars to stderr, which nbval would compare.
"""

import os

QUIET_OFFLINE_ENV: dict[str, str] = {
    "HF_HUB_OFFLINE": "1",  # never download from the Hugging Face hub
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # "Loading weights ..." bars on stderr
    "TQDM_DISABLE": "1",  # every other tqdm bar
    "TRANSFORMERS_VERBOSITY": "error",
    "TOKENIZERS_PARALLELISM": "false",  # no fork warnings from Rust tokenizers
}


def apply_quiet_offline_env() -> None:
    """Set each variable of `QUIET_OFFLINE_ENV` unless the user already set it."""
    for name, value in QUIET_OFFLINE_ENV.items():
        os.environ.setdefault(name, value)
