"""Semantic chunking keeps the contract of every chunker; its committed benchmark results stay fresh."""

from __future__ import annotations

import json
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.chunking.semantic import breakpoint_distances, embed_texts, semantic_chunks
from course_lib.strategies import chunk_with, result_stem
from course_lib.tokens import count_tokens

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
STRATEGY_FOLDERS = ("three_corpora", "five_corpora")  # benchmarks/chroma_eval.py --strategies --out results/<folder>


class BagOfWords:
    """A small, fast, deterministic embedding stand-in: hashed word counts (plus a constant, never zero)."""

    dim = 64

    def __init__(self) -> None:
        self.calls: list[int] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls.append(len(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in regex.findall(r"\w+", text.lower()):
                out[row, zlib.crc32(word.encode()) % (self.dim - 1)] += 1.0
            out[row, self.dim - 1] = 0.05
        return out


PUMP = "The pump moves cooling water. Its rubber seal wears out. Replace the seal every year. "
CATS = "Cats sleep most of each day. Kittens love fresh fish. Mice fear hungry cats. "
TOPIC_SHIFT = PUMP * 3 + CATS * 3


def grapheme_boundaries(text: str) -> set[int]:
    return {m.start() for m in regex.finditer(r"\X", text)} | {len(text)}


def check_contract(text: str, chunks, size: int, tokenizer) -> None:
    covered = np.zeros(len(text), dtype=bool)
    boundaries = grapheme_boundaries(text)
    previous_end = 0
    for c in chunks:
        assert text[c.start:c.end] == c.text, "offsets must be exact"
        clusters = regex.findall(r"\X", c.text)
        assert not clusters[0].isspace() and not clusters[-1].isspace(), "no empty or padded chunk"
        assert c.n_tokens == count_tokens(c.text, tokenizer) <= size, "n_tokens is recounted and at most size"
        assert c.start >= previous_end, "chunks come in order and do not overlap"
        assert c.start in boundaries and c.end in boundaries, "a cut fell inside a grapheme cluster"
        covered[c.start:c.end] = True
        previous_end = c.end
    lost = [i for i, ch in enumerate(text) if not covered[i] and not ch.isspace()]
    assert not lost, f"characters outside every chunk: {[text[i] for i in lost[:5]]}"


WORDS = st.sampled_from(["pump", "seal", "cat", "fish", "agua", "niño", "cafe\u0301", "👩\u200d💻", "🇪🇸",
                         "\u1100\u1161\u11a8", "東京", "שלום", "Dr.", "3.5", "x" * 30])
SENTENCE = st.builds(lambda ws, end: " ".join(ws) + end, st.lists(WORDS, min_size=1, max_size=12),
                     st.sampled_from([".", "!", "?", "", ".\u0301"]))
TEXTS = st.builds(lambda ss, seps: "".join(s + sep for s, sep in zip(ss, seps)),
                  st.lists(SENTENCE, min_size=0, max_size=12),
                  st.lists(st.sampled_from([" ", "\n", "\n\n", "\r\n", " \u0301"]), min_size=12, max_size=12))


@settings(max_examples=60, deadline=None)
@given(text=TEXTS, size=st.integers(1, 80), method=st.sampled_from(["breakpoint", "cluster"]),
       tokenizer=st.sampled_from(["cl100k_base", "chars"]), percentile=st.sampled_from([0, 50, 95, 100]))
def test_contract_holds_for_both_methods(text, size, method, tokenizer, percentile):
    try:
        chunks = semantic_chunks(text, size, method=method, model=BagOfWords(), tokenizer=tokenizer,
                                 percentile=percentile, piece_size=10)
    except ValueError as error:
        # only a single grapheme cluster that alone needs more than `size` tokens may stop the chunker
        clusters = regex.findall(r"\X", text)
        assert max(count_tokens(g, tokenizer) for g in clusters) > size, f"unexpected error: {error}"
        return
    check_contract(text, chunks, size, tokenizer)


def test_breakpoint_cuts_at_the_topic_shift():
    chunks = semantic_chunks(TOPIC_SHIFT, 200, model=BagOfWords(), percentile=90, buffer=2)
    shift = len(PUMP * 3)
    assert any(c.end == shift - 1 for c in chunks), "the cut must fall where the pump text ends"
    assert all(c.end <= shift or c.start >= shift for c in chunks), "no chunk mixes the two topics"


def test_breakpoint_distances_peak_at_the_topic_shift():
    units, distances = breakpoint_distances(TOPIC_SHIFT, 200, model=BagOfWords(), buffer=2)
    assert len(distances) == len(units) - 1 == 17
    peak = int(np.argmax(distances))
    assert units[peak][1] == len(PUMP * 3) - 1, "the largest distance lies between the two topics"


def test_sentence_windows_are_embedded_once_in_one_batch():
    model = BagOfWords()
    semantic_chunks(TOPIC_SHIFT, 200, model=model)
    assert model.calls == [18], "one encode call with one window per sentence"


def test_size_is_a_hard_maximum_even_inside_one_topic():
    chunks = semantic_chunks(PUMP * 6, 20, model=BagOfWords(), percentile=100)  # no semantic cut at all
    assert len(chunks) > 1 and all(c.n_tokens <= 20 for c in chunks)
    assert all(c.metadata["split_for_size"] for c in chunks)


def test_cluster_groups_similar_pieces_together():
    chunks = semantic_chunks(TOPIC_SHIFT, 120, method="cluster", model=BagOfWords(), piece_size=8)
    shift = len(PUMP * 3)
    assert all(c.end <= shift or c.start >= shift for c in chunks), "no cluster mixes the two topics"
    assert max(c.metadata["pieces"] for c in chunks) > 1, "similar neighbouring pieces are grouped"


def test_empty_and_blank_texts_give_no_chunks():
    assert semantic_chunks("", 10, model=BagOfWords()) == []
    assert semantic_chunks(" \n\t ", 10, method="cluster", model=BagOfWords()) == []


def test_one_sentence_is_one_chunk():
    chunks = semantic_chunks("Just one sentence here.", 50, model=BagOfWords())
    assert [(c.start, c.end) for c in chunks] == [(0, 23)]


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"size": 0}, ValueError, "size >= 1"),
        ({"size": 2.5}, TypeError, "size must be an int"),
        ({"method": "magic"}, ValueError, "breakpoint"),
        ({"percentile": 120}, ValueError, "0..100"),
        ({"buffer": -1}, ValueError, "buffer"),
        ({"method": "cluster", "piece_size": 0}, ValueError, "piece_size"),
        ({"model": object()}, TypeError, "encode"),
        ({"tokenizer": "nope"}, ValueError, "tokenizer"),
        ({"language": "xx"}, ValueError, "language"),
    ],
)
def test_bad_arguments_are_explained(kwargs, error, words):
    arguments = {"size": 50, "model": BagOfWords(), **kwargs}
    with pytest.raises(error, match=words):
        semantic_chunks(TOPIC_SHIFT, **arguments)


