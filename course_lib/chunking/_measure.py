r"""The engine under every size-limited chunker: `Chunk`, spans, and token counts of spans.

A `_Measure` tokenizes a text once and answers "how many tokens in text[a:b]?" from
that single tokenization where it is exact (tiktoken and "chars" at word starts),
re-encoding only the ends of a span otherwise. Internal; the chunkers build on it.

Cuts never fall inside a user-perceived character, an extended grapheme cluster of
Unicode UAX #29 ("e" + combining accent, an emoji ZWJ sequence, a flag, a Hangul
syllable written as jamo, CR LF). Most positions are cluster boundaries for a simple
reason (neither neighbour can glue to the other), which two lookup tables decide for
every candidate cut at once; only the few doubtful positions ask the `regex` package's
`\X`, from the nearest sure boundary before them, never over the whole text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Union

import numpy as np
import regex

from course_lib.tokens import _Tokenizer

__all__ = ["Chunk", "Span", "as_spans"]


@dataclass(frozen=True)
class Chunk:
    """A piece of a source text: `source[start:end] == text`, `n_tokens` counted on `text`.

    Taught in notebooks/03_fixed_size_and_overlap.ipynb, section 3 (first met in
    notebooks/00_start_here.ipynb, section 3).
    """

    text: str
    start: int
    end: int
    n_tokens: int
    metadata: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


Span = Union[Chunk, tuple[int, int]]


def as_spans(text: str, chunks: Sequence[Span]) -> list[tuple[int, int]]:
    """`(start, end)` pairs from `Chunk`s or pairs, checked against `text`.

    Taught in notebooks/04_recursive_splitting.ipynb, section 5.
    """
    spans = []
    for i, c in enumerate(chunks):
        start, end = (c.start, c.end) if isinstance(c, Chunk) else c
        if not (isinstance(start, (int, np.integer)) and isinstance(end, (int, np.integer))):
            raise TypeError(f"chunks[{i}] must be a Chunk or a (start, end) pair of ints, got {c!r}")
        if not 0 <= start < end <= len(text):
            raise ValueError(
                f"chunks[{i}] = ({start}, {end}) is not a non-empty span inside the text "
                f"(0 <= start < end <= {len(text)})"
            )
        spans.append((int(start), int(end)))
    return spans


# ---------------------------------------------------------------------------
# Extended grapheme clusters (UAX #29) around candidate cuts
# ---------------------------------------------------------------------------

_CLUSTER = regex.compile(r"\X")
_TABLE_SIZE = 0x30000  # code points above are treated as doubtful and checked with \X
_FIRST_GLUE = 0x300  # no code point below U+0300 glues to a neighbour, apart from CR LF


@cache
def _glue_tables() -> tuple[np.ndarray, np.ndarray]:
    """(glues_to_next, glues_to_previous): per code point, whether a cluster may continue
    after it (Prepend, Hangul L, ZWJ, Extend, regional indicators) or may join the character
    before it (Extend, ZWJ, SpacingMark, Hangul V and T, regional indicators). CR and LF,
    whose only cluster is CR LF, are handled before the tables are read.
    A position whose left neighbour cannot glue forward and whose right neighbour cannot
    glue backward is always a cluster boundary; the last entry stands for "any code point
    above the table" and is doubtful both ways."""
    chars = np.arange(_TABLE_SIZE, dtype="<u4").tobytes().decode("utf-32-le", errors="surrogatepass")
    tables = []
    for members in (r"\p{GCB=Prepend}\p{GCB=L}\p{GCB=ZWJ}\p{GCB=Extend}\p{GCB=Regional_Indicator}",
                    r"\p{GCB=Extend}\p{GCB=ZWJ}\p{GCB=SpacingMark}\p{GCB=V}\p{GCB=T}\p{GCB=Regional_Indicator}"):
        table = np.zeros(_TABLE_SIZE + 1, dtype=bool)
        table[[m.start() for m in regex.finditer(f"[{members}]", chars)]] = True
        table[_TABLE_SIZE] = True
        tables.append(table)
    return tables[0], tables[1]


def _sure_boundary(text: str, p: int) -> bool:
    """True if p is certainly a cluster boundary, judged from its two neighbours alone."""
    if p <= 0 or p >= len(text):
        return True
    x, y = ord(text[p - 1]), ord(text[p])
    if x == 13 or y == 10 or (x < 0x80 and y < 0x80):  # a break after CR and before LF, except CR LF
        return not (x == 13 and y == 10)
    glues_to_next, glues_to_previous = _glue_tables()
    return not (glues_to_next[min(x, _TABLE_SIZE)] or glues_to_previous[min(y, _TABLE_SIZE)])


