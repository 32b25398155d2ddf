"""What appends do to an ANN index: query latency and recall as unindexed rows and delta indexes pile up.

Usage (from the repository root): python -m benchmarks.index_deltas     # -> results/index_deltas.json

100,000 vectors of 384 dimensions (a seeded mixture of 2,000 Gaussian clusters, unit length: no model to
run, and as spread out as sentence embeddings are). A `ChunkStore` is loaded with the first 60,000 in one
commit and given an IVF_PQ index (256 cells, 48 bytes a vector); then the other 40,000 arrive as a batch
job writes them, 80 commits of 500 (`write_fragments` + `commit_fragments`). Two copies of the store:
- "appended, index untouched": the new rows are not in the index; every query also scans them exactly;
- "appended, optimize_indices after each commit": each commit's rows get a new delta index (Lance's
  `optimize_indices(num_indices_to_merge=0)`), so 80 deltas pile up, each searched on its own.
At 0, 5, 10, 20, 40 and 80 commits: median query latency (each of 50 queries run 3 times, the median of
its runs, then the median over queries; `k=10`, default `nprobes`, `refine_factor=5`) and recall@10 against the
exact top 10 over every stored vector. Then each copy is compacted (`ChunkStore.compact()`: files merged,
unindexed rows added to the index, deltas merged) and its index rebuilt (`build_ann_index`), measured again.
Notebook 14, section 3, prints the curve from the JSON; it never rebuilds an index itself.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

from course_lib.settings import apply_quiet_offline_env

apply_quiet_offline_env()

import numpy as np  # noqa: E402

from rag_tools.store import ChunkStore, StoreRow, content_hash, write_fragments  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DIM, TOTAL, BASE, PER_COMMIT = 384, 100_000, 60_000, 500
CHECKPOINTS = (0, 5, 10, 20, 40, 80)
QUERIES, REPEATS, K = 50, 3, 10
REFINE = 5  # re-score 5 * k candidates with the full vectors, as notebook 14, section 3, does for IVF_PQ
NOISE = 1.4  # the noise's length against a center's 1: a point's cosine to its center is about 0.58


def mixture(n: int, seed: int, centers: np.ndarray) -> np.ndarray:
    """`n` unit vectors, each a random center plus noise."""
    rng = np.random.default_rng(seed)
    points = centers[rng.integers(len(centers), size=n)] + NOISE * rng.normal(size=(n, DIM)) / np.sqrt(DIM)
    return (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)


def rows(vectors: np.ndarray, first: int) -> list[StoreRow]:
    """One single-chunk document a vector, ids doc<first>, doc<first+1>, ..."""
    out = []
    for i, v in enumerate(vectors, start=first):
        text = f"vector {i}"
        out.append(StoreRow(f"doc{i}", 0, 0, len(text), text, "", None, None, "synthetic", "mixture-384",
                            f"{i:064x}", content_hash(text, strategy="synthetic", model="mixture-384"), v))
    return out


def measure(store: ChunkStore, vectors: np.ndarray, queries: np.ndarray) -> dict:
    """Median latency (ms) and recall@K against the exact top K over `vectors` (row i is doc<i>)."""
    exact = np.argsort(-(queries @ vectors.T), axis=1)[:, :K]
    for q in queries[:5]:  # open the index files before timing
        store.search(q, k=K, refine_factor=REFINE)
    latencies, found = [], 0
    for q, truth in zip(queries, exact):
        runs = []
        for _ in range(REPEATS):
            t0 = time.perf_counter()
            hits = store.search(q, k=K, refine_factor=REFINE)
            runs.append(time.perf_counter() - t0)
        latencies.append(float(np.median(runs)))
        found += len({int(h.doc_id[3:]) for h in hits} & set(truth.tolist()))
    stats = store._table.index_stats(store._table.list_indices()[0].name)
    return {"rows": len(store), "unindexed_rows": stats.num_unindexed_rows, "index_segments": stats.num_indices,
            "median_ms": round(1000 * float(np.median(latencies)), 2),
            "recall_at_10": round(found / (K * len(queries)), 4)}


def append(store: ChunkStore, batch: list[StoreRow]) -> None:
    """One commit of a batch job: fragments written, then committed with the documents they replace."""
    store.commit_fragments([r.doc_id for r in batch], write_fragments(store.path, batch, DIM))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "results" / "index_deltas.json"))
    args = parser.parse_args()
    import lance

    centers = np.random.default_rng(0).normal(size=(2_000, DIM))
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    vectors = mixture(TOTAL, 1, centers)
    queries = mixture(QUERIES, 2, centers)
    result = {"machine": f"{platform.machine()}, {os.cpu_count()} cores shared with other jobs",
              "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
              "vectors": TOTAL, "dim": DIM, "base_rows": BASE, "rows_per_commit": PER_COMMIT,
              "index": "IVF_PQ, 256 partitions, 48 sub-vectors, cosine", "queries": QUERIES, "repeats": REPEATS,
              "k": K, "pylance": lance.__version__, "curve": []}
    with tempfile.TemporaryDirectory() as work:
        base = ChunkStore(Path(work) / "untouched", DIM)
        base.add(rows(vectors[:BASE], 0))
        t0 = time.perf_counter()
        base.build_ann_index("IVF_PQ", num_partitions=256, num_sub_vectors=48)
        result["build_seconds"] = round(time.perf_counter() - t0, 1)
        shutil.copytree(base.path, Path(work) / "deltas")
        stores = {"appended, index untouched": base,
                  "appended, optimize_indices after each commit": ChunkStore(Path(work) / "deltas", DIM)}
        for regime, store in stores.items():
            for commit in range(CHECKPOINTS[-1] + 1):
                if commit:
                    start = BASE + (commit - 1) * PER_COMMIT
                    append(store, rows(vectors[start:start + PER_COMMIT], start))
                    if "optimize" in regime:
                        lance.dataset(str(store.path / "chunks.lance")).optimize.optimize_indices(
                            num_indices_to_merge=0)
                if commit in CHECKPOINTS:
                    point = {"regime": regime, "commits": commit,
                             **measure(store, vectors[:BASE + commit * PER_COMMIT], queries)}
                    result["curve"].append(point)
                    print(point, flush=True)
            for step, action in (("after compact()", store.compact),
                                 ("after a rebuild", lambda s=store: s.build_ann_index(
                                     "IVF_PQ", num_partitions=256, num_sub_vectors=48))):
                t0 = time.perf_counter()
                action()
                point = {"regime": regime, "commits": CHECKPOINTS[-1], "step": step,
                         "seconds": round(time.perf_counter() - t0, 1), **measure(store, vectors, queries)}
                result["curve"].append(point)
                print(point, flush=True)
    result["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
