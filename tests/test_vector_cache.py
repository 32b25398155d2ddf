"""course_lib.embed.VectorCache under faults: torn, foreign and wrong files, failed and interrupted writes.

Each test reproduces a defect of the reliability review (D1, D3, D4, D7, D8) on the cache alone,
with fault injection where the real window is microseconds wide.
"""

import os

import numpy as np
import pytest

from course_lib import embed
from course_lib.embed import VectorCache
from rag_tools.embedders import cache_write_problem

DIM = 6


def unit_rows(n, seed=0, dim=DIM):
    v = np.random.default_rng(seed).normal(size=(n, dim))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def filled(tmp_path, n=5, seed=0):
    """A cache folder holding one whole file of `n` vectors; returns the cache and its keys."""
    cache = VectorCache(tmp_path, "model", flush_every=10_000)
    keys = [f"{seed}-{i}".ljust(64, "k") for i in range(n)]
    cache.put(keys, unit_rows(n, seed))
    cache.flush()
    return cache, keys


def reopen(tmp_path, **kw):
    seen = []
    cache = VectorCache(tmp_path, "model", on_warning=seen.append, **kw)
    return cache, seen


def test_a_whole_file_round_trips(tmp_path):
    cache, keys = filled(tmp_path)
    again, seen = reopen(tmp_path)
    assert again.loaded == 5 and not seen
    assert all(np.array_equal(again[k], cache[k]) for k in keys)
    assert VectorCache(tmp_path, "another model").loaded == 0


def test_a_hidden_temporary_file_beside_a_good_file_is_ignored(tmp_path):
    """D1: the loader read `.<name>.tmp.npz`, which a torn flush leaves, and every later run crashed."""
    cache, _ = filled(tmp_path)
    good = next(cache.folder.glob("*.npz"))
    (cache.folder / f".{good.stem}.tmp.npz").write_bytes(good.read_bytes()[:100])
    again, seen = reopen(tmp_path)
    assert again.loaded == 5 and not seen


@pytest.mark.parametrize("damage", ["half", "empty", "garbage", "flip", "foreign", "pickled"])
def test_a_damaged_file_is_moved_aside_with_one_warning(tmp_path, damage):
    """D4: truncated, empty, random, bit-flipped and foreign files ended every run in a traceback."""
    filled(tmp_path, seed=1)
    cache, _ = filled(tmp_path, seed=2)
    victim = sorted(cache.folder.glob("*.npz"))[-1]
    data = victim.read_bytes()
    if damage == "half":
        victim.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        victim.write_bytes(b"")
    elif damage == "garbage":
        victim.write_bytes(os.urandom(len(data)))
    elif damage == "flip":
        victim.write_bytes(data[:200] + bytes([data[200] ^ 0xFF]) + data[201:])
    elif damage == "foreign":
        np.savez(victim.with_suffix(""), something=np.arange(3))
    else:
        np.savez(victim.with_suffix(""), keys=np.array([object()]), vectors=np.ones((1, DIM)))
    again, seen = reopen(tmp_path)
    assert len(seen) == 1 and str(victim) in seen[0] and "damaged" in seen[0]
    assert again.loaded == 5  # the other file's vectors are still there
    assert not victim.exists() and (victim.parent / "damaged" / victim.name).exists()
    third, seen_again = reopen(tmp_path)
    assert third.loaded == 5 and not seen_again  # moved aside once, never read again


@pytest.mark.parametrize("vectors, why", [
    (np.ones((5, 10), np.float32) / np.sqrt(10), "10-dimensional"),
    (np.ones((5, DIM), np.float32), "unit length"),
    (np.full((5, DIM), np.nan, np.float32), "finite"),
])
def test_well_formed_files_with_wrong_vectors_are_rejected(tmp_path, vectors, why):
    """D8: 10-dimensional vectors were trusted and recall@5 fell from 100% to 25% without a word."""
    cache, keys = filled(tmp_path)
    target = next(cache.folder.glob("*.npz"))
    np.savez(target.with_suffix(""), keys=np.array(keys, dtype="U64"), vectors=vectors)
    again, seen = reopen(tmp_path, dim=DIM)
    assert again.loaded == 0 and len(seen) == 1 and why in seen[0]


def test_without_a_dimension_the_first_good_file_sets_it(tmp_path):
    filled(tmp_path, seed=1)
    cache = VectorCache(tmp_path, "model")
    np.savez(cache.folder / "zz-other", keys=np.array(["x" * 64]), vectors=np.ones((1, 4), np.float32) / 2)
    again, seen = reopen(tmp_path)
    assert again.loaded == 5 and again.dim == DIM and "4-dimensional" in seen[0]


@pytest.mark.parametrize("where", ["savez", "replace"])
@pytest.mark.parametrize("fault", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_failed_or_interrupted_flush_leaves_no_file_behind(tmp_path, monkeypatch, where, fault):
    """D1 and D3: a torn temporary file stayed, and a failed write threw the whole run away."""
    cache = VectorCache(tmp_path, "model", on_warning=lambda m: None, flush_every=10_000)
    cache.put(["a" * 64], unit_rows(1))

    def boom(*args, **kwargs):
        if where == "savez":
            args[0].write(b"PK half a zip")
        raise fault

    monkeypatch.setattr(embed.np if where == "savez" else embed.os, "savez" if where == "savez" else "replace", boom)
    if isinstance(fault, KeyboardInterrupt):
        with pytest.raises(KeyboardInterrupt):
            cache.flush()
    else:
        cache.flush()
        assert not cache.writable and "No space left" in cache.warnings[0]
        assert "a" * 64 in cache  # the run goes on with the vectors in memory
    assert list(cache.folder.iterdir()) == []
    monkeypatch.undo()
    assert reopen(tmp_path)[0].loaded == 0


def test_put_writes_a_file_every_flush_every_vectors(tmp_path):
    """D7: an interrupted run had saved nothing, since the cache was written once, at the end."""
    cache = VectorCache(tmp_path, "model", flush_every=4)
    for i in range(10):
        cache.put([f"{i}".ljust(64, "k")], unit_rows(1, seed=i))
    assert len(list(cache.folder.glob("*.npz"))) == 2 and len(cache.new) == 2
    assert reopen(tmp_path)[0].loaded == 8
    with pytest.raises(ValueError, match="flush_every"):
        VectorCache(tmp_path, "model", flush_every=0)


def test_cache_write_problem_is_found_before_any_work(tmp_path):
    assert cache_write_problem(tmp_path / "new" / "folder") is None
    (tmp_path / "file").write_text("x")
    assert "cannot write the vector cache" in cache_write_problem(tmp_path / "file")
    assert list((tmp_path / "new" / "folder").iterdir()) == []
