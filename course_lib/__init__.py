"""course_lib: the small, tested package behind the chunking course notebooks.

Importing it changes nothing in the environment: the offline settings live in the course
kernel and in the test configuration (see `course_lib.settings`).
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
