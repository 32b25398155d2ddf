"""No side effects on import; the offline settings live in the kernel, pytest and scripts."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from course_lib import settings
from scripts import project

MODULES = ["course_lib", "course_lib.chunking", "course_lib.tokens", "course_lib.strategies", "course_lib.evaluation",
           "course_lib.late", "course_lib.models", "course_lib.display", "course_lib.datasets", "course_lib.check",
           "scripts.project", "course_lib.settings"]


def test_importing_course_lib_changes_no_environment_variable():
    clean = {k: v for k, v in os.environ.items() if k not in settings.QUIET_OFFLINE_ENV}
    code = ("import os, sys, importlib; before = dict(os.environ)\n"
            f"for m in {MODULES!r}: importlib.import_module(m)\n"
            "changed = sorted(set(os.environ.items()) ^ set(before.items()))\n"
            "print(changed); sys.exit(1 if changed else 0)")
    result = subprocess.run([sys.executable, "-c", code], env=clean, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"import changed the environment: {result.stdout} {result.stderr}"


def test_pytest_runs_with_the_quiet_offline_settings():
    # the root conftest.py applies them; nbval's kernels inherit this environment
    for name, value in settings.QUIET_OFFLINE_ENV.items():
        assert os.environ.get(name) == value, f"{name} is not set for tests; check the root conftest.py"


def test_apply_keeps_what_the_user_set():
    env = {"TQDM_DISABLE": "0"}
    assert settings.apply_quiet_offline_env(env) is env
    assert env["TQDM_DISABLE"] == "0" and env["HF_HUB_OFFLINE"] == "1"
    assert set(env) == set(settings.QUIET_OFFLINE_ENV)


def test_kernel_gets_offline_settings_but_shows_progress_bars(tmp_path):
    folder = settings.install_kernel(prefix=str(tmp_path))
    spec = json.loads((tmp_path / "share" / "jupyter" / "kernels" / "python3" / "kernel.json").read_text())
    assert str(tmp_path) in folder
    assert spec["env"] == settings.OFFLINE_ENV
    assert spec["display_name"] == "Python 3 (chunking course)"
    assert "TQDM_DISABLE" not in spec["env"], "learners should see progress bars on long work"


def test_settings_command_line(capsys):
    settings.main([])
    shown = capsys.readouterr().out
    assert "HF_HUB_OFFLINE=1" in shown and "TQDM_DISABLE=1  # tests and scripts only" in shown


def test_project_paths():
    notebooks = project.course_notebooks()
    assert notebooks and notebooks == sorted(notebooks)
    assert notebooks[0].name.startswith("00_") and all(p.parent == project.NOTEBOOKS for p in notebooks)
    assert (project.ROOT / "pyproject.toml").is_file()
    assert project.build_folder("site") == project.ROOT / "build" / "site"
    with pytest.raises(ValueError, match="one folder name"):
        project.build_folder("../x")
    env = project.script_environment()
    assert env["HF_HUB_OFFLINE"] == "1" and env is not os.environ


def test_committed_notebooks_are_executed_without_errors():
    problems = [p for path in project.course_notebooks() for p in project.notebook_problems(path)]
    assert not problems, "\n".join(problems)


def test_notebook_check_catches_unexecuted_and_failed_cells(tmp_path, capsys):
    cells = [
        {"cell_type": "markdown", "source": "# Title", "metadata": {}},
        {"cell_type": "code", "source": "x = 1", "execution_count": 1, "outputs": [], "metadata": {}},
        {"cell_type": "code", "source": "y = 2", "execution_count": None, "outputs": [], "metadata": {}},
        {"cell_type": "code", "source": "1 / 0", "execution_count": 3, "metadata": {},
         "outputs": [{"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero",
                      "traceback": []}]},
        {"cell_type": "code", "source": "", "execution_count": None, "outputs": [], "metadata": {}},
    ]
    path = tmp_path / "99_bad.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert project.notebook_problems(path) == [
        "99_bad.ipynb: code cell 2 was not executed",
        "99_bad.ipynb: code cell 3 shows an error: ZeroDivisionError: division by zero",
    ]
    assert project.main([str(path)]) == 1
    assert "make execute" in capsys.readouterr().err
