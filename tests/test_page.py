"""Page chunking: one chunk per page that fits, never a chunk across a form feed, pages right."""

import itertools
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course_lib import datasets
from course_lib.chunking import fixed_size_chunks, page_chunks, page_ranges, recursive_chunks
from course_lib.strategies import STRATEGIES, chunk_with, parse_strategy
from course_lib.tokens import resolve_tokenizer
from rag_tools.readers import page_span

COUNT = resolve_tokenizer("cl100k_base").count
WORDS = ["The upload queue. ", "Each package has a maintainer.\n", "\n\n", "El paquete está listo. ", "x" * 30,
         " ", "\f", "\f\f", "ünïcode ", "👨\u200d👩\u200d👧", "a"]
paged = st.lists(st.sampled_from(WORDS), max_size=40).map("".join)


def check_pages(text, chunks, size):
    """Exact offsets, recounted sizes within `size`, no form feed inside, the pages named right."""
    starts = [c.start for c in chunks]
    assert starts == sorted(starts)
    for c in chunks:
        assert text[c.start:c.end] == c.text and c.text.strip() and "\f" not in c.text
        assert c.n_tokens == COUNT(c.text) <= size
        assert (c.metadata["page_start"], c.metadata["page_end"]) == page_span(text, c.start, c.end)


def test_page_ranges_count_every_form_feed():
    assert page_ranges("one\ftwo\f") == [(1, 0, 3), (2, 4, 7)]
    assert page_ranges("a\f \f\fb") == [(1, 0, 1), (4, 5, 6)]  # blank pages keep their numbers
    assert page_ranges("no breaks") == [(1, 0, 9)]
    assert page_ranges("") == [] and page_ranges("\f\f") == []
    with pytest.raises(TypeError, match="text must be a str"):
        page_ranges(b"bytes")


def test_a_page_that_fits_is_one_chunk():
    text = "  First page, short.\n\f\nSecond page.\n\n" + "Words on the second page. " * 40 + "\f"
    chunks = page_chunks(text, 64)
    assert chunks[0].text == "First page, short." and chunks[0].metadata == {"page_start": 1, "page_end": 1}
    assert len(chunks) > 2 and {c.metadata["page_start"] for c in chunks[1:]} == {2}
    check_pages(text, chunks, 64)
    assert [c.text for c in page_chunks(text, 1000)] == [p.strip() for p in text.split("\f") if p.strip()]


def test_a_long_page_is_split_as_the_recursive_chunker_splits_it():
    page = "A sentence about uploads. " * 30 + "\n\n" + "Another about the queue. " * 30
    text = "Cover\f" + page + "\f"
    shifted = [(c.start + 6, c.end + 6) for c in recursive_chunks(page, 50, 10)]
    assert [(c.start, c.end) for c in page_chunks(text, 50, 10)][1:] == shifted


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=paged, size=st.integers(16, 120), data=st.data())
def test_page_chunks_never_cross_a_page(text, size, data):
    overlap = data.draw(st.integers(0, size - 1))
    chunks = page_chunks(text, size, overlap)
    check_pages(text, chunks, size)
    covered = {i for c in chunks for i in range(c.start, c.end)}
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace()), "text lost"
    if not overlap:
        assert all(a.end <= b.start for a, b in itertools.pairwise(chunks))


def test_page_is_a_registered_token_strategy():
    info = STRATEGIES["page"]
    assert info.unit == "cl100k tokens" and not info.needs_model
    text = "p1\fp2 " * 3
    spans = [(c.start, c.end) for c in page_chunks(text, 512)]
    assert [(c.start, c.end) for c in chunk_with("page:512", text)] == spans


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=paged, size=st.integers(16, 80), name=st.sampled_from(["fixed", "recursive", "markdown"]))
def test_pages_keep_chunks_each_page_alone(text, size, name):
    chunks = chunk_with(f"{name}:{size}?pages=keep", text)
    check_pages(text, chunks, size)
    expected = [(c.start + a, c.end + a) for _, a, b in page_ranges(text)
                for c in chunk_with(f"{name}:{size}", text[a:b])]
    assert [(c.start, c.end) for c in chunks] == expected


def test_pages_keep_is_part_of_the_id_and_changes_only_page_crossings():
    assert parse_strategy("recursive:256:32?pages=keep").id == "recursive:256:32?pages=keep"
    text = "word " * 30 + "\f" + "word " * 30
    across = fixed_size_chunks(text, 40)
    assert any("\f" in c.text for c in across)
    assert not any("\f" in c.text for c in chunk_with("fixed:40?pages=keep", text))


@pytest.mark.parametrize(("spec", "message"), [
    ("recursive:256?pages=drop", "the only value is 'pages=keep'"),
    ("sentence:5?pages=keep", "'sentence' has no option 'pages'; options: language"),
    ("page:256?pages=keep", "'page' has no option 'pages'; options: none"),
    ("fixed:256?colour=red", "every token strategy also takes pages=keep"),
])
def test_bad_page_options_are_explained(spec, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_strategy(spec)


def test_pages_of_the_real_pdf():
    readers = pytest.importorskip("rag_tools.readers")
    pytest.importorskip("pypdf")
    try:
        path = datasets.fetch("debian_docs", "developers-reference.pdf", download=False)
    except datasets.DataNotFoundError:
        pytest.skip("debian_docs is not in the data cache (set COURSE_DATA_DIR to a folder holding it)")
    manual = readers.read_document(path)
    chunks = page_chunks(manual.text, 512)
    check_pages(manual.text, chunks, 512)
    pages = [c.metadata["page_start"] for c in chunks]
    fits = {page for page, a, b in page_ranges(manual.text) if COUNT(manual.text[a:b].strip()) <= 512}
    assert {p for p in pages if pages.count(p) == 1} == fits, "a page is one chunk exactly when it fits"
    assert max(pages) == 114 and len(fits) > 20
    first = next(c for c in chunks if c.metadata["page_start"] == 41)
    assert first.text.startswith("5.5.2 Special case:")
