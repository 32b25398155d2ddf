"""Chunks in a real, embedded vector store (LanceDB), with metadata, filters and citations.

Notebook 14, "From notebook to production", teaches this module. `VectorIndex` in
`course_lib.evaluation` keeps the vectors in one NumPy matrix, which is right for measuring;
`ChunkStore` keeps them on disk in a LanceDB table, one row a chunk:

| column | meaning |
|---|---|
| `chunk_id` | `"<doc_id>#<chunk_index>"`, the key a re-index matches on |
| `doc_id`, `chunk_index` | the source document and the chunk's rank in it |
| `start`, `end` | character offsets: `document[start:end] == text` |
| `text` | the chunk's text |
| `heading_path` | the Markdown headings around the chunk, without `#`, joined by `" > "` (`""` if none) |
| `page_start`, `page_end` | 1-based pages of a paged text (pages end with a form feed), else null |
| `strategy`, `model` | how the chunk was cut and embedded, so stale rows can be found |
| `doc_sha256` | the hash of the document version the chunk came from |
| `content_hash` | the hash of model, strategy and the exact text embedded: equal hash, reusable vector |
| `vector` | the embedding, float32 |

Why LanceDB (measured in benchmarks/README.md, "Vector store and batch job"): re-indexing a document is one
`merge_insert` that updates, inserts and deletes in a single commit, so a crash leaves the
document old or new, never mixed or empty; Chroma needs a delete and an add, two commits.
LanceDB sends no telemetry (its OpenTelemetry bridge is opt-in).

What is guaranteed, and how far:
- One writer at a time. Every write (`reindex`, `reindex_documents`, `update_document`, `add`,
  `commit_fragments`, `compact`) holds an exclusive lock on the file `.write.lock` in the store folder
  (`fcntl.flock`; `msvcrt.locking` on Windows), so two processes indexing the same new document one after the
  other store it once. A batch job's workers write fragments without it (`write_fragments`); only the commit
  that makes them visible takes it.
- Readers never take that lock (only creating the table does), so a store on a read-only file system
  opens for search, and a slow writer never blocks a reader. `update_document` embeds before it takes the
  lock, so a slow `embed` does not block other writers either (it re-checks the document under the lock).
  What a reader sees during a write: the last commit, whole; the write appears at once when it commits,
  never half-done. A `compact()` in another process may delete the files of the version a read has just
  started on: the read is retried once, on the latest version.
- A process killed during a write leaves each document old or new, never mixed. A power cut is covered
  only as far as LanceDB's own writes reach the disk.
- `DamagedStoreError` (delete the folder and re-index) only when the folder fails a check: its versions
  are listed, the latest manifest parses and its data files hold the rows it records. Any other failure
  (a full disk, a read that lost a race with `compact()` twice) is an `OSError` that says what happened and
  that the store is intact; a vector that is not finite, or all zeros, is a `ValueError` before any write.
- Every commit keeps the old version's files: `compact()` merges them and deletes old versions.

Install: `pip install -r requirements-store.txt` (or `make setup-store`).
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

try:  # an exclusive lock for writers: fcntl on Linux and macOS, msvcrt on Windows
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None
    import msvcrt

import numpy as np

from course_lib.chunking import Chunk, markdown_sections
from rag_tools.embedders import Embedder, embedder_identity

__all__ = ["FILTER_COLUMNS", "INSTALL_HINT", "ChunkStore", "DamagedStoreError", "DocumentChangedError", "Hit",
           "StoreRow", "Update", "batch_running", "chunk_rows", "content_hash", "write_fragments"]

INSTALL_HINT = "pip install -r requirements-store.txt   (or: make setup-store)"
TABLE = "chunks"
HEADING_SEPARATOR = " > "
LOCK_FILE = ".write.lock"
BATCH_LOCK_FILE = ".batch.lock"  # held shared by every running batch job (`batch_running`)
FILTER_COLUMNS = ("doc_id", "chunk_index", "heading_path", "page_start", "page_end", "strategy", "model",
                  "doc_sha256")
_META = ["chunk_index", "start", "end", "text", "heading_path", "page_start", "page_end", "strategy", "model",
         "doc_sha256", "content_hash"]
_ANN_KINDS = ("IVF_PQ", "IVF_HNSW_SQ", "IVF_FLAT")
_OS_ERROR = re.compile(r"\(os error (\d+)\)")  # how LanceDB's Rust errors carry the OS error number
_RUST_SOURCE = re.compile(r",\s*/\S+\.rs:\d+:\d+")  # the crate source path LanceDB appends to a message
_T = TypeVar("_T")


def _lancedb():
    try:
        import lancedb
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"rag_tools.store needs LanceDB, an optional extra: {INSTALL_HINT}") from exc
    return lancedb


def _schema(dim: int):
    import pyarrow as pa

    return pa.schema([
        pa.field("chunk_id", pa.string(), nullable=False),
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("chunk_index", pa.int32(), nullable=False),
        pa.field("start", pa.int64(), nullable=False),
        pa.field("end", pa.int64(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        pa.field("heading_path", pa.string(), nullable=False),
        pa.field("page_start", pa.int32(), nullable=True),
        pa.field("page_end", pa.int32(), nullable=True),
        pa.field("strategy", pa.string(), nullable=False),
        pa.field("model", pa.string(), nullable=False),
        pa.field("doc_sha256", pa.string(), nullable=False),
        pa.field("content_hash", pa.string(), nullable=False),
        pa.field("vector", pa.list_(pa.float32(), dim), nullable=False),
    ])


@dataclass(frozen=True)
class _Placed:
    """What a stored chunk and a search hit share: where the chunk is and how it was made."""

    doc_id: str
    chunk_index: int
    start: int
    end: int
    text: str
    heading_path: str
    page_start: int | None
    page_end: int | None
    strategy: str
    model: str

    @property
    def citation(self) -> str:
        """Where to check the chunk: `doc_id[start:end]`, its pages if any, and its heading path if any."""
        where = f"{self.doc_id}[{self.start}:{self.end}]"
        if self.page_start is not None:
            pages = (f"p. {self.page_start}" if self.page_start == self.page_end
                     else f"pp. {self.page_start}-{self.page_end}")
            where = f"{where}, {pages}"
        return f"{where} ({self.heading_path})" if self.heading_path else where


@dataclass(frozen=True)
class StoreRow(_Placed):
    """One chunk ready to store: its place in the source, its metadata, its hashes and its vector."""

    doc_sha256: str
    content_hash: str
    vector: np.ndarray

    @property
    def chunk_id(self) -> str:
        return f"{self.doc_id}#{self.chunk_index}"


@dataclass(frozen=True)
class Hit(_Placed):
    """One search result: the chunk, where it comes from, and its cosine similarity."""

    score: float


@dataclass(frozen=True)
class Update:
    """What `update_document` did: vectors computed, vectors reused, rows written, the new version."""

    embedded: int
    reused: int
    rows: int
    version: int


class DocumentChangedError(RuntimeError):
    """Another writer re-indexed the document while `update_document` was embedding it; nothing was written."""


class DamagedStoreError(RuntimeError):
    """The store folder fails its check (versions listed, manifest parsed, rows counted); the message names
    it and the fix."""


def _check_doc_id(doc_id: Any) -> str:
    if not isinstance(doc_id, str):
        raise TypeError(f"doc_id must be a str, not {type(doc_id).__name__}")
    if not doc_id or "#" in doc_id:
        raise ValueError(f"doc_id={doc_id!r}: use a non-empty id without '#' (the store keys chunks as doc_id#index)")
    return doc_id


def _sorted_state(rows: list[dict], columns: Sequence[str]) -> list[tuple]:
    """A document's stored rows as sorted tuples of `columns`, to compare two reads."""
    return sorted(tuple(r[c] for c in columns) for r in rows)


