"""Where things are in the course repository, for `scripts/`, `benchmarks/` and tests.

Import this instead of computing paths from `__file__` or inserting folders into
`sys.path`: `from scripts.project import ROOT, course_notebooks, build_folder`.
It only makes sense in a checkout of the course (course_lib installed with `pip install -e .`,
as `make setup` does); `course_notebooks()` says so otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from pathlib import Path

from course_lib.settings import apply_quiet_offline_env

__all__ = ["BUILD", "COPY_IGNORE", "NOTEBOOKS", "RESULTS", "ROOT", "build_folder", "course_notebooks",
           "empty_output_folder", "folders_beside", "notebook_problems", "script_environment"]

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
BUILD = ROOT / "build"  # generated output (student edition, site); never committed
RESULTS = ROOT / "results"  # committed benchmark results that notebooks read
NOTEBOOK_PATTERN = "[0-9][0-9]_*.ipynb"
# `Path("..") / "data"`, `"../data/x.md"`, `os.path.join("..", "data")`: a folder beside notebooks/
PARENT_REFERENCE = re.compile(
    r"""Path\(\s*["']\.\.["']\s*\)\s*/\s*["']([^"'/]+)|["']\.\./([^"'/]+)|["']\.\.["']\s*,\s*["']([^"'/]+)""")
# `](../docs/SOURCES.md#key)`: a Markdown link to a file in a folder beside notebooks/
MARKDOWN_PARENT_LINK = re.compile(r"\]\(\.\./([^/)\s]+)/")
COPY_IGNORE = shutil.ignore_patterns("cache", "__pycache__", ".ipynb_checkpoints", ".*")  # when copying folders


def course_notebooks() -> list[Path]:
    """The course's notebooks in teaching order (`notebooks/NN_name.ipynb`)."""
    if not NOTEBOOKS.is_dir():
        raise FileNotFoundError(f"{NOTEBOOKS} does not exist: course_lib is not installed from a checkout of the "
                                "course; run `pip install -e .` in the course folder")
    return sorted(NOTEBOOKS.glob(NOTEBOOK_PATTERN))


def folders_beside(notebooks: list[Path]) -> list[str]:
    """The folders next to notebooks/ that the notebooks' code reads through `..` (e.g. data, results),
    and that their Markdown links point into (e.g. docs, for the sources' keys)."""
    import nbformat  # deferred: only the build scripts need it

    names = set()
    for path in notebooks:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                names.update(n for match in PARENT_REFERENCE.findall(cell.source) for n in match if n)
            elif cell.cell_type == "markdown":
                names.update(MARKDOWN_PARENT_LINK.findall(cell.source))
    return sorted(n for n in names if n not in ("build", "notebooks") and (ROOT / n).is_dir())


def empty_output_folder(out: Path, marker: str) -> None:
    """Create `out`, or empty it if it is in build/ or holds `marker` (an earlier build); else refuse."""
    if out.exists() and any(out.iterdir()):
        if not (out / marker).exists() and BUILD not in out.resolve().parents:
            raise FileExistsError(f"{out} is not empty and was not made by this script: choose another --out")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / marker).write_text("Made by a script of the course; rebuilt from scratch on each run.\n", encoding="utf-8")


def build_folder(name: str) -> Path:
    """`build/<name>`, where scripts write generated output (not created here)."""
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"name={name!r}: give one folder name, e.g. 'site' or 'student'")
    return BUILD / name


def script_environment() -> dict[str, str]:
    """A copy of this process's environment with the quiet, offline settings added (for
    kernels and subprocesses that scripts start); the variables already set win."""
    return apply_quiet_offline_env(dict(os.environ))


def notebook_problems(path: Path) -> list[str]:
    """Why a notebook may not be committed as it is: code cells that were never run, or that
    show an error. Notebooks are stored executed, because nbval compares their outputs."""
    notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    problems = []
    number = 0
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        number += 1
        source = "".join(cell.get("source", "")).strip()
        if source and cell.get("execution_count") is None:
            problems.append(f"{Path(path).name}: code cell {number} was not executed")
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                problems.append(f"{Path(path).name}: code cell {number} shows an error: "
                                f"{output.get('ename')}: {output.get('evalue', '')[:120]}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check notebooks before committing them (the pre-commit hook).")
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every course notebook")
    args = parser.parse_args(argv)
    problems = [p for path in (args.notebooks or course_notebooks()) for p in notebook_problems(path)]
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print("Re-execute with `make execute NB=notebooks/NN_name.ipynb` and fix the errors.", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
