"""`python -m rag_tools` runs chunk-eval, as `python -m rag_tools.chunk_eval` and the `chunk-eval` command do."""

import sys

from rag_tools.commands import chunk_eval

sys.exit(chunk_eval())