def _heading_path(sections: list[tuple[int, int, list[str]]], chunk: Chunk) -> str:
    """The headings around `chunk`, without their `#` marks, as `retrieval.heading_path` gives them."""
    path = chunk.metadata.get("headings")
    if path is None:
        path = next((p for start, end, p in sections if start <= chunk.start < end), [])
    return HEADING_SEPARATOR.join(h.lstrip("#").strip() for h in path)


def _pages(text: str, chunk: Chunk) -> tuple[int | None, int | None]:
    """1-based first and last page of `chunk` in a text whose pages end with a form feed."""
    if "\f" not in text:
        return None, None
    first = text.count("\f", 0, chunk.start) + 1
    return first, first + text.count("\f", chunk.start, max(chunk.start, chunk.end - 1))


def content_hash(embedded_text: str, *, strategy: str, model: str) -> str:
    """sha256 of what decides a vector: the model, the strategy and the exact text embedded."""
    return hashlib.sha256("\0".join((model, strategy, embedded_text)).encode("utf-8")).hexdigest()


def chunk_rows(doc_id: str, text: str, chunks: Sequence[Chunk], vectors: Any, *,
               strategy: str, model: str, embedded_texts: Sequence[str] | None = None) -> list[StoreRow]:
    """The rows `ChunkStore.reindex` writes for one document's chunks and their vectors.

    Checks that every chunk's offsets point at its text in `text` and that there is one
    vector a chunk; the heading path comes from the chunk's `metadata["headings"]` or else
    from the Markdown section the chunk starts in; pages are counted from form feeds. `embedded_texts`
    are the texts the vectors were computed from when they differ from the chunks' (a contextual
    header in front, say); they decide `content_hash`. Taught in
    notebooks/14_from_notebook_to_production.ipynb, section 1.
    """
    _check_doc_id(doc_id)
    if not isinstance(text, str):
        raise TypeError(f"text must be the document as a str, not {type(text).__name__}")
    for name, value in (("strategy", strategy), ("model", model)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name}={value!r}: name it, e.g. strategy='recursive:256', model='all-MiniLM-L6-v2'")
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or len(vectors) != len(chunks):
        raise ValueError(f"vectors has shape {vectors.shape} for {len(chunks)} chunks; pass one row per chunk")
    _check_vectors(vectors)
    embedded = _embedded_texts(chunks, embedded_texts)
    _check_chunks(text, chunks)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    sections = markdown_sections(text) if text.strip() else []
    return [StoreRow(doc_id, i, c.start, c.end, c.text, _heading_path(sections, c), *_pages(text, c), strategy,
                     model, digest, content_hash(e, strategy=strategy, model=model), v)
            for i, (c, e, v) in enumerate(zip(chunks, embedded, vectors))]


