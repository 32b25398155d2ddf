"""rag_tools.store: metadata, filters, citations, atomic re-index (with a real crash)."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from course_lib.chunking import Chunk, markdown_chunks, recursive_chunks

if os.environ.get("COURSE_REQUIRE_STORE") != "1":  # CI sets it: there a missing extra is an error
    pytest.importorskip("lancedb", reason="the vector-store extra is not installed: "
                        "pip install -r requirements-store.txt (or make setup-store)")

from rag_tools.store import ChunkStore, DamagedStoreError, DocumentChangedError, chunk_rows

DIM = 8
GUIDE = ("# Pump XR-12\n\nThe XR-12 moves water.\n\n## Install\n\nBolt it to the floor. Connect the inlet.\n\n"
         "## Faults\n\nIf it hums, check the fuse. If it leaks, tighten the seal.\n")
NOTES = "Meeting notes. The budget was approved. The next review is in March. Nobody objected."


def toy_vectors(chunks, seed=0):
    """A tiny embedding stand-in: one seeded random unit vector a chunk."""
    v = np.random.default_rng(seed).normal(size=(len(chunks), DIM))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def rows_for(doc_id, text, size=12, seed=0, strategy="markdown:12"):
    chunks = markdown_chunks(text, size)
    return chunk_rows(doc_id, text, chunks, toy_vectors(chunks, seed), strategy=strategy, model="toy")


@pytest.fixture
def store(tmp_path):
    s = ChunkStore(tmp_path / "store", DIM)
    s.reindex("guide", rows_for("guide", GUIDE))
    s.reindex("notes", rows_for("notes", NOTES, seed=1))
    return s


def test_rows_carry_offsets_headings_and_metadata():
    rows = rows_for("guide", GUIDE)
    assert [r.chunk_index for r in rows] == list(range(len(rows)))
    assert all(GUIDE[r.start:r.end] == r.text for r in rows)
    assert {r.heading_path for r in rows} == {"Pump XR-12", "Pump XR-12 > Install", "Pump XR-12 > Faults"}
    fuse = next(r for r in rows if "fuse" in r.text)
    assert fuse.heading_path == "Pump XR-12 > Faults" and fuse.chunk_id == f"guide#{fuse.chunk_index}"
    # a chunker without headings in its metadata gets the enclosing Markdown section
    pieces = recursive_chunks(GUIDE, 12)
    plain = chunk_rows("guide", GUIDE, pieces, toy_vectors(pieces), strategy="recursive:12", model="toy")
    assert next(r for r in plain if "fuse" in r.text).heading_path == "Pump XR-12 > Faults"


def test_rows_reject_bad_input():
    chunks = recursive_chunks(NOTES, 8)
    with pytest.raises(ValueError, match="one row per chunk"):
        chunk_rows("notes", NOTES, chunks, toy_vectors(chunks)[:-1], strategy="s", model="m")
    with pytest.raises(ValueError, match="offsets must point back"):
        chunk_rows("notes", NOTES, [Chunk("Meeting", 1, 8, 1)], toy_vectors([0]), strategy="s", model="m")
    with pytest.raises(ValueError, match="without '#'"):
        chunk_rows("a#b", NOTES, chunks, toy_vectors(chunks), strategy="s", model="m")
    with pytest.raises(ValueError, match="strategy"):
        chunk_rows("notes", NOTES, chunks, toy_vectors(chunks), strategy="", model="m")


def test_search_returns_citations_back_to_the_source(store):
    rows = rows_for("guide", GUIDE)
    target = next(r for r in rows if "fuse" in r.text)
    hits = store.search(target.vector, k=3)
    assert hits[0].doc_id == "guide" and hits[0].text == target.text
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    sources = {"guide": GUIDE, "notes": NOTES}
    assert all(sources[h.doc_id][h.start:h.end] == h.text for h in hits)
    assert hits[0].citation == f"guide[{target.start}:{target.end}] (Pump XR-12 > Faults)"


def test_filters_apply_before_the_search(store):
    query = rows_for("guide", GUIDE)[0].vector
    n_notes = len(store.chunks_of("notes"))
    only_notes = store.search(query, k=n_notes, where={"doc_id": "notes"})
    assert n_notes >= 2 and len(only_notes) == n_notes and {h.doc_id for h in only_notes} == {"notes"}
    faults = store.search(query, k=10, where={"heading_path": "Pump XR-12 > Faults"})
    assert faults and {h.heading_path for h in faults} == {"Pump XR-12 > Faults"}
    both = store.search(query, k=50, where={"doc_id": ["notes", "guide"]})
    assert len(both) == len(store)
    assert store.search(query, k=5, where={"doc_id": "it's missing"}) == []
    with pytest.raises(ValueError, match="filter on one of"):
        store.search(query, where={"vector": "x"})
    with pytest.raises(ValueError, match="dimension 8"):
        store.search(np.ones(3), k=1)


def test_reindex_replaces_one_document_and_leaves_no_stale_chunks(store):
    before_notes = store.chunks_of("notes")
    changed = GUIDE.replace("If it hums, check the fuse. ", "")
    new_rows = rows_for("guide", changed, seed=7)
    old_count = len(store.chunks_of("guide"))
    version = store.version
    store.reindex("guide", new_rows)
    assert store.version == version + 1  # one commit
    stored = store.chunks_of("guide")
    assert [c["text"] for c in stored] == [r.text for r in new_rows] and len(stored) <= old_count
    assert all(changed[c["start"]:c["end"]] == c["text"] for c in stored)
    assert not any("fuse" in c["text"] for c in stored)
    assert store.chunks_of("notes") == before_notes
    assert ChunkStore(store.path, DIM).chunks_of("guide") == stored  # persisted
    store.reindex("guide", [])
    assert store.document_ids() == ["notes"]


def test_reopening_with_another_dimension_is_an_error(store):
    with pytest.raises(ValueError, match="8-dimensional"):
        ChunkStore(store.path, 4)


CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    from course_lib.chunking import recursive_chunks
    from rag_tools.store import ChunkStore, chunk_rows

    path, text_a, text_b = sys.argv[1], sys.argv[2], sys.argv[3]
    store = ChunkStore(path, 8)
    versions = []
    for seed, text in ((0, text_a), (1, text_b)):
        chunks = recursive_chunks(text, 6)
        v = np.random.default_rng(seed).normal(size=(len(chunks), 8))
        versions.append(chunk_rows("big", text, chunks, v, strategy="recursive:6", model="toy"))
    n = 0
    while True:  # re-index the same document back and forth until killed
        print("start", n, flush=True)
        store.reindex("big", versions[n % 2])
        print("done", n, flush=True)
        n += 1
""")


