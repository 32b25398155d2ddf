"""Tests for course_lib.late_interaction: MaxSim, the token-vector index and the reranker."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import course_lib  # noqa: F401  (quiet, offline settings first)
from course_lib.late_interaction import TokenIndex, chunk_token_index, maxsim, query_token_vectors, rerank

FLOATS = st.floats(-4, 4, allow_nan=False, width=32).filter(lambda x: x == 0 or abs(x) > 1e-3)


def brute_maxsim(q, d):
    """The definition, one loop per token: sum over query tokens of the best cosine with a document token."""
    total = 0.0
    for qi in q:
        total += max(float(np.dot(qi, dj) / (np.linalg.norm(qi) * np.linalg.norm(dj))) for dj in d)
    return total


def nonzero_rows(m):
    return bool((np.abs(m).sum(axis=1) > 0).all())


@st.composite
def token_matrices(draw, dim=None):
    dim = dim or draw(st.integers(1, 6))
    rows = draw(st.integers(1, 7))
    return draw(arrays(np.float64, (rows, dim), elements=FLOATS).filter(nonzero_rows))


@st.composite
def index_and_query(draw):
    dim = draw(st.integers(1, 6))
    chunks = draw(st.lists(token_matrices(dim), min_size=1, max_size=6))
    query = draw(token_matrices(dim))
    spans = [("doc", 10 * i, 10 * i + 5) for i in range(len(chunks))]
    units = [c / np.linalg.norm(c, axis=1, keepdims=True) for c in chunks]
    bounds = np.concatenate([[0], np.cumsum([len(c) for c in chunks])])
    return TokenIndex(spans, np.concatenate(units).astype(np.float32), bounds), chunks, query


@given(token_matrices(4), token_matrices(4))
def test_maxsim_matches_brute_force(q, d):
    assert maxsim(q, d) == pytest.approx(brute_maxsim(q, d), abs=1e-5)  # float32, as the index stores


@given(token_matrices(3), st.floats(0.1, 10))
def test_maxsim_ignores_row_lengths(q, scale):
    assert maxsim(q * scale, q) == pytest.approx(len(q), abs=1e-5)  # each query token finds itself


@settings(max_examples=60)
@given(index_and_query())
def test_index_scores_are_maxsim_of_each_chunk(case):
    index, chunks, query = case
    expected = [brute_maxsim(query, c) for c in chunks]
    np.testing.assert_allclose(index.scores(query), expected, atol=1e-4)
    picked = list(range(len(chunks)))[::-1][: max(1, len(chunks) // 2)]
    np.testing.assert_allclose(index.scores(query, picked), [expected[i] for i in picked], atol=1e-4)
    ranked = index.search(query)
    assert sorted(ranked) == sorted(index.spans)
    got = [expected[index.spans.index(s)] for s in ranked]
    assert all(a >= b - 1e-4 for a, b in itertools.pairwise(got)), "best first"


@settings(max_examples=60)
@given(index_and_query(), st.integers(1, 8), st.randoms(use_true_random=False))
def test_rerank_reorders_only_the_head(case, depth, rnd):
    index, chunks, query = case
    ranking = list(index.spans)
    rnd.shuffle(ranking)
    out = rerank(index, query, ranking, depth=depth)
    assert out[depth:] == ranking[depth:]
    assert sorted(out[:depth]) == sorted(ranking[:depth])
    scores = {s: brute_maxsim(query, chunks[index.spans.index(s)]) for s in ranking}
    head = [scores[s] for s in out[:depth]]
    assert all(a >= b - 1e-4 for a, b in itertools.pairwise(head))


def test_rerank_returns_the_given_spans_exactly():
    index = TokenIndex([("a", 0, 4), ("b", 2, 9)], np.array([[1.0, 0.0], [0.0, 1.0]], np.float32), np.array([0, 1, 2]))
    assert rerank(index, [[0.0, 1.0]], [("a", 0, 4), ("b", 2, 9)]) == [("b", 2, 9), ("a", 0, 4)]
    assert rerank(index, [[0.0, 1.0]], [("a", 0, 4), ("b", 2, 9)], depth=1) == [("a", 0, 4), ("b", 2, 9)]
    assert index.search([[1.0, 0.1]], k=1) == [("a", 0, 4)]


def test_bad_input_is_named():
    index = TokenIndex([("a", 0, 4)], np.array([[1.0, 0.0]], np.float32), np.array([0, 1]))
    with pytest.raises(ValueError, match="not a chunk of the index"):
        rerank(index, [[1.0, 0.0]], [("a", 0, 5)])
    with pytest.raises(ValueError, match="depth"):
        rerank(index, [[1.0, 0.0]], [("a", 0, 4)], depth=0)
    with pytest.raises(ValueError, match="dimension"):
        index.scores([[1.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match=r"numbers 0\.\.0"):
        index.scores([[1.0, 0.0]], [1])
    with pytest.raises(ValueError, match="zero vector"):
        maxsim([[0.0, 0.0]], [[1.0, 0.0]])
    with pytest.raises(ValueError, match="bounds"):
        TokenIndex([("a", 0, 4)], np.array([[1.0, 0.0]], np.float32), np.array([0, 2]))
    with pytest.raises(ValueError, match="twice"):
        TokenIndex([("a", 0, 4)] * 2, np.eye(2, dtype=np.float32), np.array([0, 1, 2]))


DOC = ("The XR-12 pump circulates coolant through the press line. It must be replaced after 10,000 operating "
       "hours. The K2 printer prints labels for every pallet.")


@pytest.fixture(scope="module")
def model():
    import torch

    from course_lib.models import load_embedding_model

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield load_embedding_model(max_seq_length=512)
    torch.set_num_threads(threads)


def test_real_model_token_vectors(model):
    cut1, cut2 = DOC.index("It must"), DOC.index("The K2")
    spans = [("m", 0, cut1 - 1), ("m", cut1, cut2 - 1), ("m", cut2, len(DOC))]
    alone = chunk_token_index(model, {"m": DOC}, spans, "alone")
    late = chunk_token_index(model, {"m": DOC}, spans, "late")
    counts = [len(model.tokenizer(DOC[s:e], add_special_tokens=False)["input_ids"]) for _, s, e in spans]
    assert list(alone.tokens_per_chunk()) == counts, "every content token of the chunk, no [CLS]/[SEP]"
    assert list(late.tokens_per_chunk()) == counts, "the same tokens, read from the document's pass"
    assert alone.spans == late.spans == spans
    assert alone.nbytes == sum(counts) * 384 * 4
    np.testing.assert_allclose(np.linalg.norm(late.vectors, axis=1), 1, atol=1e-5)
    assert not np.allclose(alone.vectors, late.vectors, atol=1e-3), "context changes the token vectors"
    (q,) = query_token_vectors(model, ["When should the XR-12 pump be replaced?"])
    assert len(q) == len(model.tokenizer("When should the XR-12 pump be replaced?", add_special_tokens=False)
                         ["input_ids"])
    for index in (alone, late):
        assert index.search(q)[-1] == spans[2], "the printer chunk says nothing about the pump"


def test_whole_document_chunk_gives_the_same_vectors_both_ways(model):
    spans = [("m", 0, len(DOC))]
    alone = chunk_token_index(model, {"m": DOC}, spans, "alone")
    late = chunk_token_index(model, {"m": DOC}, spans, "late")
    np.testing.assert_allclose(alone.vectors, late.vectors, atol=1e-4)


def test_real_model_bad_input(model):
    with pytest.raises(ValueError, match="no token"):
        chunk_token_index(model, {"m": "a   b"}, [("m", 1, 3)], "alone")
    with pytest.raises(ValueError, match="how="):
        chunk_token_index(model, {"m": DOC}, [("m", 0, 5)], "pooled")
    with pytest.raises(ValueError, match="not in documents"):
        chunk_token_index(model, {"m": DOC}, [("x", 0, 5)])
    with pytest.raises(ValueError, match="positions"):
        chunk_token_index(model, {"m": "word " * 600}, [("m", 0, 3000)], "alone")
    with pytest.raises(TypeError, match="wrap"):
        query_token_vectors(model, "a query")