def _check_chunks(text: str, chunks: Sequence[Chunk]) -> None:
    """Every chunk is a `Chunk` whose offsets point at its own text in `text`."""
    for i, c in enumerate(chunks):
        if not isinstance(c, Chunk):
            raise TypeError(f"chunks[{i}] must be a Chunk, not {type(c).__name__}")
        if text[c.start:c.end] != c.text:
            raise ValueError(f"chunks[{i}] says [{c.start}:{c.end}] but the document has other text there; "
                             "chunk this very text (offsets must point back to the source)")


def _check_vectors(vectors: np.ndarray) -> None:
    """Refuse, before any write, a vector LanceDB would refuse (NaN, infinity) or cosine cannot use (zeros)."""
    finite = np.isfinite(vectors).all(axis=1)
    bad = np.flatnonzero(~finite | ~vectors.any(axis=1))
    if bad.size:
        i = int(bad[0])
        what = "holds NaN or infinity" if not finite[i] else "is all zeros (no direction for cosine similarity)"
        raise ValueError(f"{bad.size} of {len(vectors)} vectors are unusable (vectors[{i}] {what}); check the "
                         "embedding function's output (nothing was written)")


def _cause(error: BaseException) -> tuple[int | None, str]:
    """The OS error number behind a LanceDB error, if any, and its first line without the Rust source path."""
    number = getattr(error, "errno", None)
    found = _OS_ERROR.search(str(error))
    if number is None and found:
        number = int(found.group(1))
    lines = str(error).strip().splitlines() or [type(error).__name__]
    return number, _RUST_SOURCE.sub("", lines[0])[:200]


def _embedded_texts(chunks: Sequence[Chunk], embedded_texts: Sequence[str] | None) -> list[str]:
    if embedded_texts is None:
        return [c.text for c in chunks]
    if isinstance(embedded_texts, str) or len(embedded_texts) != len(chunks):
        raise ValueError(f"embedded_texts must be a list with one text a chunk ({len(chunks)}), "
                         "or None to embed the chunks' own texts")
    return list(embedded_texts)


def _arrow_rows(rows: Sequence[StoreRow], dim: int):
    """`rows` as an Arrow table of the store's schema; a vector of another dimension or unusable is refused."""
    import pyarrow as pa

    vectors = np.stack([r.vector for r in rows]).astype(np.float32) if rows else np.empty((0, dim), np.float32)
    if vectors.shape[1] != dim:
        raise ValueError(f"vectors have dimension {vectors.shape[1]}; this store holds {dim}")
    _check_vectors(vectors)
    columns = {name: [getattr(r, name) for r in rows] for name in _schema(dim).names if name != "vector"}
    columns["chunk_id"] = [r.chunk_id for r in rows]
    columns["vector"] = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), dim)
    return pa.table(columns, schema=_schema(dim))


def _lance():
    try:
        import lance
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"writing fragments needs pylance, part of the optional extra: {INSTALL_HINT}") from exc
    return lance


def write_fragments(path: str | Path, rows: Sequence[StoreRow], dim: int) -> list:
    """Write `rows` as Lance fragments into the store at `path`, uncommitted; return their metadata.

    What a batch job's worker does (taught in notebooks/14_from_notebook_to_production.ipynb, section 4): the
    files land in the store's folder, in its schema and data storage version, but no reader sees them until
    `ChunkStore.commit_fragments` commits them; the metadata returned is small (file names and row counts, no
    vectors). Files never committed are deleted by `ChunkStore.clean_uncommitted`.
    """
    if not rows:
        return []
    lance = _lance()
    uri = str(Path(path) / f"{TABLE}.lance")
    stored = lance.dataset(uri)
    records = _arrow_rows(rows, dim)
    size = stored.schema.field("vector").type.list_size
    if size != dim:
        raise ValueError(f"the store in {path} holds {size}-dimensional vectors, not {dim}; pass dim={size}")
    return lance.fragment.write_fragments(records, uri, schema=records.schema,
                                          data_storage_version=stored.data_storage_version)


