"""Tests for course_lib.late: late chunking with offset-mapped spans and macro windows."""

import itertools
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import course_lib  # noqa: F401  (quiet, offline settings first)
from course_lib.chunking import Chunk
from course_lib.late import (
    chunk_token_spans,
    late_chunk_embeddings,
    macro_windows,
    naive_chunk_embeddings,
    token_vectors,
    tokenize_document,
)

XR12 = ["The XR-12 pump circulates coolant through the press line.",
        "It must be replaced after 10,000 operating hours."]
XR12_DOC = " ".join(XR12)
XR12_SPANS = [(0, len(XR12[0])), (len(XR12[0]) + 1, len(XR12_DOC))]
XR12_QUERY = "When should the XR-12 pump be replaced?"
# words that all-MiniLM-L6-v2's tokenizer keeps as one token each (checked in `words_doc`)
ONE_TOKEN_WORDS = ("pump valve the operator checks water line press cooling every hour day it must be "
                   "replaced filter motor oil level seal housing after before during shift crew manual alarm").split()


@pytest.fixture(scope="module")
def model():
    import torch

    from course_lib.models import load_embedding_model

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # on a busy 2-core machine one thread is several times faster
    yield load_embedding_model(max_seq_length=512)
    torch.set_num_threads(threads)


def words_doc(model, n_tokens: int, seed: int = 0) -> str:
    """A text of exactly `n_tokens` content tokens, one word per token."""
    rng = random.Random(seed)
    text = " ".join(rng.choice(ONE_TOKEN_WORDS) for _ in range(n_tokens))
    assert len(tokenize_document(model, text).ids) == n_tokens
    return text


def word_spans(text: str, every: int) -> list[tuple[int, int]]:
    """Spans of `every` consecutive words each (the last one may be shorter)."""
    starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == " "]
    ends = [i for i, ch in enumerate(text) if ch == " "] + [len(text)]
    return [(starts[i], ends[min(i + every, len(starts)) - 1]) for i in range(0, len(starts), every)]


def token_embeddings(model, text: str) -> np.ndarray:
    """One model.encode pass: a vector per token, [CLS] and [SEP] included (truncated at max_seq_length)."""
    return model.encode(text, output_value="token_embeddings").cpu().numpy()


def one_pass_reference(model, text: str, spans) -> np.ndarray:
    """Late chunking the simple way: one model.encode pass, specials dropped, offsets matched by hand."""
    enc = model.tokenizer(text, return_offsets_mapping=True, verbose=False)
    tokens = token_embeddings(model, text)
    assert len(tokens) == len(enc["input_ids"]), "the reference needs a text that fits the window"
    out = []
    for s, e in spans:
        rows = [i for i, (a, b) in enumerate(enc["offset_mapping"]) if b > a and a < e and b > s]
        out.append(tokens[rows].mean(axis=0))
    out = np.stack(out)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


# --- the published XR-12 demo ([Late glossary]) ------------------------------------------------


def test_xr12_naive_and_late_scores_match_the_glossary(model):
    query = model.encode(XR12_QUERY, normalize_embeddings=True)
    naive = naive_chunk_embeddings(model, XR12)[1] @ query
    late = late_chunk_embeddings(model, XR12_DOC, XR12_SPANS)[1] @ query
    assert round(float(naive), 3) == 0.382
    assert round(float(late), 2) == 0.62
    assert late == pytest.approx(0.61953026, abs=1e-5)  # the value measured in NOTES.md


def test_xr12_late_equals_the_glossary_slicing(model):
    # the glossary pools tokens[len(tokenizer(chunk1)) - 1 : -1] of one encode pass
    tokens = token_embeddings(model, XR12_DOC)
    start = len(model.tokenizer(XR12[0])["input_ids"]) - 1
    ref = tokens[start:-1].mean(axis=0)
    ref /= np.linalg.norm(ref)
    np.testing.assert_allclose(late_chunk_embeddings(model, XR12_DOC, XR12_SPANS)[1], ref, atol=1e-5)
    assert chunk_token_spans(model, XR12_DOC, XR12_SPANS)[1] == (start, len(tokens) - 1)