def test_a_crash_during_reindex_leaves_the_document_old_or_new(store, tmp_path):
    """Kill (SIGKILL) a process while it re-indexes; the reopened store holds version A or B, whole."""
    text_a = " ".join(f"Sentence {i} of the first version." for i in range(1500))
    text_b = " ".join(f"Line {i} of the second one, shorter." for i in range(900))
    expected = {}
    for text in (text_a, text_b):
        expected[text] = [c.text for c in recursive_chunks(text, 6)]
    notes_before = store.chunks_of("notes")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    killed_inside = 0
    rng = np.random.default_rng(0)
    for _ in range(6):
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(store.path), text_a, text_b],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        for line in child.stdout:  # wait until it has committed at least two re-indexes
            if line.startswith("done 1"):
                break
        time.sleep(float(rng.uniform(0.0, 0.2)))
        child.send_signal(signal.SIGKILL)
        rest = child.stdout.read().split()
        child.wait()
        last = rest[-2] if len(rest) >= 2 else "done"
        killed_inside += last == "start"  # the kill came between "start" and "done": inside reindex
        reopened = ChunkStore(store.path, 8)
        texts = [c["text"] for c in reopened.chunks_of("big")]
        assert texts in (expected[text_a], expected[text_b]), "the document is mixed or empty after the crash"
        hashes = {c["doc_sha256"] for c in reopened.chunks_of("big")}
        assert len(hashes) == 1
        assert reopened.chunks_of("notes") == notes_before
        if killed_inside >= 2:
            break
    assert killed_inside >= 1, "no kill landed inside a write; the test proved nothing"


