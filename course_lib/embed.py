"""One home for embedding: the embedder protocol, one policy for long texts, one vector cache.

The long-text policy, everywhere in the course: a text that fits the model's window (`WINDOW`
tokens with its special tokens) is encoded on its own, as `model.encode` does; a longer text
is never cut: its token vectors are computed over overlapping windows of `WINDOW` tokens, each
token taken from a window where it has `OVERLAP` tokens of context on each side, and mean-pooled
(`course_lib.late.late_chunk_embeddings` applied to the text alone). Vectors of texts that fit
are exactly the model's own. `embed_texts` applies it; `CachingEncoder` puts a `VectorCache` in front of it.

The practitioner's tools (chunk-eval, the store, the batch job) embed through `rag_tools.embedders`: one
protocol for a local model, the multilingual extra and an embeddings endpoint, built on this module.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from course_lib.late import default_overlap, late_chunk_embeddings

__all__ = ["BATCH_SIZE", "OVERLAP", "WINDOW", "CachingEncoder", "VectorCache", "embed_texts", "text_key"]

# all-MiniLM-L6-v2 has 512 position embeddings: the longest input it reads in one pass, special
# tokens included (it was trained on 128-token inputs; longer windows still keep every token).
WINDOW = 512
# context kept on each side of a window's inner edges: an eighth of the window (late.default_overlap)
OVERLAP = default_overlap(WINDOW)  # 64
BATCH_SIZE = 32  # texts per forward pass


def _pooled(model: Any, text: str, window: int) -> np.ndarray:
    """The vector of a text longer than `window`: its token vectors over overlapping windows, mean-pooled."""
    return late_chunk_embeddings(model, text, [(0, len(text))], window=window, overlap=default_overlap(window))[0]


# --- The general helper ---


def _default_model() -> Any:
    from course_lib.models import load_embedding_model

    return load_embedding_model(max_seq_length=WINDOW)


def embed_texts(model: Any, texts: Sequence[str]) -> np.ndarray:
    """One L2-normalized row per text from `model.encode`, with nothing cut off.

    For a SentenceTransformer, a text longer than the model's window (`max_seq_length`,
    special tokens included) is not truncated: its token vectors are computed over
    overlapping windows of that length and mean-pooled (the module's long-text policy).
    Any other object only needs `encode(list[str]) -> array`.
    Taught in notebooks/09_semantic_chunking.ipynb, section 1.
    """
    texts = list(texts)
    if not texts:
        return np.empty((0, 0), dtype=np.float32)
    if not hasattr(model, "encode"):
        raise TypeError(f"model must have encode(list[str]) -> array (a SentenceTransformer, for example), "
                        f"not {type(model).__name__}")
    long_rows: list[int] = []
    if hasattr(model, "tokenizer") and hasattr(model, "max_seq_length"):
        lengths = [len(ids) for ids in model.tokenizer(texts, truncation=False, verbose=False)["input_ids"]]
        long_rows = [i for i, n in enumerate(lengths) if n > model.max_seq_length]
    short_rows = sorted(set(range(len(texts))) - set(long_rows))
    rows: dict[int, np.ndarray] = {}
    if short_rows:
        vectors = np.asarray(model.encode([texts[i] for i in short_rows]), dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(short_rows):
            raise ValueError(f"model.encode returned shape {vectors.shape} for {len(short_rows)} texts; "
                             "it must return one row per text")
        rows.update(zip(short_rows, vectors))
    if long_rows:
        window = min(int(model.max_seq_length), int(model[0].auto_model.config.max_position_embeddings))
        for i in long_rows:
            rows[i] = _pooled(model, texts[i], window)
    matrix = np.stack([rows[i] for i in range(len(texts))]).astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    if not np.isfinite(matrix).all() or (norms == 0).any():
        raise ValueError("model.encode returned a zero, NaN or infinite vector; check the model")
    return matrix / norms


# --- The vector cache ---


def text_key(*parts: str) -> str:
    """The cache key of a text (or of several parts, joined unambiguously): a sha256 hex digest."""
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


class VectorCache:
    """Vectors keyed by model and text hash: on disk in `folder/<model hash>/*.npz`, one file per write.

    `folder=None` keeps vectors in memory for this run only. What the cache guarantees:
    - a file is written under a hidden temporary name, flushed to disk (`fsync`) and renamed, and the
      temporary file is removed if the write fails or is interrupted; only whole, visible files are read;
    - a file that cannot be read, or whose vectors are not finite unit rows of the expected dimension,
      is moved into `damaged/` beside it with one warning naming it, and never read again: the run goes
      on and embeds what that file held;
    - `put` writes a file every `flush_every` new vectors, so an interrupted run keeps most of its work;
    - a write that fails (a full disk, a read-only folder) gives one warning and turns writing off for
      this run: the vectors stay in memory and the run's results are unchanged.
    `read_only=True` reads the folder and writes nothing (a folder found unwritable before the run).
    Warnings go to `on_warning` (default `warnings.warn`) and are kept in `self.warnings`.
    """

    def __init__(self, folder: str | Path | None, model_name: str, *, dim: int | None = None,
                 flush_every: int = 512, read_only: bool = False, on_warning: Callable[[str], Any] | None = None):
        if isinstance(flush_every, bool) or not isinstance(flush_every, int) or flush_every < 1:
            raise ValueError(f"flush_every={flush_every!r}: write a file every N new vectors, e.g. 512")
        self.folder = None if folder is None else Path(folder) / hashlib.sha256(model_name.encode()).hexdigest()[:20]
        self.dim = dim
        self.flush_every = flush_every
        self.on_warning = on_warning
        self.warnings: list[str] = []
        self.vectors: dict[str, np.ndarray] = {}
        self.new: dict[str, np.ndarray] = {}
        self.writable = self.folder is not None and not read_only
        if self.folder is not None and self.folder.is_dir():
            for path in sorted(self.folder.glob("*.npz")):
                if not path.name.startswith("."):  # hidden names are other writers' temporary files
                    self._load(path)
        self.loaded = len(self.vectors)

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        if self.on_warning is None:
            import warnings

            warnings.warn(message, RuntimeWarning, stacklevel=3)
        else:
            self.on_warning(message)

    def _load(self, path: Path) -> None:
        try:
            with np.load(path, allow_pickle=False) as stored:
                keys, vectors = stored["keys"], stored["vectors"]
            problem = self._problem(keys, vectors)
        except Exception as error:  # a torn, truncated or foreign file: any reader error means "unreadable"
            problem = f"unreadable: {type(error).__name__}: {str(error).splitlines()[0][:120] if str(error) else ''}"
        if problem is None:
            self.dim = vectors.shape[1]
            self.vectors.update(zip(keys.tolist(), vectors.astype(np.float32)))
            return
        aside = path.parent / "damaged" / path.name
        try:
            aside.parent.mkdir(exist_ok=True)
            os.replace(path, aside)
            where = f"moved to {aside}"
        except OSError:
            where = "left in place (the folder is read-only) and skipped"
        self._warn(f"cache file {path} {problem}; {where}; its vectors will be embedded again")

    def _problem(self, keys: np.ndarray, vectors: np.ndarray) -> str | None:
        """Why a loaded (keys, vectors) pair cannot be trusted, or None."""
        if keys.ndim != 1 or keys.dtype.kind != "U" or vectors.ndim != 2 or len(keys) != len(vectors):
            return f"is not a cache file (keys {keys.shape} {keys.dtype}, vectors {vectors.shape})"
        if self.dim is not None and vectors.shape[1] != self.dim:
            return f"holds {vectors.shape[1]}-dimensional vectors, not {self.dim}"
        if vectors.dtype.kind != "f" or not np.isfinite(vectors).all():
            return "holds vectors that are not finite numbers"
        if len(vectors) and np.abs(np.linalg.norm(vectors, axis=1) - 1).max() > 1e-3:
            return "holds vectors that are not of unit length"
        return None

    def __contains__(self, key: str) -> bool:
        return key in self.vectors

    def __getitem__(self, key: str) -> np.ndarray:
        return self.vectors[key]

    def put(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        for key, vector in zip(keys, vectors):
            self.vectors[key] = self.new[key] = np.asarray(vector, dtype=np.float32)
        if len(self.new) >= self.flush_every:
            self.flush()

    def flush(self) -> None:
        """Write the vectors added since the last flush as one new file (see the class docstring)."""
        if not self.writable or not self.new:
            return
        name = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{os.urandom(4).hex()}"  # unique across writers
        tmp = self.folder / f".{name}.tmp.npz"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            try:
                with open(tmp, "wb") as handle:
                    np.savez(handle, keys=np.array(list(self.new), dtype="U64"),
                             vectors=np.stack(list(self.new.values())))
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(tmp, self.folder / f"{name}.npz")
                _fsync_folder(self.folder)
            finally:
                tmp.unlink(missing_ok=True)
        except OSError as error:
            self.writable = False
            self._warn(f"cannot write the vector cache in {self.folder} ({error.strerror or error}); "
                       "going on without saving vectors (pass another --cache folder, or --no-cache)")
            return
        self.new = {}


def _fsync_folder(folder: Path) -> None:
    """Make a rename inside `folder` durable (POSIX); a no-op where folders cannot be opened (Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems cannot sync a folder; the file itself was synced already
        pass
    finally:
        os.close(fd)


class CachingEncoder:
    """`encode(list[str]) -> vectors` over `embed_texts(model, ...)` that embeds each distinct text once,
    keeping the vectors in a `VectorCache` (in memory unless given one), and counts what it was asked for.

    Pass it as `model=` to a chunker that embeds (`semantic`), so that repeated texts across runs cost
    nothing; `requested_texts`, `requested_tokens` (counted by `count`, if given), `embedded_texts` and
    `seconds` say what the chunker asked for and what was new. Texts are embedded `batch` at a time.
    """

    def __init__(self, model: Any, cache: VectorCache | None = None, *, count: Callable[[str], int] | None = None,
                 batch: int = 1024, progress: Callable[[int], Any] | None = None):
        self.model = model
        self.cache = VectorCache(None, type(model).__name__) if cache is None else cache
        self.count, self.batch, self.progress = count, batch, progress
        self.requested_texts = self.requested_tokens = self.embedded_texts = 0
        self.seconds = 0.0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        keys = [text_key("text", t) for t in texts]
        self.requested_texts += len(texts)
        if self.count is not None:
            self.requested_tokens += sum(self.count(t) for t in texts)
        missing = list(dict.fromkeys((k, t) for k, t in zip(keys, texts) if k not in self.cache))
        if missing:
            began = time.perf_counter()
            for b in range(0, len(missing), self.batch):
                part = missing[b:b + self.batch]
                self.cache.put([k for k, _ in part], embed_texts(self.model, [t for _, t in part]))
                if self.progress:
                    self.progress(len(part))
            self.embedded_texts += len(missing)
            self.seconds += time.perf_counter() - began
        return np.stack([self.cache[k] for k in keys])
