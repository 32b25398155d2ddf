"""Tests for course_lib.evaluation: hand-computed cases, brute-force cross-checks and invariants."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.chunking import Chunk
from course_lib.datasets import CHROMA_CORPORA, load_chroma_corpus
from course_lib.evaluation import (
    METRIC_NAMES,
    SpanScores,
    VectorIndex,
    budget_cutoff,
    covered_characters,
    evaluate_spans,
    mrr,
    ndcg_at_k,
    overlapping_indices,
    overlaps_any,
    precision_omega,
    recall_at_k,
    reciprocal_rank,
    span_scores,
    summarize,
)
from rag_tools.chunk_eval.grades import ReferenceGrades, reference_grades

# ---------------------------------------------------------------------------
# Ranking metrics: hand-computed cases
# ---------------------------------------------------------------------------


def test_recall_at_k_by_hand():
    assert recall_at_k(["a", "b", "c"], {"a", "c", "d"}, 2) == pytest.approx(1 / 3)
    assert recall_at_k(["a", "b", "c"], {"a", "c", "d"}, 3) == pytest.approx(2 / 3)
    assert recall_at_k(["x"], {"a"}, 5) == 0.0


def test_reciprocal_rank_and_mrr_by_hand():
    assert reciprocal_rank(["x", "a", "b"], {"a", "b"}) == 0.5
    assert reciprocal_rank(["x", "y", "a"], {"a"}, k=2) == 0.0
    assert reciprocal_rank(["x", "y"], {"a"}) == 0.0
    assert mrr([["a"], ["x", "a"], ["x", "y", "z"]], [{"a"}, {"a"}, {"a"}]) == pytest.approx((1 + 0.5 + 0) / 3)


def test_ndcg_binary_by_hand():
    # DCG = 1/log2(3) + 1/log2(4); ideal = 1 + 1/log2(3)
    expected = (1 / math.log2(3) + 0.5) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(["x", "a", "b"], {"a", "b"}, 3) == pytest.approx(expected)
    assert ndcg_at_k(["x", "a", "b"], {"a", "b"}, 3) == pytest.approx(0.693426, abs=1e-6)


def test_ndcg_graded_by_hand():
    # DCG@2 = 2 + 3/log2(3); ideal = 3 + 2/log2(3)
    expected = (2 + 3 / math.log2(3)) / (3 + 2 / math.log2(3))
    assert ndcg_at_k(["b", "a", "c"], {"a": 3, "b": 2, "c": 0}, 2) == pytest.approx(expected)
    assert ndcg_at_k(["a", "b"], {"a": 3, "b": 2}, 2) == 1.0


def test_ndcg_set_equals_grades_of_one():
    ranking = ["d", "a", "q", "b"]
    assert ndcg_at_k(ranking, {"a", "b"}, 10) == ndcg_at_k(ranking, {"a": 1, "b": 1}, 10)


def test_ndcg_ideal_counts_relevant_items_not_retrieved():
    # one of two relevant ids is missing from the ranking: the ideal still holds both
    assert ndcg_at_k(["a"], {"a", "b"}, 2) == pytest.approx(1 / (1 + 1 / math.log2(3)))


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: recall_at_k(["a"], {"a"}, 0), ValueError, "k >= 1"),
        (lambda: recall_at_k(["a"], {"a"}, 1.5), TypeError, "k must be an int"),
        (lambda: recall_at_k(["a"], {"a"}, True), TypeError, "k must be an int"),
        (lambda: recall_at_k(["a", "a"], {"a"}, 1), ValueError, "twice"),
        (lambda: recall_at_k(["a"], set(), 1), ValueError, "relevant is empty"),
        (lambda: recall_at_k("abc", {"a"}, 1), TypeError, "ranking"),
        (lambda: ndcg_at_k(["a"], {"a": -1}, 1), ValueError, ">= 0"),
        (lambda: ndcg_at_k(["a"], {"a": "high"}, 1), TypeError, "number"),
        (lambda: ndcg_at_k(["a"], {"a": 0}, 1), ValueError, "undefined"),
        (lambda: mrr([["a"]], [{"a"}, {"b"}]), ValueError, "one set of relevant ids per ranking"),
        (lambda: mrr([], []), ValueError, "at least one query"),
    ],
)
def test_ranking_metrics_reject_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()


ids = st.integers(0, 30)
rankings = st.lists(ids, unique=True, max_size=20)
relevant_sets = st.sets(ids, min_size=1, max_size=10)


@given(rankings, relevant_sets, st.integers(1, 25))
def test_ranking_metrics_are_bounded(ranking, relevant, k):
    values = (recall_at_k(ranking, relevant, k), reciprocal_rank(ranking, relevant, k), ndcg_at_k(ranking, relevant, k))
    for value in values:
        assert 0.0 <= value <= 1.0 + 1e-12


@given(rankings, relevant_sets, st.integers(1, 24))
def test_recall_grows_with_k(ranking, relevant, k):
    assert recall_at_k(ranking, relevant, k) <= recall_at_k(ranking, relevant, k + 1)


@given(st.dictionaries(ids, st.integers(0, 3), min_size=1, max_size=12).filter(lambda g: max(g.values()) > 0),
       st.integers(1, 15))
def test_ideal_order_scores_one(grades, k):
    ideal = sorted(grades, key=lambda item: -grades[item])
    assert ndcg_at_k(ideal, grades, k) == pytest.approx(1.0)


@given(relevant_sets, st.integers(1, 15))
def test_perfect_binary_ranking_scores_one(relevant, k):
    ranking = sorted(relevant)
    assert ndcg_at_k(ranking, relevant, k) == pytest.approx(1.0)
    assert reciprocal_rank(ranking, relevant) == 1.0
    assert recall_at_k(ranking, relevant, len(relevant)) == 1.0


# ---------------------------------------------------------------------------
# Span metrics
# ---------------------------------------------------------------------------


def test_overlapping_retrieved_chunks_count_covered_text_once():
    # reference 10..20; chunks 0..15 and 12..30 overlap on 12..15 and both cover part of it
    scores = span_scores([(0, 15), (12, 30)], [(10, 20)])
    assert scores.recall == 1.0
    assert scores.precision == pytest.approx(10 / 33)  # 15 + 18 retrieved characters, shared text twice
    assert scores.iou == pytest.approx(10 / 33)


def test_span_scores_by_hand():
    # reference 10..20 and 40..50 (20 chars); chunk 15..45 covers 5 + 5 of them
    scores = span_scores([(15, 45)], [(10, 20), (40, 50)])
    assert scores == SpanScores(recall=10 / 20, precision=10 / 30, iou=10 / (30 + 10))
    assert span_scores([(0, 5)], [(10, 20)]) == SpanScores(0.0, 0.0, 0.0)
    assert span_scores([(10, 20)], [(10, 20)]) == SpanScores(1.0, 1.0, 1.0)


def test_span_scores_keep_documents_apart():
    # the same offsets in another corpus cover nothing, but still count as retrieved text
    scores = span_scores([("b", 0, 10), ("a", 0, 10)], [("a", 0, 10)])
    assert scores == SpanScores(recall=1.0, precision=0.5, iou=0.5)


def test_precision_omega_by_hand():
    chunks = [(0, 5), (5, 15), (15, 25), (25, 30)]
    assert precision_omega(chunks, [(7, 12)]) == 0.5  # only 5..15 holds the reference
    # a chunk that ends where the reference starts shares no character: not counted
    assert precision_omega(chunks, [(5, 12)]) == pytest.approx(7 / 10)
    # reference text no chunk holds (5..10) stays in the denominator
    assert precision_omega([(0, 5)], [(3, 10)]) == pytest.approx(2 / 10)
    # two references in one chunk: the chunk counts once
    assert precision_omega(chunks, [(15, 17), (20, 22)]) == pytest.approx(4 / 10)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: span_scores([(0, 5)], []), ValueError, "references is empty"),
        (lambda: span_scores([], [(0, 5)]), ValueError, "retrieved is empty"),
        (lambda: span_scores([(5, 5)], [(0, 5)]), ValueError, "start < end"),
        (lambda: span_scores([(0, 5.0)], [(0, 5)]), TypeError, "ints"),
        (lambda: span_scores([5], [(0, 5)]), TypeError, r"retrieved\[0\]"),
        (lambda: span_scores("0-5", [(0, 5)]), TypeError, "retrieved must be"),
        (lambda: precision_omega([(0, 5)], []), ValueError, "references is empty"),
        (lambda: summarize([]), ValueError, "non-empty"),
    ],
)
def test_span_metrics_reject_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_summarize_in_percent_with_population_std():
    assert summarize([0.0, 1.0]) == {"mean": 50.0, "std": 50.0}
    assert summarize([0.25]) == {"mean": 25.0, "std": 0.0}


def _chars(spans):
    return {(doc, i) for doc, s, e in spans for i in range(s, e)}


span = st.builds(lambda doc, s, n: (doc, s, s + n), st.sampled_from("ab"), st.integers(0, 60), st.integers(1, 25))


@settings(max_examples=300)
@given(st.lists(span, min_size=1, max_size=6), st.lists(span, min_size=1, max_size=4))
def test_span_scores_match_character_sets(retrieved, references):
    """Brute force: covered characters as a set, retrieved characters as a sum of lengths."""
    covered = len(_chars(retrieved) & _chars(references))
    ref_chars = len(_chars(references))
    retrieved_chars = sum(e - s for _, s, e in retrieved)
    scores = span_scores(retrieved, references)
    assert scores.recall == pytest.approx(covered / ref_chars)
    assert scores.precision == pytest.approx(covered / retrieved_chars)
    assert scores.iou == pytest.approx(covered / (retrieved_chars + ref_chars - covered))
    assert 0 <= scores.iou <= min(scores.recall, scores.precision) + 1e-12


def test_covered_characters_by_hand():
    assert covered_characters([]) == 0
    assert covered_characters([(0, 10), (5, 15), (5, 15), (20, 22)]) == 17  # shared and repeated text once
    assert covered_characters([("a", 0, 10), ("b", 0, 10)]) == 20  # documents apart
    with pytest.raises(TypeError, match="spans must be"):
        covered_characters("0-10")


def test_evaluate_spans_scores_each_question_on_its_nearest_chunks():
    chunks = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])  # question 0 is nearest chunk 0, question 1 chunk 1
    spans = [("a", 0, 10), ("a", 10, 20), ("b", 0, 10)]
    questions = [{"corpus_id": "a", "references": [{"start_index": 5, "end_index": 15}]},
                 {"corpus_id": "b", "references": [{"start_index": 0, "end_index": 4}]}]
    scores = evaluate_spans(chunks, np.array([[1.0, 0.0], [0.0, 1.0]]), questions, spans, k=1)
    assert scores == {"recall": [0.5, 0.0], "precision": [0.5, 0.0], "iou": [5 / 15, 0.0]}
    two = evaluate_spans(chunks, np.array([[0.0, 1.0]]), questions[1:], spans, k=2)  # chunks 1, then 2
    assert two == {"recall": [1.0], "precision": [4 / 20], "iou": [4 / 20]}


@given(st.lists(span, max_size=8))
def test_covered_characters_match_character_sets(spans):
    assert covered_characters(spans) == len(_chars(spans))


@settings(max_examples=300)
@given(st.lists(span, min_size=1, max_size=8), st.lists(span, min_size=1, max_size=4))
def test_precision_omega_matches_character_sets(chunks, references):
    ref_chars = _chars(references)
    touching = [c for c in chunks if _chars([c]) & ref_chars]
    expected = len(_chars(touching) & ref_chars) / len(_chars(touching) | ref_chars)
    assert precision_omega(chunks, references) == pytest.approx(expected)
    assert 0 <= precision_omega(chunks, references) <= 1


@given(st.lists(span, min_size=1, max_size=4))
def test_retrieving_exactly_the_references_scores_one(references):
    merged = sorted(_chars(references))
    # rebuild the union of references as disjoint ranges
    ranges, start = [], None
    for (doc, i), nxt in zip(merged, [*merged[1:], (None, -2)]):
        start = i if start is None else start
        if nxt != (doc, i + 1):
            ranges.append((doc, start, i + 1))
            start = None
    assert span_scores(ranges, references) == SpanScores(1.0, 1.0, 1.0)
    assert precision_omega(ranges, references) == 1.0


# ---------------------------------------------------------------------------
# Does a chunk overlap a reference?
# ---------------------------------------------------------------------------


def test_overlaps_any_by_hand():
    refs = [(10, 20), (40, 50)]
    assert overlaps_any((15, 30), refs)
    assert overlaps_any((45, 46), refs)  # inside a reference
    assert overlaps_any((0, 100), refs)  # around both
    assert overlaps_any((19, 21), refs)  # one shared character, 19
    assert not overlaps_any((20, 40), refs)  # touches both ends, shares nothing
    assert not overlaps_any((0, 10), refs)  # ends where the first starts
    assert not overlaps_any((50, 60), refs)  # starts where the second ends


def test_overlaps_any_takes_chunks_and_keeps_documents_apart():
    chunk = Chunk("some text", 5, 14, 2)
    assert overlaps_any(chunk, [(13, 20)])
    assert not overlaps_any(chunk, [(14, 20)])
    assert overlaps_any(("a", 0, 10), [("b", 0, 10), ("a", 9, 12)])
    assert not overlaps_any(("a", 0, 10), [("b", 0, 10)])  # same offsets, another document


def test_no_references_means_no_overlap():
    assert overlaps_any((0, 10), []) is False
    assert overlapping_indices([(0, 10), (10, 20)], []) == []
    assert overlapping_indices([], [(0, 5)]) == []


def test_overlapping_indices_by_hand():
    chunks = [Chunk("a" * 10, 0, 10, 1), Chunk("b" * 10, 10, 20, 1), Chunk("c" * 10, 20, 30, 1)]
    assert overlapping_indices(chunks, [(10, 20)]) == [1]  # touching neighbours are not hits
    assert overlapping_indices(chunks, [(9, 21)]) == [0, 1, 2]
    assert overlapping_indices(chunks, [(25, 26), (0, 1)]) == [0, 2]  # in chunk order, each once
    assert overlapping_indices([("x", 0, 10), ("y", 0, 10)], [("y", 5, 6)]) == [1]


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: overlaps_any((5, 5), [(0, 10)]), ValueError, r"chunk = \(5, 5\).*start < end"),
        (lambda: overlaps_any((0, 5), [(7, 3)]), ValueError, r"references\[0\].*start < end"),
        (lambda: overlaps_any((-1, 5), [(0, 3)]), ValueError, "0 <= start"),
        (lambda: overlaps_any((0, 5.0), [(0, 3)]), TypeError, "ints"),
        (lambda: overlaps_any("0-5", [(0, 3)]), TypeError, "use a Chunk"),
        (lambda: overlaps_any(5, [(0, 3)]), TypeError, "use a Chunk"),
        (lambda: overlaps_any((0, 5), (0, 3)), TypeError, r"references\[0\] = 0"),
        (lambda: overlaps_any((0, 5), "0-3"), TypeError, "references must be"),
        (lambda: overlaps_any((0, 5), [{"start_index": 0, "end_index": 3}]), TypeError, "tuple"),
        (lambda: overlaps_any((0, 5), [("a", 0, 3)]), ValueError, "give every span its document"),
        (lambda: overlaps_any(("a", 0, 5), [(0, 3)]), ValueError, "mix"),
        (lambda: overlapping_indices((0, 5), [(0, 3)]), TypeError, r"chunks\[0\] = 0"),
        (lambda: overlapping_indices(None, [(0, 3)]), TypeError, "chunks must be a list"),
        (lambda: overlapping_indices([(0, 5), (5, 3)], [(0, 3)]), ValueError, r"chunks\[1\]"),
        (lambda: overlapping_indices([(0, 5), ("a", 5, 8)], [(0, 3)]), ValueError, "mix"),
    ],
)
def test_overlap_tests_reject_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()


@settings(max_examples=300)
@given(span, st.lists(span, max_size=4), st.lists(span, max_size=6))
def test_overlap_tests_match_character_sets(chunk, references, chunks):
    """Brute force: a chunk overlaps when its characters and the references' characters intersect."""
    ref_chars = _chars(references)
    assert overlaps_any(chunk, references) == bool(_chars([chunk]) & ref_chars)
    assert overlapping_indices(chunks, references) == [i for i, c in enumerate(chunks) if _chars([c]) & ref_chars]
    plain = [(s, e) for doc, s, e in references if doc == chunk[0]]
    assert overlaps_any(Chunk("", chunk[1], chunk[2], 0), plain) == overlaps_any(chunk, references)