def test_a_second_handle_sees_every_commit(store):
    other = ChunkStore(store.path, DIM)
    store.reindex("notes", [])
    assert other.document_ids() == ["guide"] and other.version == store.version


RACER = textwrap.dedent("""
    import sys, time
    import numpy as np
    from course_lib.chunking import recursive_chunks
    from rag_tools.store import ChunkStore, chunk_rows

    path, tag, n, at = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    text = " ".join(f"{tag} sentence {i}." for i in range(n))
    chunks = recursive_chunks(text, 6)
    rows = chunk_rows("doc", text, chunks, np.random.default_rng(0).normal(size=(len(chunks), 8)),
                      strategy="recursive:6", model="toy")
    store = ChunkStore(path, 8)
    while time.time() < at:
        pass
    store.reindex("doc", rows)
""")


def test_two_writers_of_the_same_new_document_leave_one_version(tmp_path):
    """Without the writer lock both inserts landed: 300 rows for 200 chunk ids (the reliability review, D2)."""
    path = tmp_path / "race"
    ChunkStore(path, 8)
    for trial in range(2):
        at = time.time() + 4  # both children are waiting, model-free, when the moment comes
        children = [subprocess.Popen([sys.executable, "-c", RACER, str(path), tag, str(n), str(at)])
                    for tag, n in (("A", 200), ("B", 100))]
        assert [c.wait(timeout=120) for c in children] == [0, 0]
        rows = ChunkStore(path, 8).chunks_of("doc")
        ids = [r["chunk_index"] for r in rows]
        assert len(ids) == len(set(ids)), f"trial {trial}: {len(rows)} rows for {len(set(ids))} chunk ids"
        assert len({r["text"].split()[0] for r in rows}) == 1, "chunks of both versions are stored"
        ChunkStore(path, 8).reindex("doc", [])


def test_a_damaged_store_names_its_folder_and_the_fix(store):
    import shutil

    shutil.rmtree(store.path / "chunks.lance" / "_versions")
    with pytest.raises(DamagedStoreError, match=rf"{store.path}.*damaged.*re-index"):
        ChunkStore(store.path, DIM)


def test_garbage_data_files_give_one_error_naming_the_store(store):
    for data in (store.path / "chunks.lance" / "data").glob("*"):
        data.write_bytes(b"not a lance file" * 8)
    with pytest.raises(DamagedStoreError, match="damaged"):
        reopened = ChunkStore(store.path, DIM)
        reopened.chunks_of("guide")


def test_a_truncated_manifest_gives_one_error_naming_the_store(store):
    for manifest in (store.path / "chunks.lance" / "_versions").glob("*.manifest"):
        manifest.write_bytes(b"")
    with pytest.raises(DamagedStoreError, match="damaged"):
        ChunkStore(store.path, DIM)


def test_a_store_path_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        ChunkStore(tmp_path / "file", DIM)


def test_compact_keeps_the_data_and_drops_old_versions(store):
    for seed in range(12):
        store.reindex("guide", rows_for("guide", GUIDE, seed=seed))
    before = {d: store.chunks_of(d) for d in store.document_ids()}
    sizes = store.compact()
    assert sizes["files_after"] < sizes["files_before"] and sizes["bytes_after"] < sizes["bytes_before"]
    reopened = ChunkStore(store.path, DIM)
    assert {d: reopened.chunks_of(d) for d in reopened.document_ids()} == before
    target = rows_for("guide", GUIDE, seed=11)[0]
    assert reopened.search(target.vector, k=1)[0].text == target.text


def test_pages_come_from_form_feeds_and_reach_the_citation(tmp_path):
    text = "Page one talks about pumps.\fPage two is about fuses and seals.\fPage three: the end."
    chunks = [Chunk(text[a:b], a, b, 1) for a, b in ((0, 27), (28, 62), (20, 40), (63, len(text)))]
    rows = chunk_rows("manual", text, chunks, toy_vectors(chunks), strategy="page:64", model="toy")
    assert [(r.page_start, r.page_end) for r in rows] == [(1, 1), (2, 2), (1, 2), (3, 3)]
    store = ChunkStore(tmp_path / "s", DIM)
    store.reindex("manual", rows)
    hit = store.search(rows[2].vector, k=1)[0]
    assert hit.citation == "manual[20:40], pp. 1-2"
    assert store.search(rows[1].vector, k=1, where={"page_start": 2})[0].citation == "manual[28:62], p. 2"
    assert rows_for("guide", GUIDE)[0].page_start is None


