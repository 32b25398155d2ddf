"""Semantic chunking: cut where the meaning changes, never past the size limit.

Two methods, both taught in notebooks/09_semantic_chunking.ipynb:

- `method="breakpoint"` (Greg Kamradt's recipe, the "semantic" level of the well-known
  "5 levels of text splitting"): split the text into sentences, embed each sentence
  together with `buffer` neighbours on each side, measure the cosine distance between
  consecutive windows, and cut wherever it exceeds the `percentile`-th percentile of all
  those distances. A segment longer than `size` is cut again at its largest remaining
  distance, and again, until every piece fits: the maximum is hard.
- `method="cluster"` (the ClusterSemanticChunker of Smith & Troynikov, "Evaluating
  Chunking Strategies for Retrieval", Chroma, 2024): cut the text into small pieces of
  about `piece_size` tokens, embed them, and choose by dynamic programming the contiguous
  groups that maximize the similarity inside each group (each pair's cosine minus the
  mean cosine of all pairs), among groups of at most `size` tokens.

Every chunk keeps the contract of the other chunkers (`course_lib.chunking`), leaves nothing but white
space between chunks and cuts no user-perceived character (extended grapheme cluster) in two.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np
import regex

from course_lib.chunking._measure import Chunk
from course_lib.chunking.recursive import recursive_chunks
from course_lib.chunking.registry import choice, register_strategy
from course_lib.chunking.sentences import ABBREVIATIONS, split_sentences
from course_lib.embed import _default_model, embed_texts  # embed_texts re-exported: notebook 09 imports it here
from course_lib.tokens import resolve_tokenizer

__all__ = ["METHODS", "breakpoint_distances", "embed_texts", "semantic_chunks"]

METHODS = ("breakpoint", "cluster")
_CLUSTER = regex.compile(r"\X")


# --- Units: sentences (or pieces) that fit the size, with cuts between graphemes ---


def _cluster_start(text: str, pos: int) -> int:
    """The start of the extended grapheme cluster holding `text[pos]` (pos itself if it starts one)."""
    if pos <= 0 or pos >= len(text):
        return pos
    lo = max(0, pos - 64)
    start = lo
    for m in _CLUSTER.finditer(text, lo, min(len(text), pos + 1)):
        if m.start() > pos:
            break
        start = m.start()
    return start


def _units(text: str, size: int, tokenizer: Any, language: str, piece_size: int | None) -> list[tuple[int, int]]:
    """Sentences (breakpoint) or recursive pieces of about `piece_size` tokens (cluster), each within `size`.

    A sentence that alone exceeds `size` is split by `recursive_chunks`; a unit's start
    never falls inside a grapheme cluster (it moves back into the white space before it).
    """
    if piece_size is not None:
        return [(c.start, c.end) for c in recursive_chunks(text, min(piece_size, size), tokenizer=tokenizer)]
    tok = resolve_tokenizer(tokenizer)
    units = []
    for a, b in split_sentences(text, language):
        a = _cluster_start(text, a)
        if tok.count(text[a:b]) <= size:
            units.append((a, b))
        else:
            units.extend((a + c.start, a + c.end) for c in recursive_chunks(text[a:b], size, tokenizer=tokenizer))
    return units


# --- Breakpoint method ---


def breakpoint_distances(
    text: str,
    size: int,
    *,
    model: Any = None,
    buffer: int = 1,
    language: str = "en",
    tokenizer: Any = "cl100k_base",
) -> tuple[list[tuple[int, int]], np.ndarray]:
    """The sentences of `text` (split further where one exceeds `size`) and the cosine
    distance between each one's window and the next one's.

    Window i is the text from sentence i - `buffer` to sentence i + `buffer`; all
    windows are embedded in one `embed_texts` call. Returns `(units, distances)` with
    `len(distances) == len(units) - 1`. Taught in notebooks/09_semantic_chunking.ipynb,
    section 1 (the distance curve).
    """
    _check(text, size)
    if isinstance(buffer, bool) or not isinstance(buffer, int) or buffer < 0:
        raise ValueError(f"buffer={buffer!r} must be an int >= 0 (sentences on each side of a window), e.g. 1")
    units = _units(text, size, tokenizer, language, None)
    if len(units) < 2:
        return units, np.empty(0)
    windows = [text[units[max(0, i - buffer)][0]:units[min(len(units) - 1, i + buffer)][1]]
               for i in range(len(units))]
    vectors = embed_texts(_default_model() if model is None else model, windows)
    return units, 1.0 - np.einsum("ij,ij->i", vectors[:-1], vectors[1:])


def _split_segment(text: str, units: list[tuple[int, int]], distances: np.ndarray, lo: int, hi: int,
                   size: int, tok: Any) -> list[tuple[int, int, int]]:
    """Units [lo, hi) as one chunk if it fits, else cut at the largest distance inside, and again, until all fit."""
    pieces, pending = [], [(lo, hi)]
    while pending:  # a stack, not recursion: a long segment may need thousands of cuts
        lo, hi = pending.pop()
        start, end = units[lo][0], units[hi - 1][1]
        n = tok.count(text[start:end])
        if n <= size or hi - lo == 1:
            pieces.append((start, end, n))
            continue
        cut = lo + 1 + int(np.argmax(distances[lo:hi - 1]))  # gap g lies between units g and g + 1
        pending += [(cut, hi), (lo, cut)]  # the left part is taken next
    return pieces


def _breakpoint(text: str, size: int, model: Any, tokenizer: Any, percentile: float, buffer: int,
                language: str) -> list[tuple[int, int, int, dict]]:
    if isinstance(percentile, bool) or not isinstance(percentile, (int, float)) or not 0 <= percentile <= 100:
        raise ValueError(f"percentile={percentile!r} must be a number in 0..100 (95 cuts at the 5% largest "
                         "distances)")
    units, distances = breakpoint_distances(text, size, model=model, buffer=buffer, language=language,
                                            tokenizer=tokenizer)
    if not units:
        return []
    tok = resolve_tokenizer(tokenizer)
    threshold = float(np.percentile(distances, percentile)) if len(distances) else 0.0
    bounds = [0, *(g + 1 for g in np.flatnonzero(distances > threshold)), len(units)]
    chunks = []
    for lo, hi in pairwise(bounds):
        pieces = _split_segment(text, units, distances, lo, hi, size, tok)
        chunks.extend((s, e, n, {"split_for_size": len(pieces) > 1}) for s, e, n in pieces)
    return chunks


# --- Cluster method ---


def _cluster(text: str, size: int, model: Any, tokenizer: Any, piece_size: int) -> list[tuple[int, int, int, dict]]:
    if isinstance(piece_size, bool) or not isinstance(piece_size, int) or piece_size < 1:
        raise ValueError(f"piece_size={piece_size!r} must be a positive int (tokens per piece), e.g. 50")
    units = _units(text, size, tokenizer, "en", piece_size)
    if not units:
        return []
    tok = resolve_tokenizer(tokenizer)
    n = len(units)
    vectors = embed_texts(_default_model() if model is None else model, [text[a:b] for a, b in units])
    # the mean cosine over all pairs a < b, from the sum vector: |sum v|^2 = n + 2 * sum_{a<b} v_a . v_b
    total = vectors.sum(axis=0, dtype=np.float64)
    mean = (float(total @ total) - n) / (n * (n - 1)) if n > 1 else 0.0
    best = np.full(n + 1, -np.inf)
    best[0] = 0.0
    back = np.zeros(n + 1, dtype=np.int64)
    counts: dict[tuple[int, int], int] = {}
    for j in range(1, n + 1):  # best[j]: the best grouping of units [0, j)
        reward = 0.0  # sum over ordered pairs inside [i, j) of (cosine - mean)
        for i in range(j - 1, -1, -1):
            if i < j - 1:
                reward += 2.0 * float(vectors[i, :] @ vectors[i + 1:j].sum(axis=0) - mean * (j - 1 - i))
                count = tok.count(text[units[i][0]:units[j - 1][1]])
                if count > size:
                    break
                counts[(i, j)] = count
            if best[i] + reward > best[j]:
                best[j], back[j] = best[i] + reward, i
    groups = []
    j = n
    while j > 0:
        groups.append((int(back[j]), j))
        j = int(back[j])
    chunks = []
    for i, j in reversed(groups):
        start, end = units[i][0], units[j - 1][1]
        count = counts[(i, j)] if (i, j) in counts else tok.count(text[start:end])
        chunks.append((start, end, count, {"pieces": j - i}))
    return chunks


# --- The public chunker ---


def _check(text: Any, size: Any) -> None:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        raise TypeError(f"size must be an int (tokens), not {type(size).__name__}")
    if size < 1:
        raise ValueError(f"size={size}: a chunk holds at least one token; use size >= 1")


def semantic_chunks(
    text: str,
    size: int,
    *,
    method: str = "breakpoint",
    model: Any = None,
    tokenizer: Any = "cl100k_base",
    percentile: float = 95,
    buffer: int = 1,
    language: str = "en",
    piece_size: int = 50,
) -> list[Chunk]:
    """Chunks of at most `size` tokens whose boundaries follow changes of meaning.

    `method="breakpoint"` cuts between sentences where the distance between neighbouring
    sentence windows (`buffer` sentences on each side) exceeds its `percentile`-th
    percentile; `method="cluster"` groups pieces of about `piece_size` tokens to maximize
    the similarity inside each group. Either way a segment that exceeds `size` tokens
    (counted with `tokenizer`) is cut further, so `n_tokens <= size` always holds.
    `model`: anything with `encode(list[str]) -> array`; None loads all-MiniLM-L6-v2.
    Sentence (or piece) embeddings are computed once per call, in one batch.
    Taught in notebooks/09_semantic_chunking.ipynb, sections 1-4.
    """
    _check(text, size)
    if method not in METHODS:
        raise ValueError(f"method={method!r} is unknown; use one of {list(METHODS)}")
    resolve_tokenizer(tokenizer)  # fails early on an unsupported tokenizer
    if not text.strip():
        return []
    if method == "breakpoint":
        spans = _breakpoint(text, size, model, tokenizer, percentile, buffer, language)
    else:
        spans = _cluster(text, size, model, tokenizer, piece_size)
    chunks = []
    for start, end, n, meta in spans:
        chunks.append(Chunk(text[start:end], start, end, n, {"method": method, **meta}))
    return chunks


# --- The strategy: semantic:<size>[?method=cluster&percentile=90&...] ---


@register_strategy(
    "semantic", unit="cl100k tokens", needs_model=True,
    options={"method": choice(METHODS), "percentile": float, "buffer": int, "piece_size": int,
             "language": choice(sorted(ABBREVIATIONS))},
    description="cuts where the meaning changes, at most `size` tokens (notebook 09); options "
                "method=breakpoint|cluster, percentile, buffer, piece_size, language",
)
def _strategy(text: str, size: int, overlap: int, *, model: Any = None, **options: Any) -> list[Chunk]:
    if overlap:
        raise ValueError(f"overlap={overlap}: semantic chunks never overlap; write semantic:{size} "
                         "without an overlap field")
    return semantic_chunks(text, size, model=model, **options)