# ---------------------------------------------------------------------------
# VectorIndex
# ---------------------------------------------------------------------------


def test_index_normalizes_and_ranks_by_cosine():
    index = VectorIndex([[2.0, 0.0], [1.0, 1.0], [0.0, 3.0]], ids=["x", "diag", "y"])
    assert index.vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(index.vectors, axis=1), 1.0)
    ids, scores = index.search([10.0, 0.1], k=2)
    assert ids == [["x", "diag"]]
    assert scores.shape == (1, 2) and scores[0, 0] > scores[0, 1]


def test_index_breaks_ties_by_insertion_order():
    index = VectorIndex([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [2.0, 0.0]])
    ids, scores = index.search([[1.0, 0.0]], k=4)
    assert ids == [[0, 2, 3, 1]]
    assert np.allclose(scores[0], [1, 1, 1, 0])


def test_index_k_larger_than_index_returns_everything():
    index = VectorIndex(np.eye(3))
    ids, _ = index.search(np.eye(3), k=10)
    assert [row[0] for row in ids] == [0, 1, 2] and all(len(row) == 3 for row in ids)


@given(st.integers(0, 2**32 - 1))
def test_each_vector_finds_itself_first(seed):
    vectors = np.random.default_rng(seed).normal(size=(20, 8))
    ids, scores = VectorIndex(vectors).search(vectors, k=1)
    assert [row[0] for row in ids] == list(range(20))
    assert np.allclose(scores[:, 0], 1.0, atol=1e-5)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: VectorIndex([[0.0, 0.0], [1.0, 0.0]]), ValueError, "all-zero vector at row 0"),
        (lambda: VectorIndex([1.0, 2.0]), ValueError, "2-D"),
        (lambda: VectorIndex([[np.nan, 1.0]]), ValueError, "NaN"),
        (lambda: VectorIndex([["a", "b"]]), TypeError, "numeric"),
        (lambda: VectorIndex(np.eye(2), ids=["a"]), ValueError, "one id per vector"),
        (lambda: VectorIndex(np.eye(2)).search([1.0, 0.0, 0.0], k=1), ValueError, "same model"),
        (lambda: VectorIndex(np.eye(2)).search([1.0, 0.0], k=0), ValueError, "k >= 1"),
    ],
)
def test_index_rejects_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()


