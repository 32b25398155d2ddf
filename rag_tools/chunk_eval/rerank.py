"""`rerank:<n>:<strategy>`: the strategy's ranking, then its first n chunks re-scored by MaxSim over token vectors.

The first stage is the strategy as written (dense, `bm25:` or `hybrid:`, with its embedding variant);
the second keeps one vector per token (ColBERT's late interaction, `course_lib.late_interaction`,
taught in notebook 11): each of the first n chunks is scored by the sum, over the question's tokens,
of the best cosine with any of the chunk's tokens, and the n are re-ordered by that score (ties keep
the first stage's order); the rest of the ranking follows unchanged. Token vectors come from the
embedder's `token_vectors` (each chunk's text, as the first stage embeds it, encoded on its own, over
windows when it is longer than the model reads at once; the question encoded on its own), only for
the chunks some question's first n hold. A chunk's token vectors are cached on disk beside its model's vectors
(`TokenVectorCache`, keyed on the model and the text), so a second run encodes only what is new; a
question's are encoded every run (that encoding is part of a reranked query's latency).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from course_lib.evaluation import unit_rows
from course_lib.late_interaction import RERANK_DEPTH, TokenIndex, rerank
from course_lib.strategies import RERANK_PREFIX, StrategySpec, parse_strategy

__all__ = ["RerankSpec", "TokenVectorCache", "TokenVectorError", "parse_with_rerank", "reranked", "token_matrices"]

TOKEN_FOLDER = "token_vectors"  # inside the model's folder of the vector cache


class TokenVectorError(ValueError):
    """The embedder gives no token vectors: `rerank:` cannot run with it."""


@dataclass(frozen=True)
class RerankSpec:
    """`rerank:<depth>:<base>`: every attribute but `id` is the first stage's (`base`)."""

    depth: int
    base: StrategySpec

    @property
    def id(self) -> str:
        return f"{RERANK_PREFIX}:{self.depth}:{self.base.id}"

    def __getattr__(self, name: str) -> Any:  # name, size, variant, retrieval, embeds, ...: the first stage's
        if name in ("depth", "base"):
            raise AttributeError(name)
        return getattr(self.base, name)

    def __str__(self) -> str:
        return self.id


def parse_with_rerank(text: str) -> StrategySpec | RerankSpec:
    """A strategy id, with `rerank:<n>:` (or `rerank:`, n = 50) in front allowed: `rerank:50:recursive:256`."""
    if not isinstance(text, str):
        raise TypeError(f"strategy must be an id such as 'recursive:256', not {type(text).__name__}")
    head, sep, rest = text.strip().partition(":")
    if head != RERANK_PREFIX or not sep:
        return parse_strategy(text)
    depth_text, sep, body = rest.partition(":")
    if re.fullmatch(r"\d+", depth_text):
        depth = int(depth_text)
        if depth < 2:
            raise ValueError(f"strategy {text!r}: rerank depth {depth} re-orders nothing; use 2 or more, e.g. "
                             f"'rerank:{RERANK_DEPTH}:recursive:256'")
    else:
        depth, body = RERANK_DEPTH, rest
    if body.startswith(f"{RERANK_PREFIX}:"):
        raise ValueError(f"strategy {text!r}: rerank: is given twice; write it once, e.g. "
                         f"'rerank:{RERANK_DEPTH}:recursive:256'")
    if not body:
        raise ValueError(f"strategy {text!r} names no first stage; write rerank:<n>:<strategy>, e.g. "
                         f"'rerank:{RERANK_DEPTH}:recursive:256'")
    return RerankSpec(depth, parse_strategy(body))


def token_matrices(embedder: Any, texts: Sequence[str], what: str) -> list[np.ndarray]:
    """Each text's token vectors (rows L2-normalized), encoded on its own by the embedder.

    Raises `TokenVectorError` when the embedder gives no token vectors."""
    method = getattr(embedder, "token_vectors", None)
    if not callable(method):
        raise TokenVectorError(f"the model {getattr(embedder, 'name', '?')!r} gives no token vectors")
    out = []
    for i, text in enumerate(texts):
        try:
            _, vectors = method(text)
        except NotImplementedError as error:
            raise TokenVectorError(str(error) or "the model gives no token vectors") from None
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or not len(vectors):
            raise ValueError(f"{what}[{i}] {text[:40]!r} has no token to compare")
        out.append(unit_rows(f"{what}[{i}]", vectors))
    return out


def token_index(spans: Sequence[tuple[str, int, int]], matrices: Sequence[np.ndarray]) -> TokenIndex:
    """A `TokenIndex` of the candidate chunks `spans` with their token matrices."""
    bounds = np.concatenate([[0], np.cumsum([len(m) for m in matrices])]).astype(np.int64)
    dim = matrices[0].shape[1] if matrices else 0
    vectors = np.concatenate(matrices) if matrices else np.empty((0, dim), dtype=np.float32)
    return TokenIndex(list(spans), vectors, bounds)


def reranked(ranking: np.ndarray, depth: int, index: TokenIndex, rows_of: dict[tuple[str, int, int], int],
             spans: Sequence[tuple[str, int, int]], query: np.ndarray) -> np.ndarray:
    """The ranking (chunk rows, best first) with its first `depth` rows re-ordered by MaxSim with `query`
    (`course_lib.late_interaction.rerank`); `rows_of` maps a chunk span to its row."""
    order = rerank(index, query, [spans[int(row)] for row in ranking[:depth]], depth)
    head = np.fromiter((rows_of[s] for s in order), dtype=np.int64, count=len(order))
    return np.concatenate([head, np.asarray(ranking[depth:], dtype=np.int64)])


class TokenVectorCache:
    """Chunk texts' token matrices on disk: one float32 `.npy` per text in `TOKEN_FOLDER` of the model's vector-cache
    folder (so keyed on the model, and on the text by its sha256), written whole and then renamed. `folder=None`
    keeps nothing; `read_only=True` reads and writes nothing. A file that cannot be read is encoded again; a
    write that fails turns writing off for the run (the vectors are still used)."""

    def __init__(self, folder: Path | None, *, read_only: bool = False):
        self.folder = None if folder is None else Path(folder) / TOKEN_FOLDER
        self.writable = self.folder is not None and not read_only
        self.hits = 0

    def _path(self, text: str) -> Path:
        return self.folder / f"{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()}.npy"

    def get(self, text: str) -> np.ndarray | None:
        """The text's token matrix, or None if it was never stored (or cannot be read)."""
        if self.folder is None:
            return None
        try:
            matrix = np.load(self._path(text), allow_pickle=False)
        except (OSError, ValueError):
            return None
        if matrix.ndim != 2 or not len(matrix) or matrix.dtype != np.float32:
            return None
        self.hits += 1
        return matrix

    def put(self, text: str, matrix: np.ndarray) -> None:
        if not self.writable:
            return
        path = self._path(text)
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as handle:
                np.save(handle, np.asarray(matrix, dtype=np.float32), allow_pickle=False)
            os.replace(tmp, path)
        except OSError:
            tmp.unlink(missing_ok=True)
            self.writable = False