@contextmanager
def _shared_lock(folder: Path, name: str) -> Iterator[None]:
    """Hold a shared lock on `folder/name` (POSIX; on Windows nothing is held)."""
    with open(folder / name, "a+b") as handle:
        if fcntl is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@contextmanager
def _exclusive_or_none(folder: Path, name: str) -> Iterator[bool]:
    """Try to hold `folder/name` exclusively without waiting: yields False while another process holds it
    (always False on Windows, where this module takes no such lock)."""
    with open(folder / name, "a+b") as handle:
        if fcntl is None:  # pragma: no cover - Windows
            yield False
            return
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@contextmanager
def batch_running(folder: str | Path) -> Iterator[None]:
    """Mark a batch job as writing fragments into the store at `folder` for as long as it runs.

    Several jobs may run at once; while any does, `compact` and `clean_uncommitted` keep the files no version
    lists yet (they may be a running job's fragments, about to be committed).
    """
    with _shared_lock(Path(folder), BATCH_LOCK_FILE):
        yield


@contextmanager
def _write_lock(folder: Path) -> Iterator[None]:
    """Hold the store's exclusive writer lock; another writer waits here until it is released."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK_FILE, "a+b") as handle:
        if fcntl is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        else:  # pragma: no cover - Windows: lock the file's first byte (retries for 10 s, then raises)
            msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            else:  # pragma: no cover - Windows
                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)


def _folder_size(folder: Path) -> tuple[int, int]:
    """(bytes, files) under `folder`."""
    sizes = [f.stat().st_size for f in folder.rglob("*") if f.is_file()]
    return sum(sizes), len(sizes)


def _sql_literal(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, np.integer)):
        raise TypeError(f"filter value {value!r} must be a str or an int")
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(int(value))


def _where(filters: Mapping[str, Any] | None) -> str | None:
    """SQL for equality filters: {"doc_id": "a"} or a list of allowed values {"doc_id": ["a", "b"]}."""
    if not filters:
        return None
    if not isinstance(filters, Mapping):
        raise TypeError("where must be a dict column -> value (or list of values)")
    clauses = []
    for column, value in filters.items():
        if column not in FILTER_COLUMNS:
            raise ValueError(f"cannot filter on {column!r}; filter on one of {list(FILTER_COLUMNS)}")
        if isinstance(value, (list, tuple, set, frozenset)):
            if not value:
                raise ValueError(f"where[{column!r}] is an empty list: nothing could match; drop the filter")
            values = sorted(value, key=repr)
            clauses.append(f"`{column}` IN ({', '.join(_sql_literal(v) for v in values)})")
        else:
            clauses.append(f"`{column}` = {_sql_literal(value)}")
    return " AND ".join(clauses)


class ChunkStore:
    """A folder on disk holding one LanceDB table of chunks (taught in
    notebooks/14_from_notebook_to_production.ipynb, sections 1-3).

    `ChunkStore(path, dim)` opens the table, creating it if missing. Vectors are compared by
    cosine similarity. Without an ANN index, `search` scans every vector (exact); after
    `build_ann_index` it searches the index (approximate). One process writes at a time (a lock
    file in the folder); any number may read, without waiting for it (they see the last commit).
    """

    def __init__(self, path: str | Path, dim: int):
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim={dim!r}: pass the embedding dimension, e.g. 384 for all-MiniLM-L6-v2")
        self.path = Path(path)
        self.dim = dim
        if self.path.exists() and not self.path.is_dir():
            raise ValueError(f"{self.path} is a file; a store is a folder: pass another path")
        self._table = self._read("opening", self._open)
        self._read("opening", self._check_schema)

    def _open(self):
        """Open the table without the writer lock; create it under the lock if the folder holds none."""
        # read_consistency_interval=0: every read sees the latest commit, also one made by another process
        self._db = _lancedb().connect(str(self.path), read_consistency_interval=timedelta(0))
        try:
            if TABLE in self._db.list_tables().tables:
                return self._db.open_table(TABLE)
        except ValueError:  # no readable version: being created by another process, or damaged (decided below)
            pass
        with _write_lock(self.path):  # a creator holds it until its table is whole
            if TABLE in self._db.list_tables().tables:
                try:
                    return self._db.open_table(TABLE)
                except ValueError as exc:  # LanceDB says "not found" when the folder holds no version
                    raise DamagedStoreError(self._damaged(f"{TABLE}.lance holds no readable version")) from exc
            if (self.path / f"{TABLE}.lance").exists():
                raise DamagedStoreError(self._damaged(f"its table folder {TABLE}.lance has no readable versions"))
            return self._db.create_table(TABLE, schema=_schema(self.dim))

    def _damaged(self, why: str) -> str:
        return (f"the vector store in {self.path} is damaged ({why}); rebuild it: delete the folder and "
                "re-index from the documents (ChunkStore.reindex), or open another folder")

    def _check_folder(self) -> str:
        """Raise `DamagedStoreError` unless the folder is whole: its versions are listed, the latest manifest
        parses and its data files hold the rows it records. Returns what was checked, for a message."""
        try:
            table = _lancedb().connect(str(self.path)).open_table(TABLE)
            versions = table.list_versions()
            rows = table.count_rows()
            scanned = table.search().select(["chunk_id"]).limit(None).to_arrow().num_rows
        except (RuntimeError, OSError, ValueError) as exc:
            raise DamagedStoreError(self._damaged(_cause(exc)[1])) from exc
        if scanned != rows:
            raise DamagedStoreError(self._damaged(f"its manifest records {rows} rows, its data files hold {scanned}"))
        return f"version {versions[-1]['version']}, {rows} rows readable"

    def _failure(self, what: str, error: BaseException, advice: str) -> Exception:
        """The error to raise when LanceDB fails: `DamagedStoreError` only when the folder fails its check,
        else an `OSError` saying what happened and that the store is intact."""
        number, cause = _cause(error)
        if number in (errno.EACCES, errno.EPERM, errno.EROFS):  # not damage: say so without reading further
            return OSError(number, f"{what} the vector store in {self.path}: {os.strerror(number)}; "
                                   "the store was not changed")
        checked = self._check_folder()
        if number == errno.ENOSPC:
            cause, advice = "the disk is full", "free some space and retry"
        return OSError(number or errno.EIO, f"{what} the vector store in {self.path} failed ({cause}); the store "
                                            f"is intact ({checked}): {advice}")

    def _attempt(self, what: str, action: Callable[[], _T], advice: str) -> _T:
        """Run `action`; a LanceDB failure raises `_failure`'s error."""
        try:
            return action()
        except DamagedStoreError:
            raise
        except (RuntimeError, OSError) as exc:
            raise self._failure(what, exc, advice) from exc

    def _read(self, what: str, action: Callable[[], _T]) -> _T:
        """Run a read, and once more if it fails: another process's `compact()` may have deleted the files of
        the version it had started on (the second try reads the latest version)."""
        try:
            return action()
        except DamagedStoreError:
            raise
        except (RuntimeError, OSError):
            pass
        return self._attempt(what, action, "it failed twice, perhaps racing another process's compact(); retry")

    def _check_schema(self) -> None:
        schema = self._table.schema
        missing = [name for name in _schema(self.dim).names if name not in schema.names]
        if missing:
            raise ValueError(f"{self.path} was written by an older course_lib (no column {missing[0]!r}); "
                             "re-index its documents into a new folder")
        stored = schema.field("vector").type.list_size
        if stored != self.dim:
            raise ValueError(f"{self.path} stores {stored}-dimensional vectors, not {self.dim}; "
                             "open it with the same dim or use another folder")
        self._table.count_rows()  # reads the manifest: a damaged one fails here, not at the first search

    def __len__(self) -> int:
        return self._read("reading", self._table.count_rows)

    @property
    def version(self) -> int:
        """The table's commit number: every write that succeeds adds one."""
        return self._table.version

    def _records(self, rows: Sequence[StoreRow]):
        return _arrow_rows(rows, self.dim)

    def reindex(self, doc_id: str, rows: Sequence[StoreRow]) -> int:
        """Replace every chunk of `doc_id` with `rows` in ONE commit; return the number written.

        One `merge_insert` keyed on `chunk_id` updates the chunks that still exist, inserts the
        new ones and deletes this document's chunks that are gone. Readers and a crash see
        the document either as it was or as it is now, never half-updated or empty
        (taught in notebooks/14_from_notebook_to_production.ipynb, section 2). Other documents are not
        touched. `rows=[]` removes the document.
        """
        return self.reindex_documents({doc_id: rows})

    def reindex_documents(self, rows_by_doc: Mapping[str, Sequence[StoreRow]]) -> int:
        """`reindex` for several documents at once, still in ONE commit (the batch job's write)."""
        if not isinstance(rows_by_doc, Mapping) or not rows_by_doc:
            raise ValueError("rows_by_doc must be a non-empty dict doc_id -> rows (rows may be [] to remove it)")
        rows = []
        for doc_id, doc_rows in rows_by_doc.items():
            _check_doc_id(doc_id)
            for r in doc_rows:
                if r.doc_id != doc_id:
                    raise ValueError(f"a row of {r.doc_id!r} was passed as a row of {doc_id!r}")
            rows += doc_rows
        records = self._records(rows)
        ids = ", ".join(_sql_literal(d) for d in sorted(rows_by_doc))
        with _write_lock(self.path):
            self._merge(records, f"doc_id IN ({ids})")
        return len(rows)

    def _merge(self, records: Any, delete_where: str) -> None:
        """One `merge_insert` commit: update and insert `records`, delete the rows of `delete_where` not in them."""
        self._attempt("writing to", lambda: (
            self._table.merge_insert("chunk_id")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .when_not_matched_by_source_delete(delete_where)
            .execute(records)), "retry the write")

    def _stored(self, where: str, columns: list[str]) -> list[dict]:
        """`columns` of the rows matching `where` (one document's), read without the lock."""
        return self._read("reading", lambda: self._table.search().where(where).select(columns).limit(None)
                          .to_arrow().to_pylist())

    def update_document(self, doc_id: str, text: str, chunks: Sequence[Chunk],
                        embed: Callable[[list[str]], Any] | Embedder | None = None, *, strategy: str,
                        model: str | None = None, embedded_texts: Sequence[str] | None = None,
                        embed_document: Callable[[str, Sequence[Chunk]], Any] | None = None) -> Update:
        """Re-index an edited document, embedding only the chunks whose embedded text is new.

        Each chunk's `content_hash` (model, strategy and the exact text embedded, see
        `embedded_texts`) is looked up among the document's stored rows: a stored vector is
        reused, and `embed(texts)` is called once, for the rest only. `embed` may also be an embedder
        of `rag_tools.embedders` (a local model, the multilingual extra, an endpoint): its `encode` is
        used, with its document prefix, and `model` defaults to its identity (name, weights, window,
        prefix). Late chunking cannot reuse anything, since every token saw the whole document: pass
        `embed_document(text, chunks)` instead of `embed`, and every vector is computed again.

        The embedding runs before the writer lock is taken, so a slow model or endpoint never blocks
        the writers of other documents; the lock is held only to re-read this document's stored rows and
        commit, in one commit as `reindex` (taught in notebooks/14_from_notebook_to_production.ipynb,
        section 2). If another writer re-indexed this document meanwhile (its stored chunks' hashes are not
        the ones read before embedding), nothing is written and `DocumentChangedError` says so: the other
        version stands whole, as it would have had it taken the lock after this call.
        """
        if (embed is None) == (embed_document is None):
            raise ValueError("pass exactly one of embed (a function of the texts to embed, or an embedder) and "
                             "embed_document (a function of the whole text and its chunks, for late chunking)")
        if hasattr(embed, "encode") and hasattr(embed, "name"):  # an embedder of the protocol
            model = embedder_identity(embed) if model is None else model
            embed = embed.encode
        if model is None:
            raise ValueError("model=None: name the model the vectors come from, e.g. model='all-MiniLM-L6-v2' "
                             "(it can be left out only when embed is an embedder)")
        embedded = _embedded_texts(chunks, embedded_texts)
        _check_chunks(text, chunks)  # before embedding: chunks of another text would waste every vector
        hashes = [content_hash(e, strategy=strategy, model=model) for e in embedded]
        where = f"doc_id = {_sql_literal(_check_doc_id(doc_id))}"
        state = ["chunk_index", "doc_sha256", "content_hash"]  # what the re-check under the lock compares
        before = self._stored(where, [*state, "vector"])  # read without the lock, as any reader
        if embed_document is not None:
            vectors = np.asarray(embed_document(text, chunks), dtype=np.float32)
            fresh = list(range(len(chunks)))
        else:
            known = {r["content_hash"]: r["vector"] for r in before}
            fresh = [i for i, h in enumerate(hashes) if h not in known]
            vectors = np.zeros((len(chunks), self.dim), np.float32)
            for i, h in enumerate(hashes):
                if h in known:
                    vectors[i] = known[h]
            if fresh:
                computed = np.asarray(embed([embedded[i] for i in fresh]), dtype=np.float32)
                if computed.shape != (len(fresh), self.dim):
                    raise ValueError(f"embed returned shape {computed.shape} for {len(fresh)} texts; "
                                     f"return one {self.dim}-dimensional vector a text")
                vectors[fresh] = computed
        rows = chunk_rows(doc_id, text, chunks, vectors, strategy=strategy, model=model,
                          embedded_texts=embedded_texts)
        records = self._records(rows)
        with _write_lock(self.path):  # held for the re-check and the commit only, never while embedding
            if _sorted_state(self._stored(where, state), state) != _sorted_state(before, state):
                raise DocumentChangedError(
                    f"{doc_id!r} was re-indexed by another writer while this update_document embedded; nothing "
                    "was written (the other version stands): call update_document again to store this text "
                    "(vectors of unchanged chunks are reused)")
            self._merge(records, where)
            version = self._table.version
        return Update(embedded=len(fresh), reused=len(chunks) - len(fresh), rows=len(rows), version=version)

    def add(self, rows: Sequence[StoreRow]) -> int:
        """Append rows of documents not yet in the store, in one commit (a bulk load).

        Use `reindex` for a document that may already be there: `add` does not check for
        duplicates, to stay fast when loading many new documents at once.
        """
        if rows:
            records = self._records(rows)
            with _write_lock(self.path):
                self._attempt("writing to", lambda: self._table.add(records), "retry the write")
        return len(rows)

    def commit_fragments(self, doc_ids: Sequence[str], fragments: Sequence[Any]) -> int:
        """Replace every chunk of `doc_ids` with the rows of `fragments` (from `write_fragments`) in ONE commit.

        The batch job's driver calls this with what a worker sent back: under the writer lock, one Lance
        `Update` transaction deletes the documents' stored rows (a fragment losing all its rows is dropped,
        the others get a deletion file) and adds the new fragments, so readers and a crash see all of
        `doc_ids` old or all new (taught in notebooks/14_from_notebook_to_production.ipynb, section 4).
        The fragments must hold rows of `doc_ids` only. Returns the new version.
        """
        if isinstance(doc_ids, str) or not doc_ids:
            raise ValueError("doc_ids must be a non-empty list of the documents the fragments replace")
        where = f"doc_id IN ({', '.join(_sql_literal(_check_doc_id(d)) for d in sorted(set(doc_ids)))})"
        with _write_lock(self.path):
            self._attempt("writing to", lambda: self._commit_update(where, list(fragments)), "retry the write")
        return self.version

    def _commit_update(self, where: str, fragments: list) -> None:
        """Delete the rows of `where` and add `fragments` in one Lance `Update` commit (caller holds the lock)."""
        lance = _lance()
        uri = str(self.path / f"{TABLE}.lance")
        dataset = lance.dataset(uri)
        addresses = dataset.to_table(columns=[], filter=where, with_row_address=True).column("_rowaddr")
        removed, updated = [], []
        for fragment_id in sorted({a >> 32 for a in addresses.to_pylist()}):  # a row address: fragment << 32 | row
            kept = dataset.get_fragment(fragment_id).delete(where)
            if kept is None:
                removed.append(fragment_id)
            else:
                updated.append(kept)
        if removed or updated or fragments:
            operation = lance.LanceOperation.Update(removed_fragment_ids=removed, updated_fragments=updated,
                                                    new_fragments=fragments)
            lance.LanceDataset.commit(uri, operation, read_version=dataset.version)

    def discard_fragments(self, fragments: Sequence[Any]) -> int:
        """Delete the data files of fragments written but not committed (a job that stops); return how many."""
        data = self.path / f"{TABLE}.lance" / "data"
        files = [data / f.path for fragment in fragments for f in fragment.files]
        for file in files:
            file.unlink(missing_ok=True)
        return len(files)

    def clean_uncommitted(self) -> int:
        """Delete the files that no version lists (fragments of a batch job that died, a write killed midway);
        return how many. Keeps every version, and does nothing while a batch job runs (`batch_running`)."""
        with _write_lock(self.path), _exclusive_or_none(self.path, BATCH_LOCK_FILE) as alone:
            if not alone:
                return 0
            dataset = _lance().dataset(str(self.path / f"{TABLE}.lance"))
            stats = self._attempt("cleaning", lambda: dataset.cleanup_old_versions(
                older_than=timedelta(days=36500), delete_unverified=True), "run clean_uncommitted() again")
        return stats.data_files_removed + stats.deletion_files_removed

    def compact(self) -> dict[str, int]:
        """Merge small data files and delete every old version; return the folder's size before and after.

        Each commit keeps the previous version's files, so a store re-indexed often grows without
        bound. Run this when no reader needs an old version; it holds the writer lock, so no
        write of this module runs meanwhile. While a batch job runs, files that no version lists yet (its
        fragments) are kept: `clean_uncommitted` deletes them once no job runs.
        """
        bytes_before, files_before = _folder_size(self.path)
        with (_write_lock(self.path), _exclusive_or_none(self.path, BATCH_LOCK_FILE) as alone,
              warnings.catch_warnings()):
            # LanceDB warns that readers of an old version will fail: this module's readers retry on the latest
            warnings.filterwarnings("ignore", message=r"optimize\(cleanup_older_than=0\)", category=UserWarning)
            # files no version lists are deleted only when no batch job may be about to commit them
            self._attempt("compacting", lambda: self._table.optimize(cleanup_older_than=timedelta(0),
                                                                     delete_unverified=alone),
                          "run compact() again")
        bytes_after, files_after = _folder_size(self.path)
        return {"bytes_before": bytes_before, "bytes_after": bytes_after,
                "files_before": files_before, "files_after": files_after}

    def document_ids(self) -> list[str]:
        """The ids of the stored documents, sorted."""
        ids = self._read("reading", lambda: self._table.search().select(["doc_id"]).limit(None).to_arrow())
        return sorted(set(ids.column("doc_id").to_pylist()))

    def chunks_of(self, doc_id: str) -> list[dict]:
        """A document's stored chunks (every column but the vector), in chunk order."""
        where = f"doc_id = {_sql_literal(_check_doc_id(doc_id))}"
        rows = self._read("reading", lambda: self._table.search().where(where).select(_META).limit(None)
                          .to_arrow().to_pylist())
        return sorted(rows, key=lambda r: r["chunk_index"])

    def build_ann_index(self, kind: str = "IVF_PQ", *, num_partitions: int, num_sub_vectors: int | None = None,
                        m: int = 20, ef_construction: int = 300) -> None:
        """Build an approximate index over the vectors (cosine), replacing any previous one.

        `kind` "IVF_PQ": `num_partitions` k-means cells, each vector compressed to
        `num_sub_vectors` bytes (8-bit product quantization); "IVF_HNSW_SQ": an HNSW graph
        (`m` links a node, `ef_construction`) inside each cell over 8-bit scalar-quantized
        vectors; "IVF_FLAT": cells only. Rows written later are searched exactly until the
        index is rebuilt (taught in notebooks/14_from_notebook_to_production.ipynb, section 3).
        """
        if kind not in _ANN_KINDS:
            raise ValueError(f"kind={kind!r}; use one of {list(_ANN_KINDS)}")
        if len(self) < 256:
            raise ValueError(f"the store holds {len(self)} vectors; an ANN index needs at least 256 to train on "
                             "(search a small store exactly, without an index)")
        options: dict[str, Any] = {"metric": "cosine", "num_partitions": num_partitions, "index_type": kind}
        if kind == "IVF_PQ":
            if num_sub_vectors is None or self.dim % num_sub_vectors:
                raise ValueError(f"num_sub_vectors={num_sub_vectors!r} must divide dim={self.dim}, e.g. 48 for 384")
            options["num_sub_vectors"] = num_sub_vectors
        if kind == "IVF_HNSW_SQ":
            options.update(m=m, ef_construction=ef_construction)
        with _write_lock(self.path):
            self._attempt("indexing", lambda: self._table.create_index(vector_column_name="vector", replace=True,
                                                                       **options), "retry build_ann_index")

    def search(self, query: Any, k: int = 5, *, where: Mapping[str, Any] | None = None,
               exact: bool = False, nprobes: int | None = None, refine_factor: int | None = None,
               ef: int | None = None) -> list[Hit]:
        """The `k` chunks most similar to `query` (a vector), best first, filtered by `where`.

        `where` maps a metadata column to a value or a list of values, e.g.
        `{"doc_id": "handbook", "strategy": "recursive:256"}`; the filter applies before the
        search, so `k` results come back whenever `k` chunks match. `exact=True` scans every
        vector even if an index exists. With an index, `nprobes` (cells searched), `refine_factor`
        (re-score `k * refine_factor` candidates with the full vectors) and `ef` (HNSW) trade
        speed for recall. Each hit carries its citation (taught in
        notebooks/14_from_notebook_to_production.ipynb, section 1).
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k={k!r}: ask for at least one result, e.g. k=5")
        q = np.asarray(query, dtype=np.float32)
        if q.shape != (self.dim,):
            raise ValueError(f"query has shape {q.shape}; pass one vector of dimension {self.dim}")
        builder = self._table.search(q, vector_column_name="vector").distance_type("cosine").limit(k)
        clause = _where(where)
        if clause:
            builder = builder.where(clause, prefilter=True)
        if exact:
            builder = builder.bypass_vector_index()
        if nprobes is not None:
            builder = builder.nprobes(nprobes)
        if refine_factor is not None:
            builder = builder.refine_factor(refine_factor)
        if ef is not None:
            builder = builder.ef(ef)
        builder = builder.select(["doc_id", "chunk_index", "start", "end", "text", "heading_path", "page_start",
                                  "page_end", "strategy", "model", "_distance"])
        table = self._read("searching", builder.to_arrow)
        hits = [Hit(score=float(1.0 - row.pop("_distance")), **row) for row in table.to_pylist()]
        return sorted(hits, key=lambda h: (-round(h.score, 6), h.doc_id, h.chunk_index))