# ---------------------------------------------------------------------------
# The committed benchmark results still describe the current chunkers
# ---------------------------------------------------------------------------

RESULTS = Path(__file__).resolve().parent.parent / "results"


def test_committed_results_match_the_current_chunkers(chroma_eval):
    """Results carry a digest of their chunk spans; a chunker change makes them stale.

    Without the dataset this fails with the data cache's message (which file to put where)."""
    corpora = {cid: load_chroma_corpus(cid) for cid in CHROMA_CORPORA}
    digests = {}
    for path in sorted(RESULTS.glob("*.json")):
        result = json.loads(path.read_text(encoding="utf-8"))
        config = result.get("config", {})
        if not str(config.get("function", "")).startswith(("recursive_chunks", "fixed_size_chunks")):
            continue  # another kind of results file, or a run with another splitter (--splitter langchain)
        name = f"{config['chunker']}_{config['size']}_{config['overlap']}"
        if name not in digests:
            spans = [(cid, c.start, c.end) for cid, text in corpora.items() for c in chroma_eval.chunk(name, text)]
            digests[name] = chroma_eval.spans_digest(spans)
        assert result["chunks"]["spans_sha256"] == digests[name], (
            f"{path.name} was computed with other chunks than {name} gives now; "
            "re-run `python benchmarks/chroma_eval.py` and commit results/"
        )


