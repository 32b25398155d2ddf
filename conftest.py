"""pytest set-up for the whole repository (unit tests and nbval).

The quiet, offline settings are applied here, at start-up: every test, and every kernel
nbval starts with `--nbval-current-env`, inherits them (no model download, no progress bar
on the stderr nbval compares). `import course_lib` itself sets nothing.
"""

from course_lib.settings import apply_quiet_offline_env

apply_quiet_offline_env()
