"""The set-up files agree with each other, and the environment check reports honestly."""

import re
from pathlib import Path

import pytest

from course_lib import check
from course_lib.check import pinned_requirements

ROOT = Path(__file__).resolve().parent.parent


def conda_pip_pins(path: Path) -> dict[str, str]:
    """`name -> version` from the `pip:` list of environment.yml (lines `- name==version`)."""
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if m := re.fullmatch(r"\s{4,}- ([A-Za-z0-9_.\-]+)==(\S+)\s*(#.*)?", line):
            pins[m.group(1).lower()] = m.group(2)
    return pins


def test_environment_yml_mirrors_requirements():
    assert conda_pip_pins(ROOT / "environment.yml") == pinned_requirements(ROOT / "requirements.txt")


def test_every_requirement_is_pinned_and_torch_is_the_cpu_pin():
    lines = [line.split("#")[0].strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    assert all("==" in line for line in lines if line), "every requirement needs an exact == pin"
    assert pinned_requirements()["torch"] == "2.13.0"


def test_check_reports_ok_and_fail_lines(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("COURSE_DATA_DIR", str(tmp_path))  # an empty cache: datasets must FAIL
    monkeypatch.setattr("course_lib.datasets._download", _no_network)
    results = check.run_checks(with_model=False)
    out = capsys.readouterr().out
    assert "[OK] tokenizers: cl100k_base and o200k_base load offline" in out
    assert "[OK] package tiktoken: 0.14.0" in out
    failed = [line for ok, line in results if not ok]
    assert failed and all(line.startswith("[FAIL] dataset ") for line in failed)
    assert "save it as" in failed[0], "the failure says where to put the file"


def _no_network(url, target):
    raise OSError("network disabled in this test")


def test_check_main_exit_code(monkeypatch, capsys):
    monkeypatch.setattr(check, "all_checks", lambda with_model=True: [("good", lambda: "fine")])
    assert check.main() == 0
    monkeypatch.setattr(check, "all_checks", lambda with_model=True: [("bad", lambda: 1 / 0)])
    assert check.main() == 1
    assert "[FAIL] bad: ZeroDivisionError" in capsys.readouterr().out


@pytest.mark.parametrize("bad", [0, 513])
def test_model_window_is_validated(bad):
    from course_lib.models import load_embedding_model

    with pytest.raises(ValueError, match=f"max_seq_length={bad}"):
        load_embedding_model(bad)
