"""ANN versus exact search on 20,000+ real vectors: LanceDB and Chroma, one run, one JSON.

Usage: nice -n 10 python benchmarks/store_ann.py [--out results/store_ann.json]

Vectors: every sentence of the five Chroma corpora (a sentence longer than 24 cl100k tokens is
cut by `recursive_chunks` at 24) and every FLORES-200 line, English and Spanish, embedded once
with all-MiniLM-L6-v2 and cached in build/store_bench/ (outside git). Queries: Chroma's 472
questions. The truth is `VectorIndex`'s exact top 5; each store's ANN top 5 is scored against it
(recall@5 = share of the exact top 5 that the ANN returns; `recall_at_5_ties_counted` also counts a
returned row whose exact score equals the exact 5th score, a duplicate text), with query latency per query (one
query at a time, as an application asks) and index build time. The store section of
benchmarks/README.md reports the figures; notebook 14 reads the JSON.

Two exact baselines are timed in the same run: `VectorIndex.search`, which sorts all the scores
of a query (`argsort`, the course's reference, right for measuring), and the fair one for a speed
comparison, `exact_top_k`: the same matrix product, then `np.argpartition` for the top k and a
sort of those k only. Both are timed before the LanceDB runs and again after them
(`again_after_lancedb`), since a shared machine's load drifts during a run.

`--keep-chroma` reruns NumPy and LanceDB and keeps the Chroma section of `--out` as it is (for a
machine without `chromadb`); the JSON then says so in `chroma.kept_from_previous_run` and keeps that
run's exact latency beside it (`chroma.exact_vectorindex_that_run`): compare Chroma's latencies with
that, not with this run's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from course_lib.settings import apply_quiet_offline_env

apply_quiet_offline_env()  # before the model and store libraries are imported
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")  # vector-store libraries that report usage

import numpy as np  # noqa: E402

from course_lib.chunking import Chunk, recursive_chunks, split_sentences  # noqa: E402
from course_lib.datasets import CHROMA_CORPORA, load_chroma_corpus, load_chroma_questions, load_flores  # noqa: E402
from course_lib.evaluation import VectorIndex  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "build" / "store_bench"
PIECE_TOKENS = 24
K = 5


def documents() -> dict[str, tuple[str, list[Chunk]]]:
    """doc_id -> (text, pieces): sentence pieces of each Chroma corpus, the lines of each FLORES file."""
    docs = {}
    for corpus in CHROMA_CORPORA:
        text = load_chroma_corpus(corpus)
        pieces = []
        for a, b in split_sentences(text):
            if text[a:b].strip():
                pieces += [Chunk(c.text, a + c.start, a + c.end, c.n_tokens)
                           for c in recursive_chunks(text[a:b], PIECE_TOKENS)]
        docs[corpus] = (text, pieces)
    for language in ("eng", "spa"):
        lines = load_flores(language)
        text, pieces, at = "\n".join(lines), [], 0
        for line in lines:
            if line.strip():
                pieces.append(Chunk(line, at, at + len(line), 0))
            at += len(line) + 1
        docs[f"flores_{language}"] = (text, pieces)
    return docs


def embedded(texts: list[str], name: str) -> np.ndarray:
    """MiniLM vectors of `texts`, cached under build/store_bench/ by a hash of the texts."""
    digest = hashlib.sha256("\n\x00".join(texts).encode()).hexdigest()[:16]
    path = CACHE / f"{name}_{digest}.npy"
    if path.exists():
        return np.load(path)
    import torch

    from course_lib.models import load_embedding_model

    torch.set_num_threads(1)
    began = time.perf_counter()
    vectors = load_embedding_model().encode(texts, batch_size=64, normalize_embeddings=True,
                                            convert_to_numpy=True, show_progress_bar=False)
    print(f"embedded {len(texts):,} {name} in {time.perf_counter() - began:.0f} s", flush=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors.astype(np.float32))
    return vectors.astype(np.float32)


def load_vectors() -> tuple[dict[str, tuple[str, list[Chunk]]], np.ndarray, np.ndarray]:
    """The documents, one vector a piece (in document order), one vector a Chroma question."""
    docs = documents()
    vectors = embedded([c.text for _, pieces in docs.values() for c in pieces], "passages")
    queries = embedded([q["question"] for q in load_chroma_questions()], "questions")
    return docs, vectors, queries


def exact_top_k(vectors: np.ndarray, k: int):
    """Exact search for one query without sorting every score: one matrix product, `np.argpartition`
    for the k best rows, then a sort of those k (best first; ties in argpartition's order)."""
    def search(q: np.ndarray) -> list[int]:
        scores = vectors @ (q / np.linalg.norm(q))
        top = np.argpartition(-scores, k - 1)[:k]
        return top[np.argsort(-scores[top], kind="stable")].tolist()
    return search


def recall_at_5(found: list[list[int]], truth: list[list[int]]) -> float:
    """Mean share of the exact top 5 that the approximate top 5 holds."""
    return float(np.mean([len(set(f) & set(t)) / len(t) for f, t in zip(found, truth)]))


TIES: dict = {}  # set in main: the exact index, the queries and each query's exact 5th score


def recall_fields(found: list[list[int]], truth: list[list[int]]) -> dict:
    """recall@5 by id, and counting as found a row whose exact score equals the exact 5th score (within
    1e-6): the pieces hold duplicate texts, whose equal scores any exact search may order either way."""
    vectors, queries, kth = TIES["vectors"], TIES["queries"], TIES["kth"]
    shares = []
    for f, t, q, s5 in zip(found, truth, queries, kth):
        extra = [i for i in f if i not in set(t)]
        tied = int(np.sum(vectors[extra] @ q >= s5 - 1e-6)) if extra else 0
        shares.append((len(set(f) & set(t)) + tied) / len(t))
    return {"recall_at_5": round(recall_at_5(found, truth), 4),
            "recall_at_5_ties_counted": round(float(np.mean(shares)), 4)}


def timed_queries(search, queries: np.ndarray) -> tuple[list[list[int]], dict]:
    """Run `search` one query at a time (after 10 warm-up queries); ids and latency in ms."""
    for q in queries[:10]:
        search(q)
    found, times = [], []
    for q in queries:
        began = time.perf_counter()
        found.append(search(q))
        times.append((time.perf_counter() - began) * 1000)
    return found, {"latency_ms_median": round(float(np.median(times)), 3),
                   "latency_ms_p95": round(float(np.percentile(times, 95)), 3)}


def folder_mb(path: Path) -> float:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6, 1)


