"""rag_tools.batch: partitions, the Dask job end to end (tiny embedding stand-in), re-runs, failures, killed drivers."""

import os
import signal
import subprocess
import sys
import textwrap
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

from rag_tools.batch import BatchError, Document, MiniLMEmbedder, embed_partition, local_client, partition, run_batch
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


# ---------------------------------------------------------------------------
# Workers write fragments, the driver only commits (issue 49)
# ---------------------------------------------------------------------------
def _rows(store):
    """Every stored row, sorted by chunk id: the metadata and the vector."""
    rows = store._table.search().limit(None).to_arrow().to_pylist()
    return sorted(rows, key=lambda r: r["chunk_id"])


def _orphans(store):
    """Data files in the store folder that no version lists: fragments written and never committed."""
    import lance

    uri = str(store.path / "chunks.lance")
    listed = {f.path for v in lance.dataset(uri).versions()
              for fragment in lance.dataset(uri, version=v["version"]).get_fragments()
              for f in fragment.metadata.files}
    return {p.name for p in (store.path / "chunks.lance" / "data").glob("*.lance")} - listed


def test_a_two_worker_job_stores_what_one_process_stores_and_the_driver_only_commits(tmp_path, monkeypatch):
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    single = ChunkStore(tmp_path / "single", 16)
    single.reindex_documents(embed_partition(DOCS, CHUNKER, WordHashEmbedder(), strategy="recursive:12"))

    def no_rows_on_the_driver(*args, **kwargs):
        raise AssertionError("the driver received the rows and wrote them itself")

    monkeypatch.setattr(ChunkStore, "reindex_documents", no_rows_on_the_driver)
    monkeypatch.setattr(ChunkStore, "add", no_rows_on_the_driver)
    store = ChunkStore(tmp_path / "s", 16)
    with local_client(2) as c:
        report = run_batch(DOCS, store, chunker=CHUNKER, strategy="recursive:12", embedder=WordHashEmbedder(),
                           client=c, progress=None)
        c.cluster.close()
    ours, theirs = _rows(store), _rows(single)
    assert [r["chunk_id"] for r in ours] == [r["chunk_id"] for r in theirs]
    for a, b in zip(ours, theirs):
        assert {k: v for k, v in a.items() if k != "vector"} == {k: v for k, v in b.items() if k != "vector"}
        np.testing.assert_allclose(a["vector"], b["vector"], atol=1e-6)
    assert report.chunks == len(ours) and report.bytes_to_driver > 0 and _orphans(store) == set()


@dataclass(frozen=True)
class DiesAfterWritingOnce(WordHashEmbedder):
    """The first time it embeds document 4, writes that document's rows as fragments into the store at `path`, as
    the partition's worker would, and kills the worker before it can answer: a worker lost between writing and
    returning. Dask runs the partition again on the other worker (a marker file says it has died once)."""

    path: str = ""
    marker: str = ""

    def __call__(self, text, chunks):
        vectors = super().__call__(text, chunks)
        if "document 4 " in text and not os.path.exists(self.marker):
            from rag_tools.store import chunk_rows, write_fragments

            open(self.marker, "x").close()
            write_fragments(self.path, chunk_rows("doc4", text, chunks, vectors, strategy="recursive:12",
                                                  model=self.name), self.dim)
            os._exit(1)
        return vectors


def test_a_partition_run_twice_after_a_lost_worker_leaves_no_uncommitted_fragments(tmp_path):
    """Dask retries a partition whose worker died; what the dead attempt wrote is never committed and must not stay
    in the store folder once the job has succeeded (the two-worker test's orphan check failed this way)."""
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    store = ChunkStore(tmp_path / "s", 16)
    died = tmp_path / "died"
    with local_client(2) as c:
        report = run_batch(DOCS, store, chunker=CHUNKER, strategy="recursive:12", client=c, progress=None,
                           embedder=DiesAfterWritingOnce(path=str(store.path), marker=str(died)))
        c.cluster.close()
    assert died.exists(), "no worker died after writing: the test proves nothing"
    assert store.document_ids() == sorted(d.doc_id for d in DOCS)
    assert len(store) == report.chunks == sum(len(CHUNKER(d.text)) for d in DOCS), "a document is doubled"
    assert _orphans(store) == set(), "the dead attempt's fragments are left in the store folder"


def test_a_failing_partition_names_its_documents_and_the_others_are_committed(client, tmp_path):
    class Poisoned(WordHashEmbedder):
        def __call__(self, text, chunks):
            if "document 4 " in text:
                raise ValueError("this model cannot read document 4")
            return super().__call__(text, chunks)

    store = ChunkStore(tmp_path / "s", 16)
    with pytest.raises(BatchError, match=r"partition \d of 8 failed \(1 document, first 'doc4', last 'doc4'\): "
                                         r"ValueError: this model cannot read document 4\. The 7 partitions that "
                                         r"finished are committed \(8 documents stored whole\)"):
        run_batch(DOCS, store, chunker=CHUNKER, strategy="recursive:12", embedder=Poisoned(), client=client,
                  progress=None)
    assert store.document_ids() == sorted(d.doc_id for d in DOCS if d.doc_id != "doc4")
    for doc in DOCS:
        if doc.doc_id != "doc4":
            assert [c["text"] for c in store.chunks_of(doc.doc_id)] == [c.text for c in CHUNKER(doc.text)]