def test_text_must_be_a_string():
    with pytest.raises(TypeError, match="text must be a str"):
        semantic_chunks(b"bytes", 10, model=BagOfWords())


def test_registered_as_a_strategy():
    chunks = chunk_with("semantic:120?method=cluster&piece_size=8", TOPIC_SHIFT, model=BagOfWords())
    assert chunks == semantic_chunks(TOPIC_SHIFT, 120, method="cluster", piece_size=8, model=BagOfWords())
    stem = result_stem("semantic:256?method=breakpoint&percentile=95")
    assert stem == "semantic_256__method-breakpoint__percentile-95"
    with pytest.raises(ValueError, match="never overlap"):
        chunk_with("semantic:120:20", TOPIC_SHIFT, model=BagOfWords())
    with pytest.raises(ValueError, match="method"):
        chunk_with("semantic:120?method=magic", TOPIC_SHIFT, model=BagOfWords())


def test_importing_loads_no_model():
    code = "import sys, course_lib.chunking.semantic, course_lib.strategies; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False", "the embedding model (and torch) must load only when semantic_chunks needs it"


# ---------------------------------------------------------------------------
# With the real model
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm():
    from course_lib.models import load_embedding_model

    return load_embedding_model(max_seq_length=512)


def test_real_model_cuts_the_topic_shift(minilm):
    chunks = semantic_chunks(TOPIC_SHIFT, 200, model=minilm, percentile=90, buffer=2)
    check_contract(TOPIC_SHIFT, chunks, 200, "cl100k_base")
    shift = len(PUMP * 3)
    assert any(c.end == shift - 1 for c in chunks), "MiniLM finds the shift from pumps to cats"


