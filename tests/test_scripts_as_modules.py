"""Scripts, benchmarks and tests import the course as installed and run as modules from the repository root
(`python -m scripts.x`): no `sys.path` edits, and `make test` lints first (issue 44)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATH_EDIT = re.compile(r"\bsys\.path\.(?:insert|append|extend)\(|\bsys\.path\s*(?:\+=|=)")


def test_no_sys_path_edits():
    found = [f"{path.relative_to(ROOT)}:{number}" for folder in ("benchmarks", "scripts", "tests")
             for path in sorted((ROOT / folder).rglob("*.py")) if path != Path(__file__)
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
             if PATH_EDIT.search(line)]
    assert not found, f"edit no sys.path; run the script as a module from the repository root: {found}"


def test_the_makefile_runs_scripts_as_modules_and_lints_before_testing():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert not re.findall(r"python (?:scripts|benchmarks)/\w+\.py", makefile), "use `$(BIN)/python -m scripts.x`"
    assert re.search(r"^test: .*\blint\b", makefile, re.MULTILINE), "make test runs the lint first"
    assert "ruff check ." in makefile
    pinned = (ROOT / "requirements-dev.txt").read_text(encoding="utf-8")
    assert re.search(r"^ruff==\d+\.\d+\.\d+", pinned, re.MULTILINE), "requirements-dev.txt pins ruff"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.index("make setup-dev") < ci.index("unshare --net"), "CI installs ruff before the network is cut"


def test_a_script_runs_as_a_module_from_the_root():
    done = subprocess.run([sys.executable, "-m", "scripts.notebook_times", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "usage:" in done.stdout, done.stderr