def bench_lancedb(docs, vectors, queries, truth, work: Path) -> dict:
    from rag_tools.store import ChunkStore, chunk_rows

    store = ChunkStore(work / "lancedb", vectors.shape[1])
    row_of, rows, at = {}, [], 0
    for doc_id, (text, pieces) in docs.items():
        doc_rows = chunk_rows(doc_id, text, pieces, vectors[at:at + len(pieces)], strategy="sentence-pieces:24",
                              model="all-MiniLM-L6-v2")
        row_of.update({(doc_id, i): at + i for i in range(len(pieces))})
        rows += doc_rows
        at += len(pieces)
    began = time.perf_counter()
    store.add(rows)
    load_s = time.perf_counter() - began
    out = {"version": __import__("lancedb").__version__, "load_s": round(load_s, 2), "runs": []}

    def searcher(**options):
        return lambda q: [row_of[(h.doc_id, h.chunk_index)] for h in store.search(q, K, **options)]

    found, latency = timed_queries(searcher(exact=True), queries)
    out["runs"].append({"index": "none (flat scan)", "params": {},
                        **recall_fields(found, truth), **latency})
    partitions = int(np.sqrt(len(vectors)))
    for kind, build in (("IVF_PQ", {"num_partitions": partitions, "num_sub_vectors": 48}),
                        ("IVF_HNSW_SQ", {"num_partitions": 4, "m": 20, "ef_construction": 300})):
        began = time.perf_counter()
        store.build_ann_index(kind, **build)
        build_s = time.perf_counter() - began
        grid = ([{"nprobes": p} for p in (1, 5, 20)] + [{"nprobes": 20, "refine_factor": 5}]
                if kind == "IVF_PQ" else [{"nprobes": 1, "ef": e} for e in (10, 50, 200)] + [{"nprobes": 4, "ef": 50}])
        for params in grid:
            found, latency = timed_queries(searcher(**params), queries)
            out["runs"].append({"index": kind, "build": build, "build_s": round(build_s, 2), "params": params,
                                **recall_fields(found, truth), **latency})
            print(out["runs"][-1], flush=True)
    out["disk_mb"] = folder_mb(work / "lancedb")
    return out


