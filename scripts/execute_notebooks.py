"""Execute notebooks in place with the course's quiet, offline settings.

Usage: python -m scripts.execute_notebooks [notebooks/NN_name.ipynb ...]   (default: all)
Notebooks are committed executed, because nbval compares stored outputs. Cells get no
execution timestamps (`record_timing=False`), so re-executing a notebook changes only
the outputs that changed. Each run time is stored in `notebooks/run_times.json`, which
`scripts/notebook_times.py` reads for the headers' "Time" and "Runs in" lines.
"""

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from course_lib.settings import apply_quiet_offline_env
from scripts.notebook_times import record_run_time
from scripts.project import course_notebooks


def execute(path: Path) -> float:
    """Run every cell of `path` in a fresh course kernel and write the outputs back; seconds taken."""
    notebook = nbformat.read(path, as_version=4)
    began = time.perf_counter()
    client = NotebookClient(notebook, timeout=900, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    nbformat.write(notebook, path)
    return time.perf_counter() - began


if __name__ == "__main__":
    apply_quiet_offline_env()  # the kernel inherits this process's environment
    paths = [Path(p) for p in sys.argv[1:]] or course_notebooks()
    for path in paths:
        seconds = execute(path)
        record_run_time(path, seconds)
        print(f"{path.name}: executed in {seconds:.1f} s", flush=True)
