"""benchmarks/store_ann.py's fair exact baseline and its recall with ties (no store, no model needed)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from course_lib.evaluation import VectorIndex

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "store_ann.py"


@pytest.fixture(scope="module")
def store_ann():
    spec = importlib.util.spec_from_file_location("store_ann", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_exact_top_k_equals_vectorindex_without_ties(store_ann):
    rng = np.random.default_rng(5)
    index = VectorIndex(rng.normal(size=(2_000, 16)))
    queries = rng.normal(size=(30, 16)) * 3  # not unit length: the search normalizes
    search = store_ann.exact_top_k(index.vectors, 5)
    assert [search(q) for q in queries] == index.search(queries, 5)[0]


def test_ties_counted_as_found_only_at_the_last_exact_score(store_ann):
    rows = np.eye(8, dtype=np.float32)
    rows[6] = rows[7] = rows[4]  # three copies of one text: equal scores for every query
    index = VectorIndex(rows)
    queries = np.array([[0, 0, 0, 0, 1, 0, 0, 0]], dtype=np.float32) + 0.01 * np.arange(8, dtype=np.float32)
    truth, scores = index.search(queries, 2)
    assert truth == [[4, 6]]  # equal scores: the lower rows first
    store_ann.TIES.update(vectors=index.vectors, queries=queries / np.linalg.norm(queries, axis=1, keepdims=True),
                          kth=scores[:, -1])
    assert store_ann.recall_fields([[7, 4]], truth) == {"recall_at_5": 0.5, "recall_at_5_ties_counted": 1.0}
    assert store_ann.recall_fields([[4, 3]], truth) == {"recall_at_5": 0.5, "recall_at_5_ties_counted": 0.5}