def fake_embed(texts):
    """A deterministic stand-in for a model: the vector depends only on the text."""
    out = []
    for t in texts:
        v = np.random.default_rng(abs(hash(t)) % 2**32).normal(size=DIM)
        out.append(v / np.linalg.norm(v))
    return np.array(out, dtype=np.float32)


def test_update_document_embeds_only_the_changed_chunks(tmp_path):
    store = ChunkStore(tmp_path / "s", DIM)
    chunks = markdown_chunks(GUIDE, 12)
    first = store.update_document("guide", GUIDE, chunks, fake_embed, strategy="markdown:12", model="toy")
    assert (first.embedded, first.reused, first.rows) == (len(chunks), 0, len(chunks))
    edited = GUIDE.replace("Bolt it to the floor.", "Bolt it to a concrete floor.")
    new_chunks = markdown_chunks(edited, 12)
    calls = []

    def counting_embed(texts):
        calls.append(list(texts))
        return fake_embed(texts)

    version = store.version
    update = store.update_document("guide", edited, new_chunks, counting_embed, strategy="markdown:12", model="toy")
    old_texts = {c.text for c in chunks}
    changed = [c.text for c in new_chunks if c.text not in old_texts]
    assert calls == [changed] and 0 < update.embedded == len(changed) < len(new_chunks)
    assert update.reused == len(new_chunks) - len(changed) and store.version == version + 1 == update.version
    fresh = fake_embed([c.text for c in new_chunks])
    stored_rows = store._table.search().select(["chunk_index", "vector"]).limit(None).to_arrow().to_pylist()
    stored = np.array([r["vector"] for r in sorted(stored_rows, key=lambda r: r["chunk_index"])])
    assert np.all(np.sum(stored * fresh, axis=1) > 1 - 1e-6)  # reused vectors equal fresh ones
    assert [c["text"] for c in store.chunks_of("guide")] == [c.text for c in new_chunks]
    # another strategy or model never reuses a vector
    again = store.update_document("guide", edited, new_chunks, fake_embed, strategy="markdown:12", model="other")
    assert again.embedded == len(new_chunks)


class PrefixedToy:
    """An embedder of `rag_tools.embedders`' protocol (name, encode, a document prefix) over `fake_embed`."""

    def __init__(self, document_prefix=""):
        self.name, self.dim, self.max_tokens, self.document_prefix = "toy@0123|window=64", DIM, 64, document_prefix
        self.encoded = []

    def encode(self, texts, progress=None):
        self.encoded += list(texts)
        return fake_embed([self.document_prefix + t for t in texts])


def test_update_document_takes_an_embedder_and_keys_on_its_prefix(tmp_path):
    store = ChunkStore(tmp_path / "s", DIM)
    chunks = markdown_chunks(GUIDE, 12)
    plain = PrefixedToy()
    first = store.update_document("guide", GUIDE, chunks, plain, strategy="markdown:12")
    assert first.embedded == len(chunks) and plain.encoded == [c.text for c in chunks]
    assert {c["model"] for c in store.chunks_of("guide")} == {"toy@0123|window=64"}
    assert store.update_document("guide", GUIDE, chunks, PrefixedToy(), strategy="markdown:12").reused == len(chunks)
    prefixed = store.update_document("guide", GUIDE, chunks, PrefixedToy("passage: "), strategy="markdown:12")
    assert prefixed.embedded == len(chunks), "another document prefix never reuses a vector"
    assert {c["model"] for c in store.chunks_of("guide")} == {"toy@0123|window=64|document_prefix='passage: '"}
    with pytest.raises(ValueError, match="model=None"):
        store.update_document("guide", GUIDE, chunks, fake_embed, strategy="markdown:12")


