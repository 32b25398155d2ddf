"""Fixtures shared by the tests."""

import importlib.util
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="session")
def chroma_eval():
    """`benchmarks/chroma_eval.py` as a module, loaded once (benchmarks/ holds scripts, not a package)."""
    spec = importlib.util.spec_from_file_location("chroma_eval", BENCHMARKS / "chroma_eval.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
