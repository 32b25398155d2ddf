"""Tests for course_lib.retrieval: every method returns exact, non-overlapping character spans."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.chunking import markdown_chunks, markdown_sections, sentence_chunks, split_sentences
from course_lib.retrieval import (
    blend_vectors,
    bm25_rankings,
    budget_spans,
    contextual_header,
    headed_texts,
    heading_path,
    parent_of,
    reciprocal_rank_fusion,
    sentence_windows,
    small_to_big,
)
from course_lib.strategies import chunk_with, parse_strategy

MANUAL = (
    "# XR-12 coolant pump\n\nThe XR-12 keeps the press line cool.\n\n"
    "## Service life\n\nIts seal wears first. It must be replaced after 10,000 hours.\n\n"
    "### Seal kit\n\nThe kit is part SK-7. It fits both pump sizes.\n\n"
    "## Faults\n\nA rattle means air in the casing. Vent it at once.\n"
)


# --- headers -----------------------------------------------------------------


def test_heading_path_follows_the_nesting():
    assert heading_path(MANUAL, 0) == ["XR-12 coolant pump"]
    at = MANUAL.index("It must")
    assert heading_path(MANUAL, at) == ["XR-12 coolant pump", "Service life"]
    assert heading_path(MANUAL, MANUAL.index("SK-7")) == ["XR-12 coolant pump", "Service life", "Seal kit"]
    assert heading_path(MANUAL, MANUAL.index("rattle")) == ["XR-12 coolant pump", "Faults"]
    assert heading_path("no headings here", 3) == []


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), st.sampled_from(["Intro", "Setup", "Faults", "Care"]),
                          st.sampled_from(["It runs.", "Its seal wears. Replace it.", "Vent the casing at once."])),
                min_size=1, max_size=8), st.integers(5, 40))
def test_heading_path_agrees_with_markdown_chunks(sections, size):
    text = "".join(f"{'#' * level} {title}\n\n{body}\n\n" for level, title, body in sections)
    for c in markdown_chunks(text, size):
        assert heading_path(text, c.start) == [h.lstrip("#").strip() for h in c.metadata["headings"]]
    spans = [(c.start, c.end) for c in markdown_chunks(text, size)]
    for (s, e), t in zip(spans, headed_texts(text, spans, title="Doc")):
        assert t.endswith(text[s:e]) and t.startswith("Doc")


def test_heading_path_rejects_offsets_outside_the_text():
    with pytest.raises(ValueError, match="offset"):
        heading_path(MANUAL, len(MANUAL) + 1)
    with pytest.raises(TypeError, match="offset"):
        heading_path(MANUAL, 1.0)


def test_contextual_header_does_not_repeat_a_title_equal_to_the_first_heading():
    assert contextual_header("XR-12 coolant pump", ["XR-12 coolant pump", "Faults"]) == "XR-12 coolant pump > Faults"
    assert contextual_header("Manual", ["Faults"]) == "Manual > Faults"
    assert contextual_header(None, []) == ""
    with pytest.raises(TypeError, match="headings"):
        contextual_header("t", "Faults")


def test_headed_texts_prefix_the_header_and_keep_the_chunk_verbatim():
    chunks = sentence_chunks(MANUAL, 1, 0)
    spans = [(c.start, c.end) for c in chunks]
    texts = headed_texts(MANUAL, spans, title="Pump manual")
    for (s, e), t in zip(spans, texts):
        header, body = t.split("\n\n", 1)
        assert body == MANUAL[s:e]
        assert header.startswith("Pump manual > XR-12 coolant pump")
    i = next(k for k, c in enumerate(chunks) if c.text.startswith("It must"))
    assert texts[i].startswith("Pump manual > XR-12 coolant pump > Service life\n\n")
    titles_only = headed_texts(MANUAL, spans, title="Pump manual", headings=False)
    assert all(t == f"Pump manual\n\n{MANUAL[s:e]}" for (s, e), t in zip(spans, titles_only))
    assert headed_texts("plain", [(0, 5)]) == ["plain"]
    with pytest.raises(ValueError, match="spans"):
        headed_texts(MANUAL, [(5, 2)])


# --- small-to-big --------------------------------------------------------------


def _sections():
    return [("m", s, e) for s, e, _ in markdown_sections(MANUAL)]


def _sentences():
    return [("m", s, e) for s, e in split_sentences(MANUAL)]


def test_parent_of_maps_each_sentence_into_its_section():
    parents, children = _sections(), _sentences()
    index = parent_of(children, parents)
    for (doc, s, e), p in zip(children, index):
        assert parents[p][0] == doc and parents[p][1] <= s and e <= parents[p][2]
    with pytest.raises(ValueError, match="overlaps no parent"):
        parent_of([("other", 0, 3)], parents)


def test_small_to_big_returns_each_parent_once_in_the_order_of_its_best_child():
    assert small_to_big([3, 0, 4, 1, 2], [0, 0, 1, 1, 2]) == [1, 0, 2]
    with pytest.raises(ValueError, match="ranked_children"):
        small_to_big([5], [0, 0])


def test_sentence_windows_never_return_text_twice():
    sentences = [("a", 0, 5), ("a", 6, 10), ("a", 11, 15), ("a", 16, 20), ("b", 0, 4), ("b", 5, 9)]
    # hit 1 takes 0..2; hit 2 is already returned; hit 3 can only take itself; hit 4 stops at the document edge
    assert sentence_windows([1, 2, 3, 4], sentences, 1) == [("a", 0, 15), ("a", 16, 20), ("b", 0, 9)]
    assert sentence_windows([0], sentences, 0) == [("a", 0, 5)]
    with pytest.raises(ValueError, match="width"):
        sentence_windows([0], sentences, -1)
    with pytest.raises(ValueError, match="in order"):
        sentence_windows([0], [("a", 5, 9), ("a", 0, 6)], 1)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=12), st.data(), st.integers(0, 3))
def test_sentence_windows_are_disjoint_unions_of_whole_sentences(lengths, data, width):
    starts = np.cumsum([0] + [n + 1 for n in lengths[:-1]])
    sentences = [("d", int(s), int(s) + n) for s, n in zip(starts, lengths)]
    ranked = data.draw(st.permutations(range(len(sentences))))
    windows = sentence_windows(ranked, sentences, width)
    covered = [i for i, (_, s, e) in enumerate(sentences) for w in windows if w[1] <= s and e <= w[2]]
    assert sorted(covered) == list(range(len(sentences)))  # every sentence returned exactly once
    edges = {s for _, s, _ in sentences}, {e for _, _, e in sentences}
    assert all(w[1] in edges[0] and w[2] in edges[1] for w in windows)
    ordered = sorted(windows, key=lambda w: w[1])
    assert all(a[2] < b[1] for a, b in itertools.pairwise(ordered))
    assert all(w[2] - w[1] <= sum(lengths) + len(lengths) for w in windows)
    assert windows[0][1] <= sentences[ranked[0]][1] and sentences[ranked[0]][2] <= windows[0][2]


# --- hybrid --------------------------------------------------------------------


def test_bm25_finds_exact_codes_that_a_paraphrase_misses():
    texts = ["Error E7 means the oil is too hot.", "The oil must be changed every year.",
             "Error E9 means the door is open."]
    ranked = bm25_rankings(texts, ["what does E7 mean", "zebra"])
    assert ranked[0][0] == 0 and 1 not in ranked[0]  # text 1 shares only the stop words
    assert ranked[1] == []  # no word in common: nothing returned
    with pytest.raises(TypeError, match="lists of strings"):
        bm25_rankings("one text", ["q"])


def test_reciprocal_rank_fusion_by_hand():
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "a"]], k=60)
    scores = {"a": 1 / 61 + 1 / 62, "b": 1 / 62, "c": 1 / 63 + 1 / 61}
    assert fused == sorted(scores, key=lambda x: -scores[x])
    assert reciprocal_rank_fusion([["x", "y"], ["y", "x"]]) == ["x", "y"]  # a tie keeps first appearance
    with pytest.raises(ValueError, match="twice"):
        reciprocal_rank_fusion([["a", "a"]])
    with pytest.raises(ValueError, match="k="):
        reciprocal_rank_fusion([["a"]], k=-1)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.permutations(list(range(8))), min_size=1, max_size=4))
def test_rrf_of_identical_lists_is_that_list(rankings):
    assert reciprocal_rank_fusion([rankings[0]] * len(rankings)) == list(rankings[0])
    fused = reciprocal_rank_fusion(rankings)
    assert sorted(fused) == list(range(8))


# --- vectors and budgets -----------------------------------------------------------


def test_blend_vectors_ends_and_middle():
    naive, late = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[0.0, 1.0], [0.0, 1.0]])
    assert np.allclose(blend_vectors(naive, late, 0.0), naive)
    assert np.allclose(blend_vectors(naive, late, 1.0), late)
    assert np.allclose(blend_vectors(naive, late, 0.5), [[0.5 ** 0.5, 0.5 ** 0.5], [0.0, 1.0]])
    with pytest.raises(ValueError, match="weight"):
        blend_vectors(naive, late, 1.5)
    with pytest.raises(ValueError, match="shape"):
        blend_vectors(naive, late[:1], 0.5)
    with pytest.raises(ValueError, match="zero vector"):
        blend_vectors(naive, -naive, 0.5)


def test_budget_spans_take_in_rank_order_until_the_next_would_pass():
    docs = {"d": "one two three four five six seven eight"}
    spans = [("d", 0, 7), ("d", 8, 18), ("d", 19, 27), ("d", 28, 39)]  # 2, 2, 2, 2 cl100k tokens
    assert budget_spans(spans, docs, 4) == spans[:2]
    assert budget_spans(spans, docs, 5) == spans[:2]
    assert budget_spans(spans, docs, 1) == spans[:1]  # at least one
    with pytest.raises(ValueError, match="names a document"):
        budget_spans([("x", 0, 1)], docs, 5)
    with pytest.raises(ValueError, match="ends after"):
        budget_spans([("d", 0, 99)], docs, 5)


# --- the committed results still describe today's chunks ------------------------------


def test_context_results_match_the_chunks_of_today():
    root = Path(__file__).resolve().parent.parent
    setup = json.loads((root / "results" / "context_collection.json").read_text(encoding="utf-8"))["setup"]
    collection = json.loads((root / "data" / "late_collection.json").read_text(encoding="utf-8"))
    texts = [d["text"] for d in collection["documents"]]
    spec = parse_strategy(setup["base"].split()[0])
    assert setup["n_base_chunks"] == sum(len(chunk_with(spec, t)) for t in texts), \
        "results/context_collection.json is stale: rerun benchmarks/context_methods.py --datasets collection reports"
    assert setup["n_parents"] == sum(len(markdown_sections(t)) for t in texts)
