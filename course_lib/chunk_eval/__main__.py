"""`python -m course_lib.chunk_eval DOCS QUESTIONS ...`: the chunk-eval command."""

import sys

from course_lib.chunk_eval.cli import main

sys.exit(main())