# --- character spans to token spans ------------------------------------------------------------


def span_tokens(model, text, span):
    a, b = chunk_token_spans(model, text, [span])[0]
    return model.tokenizer.convert_ids_to_tokens(model.tokenizer(text)["input_ids"][a:b])


def test_token_spans_on_accented_spanish(model):
    text = "El pingüino de Córdoba está aquí. Su nido mide dos metros."
    assert span_tokens(model, text, (15, 22)) == ["cordoba"]  # "Córdoba": the tokenizer strips accents
    assert span_tokens(model, text, (23, 27)) == ["est", "##a"]  # "está"
    assert span_tokens(model, text, (26, 27)) == ["##a"]  # "á" alone
    assert span_tokens(model, text, (3, 11)) == ["ping", "##uin", "##o"]  # "pingüino"
    sentences = [(0, 33), (34, len(text))]
    assert span_tokens(model, text, sentences[1])[0] == "su"
    a, b = chunk_token_spans(model, text, sentences)
    assert a[1] == b[0], "consecutive chunks get consecutive tokens"
    assert a[0] == 1 and b[1] == len(model.tokenizer(text)["input_ids"]) - 1, "[CLS] and [SEP] are in no chunk"


def test_token_spans_on_cjk(model):
    text = "東京は日本の首都です。大阪は港町です。"
    i = text.index("大阪")
    assert span_tokens(model, text, (0, 2)) == ["東", "京"]
    assert span_tokens(model, text, (i, i + 2)) == ["大", "[UNK]"]  # 阪 is not in the vocabulary: still mapped
    assert span_tokens(model, text, (0, i))[-1] == "。"


def test_a_token_straddling_a_boundary_belongs_to_both_chunks(model):
    text = "Replacement intervals vary."
    cut = 4  # inside "replacement", which is one token
    (_a0, b0), (a1, _b1) = chunk_token_spans(model, text, [(0, cut), (cut, len(text))])
    assert b0 == 2 and a1 == 1, "the shared token is counted in both chunks"


# --- documents of 1, 510, 511, 512, 513 and 5,000 tokens -----------------------------------------


@pytest.mark.parametrize("n_tokens", [1, 100, 510])
def test_documents_that_fit_match_one_pass(model, n_tokens):
    text = words_doc(model, n_tokens)
    spans = word_spans(text, 37)
    got = late_chunk_embeddings(model, text, spans, window=512)
    np.testing.assert_allclose(got, one_pass_reference(model, text, spans), atol=2e-5)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("n_tokens", [511, 512, 513, 5000])
def test_documents_longer_than_the_window_are_not_truncated(model, n_tokens):
    text = words_doc(model, n_tokens, seed=n_tokens)
    spans = word_spans(text, 50)
    got = late_chunk_embeddings(model, text, spans, window=512, overlap=64)
    assert got.shape == (len(spans), 384) and np.isfinite(got).all()
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # the last chunk, past any truncation point, equals late chunking of the last 510 words alone
    tail_start = word_spans(text, 1)[n_tokens - 510][0]
    s, e = spans[-1]
    tail = one_pass_reference(model, text[tail_start:], [(s - tail_start, e - tail_start)])
    np.testing.assert_allclose(got[-1], tail[0], atol=2e-5)


def test_each_token_vector_comes_from_a_window_run_on_its_own(model):
    text = words_doc(model, 600, seed=7)
    doc = tokenize_document(model, text)
    vectors = token_vectors(model, doc, window=130, overlap=16)
    for w in macro_windows(600, 128, 16):
        sub = text[doc.offsets[w.start][0]:doc.offsets[w.end - 1][1]]  # one word per token: same tokens
        alone = token_embeddings(model, sub)[1:-1]
        np.testing.assert_allclose(vectors[w.keep_start:w.keep_end],
                                   alone[w.keep_start - w.start:w.keep_end - w.start], atol=2e-5)


