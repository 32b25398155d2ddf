"""rag_tools.batch: partitions, the Dask job end to end (tiny embedding stand-in), re-runs."""

import os
import sys
import zlib
from dataclasses import dataclass
from functools import partial

import numpy as np
import pytest

from course_lib.chunking import recursive_chunks

if os.environ.get("COURSE_REQUIRE_STORE") != "1":  # CI sets it: there a missing extra is an error
    for extra in ("lancedb", "distributed"):
        pytest.importorskip(extra, reason="the vector-store extra is not installed: "
                            "pip install -r requirements-store.txt (or make setup-store)")

from distributed import Client

from rag_tools.batch import Document, MiniLMEmbedder, embed_partition, local_client, partition, run_batch
from rag_tools.store import ChunkStore


@dataclass(frozen=True)
class WordHashEmbedder:
    """A tiny stand-in for the model: hashed bag of words, 16 dimensions, unit length."""

    name: str = "word-hash-16"
    dim: int = 16

    def __call__(self, text, chunks):
        out = np.zeros((len(chunks), self.dim), np.float32)
        for i, c in enumerate(chunks):
            for word in c.text.lower().split():
                out[i, zlib.crc32(word.encode()) % self.dim] += 1
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


CHUNKER = partial(recursive_chunks, size=12)
DOCS = [Document(f"doc{i}", " ".join(f"Sentence {j} of document {i} talks about topic {j % 5}." for j in range(3 + i)))
        for i in range(9)]


@pytest.fixture(scope="module")
def client():
    # TCP on loopback: the in-process transport looks up an outward address (a warning when offline)
    with Client(processes=False, n_workers=2, threads_per_worker=1, protocol="tcp", host="127.0.0.1",
                dashboard_address="127.0.0.1:0") as c:
        yield c


def test_partition_deals_every_document_once_balancing_length():
    parts = partition(DOCS, 4)
    assert len(parts) == 4
    assert sorted(d.doc_id for p in parts for d in p) == sorted(d.doc_id for d in DOCS)
    sizes = [sum(len(d.text) for d in p) for p in parts]
    assert max(sizes) - min(sizes) <= max(len(d.text) for d in DOCS)
    assert len(partition(DOCS[:2], 8)) == 2  # never an empty partition
    with pytest.raises(ValueError, match="distinct doc_id"):
        partition([DOCS[0], DOCS[0]], 2)
    with pytest.raises(ValueError, match="n_partitions"):
        partition(DOCS, 0)


def test_embed_partition_gives_rows_with_offsets_and_metadata():
    rows = embed_partition(DOCS[:2], CHUNKER, WordHashEmbedder(), strategy="recursive:12")
    assert sorted(rows) == ["doc0", "doc1"]
    for doc in DOCS[:2]:
        assert [r.text for r in rows[doc.doc_id]] == [c.text for c in CHUNKER(doc.text)]
        assert all(doc.text[r.start:r.end] == r.text and r.model == "word-hash-16" for r in rows[doc.doc_id])


class ProtocolEmbedder:
    """The same stand-in behind `rag_tools.embedders`' protocol: `encode` of texts, a name, a dimension."""

    name, dim, max_tokens = "word-hash-16@abc|window=64", 16, 64

    def encode(self, texts, progress=None):
        return WordHashEmbedder()(None, [type("C", (), {"text": t})() for t in texts])


def test_embed_partition_takes_an_embedder_of_the_protocol():
    rows = embed_partition(DOCS[:2], CHUNKER, ProtocolEmbedder(), strategy="recursive:12")
    same = embed_partition(DOCS[:2], CHUNKER, WordHashEmbedder(), strategy="recursive:12")
    for doc_id, doc_rows in rows.items():
        assert [r.text for r in doc_rows] == [r.text for r in same[doc_id]]
        np.testing.assert_allclose([r.vector for r in doc_rows], [r.vector for r in same[doc_id]])
        assert {r.model for r in doc_rows} == {"word-hash-16@abc|window=64"}


def test_run_batch_stores_every_chunk_and_reports_progress(client, tmp_path):
    store = ChunkStore(tmp_path / "s", 16)
    lines = []
    report = run_batch(DOCS, store, chunker=CHUNKER, strategy="recursive:12", embedder=WordHashEmbedder(),
                       client=client, partitions_per_worker=2, progress=lines.append)
    expected = sum(len(CHUNKER(d.text)) for d in DOCS)
    assert report.chunks == expected == len(store)
    assert report.documents == len(DOCS) and report.characters == sum(len(d.text) for d in DOCS)
    assert lines == report.progress and len(lines) == 4 and lines[-1].endswith(f"{expected} chunks stored")
    assert store.document_ids() == sorted(d.doc_id for d in DOCS)
    for doc in DOCS:
        assert [c["text"] for c in store.chunks_of(doc.doc_id)] == [c.text for c in CHUNKER(doc.text)]
    # a re-run with one document changed replaces it and leaves no stale chunks
    changed = [Document("doc8", "Short now.") if d.doc_id == "doc8" else d for d in DOCS]
    again = run_batch(changed, store, chunker=CHUNKER, strategy="recursive:12", embedder=WordHashEmbedder(),
                      client=client, progress=None)
    assert [c["text"] for c in store.chunks_of("doc8")] == ["Short now."]
    assert len(store) == again.chunks == expected - len(CHUNKER(DOCS[8].text)) + 1


def test_the_same_job_runs_on_worker_processes(tmp_path):
    """The real path: a local cluster of 2 processes; the stand-in is pickled by value."""
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    store = ChunkStore(tmp_path / "s", 16)
    with local_client(2) as c:
        assert len(c.scheduler_info()["workers"]) == 2
        report = run_batch(DOCS, store, chunker=CHUNKER, strategy="recursive:12", embedder=WordHashEmbedder(),
                           client=c, progress=None)
        c.cluster.close()
    assert report.chunks == len(store) == sum(len(CHUNKER(d.text)) for d in DOCS)


def test_minilm_embedder_checks_its_mode():
    assert MiniLMEmbedder("late").name == "all-MiniLM-L6-v2/late"
    with pytest.raises(ValueError, match='"naive" or "late"'):
        MiniLMEmbedder("mean")
