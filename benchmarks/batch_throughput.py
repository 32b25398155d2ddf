"""Throughput of the batch job (rag_tools.batch on Dask): the driver-writes design against workers writing
fragments, and 1 against 2 workers.

Usage (from the repository root):
  python -m benchmarks.batch_throughput [--minilm-mb 0.2] [--hash-mb 2]     # -> results/batch_designs.json
  python -m benchmarks.batch_throughput --scaling [--copies 10] [--rounds 2] [--embed-rounds 2]
                                                                            # -> results/batch_throughput.json

Designs (the default run): "driver writes" is the job as it was before issue 49 (workers chunk and embed,
`embed_partition`; every row with its vector goes back to the driver, which writes each partition with
`ChunkStore.reindex_documents` in partition order); "workers write" is `run_batch` now (workers write Lance
fragments; the driver receives their metadata and commits). Both run in one invocation on the same documents,
on a LocalCluster of 1 and of 2 workers and on 2 worker processes started by hand against a scheduler on
127.0.0.1 (as on a cluster), in alternating order. Measured: documents a second, the driver's share of the wall
time (seconds inside the store's write or commit, over the job's seconds) and the bytes sent to the driver
(the pickled results). Two embedders: all-MiniLM-L6-v2 on --minilm-mb MB, and a hashed bag of words of 384
dimensions on --hash-mb MB, which stands for a model so fast (a GPU) that the store's writes dominate.
Then an estimate for N machines (printed, stated as an estimate).

The --scaling run (notebook 14, section 5):

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
import pickle
import platform
import socket
import subprocess
import sys
import tempfile
import time
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from course_lib.settings import apply_quiet_offline_env

apply_quiet_offline_env()  # before the model and Dask are imported

from course_lib.chunking import Chunk, recursive_chunks  # noqa: E402
from course_lib.datasets import CHROMA_CORPORA, load_chroma_corpus, load_flores  # noqa: E402
from rag_tools.batch import (  # noqa: E402
    Document,
    MiniLMEmbedder,
    chunk_partition,
    embed_partition,
    local_client,
    partition,
    run_batch,
)
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


@dataclass(frozen=True)
class HashEmbedder:
    """A stand-in for a model on a GPU: hashed bag of words, 384 dimensions, unit length, nearly free."""

    name: str = "word-hash-384"
    dim: int = 384

    def __call__(self, text: str, chunks) -> np.ndarray:
        out = np.zeros((len(chunks), self.dim), np.float32)
        for i, c in enumerate(chunks):
            for word in c.text.lower().split():
                out[i, zlib.crc32(word.encode()) % self.dim] += 1
        out[:, 0] += 1e-3  # no all-zero vector for a chunk without words
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def warm_up_worker(embedder) -> None:
    """Load the tokenizer, the model if any, and Lance in a worker, before the clock starts."""
    import lance  # noqa: F401

    CHUNKER("warm up")
    embedder("warm up", [Chunk("warm up", 0, 7, 2)])


def driver_writes(docs: list[Document], store: ChunkStore, client, embedder, partitions_per_worker: int = 4) -> dict:
    """The design before issue 49: rows and vectors sent to the driver, which writes each partition in order."""
    parts = partition(docs, len(client.scheduler_info()["workers"]) * partitions_per_worker)
    began = time.perf_counter()
    driver = sent = chunks = 0
    futures = client.map(embed_partition, parts, chunker=CHUNKER, embedder=embedder, strategy=STRATEGY, pure=False)
    for future in futures:
        rows_by_doc = future.result()
        sent += len(pickle.dumps(rows_by_doc))
        t0 = time.perf_counter()
        chunks += store.reindex_documents(rows_by_doc)
        driver += time.perf_counter() - t0
    return {"seconds": time.perf_counter() - began, "driver_seconds": driver, "bytes_to_driver": sent,
            "chunks": chunks}


def workers_write(docs: list[Document], store: ChunkStore, client, embedder) -> dict:
    """The design now: `run_batch`, fragments written by the workers, the driver commits."""
    report = run_batch(docs, store, chunker=CHUNKER, strategy=STRATEGY, embedder=embedder, client=client,
                       progress=None)
    return {"seconds": report.seconds, "driver_seconds": report.driver_seconds,
            "bytes_to_driver": report.bytes_to_driver, "chunks": report.chunks}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def hand_started_cluster(n_workers: int):
    """A scheduler and `n_workers` worker processes started as commands, as on a cluster, on 127.0.0.1."""
    from distributed import Client

    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                               "--port", str(port), "--no-dashboard"], **quiet)]
    try:
        procs += [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1",
                                    "--host", "127.0.0.1", "--no-dashboard", "--no-nanny"], **quiet)
                  for _ in range(n_workers)]
        client = Client(address, timeout=120)
        client.wait_for_workers(n_workers, timeout=300)
        try:
            yield client
        finally:
            client.close()
    finally:
        for proc in procs[::-1]:
            proc.terminate()
            proc.wait(timeout=60)


def design_runs(docs: list[Document], embedder, label: str, work: Path, record, rounds: int) -> None:
    """Both designs on each cluster, `rounds` times, alternating which goes first."""
    clusters = [("LocalCluster", 1, lambda: local_client(1)), ("LocalCluster", 2, lambda: local_client(2)),
                ("hand-started", 2, lambda: hand_started_cluster(2))]
    tokens = sum(c.n_tokens for d in docs for c in CHUNKER(d.text))
    for k, (kind, workers, make) in enumerate(clusters):
        designs = [("driver writes", driver_writes), ("workers write", workers_write)]
        with make() as client:
            client.run(warm_up_worker, embedder)
            for r in range(rounds):
                order = designs if (k + r) % 2 == 0 else designs[::-1]
                for design, run in order:
                    store = ChunkStore(work / f"{label}_{kind}_{workers}_{design.replace(' ', '_')}_{r}", embedder.dim)
                    measured = run(docs, store, client, embedder)
                    assert len(store) == measured["chunks"], "the store does not hold every chunk once"
                    record({"embedder": label, "cluster": kind, "workers": workers, "design": design,
                            "documents": len(docs), "chunks": measured["chunks"], "cl100k_tokens": tokens,
                            "seconds": round(measured["seconds"], 3),
                            "documents_per_s": round(len(docs) / measured["seconds"], 4),
                            "driver_seconds": round(measured["driver_seconds"], 3),
                            "driver_share": round(measured["driver_seconds"] / measured["seconds"], 4),
                            "bytes_to_driver": measured["bytes_to_driver"],
                            "bytes_to_driver_per_document": round(measured["bytes_to_driver"] / len(docs))})
            if kind == "LocalCluster":
                client.cluster.close()


def medians(runs: list[dict]) -> list[dict]:
    """One row per embedder, cluster, workers and design: the median of its rounds."""
    keys = sorted({(r["embedder"], r["cluster"], r["workers"], r["design"]) for r in runs})
    out = []
    for key in keys:
        same = [r for r in runs if (r["embedder"], r["cluster"], r["workers"], r["design"]) == key]
        row = dict(zip(("embedder", "cluster", "workers", "design"), key), rounds=len(same),
                   documents=same[0]["documents"], chunks=same[0]["chunks"])
        for field in ("seconds", "documents_per_s", "driver_seconds", "driver_share", "bytes_to_driver",
                      "bytes_to_driver_per_document"):
            row[field] = round(float(np.median([r[field] for r in same])), 4)
        out.append(row)
    return out


def estimates(runs: list[dict], machines: int = 10, workers_per_machine: int = 2) -> list[dict]:
    """Amdahl's law with the driver's share at 1 worker as the serial part, and the driver's own ceiling.

    An estimate, not a measurement: it assumes every worker keeps the 1-worker rate (the work is spread
    evenly, the shared disk or object store keeps up) and that the driver's time per document stays what
    it was with 2 workers here.
    """
    out = []
    for label in sorted({r["embedder"] for r in runs}):
        for design in ("driver writes", "workers write"):
            one = next(r for r in runs if (r["embedder"], r["design"], r["workers"], r["cluster"]) ==
                       (label, design, 1, "LocalCluster"))
            two = next(r for r in runs if (r["embedder"], r["design"], r["workers"], r["cluster"]) ==
                       (label, design, 2, "LocalCluster"))
            n = machines * workers_per_machine
            serial = one["driver_share"]
            speedup = 1 / (serial + (1 - serial) / n)
            ceiling = two["documents"] / two["driver_seconds"] if two["driver_seconds"] else float("inf")
            out.append({"embedder": label, "design": design, "workers": n,
                        "per_worker_documents_per_s": one["documents_per_s"], "serial_share": serial,
                        "amdahl_speedup": round(speedup, 2),
                        "amdahl_documents_per_s": round(speedup * one["documents_per_s"], 3),
                        "driver_ceiling_documents_per_s": round(ceiling, 3),
                        "driver_ceiling_workers": round(ceiling / one["documents_per_s"], 1),
                        "estimate_documents_per_s": round(min(ceiling, speedup * one["documents_per_s"]), 3)})
    return out


def compare_designs(args) -> None:
    """The default run: both designs, both embedders, three clusters; ratios and the estimate printed."""
    docs = corpus(1)
    sources = docs[: len(CHROMA_CORPORA) + 2]
    result = {"machine": f"{platform.machine()}, {os.cpu_count()} cores shared with other jobs",
              "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
              "engine": f"dask/distributed {__import__('distributed').__version__}, 1 thread a worker; "
                        f"pylance {__import__('lance').__version__}",
              "strategy": STRATEGY, "runs": []}

    def record(run: dict) -> None:
        result["runs"].append(run)
        print({k: run[k] for k in ("embedder", "cluster", "workers", "design", "documents_per_s", "driver_share",
                                   "bytes_to_driver")}, flush=True)
        Path(args.designs_out).write_text(json.dumps(result, indent=1) + "\n")

    with tempfile.TemporaryDirectory() as work:
        design_runs(embed_corpus(sources, args.hash_mb), HashEmbedder(), "word-hash-384", Path(work), record,
                    args.design_rounds)
        design_runs(embed_corpus(sources, args.minilm_mb), MiniLMEmbedder(), "all-MiniLM-L6-v2", Path(work), record,
                    1)
    summarise(result)
    result["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    Path(args.designs_out).write_text(json.dumps(result, indent=1) + "\n")
    for line in result["ratios_workers_over_driver"] + result["estimate_10_machines_2_workers"]:
        print(line)
    print(f"wrote {args.designs_out}")


def summarise(result: dict) -> None:
    """Add the medians of the rounds, the ratios of the designs and the estimate to `result`."""
    runs = result["medians"] = medians(result["runs"])
    result["ratios_workers_over_driver"] = [
        {"embedder": r["embedder"], "cluster": r["cluster"], "workers": r["workers"],
         "documents_per_s": round(r["documents_per_s"] / o["documents_per_s"], 2),
         "bytes_to_driver": round(r["bytes_to_driver"] / o["bytes_to_driver"], 4)}
        for r in runs if r["design"] == "workers write"
        for o in runs if o["design"] == "driver writes" and
        (o["embedder"], o["cluster"], o["workers"]) == (r["embedder"], r["cluster"], r["workers"])]
    result["estimate_10_machines_2_workers"] = estimates(runs)


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
    parser.add_argument("--scaling", action="store_true", help="the 1-against-2-worker run of notebook 14, section 5")
    parser.add_argument("--minilm-mb", type=float, default=0.2, help="MB embedded with MiniLM per design run")
    parser.add_argument("--hash-mb", type=float, default=2.0, help="MB embedded with the hash stand-in per run")
    parser.add_argument("--design-rounds", type=int, default=3, help="rounds of each hash stand-in run")
    parser.add_argument("--designs-out", default=str(ROOT / "results" / "batch_designs.json"))
    args = parser.parse_args()
    if not args.scaling:
        compare_designs(args)
        raise SystemExit(0)
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