def test_update_document_with_late_chunking_re_encodes_the_whole_document(tmp_path):
    store = ChunkStore(tmp_path / "s", DIM)
    chunks = markdown_chunks(GUIDE, 12)
    seen = []

    def embed_document(text, doc_chunks):
        seen.append((text, len(doc_chunks)))
        return fake_embed([text[c.start:c.end] + "|late" for c in doc_chunks])

    for _ in range(2):
        update = store.update_document("guide", GUIDE, chunks, strategy="late:markdown:12", model="toy",
                                       embed_document=embed_document)
        assert (update.embedded, update.reused) == (len(chunks), 0)
    assert seen == [(GUIDE, len(chunks))] * 2
    with pytest.raises(ValueError, match="exactly one"):
        store.update_document("guide", GUIDE, chunks, fake_embed, strategy="s", model="m",
                              embed_document=embed_document)
    with pytest.raises(ValueError, match="one text a chunk"):
        store.update_document("guide", GUIDE, chunks, fake_embed, strategy="s", model="m", embedded_texts=["x"])


def test_a_slow_embed_does_not_block_a_writer_of_another_document(store):
    """update_document embeds before taking the writer lock (issue 42 item 5: another writer waited 29.6 s).

    The slow embed holds until the other writer has finished: if that writer needed the lock the slow one held,
    it could finish only after the slow embed gave up waiting (60 s), which the test sees. No clock is read."""
    import threading

    embedding, other_done, gave_up = threading.Event(), threading.Event(), []

    def slow_embed(texts):  # a slow model or endpoint, inside update_document
        embedding.set()
        if not other_done.wait(timeout=60):
            gave_up.append(True)
        return fake_embed(texts)

    edited = GUIDE.replace("Bolt", "Screw")
    slow = threading.Thread(target=store.update_document, args=("guide", edited, markdown_chunks(edited, 12),
                                                                 slow_embed), kwargs={"strategy": "markdown:12",
                                                                                      "model": "toy"})
    other = ChunkStore(store.path, DIM)
    notes = NOTES.replace("March", "April")
    slow.start()
    try:
        assert embedding.wait(timeout=60)
        other.update_document("notes", notes, recursive_chunks(notes, 8), fake_embed, strategy="recursive:8",
                              model="toy")
    finally:
        other_done.set()
        slow.join(timeout=60)
    assert not gave_up, "the writer of another document waited for the slow embed to end"
    assert "".join(c["text"] for c in other.chunks_of("notes")).count("April") == 1
    assert any("Screw" in c["text"] for c in other.chunks_of("guide")), "the slow writer's commit is missing"


def test_update_document_refuses_when_the_document_changed_while_it_embedded(store):
    """The re-check under the lock: a version written meanwhile stands, whole, and the call says so."""
    import threading

    other = ChunkStore(store.path, DIM)
    meanwhile = rows_for("guide", GUIDE.replace("fuse", "breaker"), seed=3)

    def embed_while_another_writer_commits(texts):
        writer = threading.Thread(target=other.reindex, args=("guide", meanwhile))
        writer.start()
        writer.join(timeout=60)
        assert not writer.is_alive(), "the other writer waited for this embed: the lock is held while embedding"
        return fake_embed(texts)

    edited = GUIDE.replace("Bolt", "Screw")
    version = store.version
    with pytest.raises(DocumentChangedError, match=r"'guide' was re-indexed by another writer.*nothing was written"):
        store.update_document("guide", edited, markdown_chunks(edited, 12), embed_while_another_writer_commits,
                              strategy="markdown:12", model="toy")
    assert [c["text"] for c in store.chunks_of("guide")] == [r.text for r in meanwhile]
    assert store.version == version + 1  # the other writer's commit only
    # an unchanged document is no conflict: the same call now succeeds
    assert store.update_document("guide", edited, markdown_chunks(edited, 12), fake_embed, strategy="markdown:12",
                                 model="toy").rows == len(markdown_chunks(edited, 12))


# ---------------------------------------------------------------------------
# "Damaged" only when damaged; readers never wait for a writer (reliability review 2026-12-02: S1, S2, S3)
# ---------------------------------------------------------------------------


def _mount(*args) -> bool:
    """Run mount(8); False when this process may not mount (not root, or no CAP_SYS_ADMIN)."""
    return subprocess.run(["mount", *args], capture_output=True).returncode == 0


