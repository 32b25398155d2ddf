"""Issue 46, pages cited right: page recall@k and the share of hits whose stated pages hold the answer, on
hand-made paged documents whose answer pages are known, and the warning for chunks without a page."""

from __future__ import annotations

import dataclasses
import json

import pytest

from rag_tools.chunk_eval import evaluate, format_text, render_html
from rag_tools.chunk_eval.grades import page_of, page_report
from tests.test_chunk_eval import ToyEmbedder

# three pages; each page ends with its form feed (offsets 9, 19, 29)
TEXT = "aaaa bbbb\fcccc dddd\feeee ffff\f"
ENDS = {"doc": (9, 19, 29)}


def test_page_of_counts_as_the_readers_do():
    assert [page_of(ENDS["doc"], o) for o in (0, 9, 10, 19, 20, 29, 30)] == [1, 1, 2, 2, 3, 3, 4]


def test_page_report_on_known_answer_pages():
    references = [[("doc", 10, 14)],  # page 2
                  [("doc", 15, 25)],  # starts on page 2, ends on page 3
                  [("doc", 20, 24)],  # page 3
                  [("other", 0, 4)]]  # not a paged document: left out
    retrieved = [[("doc", 10, 19)],  # pages 2-2: a hit, pages right
                 [("doc", 20, 29)],  # pages 3-3: a hit, but the answer starts on page 2
                 [("doc", 0, 9)],  # page 1: no hit, wrong page
                 [("other", 0, 4)]]
    pages, unpaged = page_report([("doc", 0, 9), ("doc", 10, 19), ("doc", 20, 29)], retrieved, references, ENDS)
    assert pages == {"questions": 3, "page_recall_at_k": 1 / 3, "hits": 2, "hits_pages_right": 0.5}
    assert unpaged == 0
    assert page_report([("other", 0, 4)], retrieved[3:], references[3:], ENDS) == ({}, 0)


def test_a_chunk_past_the_last_form_feed_has_no_page():
    _, unpaged = page_report([("doc", 0, 9), ("doc", 30, 34)], [], [], ENDS)
    assert unpaged == 1


@pytest.fixture
def paged_folder(tmp_path, monkeypatch):
    """Three pages of distinct words, read as a PDF would be: page_ends at each form feed; `tail` text follows the
    last form feed of a second document (a reader that lost the last page's end)."""
    from rag_tools.chunk_eval import run

    pages = ["alpha pump seal wears monthly. " * 3, "bravo valve opens slowly. " * 3, "charlie motor hums loudly. " * 3]
    text = "".join(p + "\f" for p in pages)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "manual.txt").write_text(text, encoding="utf-8")
    (tmp_path / "docs" / "tail.txt").write_text("delta page one.\fecho text after the last page end", encoding="utf-8")
    questions = [{"id": "p1", "question": "alpha pump seal", "answer": "alpha pump seal wears monthly."},
                 {"id": "p2", "question": "bravo valve", "answer": "bravo valve opens slowly."},
                 {"id": "p3", "question": "charlie motor", "answer": "charlie motor hums loudly."}]
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    real = run.read_documents

    def paged(*args, **kwargs):
        documents, skipped = real(*args, **kwargs)
        return [dataclasses.replace(d, kind="pdf", page_ends=tuple(i for i, c in enumerate(d.text) if c == "\f"))
                for d in documents], skipped

    monkeypatch.setattr(run, "read_documents", paged)
    return tmp_path / "docs", tmp_path / "q.jsonl"


def test_page_recall_through_a_run_and_the_warning(paged_folder):
    docs, questions = paged_folder
    report = evaluate(docs, questions, ["page:64", "fixed:8"], k=1, embedder=ToyEmbedder(), cache=None)
    rows = {r.strategy: r for r in report.results}
    # one chunk a page: each answer's page is the page of the chunk holding it
    assert rows["page:64"].pages["questions"] == 3
    assert rows["page:64"].pages["page_recall_at_k"] == rows["page:64"].metrics["recall_at_k"] == 1.0
    assert rows["page:64"].pages["hits_pages_right"] == 1.0
    assert any(w.startswith("page:64: ") and "carry no page range" in w for w in report.warnings), report.warnings
    data = json.loads("".join(report.json_pieces()))
    assert {r["strategy"]: r["pages"]["page_recall_at_k"] for r in data["results"]}["page:64"] == 1.0
    assert "page recall 100.0% over 3 questions" in format_text(report)
    assert 'id="pages"' in render_html(report)
