"""course_lib: the small, tested package behind the chunking course notebooks."""

from course_lib.settings import apply_quiet_offline_env

apply_quiet_offline_env()

__version__ = "0.1.0"