@pytest.fixture
def small_disk(tmp_path, monkeypatch):
    """(folder, fill, free): a 2 MB tmpfs that `fill()` fills up; where mounting is not allowed, `fill()`
    makes LanceDB's writes fail as they do on a full disk (its Rust error, os error 28)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = _mount("-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk))
    filler = disk / "filler"

    def fill():
        if not mounted:
            import lancedb.table

            def full(*args, **kwargs):
                raise RuntimeError("lance error: LanceError(IO): No space left on device (os error 28), "
                                   "/root/.cargo/registry/src/lance-file/src/writer.rs:191:9")
            for name in ("merge_insert", "optimize", "add"):
                monkeypatch.setattr(lancedb.table.LanceTable, name, full)
            return
        with open(filler, "ab", buffering=0) as handle, pytest.raises(OSError, match="No space left"):
            while True:
                handle.write(b"\0" * 4096)

    def free():
        monkeypatch.undo()
        filler.unlink(missing_ok=True)

    yield disk, fill, free
    if mounted:
        subprocess.run(["umount", str(disk)], check=True)


def test_a_full_disk_says_so_and_that_the_store_is_intact(small_disk):
    disk, fill, free = small_disk
    store = ChunkStore(disk / "s", DIM)
    chunks = markdown_chunks(GUIDE, 12)
    for doc_id in ("guide", "copy", "other copy"):  # three data files for compact() to merge
        store.update_document(doc_id, GUIDE, chunks, fake_embed, strategy="markdown:12", model="toy")
    before, version = store.chunks_of("guide"), store.version
    edited = GUIDE.replace("moves water", "moves clean water") * 3
    for attempt in (lambda: store.update_document("guide", edited, markdown_chunks(edited, 12), fake_embed,
                                                  strategy="markdown:12", model="toy"),
                    store.compact):
        fill()  # again: a failed write may have given back what it had written
        with pytest.raises(OSError) as caught:
            attempt()
        assert not isinstance(caught.value, DamagedStoreError)
        assert caught.value.errno == 28
        message = str(caught.value)
        assert "disk is full" in message and "intact" in message and str(store.path) in message
        assert "delete" not in message and ".rs:" not in message
    assert store.chunks_of("guide") == before and store.version == version
    free()
    store.update_document("guide", edited, markdown_chunks(edited, 12), fake_embed, strategy="markdown:12",
                          model="toy")
    assert [c["text"] for c in store.chunks_of("guide")] == [c.text for c in markdown_chunks(edited, 12)]


@pytest.mark.parametrize("bad, message", [(np.nan, "NaN or infinity"), (0.0, "all zeros")])
def test_a_refused_vector_is_a_value_error_and_the_store_is_unchanged(store, bad, message):
    version, before = store.version, store.chunks_of("guide")
    chunks = markdown_chunks(GUIDE, 12)
    with pytest.raises(ValueError, match=rf"vectors\[0\] .*{message}.*nothing was written"):
        store.update_document("guide", GUIDE, chunks, lambda texts: np.full((len(texts), DIM), bad),
                              strategy="markdown:12", model="other")
    assert store.version == version and store.chunks_of("guide") == before
    with pytest.raises(ValueError, match=message):
        chunk_rows("guide", GUIDE, chunks, np.full((len(chunks), DIM), bad), strategy="s", model="m")


def test_update_document_checks_the_chunks_before_embedding(store):
    calls = []
    with pytest.raises(ValueError, match="offsets must point back"):
        store.update_document("guide", GUIDE, markdown_chunks(NOTES, 12), lambda t: calls.append(t),
                              strategy="markdown:12", model="toy")
    assert calls == []


class _LostRace:
    """Stands for a LanceDB read whose files another process's compact() deleted: fails `failures` times."""

    def __init__(self, read, failures):
        self.read, self.failures = read, failures

    def __call__(self, *args, **kwargs):
        if self.failures:
            self.failures -= 1
            raise RuntimeError("lance error: Not found: chunks.lance/data/0a1b.lance, "
                               "/root/.cargo/registry/src/lance-io/src/local.rs:117:31")
        return self.read(*args, **kwargs)