# ---------------------------------------------------------------------------
# Shared vocabulary: the retrieved-token budget and the metric names
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("counts", "budget", "expected"), [
    ([100, 100, 100], 250, 2),  # the third would pass the budget
    ([100, 150, 100], 250, 2),  # exactly at the budget still fits
    ([300, 10], 250, 1),  # at least one, even if it alone passes the budget
    ([10, 20], 1000, 2),  # everything fits
    ([0, 0, 5], 1, 2),  # the third would pass 1 token
])
def test_budget_cutoff(counts, budget, expected):
    assert budget_cutoff(counts, budget) == expected


def test_budget_cutoff_stops_at_the_first_chunk_that_would_pass():
    # a later small chunk does not jump the queue: rank order is kept
    assert budget_cutoff([200, 100, 10], 250) == 1


@pytest.mark.parametrize(("counts", "budget", "error", "message"), [
    ([], 10, ValueError, "nothing was retrieved"),
    ([10], 0, ValueError, "budget >= 1"),
    ([10], 2.5, TypeError, "budget must be an int"),
    ([10, -1], 100, ValueError, r"token_counts\[1\]"),
    ("10", 100, TypeError, "sequence of ints"),
])
def test_budget_cutoff_errors(counts, budget, error, message):
    with pytest.raises(error, match=message):
        budget_cutoff(counts, budget)