def bench_chroma(docs, vectors, queries, truth, work: Path) -> dict:
    """Chroma's HNSW, one collection built per ef_search (set at creation: changing it later with
    `modify` did not change any result in this version, so each setting gets its own build)."""
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(work / "chroma"), settings=Settings(anonymized_telemetry=False))
    out = {"version": chromadb.__version__, "runs": []}
    ids = [str(i) for i in range(len(vectors))]
    step = client.get_max_batch_size()
    for ef in (10, 100):
        build = {"space": "cosine", "max_neighbors": 16, "ef_construction": 100, "ef_search": ef}
        began = time.perf_counter()
        collection = client.create_collection(f"bench-ef{ef}", configuration={"hnsw": build})
        for a in range(0, len(ids), step):
            collection.add(ids=ids[a:a + step], embeddings=vectors[a:a + step])
        build_s = time.perf_counter() - began
        found, latency = timed_queries(
            lambda q, c=collection: [int(i) for i in c.query(query_embeddings=[q], n_results=K)["ids"][0]], queries)
        out["runs"].append({"index": "HNSW", "build": build, "build_s": round(build_s, 2),
                            "params": {"ef_search": ef}, **recall_fields(found, truth),
                            **latency})
        print(out["runs"][-1], flush=True)
    out["disk_mb_both_collections"] = folder_mb(work / "chroma")
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embed-only", action="store_true", help="only build the vector cache")
    parser.add_argument("--only-chroma", action="store_true", help="rerun Chroma, keep the rest of --out")
    parser.add_argument("--keep-chroma", action="store_true",
                        help="rerun NumPy and LanceDB, keep the Chroma section of --out (no chromadb needed)")
    parser.add_argument("--out", default=str(ROOT / "results" / "store_ann.json"))
    args = parser.parse_args()
    docs, vectors, queries = load_vectors()
    print(f"{len(vectors):,} vectors, {len(queries)} queries, dim {vectors.shape[1]}", flush=True)
    if args.embed_only:
        raise SystemExit(0)
    exact = VectorIndex(vectors)
    truth, truth_scores = exact.search(queries, K)
    TIES.update(vectors=exact.vectors, queries=queries / np.linalg.norm(queries, axis=1, keepdims=True),
                kth=truth_scores[:, -1])
    if args.only_chroma:
        result = json.loads(Path(args.out).read_text())
        with tempfile.TemporaryDirectory() as work:
            result["chroma"] = bench_chroma(docs, vectors, queries, truth, Path(work))
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
        raise SystemExit(0)
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    _, exact_latency = timed_queries(lambda q: exact.search(q, K)[0][0], queries)
    found, top_k_latency = timed_queries(exact_top_k(exact.vectors, K), queries)
    previous = json.loads(Path(args.out).read_text()) if args.keep_chroma else None
    result = {
        "vectors": len(vectors), "queries": len(queries), "dim": int(vectors.shape[1]), "k": K,
        "corpus": "Chroma corpora sentence pieces (<= 24 cl100k tokens) + FLORES-200 eng/spa dev+devtest lines",
        "queries_from": "Chroma questions_df.csv (472)", "model": "all-MiniLM-L6-v2",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, shared",
        "exact_vectorindex": {"method": "VectorIndex.search: matrix product, argsort of all scores",
                              "recall_at_5": 1.0, "recall_at_5_ties_counted": 1.0, **exact_latency},
        "exact_argpartition": {"method": "matrix product, np.argpartition top k, sort of the k",
                               **recall_fields(found, truth), **top_k_latency},
    }
    print({k: result[k] for k in ("exact_vectorindex", "exact_argpartition")}, flush=True)
    with tempfile.TemporaryDirectory() as work:
        result["lancedb"] = bench_lancedb(docs, vectors, queries, truth, Path(work))
        if previous is not None:
            result["chroma"] = {**previous["chroma"], "kept_from_previous_run": True,
                                "exact_vectorindex_that_run": previous["chroma"].get("exact_vectorindex_that_run",
                                                                                     previous["exact_vectorindex"])}
        else:
            result["chroma"] = bench_chroma(docs, vectors, queries, truth, Path(work))
    # the machine's load drifts during the run: time both exact baselines again after LanceDB
    _, again = timed_queries(lambda q: exact.search(q, K)[0][0], queries)
    result["exact_vectorindex"]["again_after_lancedb"] = again
    _, again = timed_queries(exact_top_k(exact.vectors, K), queries)
    result["exact_argpartition"]["again_after_lancedb"] = again
    print({k: result[k] for k in ("exact_vectorindex", "exact_argpartition")}, flush=True)
    if load_before is not None:
        result["load_average_1min"] = {"start": round(load_before, 2), "end": round(os.getloadavg()[0], 2)}
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