@dataclass(frozen=True)
class KillerEmbedder(WordHashEmbedder):
    """Kills the worker process that embeds document 4, as a model crashing on one input would."""

    def __call__(self, text, chunks):
        if "document 4 " in text:
            os._exit(1)
        return super().__call__(text, chunks)


def test_a_partition_that_kills_its_workers_is_named_not_a_task_id(tmp_path):
    """Dask's KilledWorker names a task key; the job's error names the documents (reliability review, N2)."""
    import cloudpickle
    import dask

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    store = ChunkStore(tmp_path / "s", 16)
    # one death is enough, and each worker holds one task at a time, so only the poisoned one dies with it
    config = {"distributed.scheduler.allowed-failures": 0, "distributed.scheduler.worker-saturation": 1.0}
    with dask.config.set(config), local_client(2) as c:
        with pytest.raises(BatchError, match=r"first 'doc4', last 'doc4'\): KilledWorker: .*The 7 partitions that "
                                             r"finished are committed") as raised:
            run_batch(DOCS, store, chunker=CHUNKER, strategy="recursive:12", embedder=KillerEmbedder(), client=c,
                      progress=None)
        c.cluster.close()
    assert type(raised.value.__cause__).__name__ == "KilledWorker"
    assert store.document_ids() == sorted(d.doc_id for d in DOCS if d.doc_id != "doc4")


KILLED_DRIVER = textwrap.dedent("""
    import sys, time, zlib
    from functools import partial
    import numpy as np
    from distributed import Client
    from course_lib.chunking import recursive_chunks
    from rag_tools.batch import Document, run_batch
    from rag_tools.store import ChunkStore

    class Slow:
        name, dim = "word-hash-16", 16

        def __call__(self, text, chunks):
            time.sleep(0.4)
            out = np.zeros((len(chunks), 16), np.float32)
            for i, c in enumerate(chunks):
                for word in c.text.lower().split():
                    out[i, zlib.crc32(word.encode()) % 16] += 1
            return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)

    docs = [Document(f"doc{i}", " ".join(f"Sentence {j} of document {i} talks about topic {j % 5}."
                                         for j in range(3 + i))) for i in range(9)]
    with Client(processes=False, n_workers=2, threads_per_worker=1, protocol="tcp", host="127.0.0.1",
                dashboard_address="127.0.0.1:0") as client:
        run_batch(docs, ChunkStore(sys.argv[1], 16), chunker=partial(recursive_chunks, size=12),
                  strategy="recursive:12", embedder=Slow(), client=client,
                  progress=lambda line: print(line, flush=True))
    print("finished", flush=True)
""")


def test_a_driver_killed_between_commits_leaves_a_whole_store_and_a_rerun_finishes_it(client, tmp_path):
    from rag_tools.store import write_fragments

    path = tmp_path / "s"
    ChunkStore(path, 16)
    driver = subprocess.Popen([sys.executable, "-c", KILLED_DRIVER, str(path)], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        lines = []
        for line in driver.stdout:
            lines.append(line)
            if len(lines) == 2:  # two partitions committed, six to go: kill the driver
                break
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    assert len(lines) == 2 and "committed" in lines[1], f"the driver did not get going: {lines}"
    store = ChunkStore(path, 16)
    store._check_folder()
    kept = store.document_ids()
    assert 2 <= len(kept) < len(DOCS), kept
    for doc in DOCS:  # every committed document whole: the last committed version, nothing half-written
        if doc.doc_id in kept:
            assert [c["text"] for c in store.chunks_of(doc.doc_id)] == [c.text for c in CHUNKER(doc.text)]
    probe = _rows(store)[0]
    assert store.search(np.array(probe["vector"]), k=1)[0].text == probe["text"]
    # a worker that wrote its fragments and died before the driver committed them
    rows = embed_partition(DOCS[:1], CHUNKER, WordHashEmbedder(), strategy="recursive:12")["doc0"]
    write_fragments(path, rows, 16)
    assert _orphans(store), "no uncommitted fragment to clean up: the test proves nothing"
    report = run_batch(DOCS, store, chunker=CHUNKER, strategy="recursive:12", embedder=WordHashEmbedder(),
                       client=client, progress=None)
    assert store.document_ids() == sorted(d.doc_id for d in DOCS)
    assert len(store) == report.chunks == sum(len(CHUNKER(d.text)) for d in DOCS), "a document is doubled"
    assert _orphans(store) == set(), "fragments never committed are left in the store folder"
