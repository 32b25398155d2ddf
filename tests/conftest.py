"""Fixtures shared by the tests, and one check of the datasets before anything reads them."""

import importlib.util
import re
from pathlib import Path

import pytest

from course_lib.datasets import DataNotFoundError, require_datasets

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
# a test module that reads the public datasets says one of these; notebooks (nbval) all do
_READS_DATA = re.compile(r"course_lib\.datasets|from course_lib import datasets|load_chroma_|load_flores|chroma_eval"
                         r"|NotebookClient")


def _reads_data(item) -> bool:
    path = Path(str(item.path))
    if path.suffix == ".ipynb":
        return True
    try:
        return bool(_READS_DATA.search(path.read_text(encoding="utf-8")))
    except OSError:
        return False


def pytest_collection_modifyitems(session, config, items):
    """When the run reads the public datasets (a notebook, or a test module that loads them), check once
    that they are all in the data cache, downloading what is missing. Without them and without a network,
    stop with one message naming the folder and COURSE_DATA_DIR, instead of a failure in every test."""
    if not any(_reads_data(item) for item in items):
        return
    try:
        require_datasets()
    except DataNotFoundError as error:
        pytest.exit(f"\n{error}\n", returncode=4)


@pytest.fixture(scope="session")
def chroma_eval():
    """`benchmarks/chroma_eval.py` as a module, loaded once (benchmarks/ holds scripts, not a package)."""
    spec = importlib.util.spec_from_file_location("chroma_eval", BENCHMARKS / "chroma_eval.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
