"""`python -m rag_tools.chunk_eval DOCS QUESTIONS ...`: the chunk-eval command."""

import sys

from rag_tools.chunk_eval.cli import main

sys.exit(main())