def test_a_chunk_across_two_windows_is_pooled_from_its_own_tokens(model):
    text = words_doc(model, 300, seed=3)
    doc = tokenize_document(model, text)
    first = macro_windows(300, 126, 20)[0]
    a, b = first.keep_end - 10, first.keep_end + 10  # tokens kept from two windows
    span = (doc.offsets[a][0], doc.offsets[b - 1][1])
    got = late_chunk_embeddings(model, text, [span], window=128, overlap=20)[0]
    mean = token_vectors(model, doc, 128, 20)[a:b].mean(axis=0)
    np.testing.assert_allclose(got, mean / np.linalg.norm(mean), atol=1e-6)


def test_the_window_path_equals_one_pass_when_the_document_fits(model):
    text = words_doc(model, 200, seed=1)
    spans = word_spans(text, 25)
    exact_fit = late_chunk_embeddings(model, text, spans, window=202)
    np.testing.assert_allclose(exact_fit, late_chunk_embeddings(model, text, spans, window=512), atol=1e-5)
    smaller = late_chunk_embeddings(model, text, spans, window=101, overlap=10)
    assert not np.allclose(smaller, exact_fit, atol=1e-3), "a smaller window really changes the context"


def test_context_reaches_a_chunk_only_within_its_window(model):
    text = words_doc(model, 400, seed=5)
    changed = text[:-40] + " alarm" * 8  # rewrite the last words
    first = [(0, 60)]
    one = late_chunk_embeddings(model, text, first, window=512)
    assert not np.allclose(one, late_chunk_embeddings(model, changed, first, window=512), atol=1e-4)
    far = late_chunk_embeddings(model, text, first, window=128, overlap=16)
    np.testing.assert_allclose(far, late_chunk_embeddings(model, changed, first, window=128, overlap=16), atol=1e-6)


def test_defaults_window_max_seq_length_and_overlap_an_eighth(model):
    text = words_doc(model, 300, seed=2)
    spans = word_spans(text, 40)
    np.testing.assert_allclose(late_chunk_embeddings(model, text, spans),
                               late_chunk_embeddings(model, text, spans, window=512), atol=1e-6)
    np.testing.assert_allclose(late_chunk_embeddings(model, text, spans, window=66),  # 64 content tokens
                               late_chunk_embeddings(model, text, spans, window=66, overlap=8), atol=1e-6)


def test_chunks_may_be_chunk_objects_and_empty(model):
    spans = XR12_SPANS
    chunks = [Chunk(XR12_DOC[s:e], s, e, 0) for s, e in spans]
    np.testing.assert_allclose(late_chunk_embeddings(model, XR12_DOC, chunks),
                               late_chunk_embeddings(model, XR12_DOC, spans))
    assert late_chunk_embeddings(model, XR12_DOC, []).shape == (0, 384)


# --- macro windows ------------------------------------------------------------------------------