def test_a_read_that_loses_a_race_with_compact_is_retried(store, monkeypatch):
    import lancedb.query

    n = len(store)
    monkeypatch.setattr(store._table, "count_rows", _LostRace(store._table.count_rows, 1))
    assert len(store) == n
    target = rows_for("guide", GUIDE)[0]
    monkeypatch.setattr(lancedb.query.LanceQueryBuilder, "to_arrow",
                        _LostRace(lancedb.query.LanceQueryBuilder.to_arrow, 1))
    assert store.search(target.vector, k=1)[0].text == target.text


def test_a_read_that_fails_twice_on_a_whole_store_is_not_called_damaged(store, monkeypatch):
    monkeypatch.setattr(store._table, "count_rows", _LostRace(store._table.count_rows, 2))
    with pytest.raises(OSError) as caught:
        len(store)
    assert not isinstance(caught.value, DamagedStoreError)
    assert "intact" in str(caught.value) and "compact()" in str(caught.value) and "retry" in str(caught.value)


def test_a_missing_data_file_is_damage(store):
    for data in (store.path / "chunks.lance" / "data").glob("*"):
        data.unlink()
    with pytest.raises(DamagedStoreError, match=rf"{store.path}.*damaged.*re-index"):
        store.chunks_of("guide")


STOPPED_WRITER = textwrap.dedent("""
    import sys, time
    from course_lib.chunking import markdown_chunks
    from rag_tools.store import ChunkStore

    def slow_embed(texts):  # a slow model, or a notebook paused inside update_document
        print("embedding", flush=True)
        time.sleep(600)

    text = sys.argv[2]
    ChunkStore(sys.argv[1], 8).update_document("guide", text, markdown_chunks(text, 12), slow_embed,
                                               strategy="markdown:12", model="slow")
""")


def test_a_reader_does_not_wait_for_a_writer(store):
    """A writer holding the lock inside update_document (embed running) must not block opening or searching."""
    import threading

    before = store.chunks_of("guide")
    edited = GUIDE.replace("Bolt", "Screw")
    writer = subprocess.Popen([sys.executable, "-c", STOPPED_WRITER, str(store.path), edited],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "embedding"  # the writer holds the lock now
        seen = {}

        def read():
            reader = ChunkStore(store.path, DIM)
            seen["chunks"] = reader.chunks_of("guide")
            seen["hits"] = reader.search(rows_for("guide", GUIDE)[0].vector, k=1)

        thread = threading.Thread(target=read, daemon=True)
        thread.start()
        thread.join(timeout=60)
        assert not thread.is_alive(), "opening the store waited for the writer's lock"
        assert seen["chunks"] == before and seen["hits"][0].doc_id == "guide"  # the last commit, whole
    finally:
        writer.kill()
        writer.wait()


@pytest.fixture
def read_only(store, tmp_path, monkeypatch):
    """The store's folder, mounted read-only where this process may mount; else every open for writing
    in the store folder fails as on a read-only file system."""
    view = tmp_path / "read-only"
    view.mkdir()
    if _mount("--bind", str(store.path), str(view)):
        if _mount("-o", "remount,bind,ro", str(view)):
            yield view
            subprocess.run(["umount", str(view)], check=True)
            return
        subprocess.run(["umount", str(view)], check=True)
    import builtins
    import errno as errnos

    real_open = builtins.open

    def read_only_open(file, mode="r", *args, **kwargs):
        if str(file).startswith(str(store.path)) and any(m in mode for m in "wa+x"):
            raise OSError(errnos.EROFS, "Read-only file system", str(file))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", read_only_open)
    yield store.path


def test_a_store_on_a_read_only_file_system_opens_for_search(store, read_only):
    before = {d: store.chunks_of(d) for d in store.document_ids()}
    reader = ChunkStore(read_only, DIM)
    assert {d: reader.chunks_of(d) for d in reader.document_ids()} == before and len(reader) == len(store)
    target = rows_for("notes", NOTES, seed=1)[0]
    assert reader.search(target.vector, k=1)[0].text == target.text
    with pytest.raises(OSError, match="Read-only file system"):
        reader.reindex("notes", [])
