"""course_lib.store: metadata, filters, citations, atomic re-index (with a real crash)."""

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

from course_lib.store import ChunkStore, chunk_rows

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
    assert {r.heading_path for r in rows} == {"# Pump XR-12", "# Pump XR-12 > ## Install", "# Pump XR-12 > ## Faults"}
    fuse = next(r for r in rows if "fuse" in r.text)
    assert fuse.heading_path == "# Pump XR-12 > ## Faults" and fuse.chunk_id == f"guide#{fuse.chunk_index}"
    # a chunker without headings in its metadata gets the enclosing Markdown section
    pieces = recursive_chunks(GUIDE, 12)
    plain = chunk_rows("guide", GUIDE, pieces, toy_vectors(pieces), strategy="recursive:12", model="toy")
    assert next(r for r in plain if "fuse" in r.text).heading_path == "# Pump XR-12 > ## Faults"


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
    assert hits[0].citation == f"guide[{target.start}:{target.end}] (# Pump XR-12 > ## Faults)"


def test_filters_apply_before_the_search(store):
    query = rows_for("guide", GUIDE)[0].vector
    n_notes = len(store.chunks_of("notes"))
    only_notes = store.search(query, k=n_notes, where={"doc_id": "notes"})
    assert n_notes >= 2 and len(only_notes) == n_notes and {h.doc_id for h in only_notes} == {"notes"}
    faults = store.search(query, k=10, where={"heading_path": "# Pump XR-12 > ## Faults"})
    assert faults and {h.heading_path for h in faults} == {"# Pump XR-12 > ## Faults"}
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
    from course_lib.store import ChunkStore, chunk_rows

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