@given(n=st.integers(0, 3000), capacity=st.integers(1, 600), data=st.data())
def test_macro_windows_tile_the_document(n, capacity, data):
    overlap = data.draw(st.integers(0, (capacity - 1) // 2))
    windows = macro_windows(n, capacity, overlap)
    assert windows[0].keep_start == 0 and windows[-1].keep_end == n
    for prev, nxt in itertools.pairwise(windows):
        assert prev.keep_end == nxt.keep_start
    for w in windows:
        assert 0 <= w.start <= w.keep_start < w.keep_end <= w.end <= n or n == 0
        assert w.end - w.start == min(capacity, n)
        assert w.start == 0 or w.keep_start - w.start >= overlap
        assert w.end == n or w.end - w.keep_end >= overlap


def test_macro_windows_examples():
    assert [(w.start, w.end, w.keep_start, w.keep_end) for w in macro_windows(10, 10, 2)] == [(0, 10, 0, 10)]
    assert [(w.start, w.end, w.keep_start, w.keep_end) for w in macro_windows(13, 10, 2)] == [
        (0, 10, 0, 8), (3, 13, 8, 13)]
    # the first and the last window keep 446 tokens each, the ones between 382
    assert len(macro_windows(5000, 510, 64)) == 2 + -(-(5000 - 2 * 446) // 382)
    assert len(macro_windows(5000, 510, 128)) == 2 + -(-(5000 - 2 * 382) // 254)


@pytest.mark.parametrize("overlap", [-1, 5, 7])
def test_macro_windows_reject_an_overlap_that_leaves_nothing(overlap):
    with pytest.raises(ValueError, match="overlap"):
        macro_windows(100, 10, overlap)


# --- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("span", [(0, 0), (5, 3), (-1, 4), (0, len(XR12_DOC) + 1)])
def test_spans_outside_the_text_or_empty_raise(model, span):
    with pytest.raises(ValueError, match="chunks\\[0\\]"):
        late_chunk_embeddings(model, XR12_DOC, [span])


def test_a_span_that_covers_no_token_raises(model):
    text = "First part.    Second part."
    with pytest.raises(ValueError, match="covers no token"):
        late_chunk_embeddings(model, text, [(0, 11), (11, 15)])


def test_bad_window_and_overlap_raise(model):
    with pytest.raises(ValueError, match="window=600"):
        late_chunk_embeddings(model, XR12_DOC, XR12_SPANS, window=600)
    with pytest.raises(ValueError, match="window=2"):
        late_chunk_embeddings(model, XR12_DOC, XR12_SPANS, window=2)
    with pytest.raises(ValueError, match="overlap=200"):
        late_chunk_embeddings(model, XR12_DOC, XR12_SPANS, window=256, overlap=200)
    with pytest.raises(TypeError, match="window"):
        late_chunk_embeddings(model, XR12_DOC, XR12_SPANS, window=256.0)
    with pytest.raises(TypeError, match="text"):
        late_chunk_embeddings(model, XR12_DOC.encode(), XR12_SPANS)


def test_a_cls_pooling_model_is_refused(model):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Pooling

    cls_model = SentenceTransformer(modules=[model[0], Pooling(384, pooling_mode="cls")], device="cpu")
    with pytest.raises(ValueError, match=r"'cls', not 'mean'.*no \[CLS\] of its own"):
        late_chunk_embeddings(cls_model, XR12_DOC, XR12_SPANS)


def test_naive_embeddings_are_model_encode_and_refuse_truncation(model):
    got = naive_chunk_embeddings(model, [Chunk(XR12[0], 0, len(XR12[0]), 0), XR12[1]])
    np.testing.assert_allclose(got, model.encode(XR12, normalize_embeddings=True), atol=1e-6)
    with pytest.raises(ValueError, match="max_seq_length=512"):
        naive_chunk_embeddings(model, [words_doc(model, 520)])
    with pytest.raises(ValueError, match="empty"):
        naive_chunk_embeddings(model, ["fine", "  "])
    with pytest.raises(TypeError, match="wrap"):
        naive_chunk_embeddings(model, "a single string")


# --- the course data for notebook 06 ------------------------------------------------------------


def test_late_collection_answers_are_exact_spans():
    import json
    from pathlib import Path

    data = json.loads((Path(__file__).parent.parent / "data" / "late_collection.json").read_text(encoding="utf-8"))
    docs = {d["id"]: d for d in data["documents"]}
    assert len(docs) == len(data["documents"]), "document ids are unique"
    assert {d["kind"] for d in docs.values()} == {"manual", "article", "glossary"}
    for d in docs.values():
        words = len(d["text"].split())
        assert 250 <= words <= 500 or d["kind"] == "glossary", (d["id"], words)
    ids = [q["id"] for q in data["questions"]]
    assert len(set(ids)) == len(ids) >= 30
    for q in data["questions"]:
        text = docs[q["doc_id"]]["text"]
        assert text[q["start"]:q["end"]] == q["answer"] and text.count(q["answer"]) == 1, q["id"]