def test_metric_names():
    assert METRIC_NAMES == ("recall_at_k", "mrr", "ndcg_at_10", "span_recall", "span_precision", "iou",
                            "answer_recall_at_k")


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 30), st.integers(1, 12), st.integers(1, 5), st.integers(0, 2**31 - 1))
def test_rank_is_search_without_a_cut_off_in_any_batch_size(n, n_queries, batch_size, seed):
    rng = np.random.default_rng(seed)
    vectors = rng.integers(-2, 3, size=(n, 3)).astype(float)  # small integers: many ties
    vectors[np.abs(vectors).sum(axis=1) == 0] = [1.0, 0.0, 0.0]
    queries = rng.normal(size=(n_queries, 3))
    index = VectorIndex(vectors)
    ids, scores = index.search(queries, k=n)
    rankings = list(index.rank(queries, batch_size=batch_size))
    assert len(rankings) == n_queries
    for ranking, expected, expected_scores in zip(rankings, ids, scores):
        assert sorted(ranking.tolist()) == sorted(expected), "every chunk, once"
        # ties: a matrix product over another batch shape may round a tied score 1 ulp apart, so two
        # chunks with equal scores may swap; any other difference in order is a bug
        score_of = dict(zip(expected, expected_scores))
        assert all(a == b or abs(score_of[a] - score_of[b]) < 1e-9 for a, b in zip(ranking.tolist(), expected))


def test_rank_checks_its_queries_before_it_is_iterated():
    index = VectorIndex(np.eye(3))
    with pytest.raises(ValueError, match="dimension 2"):
        index.rank([[1.0, 0.0]])
    with pytest.raises(ValueError, match="batch_size"):
        index.rank(np.eye(3), batch_size=0)


def test_reference_grades_share_the_reference_characters():
    chunks = [("a", 0, 10), ("a", 10, 20), ("b", 0, 10), ("a", 20, 30)]
    # the reference: a[5:25] (20 characters, given as two overlapping spans) and b[0:5] (5 characters)
    grades = reference_grades([("a", 5, 15), ("a", 12, 25), ("b", 0, 5)], chunks)
    assert grades == pytest.approx({0: 5 / 25, 1: 10 / 25, 3: 5 / 25, 2: 5 / 25})
    assert sum(grades.values()) == pytest.approx(1.0)
    assert ReferenceGrades(chunks)([("c", 0, 5)]) == {}, "a document with no chunk grades nothing"
    assert reference_grades([("a", 30, 40)], chunks) == {}, "touching end to end is no overlap"