def _cluster_edges(text: str, p: int, known: int = 0) -> tuple[int, int]:
    r"""`(p, p)` if p is a cluster boundary, else the start and end of the cluster around p.

    `\X` runs from the nearest sure boundary before p (or from `known`, a boundary <= p)."""
    q = p
    while q > known and not _sure_boundary(text, q):
        q -= 1
    start = q
    while q < p:
        start, q = q, _CLUSTER.match(text, q).end()
    return (p, p) if q == p else (start, q)


def _is_boundary(text: str, p: int) -> bool:
    """True if a cut at p leaves every extended grapheme cluster whole."""
    return _sure_boundary(text, p) or _cluster_edges(text, p)[0] == p


def _snap_to_clusters(text: str, codes: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The sorted cut positions that keep clusters whole: each of `positions` (sorted, in
    0..len(text)) that is a cluster boundary, and for each that is not, the start and the end
    of the cluster it falls in."""
    n = len(text)
    if n < 2 or len(positions) == 0:
        return positions
    glues_to_next, glues_to_previous = _glue_tables()
    q = np.clip(positions, 1, n - 1)
    x, y = codes[q - 1], codes[q]
    edge = (positions <= 0) | (positions >= n)
    crlf = (x == 13) & (y == 10) & ~edge  # the one cluster of two controls: its ends are always boundaries
    glued = (glues_to_next[np.minimum(x, _TABLE_SIZE)] | glues_to_previous[np.minimum(y, _TABLE_SIZE)])
    glued &= ~((x == 13) | (y == 10) | edge)
    if not (crlf.any() or glued.any()):
        return positions
    moved = [positions[crlf] - 1, positions[crlf] + 1]
    known = 0
    for pos in positions[glued].tolist():
        start, end = _cluster_edges(text, pos, known)
        moved.append(np.array((start, end), dtype=positions.dtype))
        known = start
    merged = np.sort(np.concatenate((positions[~(crlf | glued)], *moved)), kind="stable")
    return merged[np.concatenate(([True], merged[1:] != merged[:-1]))]


def _cluster_at(text: str, p: int) -> str:
    """The extended grapheme cluster that starts at p (p must be a cluster boundary)."""
    return _CLUSTER.match(text, p).group()


# ---------------------------------------------------------------------------
# Token counts of spans
# ---------------------------------------------------------------------------

# white space by code point; none above U+3000 (the last entry stands for all of those)
_IS_SPACE = np.array([chr(c).isspace() for c in range(0x3002)])


def _code_points(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", errors="surrogatepass"), dtype=np.uint32)


def _word_starts_at(codes: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """For each position p: True where a cut at p falls before a word (p == 0, p == len(text),
    or a space that follows a non-space character). For tiktoken such a space always opens a
    new pre-tokenizer piece, so a cut there never changes how the text around it tokenizes."""
    n = len(codes)
    if n < 2:
        return np.ones(len(positions), dtype=bool)
    q = np.clip(positions, 1, n - 1)
    out = (codes[q] == 32) & ~_IS_SPACE[np.minimum(codes[q - 1], len(_IS_SPACE) - 1)]
    out |= (positions <= 0) | (positions >= n)
    return out


class _Measure:
    """Token counts of spans of one text, from a single tokenization where possible."""

    def __init__(self, text: str, tokenizer: _Tokenizer):
        self.text = text
        self.tokenizer = tokenizer
        self.raw_starts = tokenizer.token_starts(text)  # -1 where a token starts inside a character
        self.codes = _code_points(text)
        # no CR LF and nothing at or above U+0300: every position is a cluster boundary
        self.plain = len(text) < 2 or ("\r\n" not in text and int(self.codes.max()) < _FIRST_GLUE)
        self.starts = None if self.raw_starts is None else np.maximum.accumulate(self.raw_starts)
        self._word_starts = None
        if tokenizer.exact_at_word_starts and self.starts is not None:
            # every word start is a token start for these tokenizers, so look among those only
            candidates = self.raw_starts[(self.raw_starts > 0) & (self.raw_starts < len(text))]
            self._word_starts = candidates[_word_starts_at(self.codes, candidates)]

    def cluster_boundaries(self, positions: list[int]) -> list[int]:
        """The positions (sorted) that are extended grapheme cluster boundaries."""
        if self.plain or not positions:
            return positions
        snapped = _snap_to_clusters(self.text, self.codes, np.array(positions, dtype=np.int64))
        kept = set(snapped.tolist())
        return [p for p in positions if p in kept]

    def word_start(self, positions: np.ndarray) -> np.ndarray:
        """True where a cut at the position falls before a word (see `_word_starts_at`)."""
        return _word_starts_at(self.codes, positions)

    def token_index(self, positions: Sequence[int]) -> list[int]:
        """For each character position, how many tokens of the whole text start before it."""
        return np.searchsorted(self.starts, positions).tolist()

    def exact(self, a: int, b: int, *, stripped: bool = False) -> int:
        """The recount of text[a:b] (without surrounding white space if `stripped`).

        For tiktoken only the ends are re-encoded: between the first and the last word
        start inside the span, the whole text's tokens are exactly the span's tokens.
        """
        if stripped:
            a, b = _strip(self.text, a, b)
        if a >= b:
            return 0
        count, text = self.tokenizer.count, self.text
        if self._word_starts is not None:
            lo = int(np.searchsorted(self._word_starts, a, side="right"))
            hi = int(np.searchsorted(self._word_starts, b, side="left")) - 1
            if lo <= hi:
                m1, m2 = int(self._word_starts[lo]), int(self._word_starts[hi])
                first, last = self.token_index((m1, m2))
                return count(text[a:m1]) + (last - first) + count(text[m2:b])
        return count(text[a:b])

    def approx(self, a: int, b: int) -> int:
        """Tokens of the whole text's tokenization that start in [a, b) (exact if no offsets)."""
        if self.starts is None:
            return self.exact(a, b)
        first, last = self.token_index((a, b))
        return last - first

    def span_counter(self, pieces: Sequence[tuple[int, int]]) -> Callable[[int, int], int]:
        """`count(i, j)`: estimated tokens from the start of pieces[i] to the end of pieces[j]."""
        if self.starts is None:
            return lambda i, j: self.exact(pieces[i][0], pieces[j][1])
        firsts = self.token_index([p[0] for p in pieces])
        lasts = self.token_index([p[1] for p in pieces])
        return lambda i, j: lasts[j] - firsts[i]


def _strip(text: str, a: int, b: int) -> tuple[int, int]:
    """Shrink [a, b) to exclude whitespace at both ends, keeping clusters whole (white space
    that carries a combining mark stays: the two are one user-perceived character)."""
    a0, b0 = a, b
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    if a > a0 and a < b and not _sure_boundary(text, a):
        a = _cluster_edges(text, a)[0]
    if b < b0 and a < b and not _sure_boundary(text, b):
        b = _cluster_edges(text, b)[1]
    return a, b


def _too_big_error(text: str, pos: int, size: int, tokenizer: _Tokenizer) -> ValueError:
    """The error for a user-perceived character (cluster) at `pos` that alone needs more than `size`."""
    cluster = _cluster_at(text, pos)
    points = " ".join(f"U+{ord(c):04X}" for c in cluster)
    what = "character" if len(cluster) == 1 else f"character of {len(cluster)} code points"
    n = tokenizer.count(cluster)
    return ValueError(
        f"size={size} is too small: the {what} {cluster!r} ({points}) at offset {pos} alone takes "
        f"{n} tokens, and chunks never split a user-perceived character; use size >= {n}"
    )


def _validate(text: Any, size: Any, overlap: Any) -> None:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}; decode bytes first")
    for name, value in (("size", size), ("overlap", overlap)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if size < 1:
        raise ValueError(f"size={size}: a chunk must hold at least one token; use size >= 1")
    if overlap < 0:
        raise ValueError(f"overlap={overlap}: overlap cannot be negative; use 0 for no overlap")
    if overlap >= size:
        raise ValueError(
            f"overlap={overlap} must be smaller than size={size}, or no chunk would move forward; "
            f"use an overlap of 10-20% of size, e.g. overlap={max(size // 10, 0)}"
        )


def _make_chunk(text: str, start: int, end: int, n_tokens: int, **metadata: Any) -> Chunk:
    return Chunk(text[start:end], start, end, n_tokens, dict(metadata))


