"""The sources' last gaps are things the learner sees (issue 47): each analogy, example and disagreement is in
the notebook that teaches its topic, and the examples are run (their output is stored)."""

from __future__ import annotations

import json

import pytest

from scripts.project import NOTEBOOKS


def _notebook(number: str) -> tuple[str, str]:
    """(all Markdown, all stored output) of a notebook."""
    cells = json.loads(next(NOTEBOOKS.glob(f"{number}_*.ipynb")).read_text(encoding="utf-8"))["cells"]
    text = lambda x: x if isinstance(x, str) else "".join(x)  # noqa: E731
    markdown = "\n".join(text(c["source"]) for c in cells if c["cell_type"] == "markdown")
    output = "\n".join(text(o.get("text", "")) + text(o.get("data", {}).get("text/plain", ""))
                       for c in cells if c["cell_type"] == "code" for o in c.get("outputs", []))
    return markdown, output


@pytest.mark.parametrize(("number", "source", "words"), [
    ("06", "[[Late glossary]]", ["R-CNN", "Fast R-CNN", "whole image"]),  # late chunking, where it is taught
    ("07", "[[Pattern]]", ["book", "page", "chapter"]),  # structure, where it is taught
])
def test_the_analogies_are_cited_where_their_topic_is_taught(number, source, words):
    markdown, _ = _notebook(number)
    paragraph = next(p for p in markdown.split("\n\n") if source in p and words[0] in p)
    assert all(w in paragraph for w in words), paragraph


def test_the_berlin_example_is_tokenized_and_chunked():
    _, output = _notebook("12")
    assert "|Su| pobl|ación|" in output, "the tokens of 'Su población'"
    assert "recursive:16 chunk of" in output and "'Su población supera los 3,8 millones de habitantes.'" in output


def test_a_table_and_a_numbered_list_are_chunked_by_each_core_strategy():
    _, output = _notebook("12")
    for spec in ("fixed:24", "recursive:24", "sentence:2", "markdown:24"):
        assert f"{spec:12} " in output and "table rows and list items cut" in output, spec


def test_a_contract_like_text_and_a_transcript_are_chunked_at_the_sizes_the_source_names():
    markdown, output = _notebook("12")
    assert "500 to 800 tokens" in markdown and "800 or more for transcripts" in markdown
    for line in ("bylaw", "recursive:500:100"), ("bylaw", "recursive:800:160"), ("meeting", "recursive:800 "):
        assert any(line[0] in row and line[1] in row for row in output.splitlines()), line


def test_the_two_disagreements_are_stated_with_what_the_course_measured():
    markdown, output = _notebook("12")
    assert "safest choice for uploads" in markdown and "cut 4 of the 8 rows and items" in markdown
    assert "drops the `## ` of every heading" in markdown and "'Cómo pedir un préstamo'" in output
