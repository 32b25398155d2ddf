"""chunk-eval's memory does not grow with the number of questions beyond the per-question results (C5 of the
reliability review 2026-12-02: 0.26 MB a question), and the streamed JSON is the JSON it replaces.

Memory is measured with tracemalloc (NumPy reports its arrays to it); no test here looks at wall-clock time.
benchmarks/chunk_eval_scaling.py measures the whole run at 1,000 to 10,000 questions."""

from __future__ import annotations

import json
import tracemalloc

import numpy as np

from course_lib.strategies import chunk_with, parse_strategy
from rag_tools.chunk_eval import evaluate, score
from rag_tools.chunk_eval.inputs import Document, Question
from rag_tools.chunk_eval.score import _score
from tests.test_chunk_eval import ToyEmbedder
from tests.test_chunk_eval_decides import STRATEGIES


def _peak_of_scoring(n_questions: int, spec: str) -> int:
    """tracemalloc's peak, in bytes, while `_score` ranks about 1,000 chunks for `n_questions` questions."""
    sentences = [f"Part {i} of the pump fits unit {i % 7} and lasts {i % 11} years." for i in range(500)]
    doc = Document("a.txt", " ".join(sentences))
    chunks = chunk_with("fixed:8", doc.text)
    spans = [(doc.path, c.start, c.end) for c in chunks]
    texts = [c.text for c in chunks]
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((len(chunks), 16)).astype(np.float32)
    starts = [doc.text.index(s) for s in sentences]
    questions = [Question(f"q{i}", f"Which unit does part {i} fit?",
                          ((doc.path, starts[i % 500], starts[i % 500] + len(sentences[i % 500])),))
                 for i in range(n_questions)]
    query_vectors = rng.standard_normal((n_questions, 16)).astype(np.float32)
    tracemalloc.start()
    try:
        _score(parse_strategy(spec), spans, texts, texts, [c.n_tokens for c in chunks], vectors, query_vectors,
               questions, [doc], 5, None)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_scoring_memory_does_not_grow_with_the_rankings(monkeypatch):
    """Every question's full ranking (1,000 chunks: 8 kB dense, 36 kB from BM25) was kept until the last was
    scored. Now only a batch of rankings lives at once (100 here, both runs above it); what remains per question
    is its results (k spans, seven metrics, a cause: under 3 kB)."""
    monkeypatch.setattr(score, "QUESTION_BATCH", 100, raising=False)
    for spec in ("fixed:8", "hybrid:fixed:8"):
        small, large = _peak_of_scoring(200, spec), _peak_of_scoring(800, spec)
        assert (large - small) / 600 < 3000, f"{spec}: {(large - small) / 600:.0f} bytes more a question"


def test_the_streamed_json_is_the_json(tmp_path):
    from tests.test_chunk_eval import write

    docs, questions = write(tmp_path)
    report = evaluate(docs, questions, STRATEGIES, k=2, embedder=ToyEmbedder(), cache=None)
    assert "".join(report.json_pieces()) == json.dumps(report.to_dict(), indent=1) + "\n"
    report.questions, report.results = [], []
    assert json.loads("".join(report.json_pieces()))["per_question"] == []
