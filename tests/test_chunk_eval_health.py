"""Chunk health (issue 36): chunks, median and p10/p90 tokens, tiny chunks, ends inside a sentence, chunks pooled
over windows, each against a computation by hand; the warning when health explains the misses; health and cost in
the JSON, the HTML and `--all-columns`. The toy embedder and the small folder come from tests/test_chunk_eval.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from course_lib.strategies import chunk_with
from course_lib.tokens import count_tokens
from rag_tools.chunk_eval import evaluate, render_html
from rag_tools.chunk_eval.health import ChunkHealth, chunk_health, health_warning, sentence_end
from tests.test_chunk_eval import ToyEmbedder, write

ROOT = Path(__file__).resolve().parent.parent
CAPSTONE = ROOT / "data" / "capstone"


@pytest.mark.parametrize("text, end, expected", [
    ("One. Two three.", 4, True),  # after a full stop
    ("One. Two three.", 8, False),  # inside "Two three."
    ("Is it? Yes.", 6, True),
    ('He said "stop." Then', 15, True),  # closing quote after the stop
    ("A list:\n- item", 7, True),  # before a line break
    ("Title line   \nbody", 10, True),  # spaces, then a line break
    ("Unfinished words here", 10, False),
    ("Last words", 10, True),  # the document's end
])
def test_sentence_end(text, end, expected):
    assert sentence_end(text, 0, end) is expected


def test_sentence_end_refuses_bad_spans():
    with pytest.raises(ValueError, match="0 <= start < end"):
        sentence_end("abc", 2, 2)


def test_health_by_hand():
    text = "Alpha beta. Gamma delta epsilon zeta eta.\nTheta iota kappa lambda mu nu xi omicron pi."
    chunks = chunk_with("fixed:6", text)
    spans = [("d", c.start, c.end) for c in chunks]
    tokens = [count_tokens(c.text) for c in chunks]
    health = chunk_health(spans, tokens, {"d": text}, size=6, sized_in_tokens=True, pooled=1)
    inside = [not (text[c.end:].lstrip(" ").startswith("\n") or c.end == len(text)
                   or re.search(r"[.!?:;][\"')\]]*$", c.text.rstrip())) for c in chunks]
    assert health == ChunkHealth(len(chunks), float(np.median(tokens)), float(np.percentile(tokens, 10)),
                                 float(np.percentile(tokens, 90)), 0.1 * 6, float(np.mean(np.array(tokens) < 0.6)),
                                 sum(inside) / len(chunks), 1 / len(chunks))
    assert 0 < health.inside_sentence_share < 1, "fixed windows cut some sentences, not all"
    sentences = chunk_health(spans, tokens, {"d": text}, size=2, sized_in_tokens=False, pooled=None)
    assert sentences.tiny_under == pytest.approx(0.1 * np.median(tokens)) and sentences.pooled_share is None


def test_fixed_windows_end_inside_sentences_more_than_recursive_chunks():
    """chunklab's finding on its own set (fixed 3% clean ends, recursive 93%), on the capstone: fixed:256 ends
    most chunks inside a sentence, recursive:256 almost none."""
    report = evaluate(CAPSTONE / "docs", CAPSTONE / "questions.jsonl", ["fixed:256", "recursive:256"],
                      embedder=ToyEmbedder(), cache=None)
    inside = {r.strategy: r.health["inside_sentence_share"] for r in report.results}
    assert inside["fixed:256"] > 0.5 > 0.2 > inside["recursive:256"], inside


def test_health_warning_names_the_cause_it_explains():
    health = ChunkHealth(10, 50, 10, 90, 5, 0.3, 0.6, 0.7)
    causes = ["split", "split", None, "self_contained"]
    returned = [[0, 1], [2, 3], [0], [4]]
    tokens = [50, 3, 50, 50, 50]
    line = health_warning("fixed:64", health, causes, returned, tokens)
    assert line.startswith("fixed:64: 2 of its 3 misses are answers cut by a chunk boundary, and 60% of its chunks "
                           "end inside a sentence")
    healthy = ChunkHealth(10, 50, 10, 90, 5, 0.3, 0.1, 0.7)
    assert "returned a tiny chunk (under 5 tokens)" in health_warning("x", healthy, causes, [[1], [1], [], [1]],
                                                                       tokens)
    assert "longer than the model's window" in health_warning("x", healthy, ["self_contained"] * 2, [[0], [0]],
                                                               tokens)
    assert health_warning("x", healthy, [None, None], [[0], [0]], tokens) is None, "no miss, nothing to explain"


def test_health_and_cost_in_json_html_and_all_columns(tmp_path):
    docs, questions = write(tmp_path)
    report = evaluate(docs, questions, ["fixed:12", "bm25:fixed:12", "late:fixed:12"], k=2, embedder=ToyEmbedder(),
                      cache=None)
    data = json.loads(json.dumps(report.to_dict()))
    for row, r in zip(data["results"], report.results):
        assert set(row["health"]) == {"chunks", "median_tokens", "p10_tokens", "p90_tokens", "tiny_under_tokens",
                                      "tiny_share", "inside_sentence_share", "pooled_share"}
        assert row["health"]["chunks"] == r.chunks
        cost = row["cost"]
        assert set(cost) == {"vectors", "index_bytes", "embed_tokens", "embed_seconds", "latency_ms",
                             "returned_tokens", "rerank_seconds"}
        texts = [c.text for d in report.documents for c in chunk_with("fixed:12", d.text)]
        if r.strategy.startswith("bm25:"):
            assert cost["vectors"] == 0 and cost["embed_tokens"] == 0 and row["health"]["pooled_share"] is None
            assert cost["latency_ms"]["question_embedding"] is None, "BM25 embeds no question"
        else:
            assert cost["vectors"] == r.chunks and cost["embed_tokens"] == sum(count_tokens(t) for t in texts)
            assert cost["index_bytes"] == r.chunks * 48 * 4
        assert cost["latency_ms"]["search"] >= 0 and cost["latency_ms"]["rerank"] is None
    page = render_html(report)
    for table in ("health", "cost"):
        body = page[page.index(f'<table id="{table}">'):]
        assert body[:body.index("</table>")].count("<tr>") == 1 + len(report.results)
    assert 'id="cost-plot"' in page
    from rag_tools.chunk_eval import format_text

    short, full = format_text(report), format_text(report, all_columns=True)
    assert "mid-sentence ends" not in short and "mid-sentence ends" in full and "query ms" in full
