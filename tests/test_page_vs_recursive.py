"""benchmarks.page_vs_recursive's page figures: each question's page hit, known by hand, and the totals equal
chunk-eval's own (issue 46)."""

from __future__ import annotations

import dataclasses

import pytest

from benchmarks.page_vs_recursive import page_figures
from rag_tools.chunk_eval import evaluate
from rag_tools.chunk_eval.inputs import Document, Question
from tests.test_chunk_eval import ToyEmbedder
from tests.test_chunk_eval_pages import ENDS, TEXT, paged_folder  # noqa: F401 (a fixture)


def test_page_figures_on_known_answer_pages(paged_folder):  # noqa: F811
    docs, questions = paged_folder
    report = evaluate(docs, questions, ["page:64"], k=1, embedder=ToyEmbedder(), cache=None)
    # tests/test_chunk_eval_pages.py's hand-made case: pages 2, 2-3 and 3 hold the answers; what came back
    # holds page 2 (a hit, pages right), page 3 (a hit of an answer that starts on page 2), page 1 (no hit)
    made = dataclasses.replace(
        report, documents=[Document("doc", TEXT, "pdf", ENDS["doc"])],
        questions=[Question("a", "?", (("doc", 10, 14),)), Question("b", "?", (("doc", 15, 25),)),
                   Question("c", "?", (("doc", 20, 24),))])
    result = dataclasses.replace(report.results[0], retrieved=[[("doc", 10, 19)], [("doc", 20, 29)], [("doc", 0, 9)]])
    figures = page_figures(made, result)
    assert figures["per_question_page_hit"] == [1, 0, 0]
    assert figures["page_recall_at_k"] == pytest.approx(1 / 3, abs=1e-6)
    assert (figures["hits"], figures["hits_pages_right"]) == (2, 0.5)
    low, high = figures["page_recall_interval"]
    assert 0 <= low < 1 / 3 < high <= 1


def test_page_figures_add_up_to_chunk_eval_s(paged_folder):  # noqa: F811
    docs, questions = paged_folder
    report = evaluate(docs, questions, ["page:64", "fixed:8"], k=1, embedder=ToyEmbedder(), cache=None)
    for result in report.results:
        figures, own = page_figures(report, result), result.pages
        assert figures["page_recall_at_k"] == pytest.approx(own["page_recall_at_k"])
        assert (figures["hits"], figures["hits_pages_right"]) == (own["hits"], own["hits_pages_right"])


def test_a_question_without_a_paged_answer_is_refused(paged_folder):  # noqa: F811
    docs, questions = paged_folder
    report = evaluate(docs, questions, ["page:64"], k=1, embedder=ToyEmbedder(), cache=None)
    unpaged = dataclasses.replace(report, documents=[dataclasses.replace(d, page_ends=()) for d in report.documents])
    with pytest.raises(ValueError, match="no answer in a paged document"):
        page_figures(unpaged, report.results[0])
