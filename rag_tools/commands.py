"""The console scripts' entry points, kept apart from the commands so that they import almost nothing.

A Ctrl-C can come while Python is still importing a command (numpy, torch) or while it shuts down
after the command is done; both would print a traceback. Here they end quietly with status 130.
"""

from __future__ import annotations

import signal
import sys


def chunk_eval() -> int:
    """`chunk-eval`: `rag_tools.chunk_eval.cli.main`, without a traceback on an early or late Ctrl-C."""
    try:
        from rag_tools.chunk_eval.cli import main

        status = main()
    except KeyboardInterrupt:
        print("chunk-eval: interrupted; nothing written", file=sys.stderr)
        status = 130
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a Ctrl-C during interpreter shutdown just ends it
    return status