def test_embed_texts_pools_long_texts_instead_of_cutting_them(minilm):
    from course_lib.late import late_chunk_embeddings

    long = CATS * 40  # about 560 WordPiece tokens, over the 512-token window
    assert len(minilm.tokenizer(long)["input_ids"]) > minilm.max_seq_length
    vectors = embed_texts(minilm, ["A short one.", long])
    assert vectors.shape == (2, 384)
    np.testing.assert_allclose(vectors[1], late_chunk_embeddings(minilm, long, [(0, len(long))])[0], atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


# ---------------------------------------------------------------------------
# The committed strategy results still describe today's chunkers
# ---------------------------------------------------------------------------


def strategy_results() -> list[tuple[Path, dict]]:
    found = []
    for folder in STRATEGY_FOLDERS:
        for path in sorted((RESULTS / folder).glob("*.json")):
            found.append((path, json.loads(path.read_text(encoding="utf-8"))))
    return found



def test_strategy_results_match_the_current_chunkers(chroma_eval):
    """Token chunkers: the sha256 of every chunk span. Without the dataset this fails with the cache's message."""
    from course_lib.datasets import load_chroma_corpus

    checked = 0
    for path, result in strategy_results():
        if result["config"]["chunker"] == "semantic":
            continue
        corpora = {cid: load_chroma_corpus(cid) for cid in result["dataset"]["corpora"]}
        spans = [(cid, c.start, c.end) for cid, text in corpora.items()
                 for c in chunk_with(result["config"]["strategy"], text)]
        assert chroma_eval.spans_digest(spans) == result["chunks"]["spans_sha256"], (
            f"{path.name} was computed with other chunks than {result['config']['strategy']} gives now; "
            "re-run `python benchmarks/chroma_eval.py --strategies` and commit results/")
        assert result_stem(result["config"]["strategy"]) == path.stem
        checked += 1
    assert checked, f"no strategy results found in {RESULTS}/{STRATEGY_FOLDERS}"


def test_semantic_boundaries_are_recomputed_on_the_small_corpus(minilm, chroma_eval):
    """Semantic runs store their boundaries on one small corpus; one run per method is recomputed."""
    from course_lib.datasets import load_chroma_corpus

    text = load_chroma_corpus(chroma_eval.BOUNDARY_CORPUS)
    seen = set()
    by_strategy: dict[str, list] = {}
    for path, result in strategy_results():  # runs of one strategy on different corpus sets chunk chatlogs alike
        if result["config"]["chunker"] == "semantic":
            stored = result["boundaries"][chroma_eval.BOUNDARY_CORPUS]
            assert by_strategy.setdefault(result["config"]["strategy"], stored) == stored, path.name
    for path, result in strategy_results():
        options = result["config"]["options"]
        if result["config"]["chunker"] != "semantic" or options.get("method") in seen:
            continue
        seen.add(options.get("method"))
        stored = result["boundaries"][chroma_eval.BOUNDARY_CORPUS]
        now = [[c.start, c.end] for c in chunk_with(result["config"]["strategy"], text, model=minilm)]
        assert now == stored, (f"{path.name}: semantic chunks of {chroma_eval.BOUNDARY_CORPUS} changed; re-run "
                               "`python benchmarks/chroma_eval.py --strategies` and commit results/")
    assert seen == {"breakpoint", "cluster"}, f"expected semantic results for both methods, found {sorted(seen)}"
