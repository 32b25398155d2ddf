"""Execute notebooks in place with the course's quiet, offline settings.

Usage: python scripts/execute_notebooks.py [notebooks/NN_name.ipynb ...]   (default: all)
Notebooks are committed executed, because nbval compares stored outputs.
"""

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

import course_lib  # noqa: F401  (applies the quiet, offline environment the kernel inherits)

ROOT = Path(__file__).resolve().parent.parent


def execute(path: Path) -> float:
    notebook = nbformat.read(path, as_version=4)
    began = time.perf_counter()
    NotebookClient(notebook, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    nbformat.write(notebook, path)
    return time.perf_counter() - began


if __name__ == "__main__":
    paths = [Path(p) for p in sys.argv[1:]] or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    for path in paths:
        print(f"{path.name}: executed in {execute(path):.1f} s", flush=True)
