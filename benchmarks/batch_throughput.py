"""Throughput of the batch job (rag_tools.batch on Dask) with 1 and 2 workers, interleaved.

Usage: nice -n 10 python benchmarks/batch_throughput.py [--copies 10] [--rounds 2] [--embed-rounds 2]

Corpus: the five Chroma corpora and FLORES-200 English and Spanish (dev + devtest, one
document a language), 2.02 MB, repeated `--copies` times with distinct document ids.
- Chunking: every copy (20.2 MB with 10 copies), `recursive_chunks` at 256 cl100k tokens, run as
  Dask tasks that return chunk counts (so the figure is chunking plus moving the documents to the
  workers).
- The whole job (chunk, embed with all-MiniLM-L6-v2 at max_seq_length 512, one thread a worker,
  write to LanceDB) through `rag_tools.batch.run_batch`, on `--embed-mb` MB (default 2) of one copy
  cut into documents of about 20 KB at line breaks, taken in turn from each source.
Worker counts alternate 1, 2, 2, 1, ... so that a change in the machine's load hits both alike.
Each worker loads the model before the clock starts. Writes results/batch_throughput.json;
the extrapolation to 10 million documents (notebook 14 and benchmarks/README.md) is computed from it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from functools import partial
from pathlib import Path

from course_lib.settings import apply_quiet_offline_env

apply_quiet_offline_env()  # before the model and Dask are imported

from course_lib.chunking import Chunk, recursive_chunks  # noqa: E402
from course_lib.datasets import CHROMA_CORPORA, load_chroma_corpus, load_flores  # noqa: E402
from rag_tools.batch import Document, MiniLMEmbedder, chunk_partition, local_client, partition, run_batch  # noqa: E402
from rag_tools.store import ChunkStore  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CHUNKER = partial(recursive_chunks, size=256)
STRATEGY = "recursive:256"


def corpus(copies: int) -> list[Document]:
    """The Chroma corpora and FLORES eng/spa, `copies` times, ids `<name>@<copy>`."""
    base = {name: load_chroma_corpus(name) for name in CHROMA_CORPORA}
    base.update({f"flores_{lang}": "\n".join(load_flores(lang)) for lang in ("eng", "spa")})
    return [Document(f"{name}@{i:02d}", text) for i in range(copies) for name, text in base.items()]


def pieces(docs: list[Document], target_chars: int = 20_000) -> list[Document]:
    """Cut each document at line breaks into documents of about `target_chars`, ids `<id>/<n>`.

    Realistic documents are small and many; one 738 KB corpus as a single task would leave a
    second worker idle.
    """
    out = []
    for doc in docs:
        start, n = 0, 0
        while start < len(doc.text):
            end = doc.text.find("\n", start + target_chars)
            end = len(doc.text) if end == -1 else end + 1
            out.append(Document(f"{doc.doc_id}/{n:03d}", doc.text[start:end]))
            start, n = end, n + 1
    return out


def embed_corpus(docs: list[Document], mb: float) -> list[Document]:
    """About `mb` MB of ~20 KB pieces, taken in turn from each source so every kind of text is in."""
    by_source = [pieces([d]) for d in docs]
    chosen, size = [], 0
    for i in range(max(len(p) for p in by_source)):
        for p in by_source:
            if i < len(p) and size < mb * 1e6:
                chosen.append(p[i])
                size += len(p[i].text.encode())
    return chosen


def count_chunks(docs: list[Document], chunker) -> tuple[int, int]:
    """A chunking-only task: (chunks, cl100k tokens in them)."""
    pairs = chunk_partition(docs, chunker)
    return sum(len(c) for _, c in pairs), sum(x.n_tokens for _, c in pairs for x in c)


def warm_up(embed: bool) -> None:
    """Load the tokenizer (and the model) in this worker: run on every worker before timing."""
    CHUNKER("warm up")
    if embed:
        MiniLMEmbedder()("warm up", [Chunk("warm up", 0, 7, 2)])


def chunk_run(docs: list[Document], workers: int) -> dict:
    began = time.perf_counter()
    with local_client(workers) as client:
        client.run(warm_up, False)
        started = time.perf_counter() - began
        t0 = time.perf_counter()
        parts = partition(docs, workers * 4)
        results = client.gather(client.map(count_chunks, parts, chunker=CHUNKER, pure=False))
        seconds = time.perf_counter() - t0
        client.cluster.close()
    chars = sum(len(d.text) for d in docs)
    return {"stage": "chunk", "workers": workers, "seconds": round(seconds, 3), "cluster_start_s": round(started, 2),
            "mb": round(sum(len(d.text.encode()) for d in docs) / 1e6, 3), "characters": chars,
            "chunks": sum(r[0] for r in results), "cl100k_tokens": sum(r[1] for r in results),
            "chars_per_s": round(chars / seconds)}


def embed_run(docs: list[Document], workers: int, work: Path) -> dict:
    began = time.perf_counter()
    with local_client(workers) as client:
        client.run(warm_up, True)
        started = time.perf_counter() - began
        store = ChunkStore(work / f"store_{workers}_{time.time_ns()}", 384)
        report = run_batch(docs, store, chunker=CHUNKER, strategy=STRATEGY, embedder=MiniLMEmbedder(),
                           client=client, progress=None)
        client.cluster.close()
    tokens = sum(c.n_tokens for d in docs for c in CHUNKER(d.text))
    disk = sum(f.stat().st_size for f in store.path.rglob("*") if f.is_file())
    return {"stage": "chunk+embed+store", "workers": workers, "seconds": round(report.seconds, 3),
            "cluster_start_and_model_load_s": round(started, 2),
            "mb": round(sum(len(d.text.encode()) for d in docs) / 1e6, 3),
            "characters": report.characters, "chunks": report.chunks, "cl100k_tokens": tokens,
            "chars_per_s": round(report.characters / report.seconds),
            "cl100k_tokens_per_s": round(tokens / report.seconds),
            "store_bytes": disk, "store_bytes_per_chunk": round(disk / report.chunks)}


def interleaved(rounds: int) -> list[int]:
    """1, 2, 2, 1, 1, 2, ...: each pair in the other order from the last."""
    order = []
    for r in range(rounds):
        order += [1, 2] if r % 2 == 0 else [2, 1]
    return order


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=10, help="corpus copies for the chunking stage")
    parser.add_argument("--rounds", type=int, default=2, help="chunking rounds (each runs 1 and 2 workers)")
    parser.add_argument("--embed-rounds", type=int, default=2, help="whole-job rounds on one copy")
    parser.add_argument("--embed-mb", type=float, default=2.0, help="MB embedded by the whole-job runs")
    parser.add_argument("--embed-only", action="store_true", help="keep the chunking runs already in --out")
    parser.add_argument("--append", action="store_true",
                        help="with --embed-only: keep the whole-job runs too and add rounds in the opposite order")
    parser.add_argument("--out", default=str(ROOT / "results" / "batch_throughput.json"))
    args = parser.parse_args()
    docs = corpus(args.copies)
    one_copy = embed_corpus(docs[: len(CHROMA_CORPORA) + 2], args.embed_mb)
    result = {"machine": f"{platform.machine()}, {os.cpu_count()} cores shared with other jobs",
              "engine": f"dask/distributed {__import__('distributed').__version__}, LocalCluster, 1 thread a worker",
              "model": "all-MiniLM-L6-v2 (naive), torch threads 1 a worker", "strategy": STRATEGY,
              "documents_chunk_stage": len(docs), "documents_embed_stage": len(one_copy), "runs": []}

    def record(run: dict) -> None:
        """Keep every finished run on disk at once, so an interrupted benchmark still reports."""
        result["runs"].append(run)
        print(run, flush=True)
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")

    if args.embed_only:
        kept = json.loads(Path(args.out).read_text())["runs"]
        result["runs"] = kept if args.append else [r for r in kept if r["stage"] == "chunk"]
    else:
        for workers in interleaved(args.rounds):
            record(chunk_run(docs, workers))
    with tempfile.TemporaryDirectory() as work:
        done = sum(r["stage"] != "chunk" for r in result["runs"]) // 2
        for workers in interleaved(done + args.embed_rounds)[2 * done:]:
            record(embed_run(one_copy, workers, Path(work)))
    print(f"wrote {args.out}")
