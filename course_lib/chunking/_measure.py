r"""The engine under every size-limited chunker: token counts of spans, grapheme-safe cuts.

A `_Measure` tokenizes a text once, into token bounds (where each token starts, then
the text's end), and answers "how many tokens in text[a:b]?" from that single
tokenization where it is exact (tiktoken and "chars" at word starts), re-encoding only
the ends of a span otherwise. Internal; the chunkers build on it. It avoids large
temporary arrays: fresh memory costs more than the arithmetic done in it.

Cuts never fall inside a user-perceived character, an extended grapheme cluster of
Unicode UAX #29 ("e" + combining accent, an emoji ZWJ sequence, a flag, a Hangul
syllable written as jamo, CR LF). Most positions are cluster boundaries for a simple
reason (neither neighbour can glue to the other), which two lookup tables decide once
per text; only the few doubtful positions ask the `regex` package's `\X`, from the
nearest sure boundary before them, never over the whole text.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from functools import cache
from itertools import chain, pairwise
from typing import Any

import numpy as np
import regex

from course_lib.spans import Chunk, Span, as_spans
from course_lib.tokens import _BLOCK, _Tokenizer

__all__ = ["Chunk", "Span", "as_spans"]


# --- Extended grapheme clusters (UAX #29) around candidate cuts ---

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


def _doubtful_positions(text: str, codes: np.ndarray) -> np.ndarray:
    """The positions 1..len(text)-1 that may fall inside a cluster: after a code point that may
    glue to the next one, before one that may glue to the previous one (the lookup tables; only
    code points at or above U+0300 can), or between CR and LF. Every other position is a
    cluster boundary, so text without such code points needs no cluster checks at all."""
    # (a search for "\r" alone is much faster than one for "\r\n")
    crlf = np.flatnonzero((codes[:-1] == 13) & (codes[1:] == 10)) + 1 if "\r" in text and "\r\n" in text else None
    if text.isascii():
        return np.zeros(0, dtype=np.int64) if crlf is None else crlf
    glues_to_next, glues_to_previous = _glue_tables()
    high = np.flatnonzero(codes >= _FIRST_GLUE)
    kinds = codes[high]
    found = [high[glues_to_previous.take(kinds, mode="clip")], high[glues_to_next.take(kinds, mode="clip")] + 1]
    both = np.unique(np.concatenate(found if crlf is None else [*found, crlf]))
    return both[(both > 0) & (both < len(text))]


def _snap_to_clusters(text: str, codes: np.ndarray, positions: np.ndarray, doubtful: np.ndarray) -> np.ndarray:
    """The sorted cut positions that keep clusters whole: each of `positions` (sorted, in
    0..len(text)) that is a cluster boundary, and for each that is not, the start and the end
    of the cluster it falls in. Only the `positions` among `doubtful` (`_doubtful_positions`)
    are looked at."""
    at = positions.searchsorted(doubtful)  # where each doubtful position is, or would be, in `positions`
    found = at < len(positions)
    at = at[found][positions[at[found]] == doubtful[found]]
    if len(at) == 0:
        return positions
    glues_to_next, glues_to_previous = _glue_tables()
    q = positions[at]
    x, y = codes[q - 1], codes[q]
    crlf = (x == 13) & (y == 10)  # the one cluster of two controls: its ends are always boundaries
    # mode="clip": every code point above the tables reads their last entry ("doubtful")
    glued = glues_to_next.take(x, mode="clip") | glues_to_previous.take(y, mode="clip")
    glued &= ~((x == 13) | (y == 10))
    if not (crlf.any() or glued.any()):
        return positions
    moved = [q[crlf] - 1, q[crlf] + 1]
    known = 0
    for pos in q[glued].tolist():
        start, end = _cluster_edges(text, pos, known)
        moved.append(np.array((start, end), dtype=positions.dtype))
        known = start
    kept = np.ones(len(positions), dtype=bool)
    kept[at[crlf | glued]] = False
    merged = np.sort(np.concatenate((positions[kept], *moved)), kind="stable")
    return merged[np.concatenate(([True], merged[1:] != merged[:-1]))]


def _cluster_at(text: str, p: int) -> str:
    """The extended grapheme cluster that starts at p (p must be a cluster boundary)."""
    return _CLUSTER.match(text, p).group()


# --- Token counts of spans ---

# white space by code point; none above U+3000 (the last entry stands for all of those)
_IS_SPACE = np.array([chr(c).isspace() for c in range(0x3002)])


def _code_points(text: str) -> np.ndarray:
    """The code point of each character (one byte each for ASCII text, four otherwise)."""
    if text.isascii():
        return np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    return np.frombuffer(text.encode("utf-32-le", errors="surrogatepass"), dtype=np.uint32)


def _word_starts_at(codes: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """For each position p: True where a cut at p falls before a word (p == 0, p == len(text),
    or a space that follows a non-space character). For tiktoken such a space always opens a
    new pre-tokenizer piece, so a cut there never changes how the text around it tokenizes."""
    n = len(codes)
    if n < 2:
        return np.ones(len(positions), dtype=bool)
    out = np.empty(len(positions), dtype=bool)
    for k in range(0, len(positions), _BLOCK):  # small temporaries (see `_BLOCK`)
        p = positions[k:k + _BLOCK]
        # mode="clip": the ends are decided on the last line; code points above the table are not space
        block = np.equal(np.take(codes, p, mode="clip"), 32, out=out[k:k + _BLOCK])
        block &= ~np.take(_IS_SPACE, np.take(codes, p - 1, mode="clip"), mode="clip")
        block |= (p <= 0) | (p >= n)
    return out


class _Measure:
    """Token counts of spans of one text, from a single tokenization where possible."""

    def __init__(self, text: str, tokenizer: _Tokenizer):
        self.text = text
        self.tokenizer = tokenizer
        # where each token starts (-1 inside a character), then len(text); None if the tokenizer only counts
        self.raw_bounds = tokenizer.token_bounds(text)
        self.codes = _code_points(text)
        self.doubtful = _doubtful_positions(text, self.codes)
        self.plain = len(self.doubtful) == 0  # every position is a cluster boundary
        # True when the bounds that are character offsets strictly increase
        self.ordered = self.raw_bounds is not None and tokenizer.bounds_in_order
        # True when every token starts at a character boundary (no -1 in `raw_bounds`)
        self.all_char_bounds = self.raw_bounds is not None and int(self.raw_bounds.min()) >= 0
        self.bounds = self.raw_bounds
        if self.raw_bounds is not None and not self.all_char_bounds:
            self.bounds = np.maximum.accumulate(self.raw_bounds)
        # counts of spans need only their ends re-encoded (see `exact`)
        self.exact_inside = tokenizer.exact_at_word_starts and self.ordered

    def word_starts_within(self, a: int, b: int) -> tuple[int, int] | None:
        """The first and the last word start in (a, b] (a space after a non-space character),
        or None if there is none. For the tokenizers with `exact_at_word_starts` every word
        start is a token start."""
        text = self.text
        first = text.find(" ", a + 1, b + 1)
        while first > 0 and text[first - 1].isspace():
            first = text.find(" ", first + 1, b + 1)
        if first < 0:
            return None
        last = text.rfind(" ", first, b + 1)
        while text[last - 1].isspace():  # ends at `first` at the latest
            last = text.rfind(" ", first, last)
        return first, last

    def cluster_boundaries(self, positions: list[int]) -> list[int]:
        """The positions (sorted) that are extended grapheme cluster boundaries."""
        if self.plain or not positions:
            return positions
        first, last = self.doubtful.searchsorted((positions[0], positions[-1] + 1))
        if first == last:  # no position between them can fall inside a cluster
            return positions
        array = np.array(positions, dtype=np.int64)
        snapped = self.snap_to_clusters(array)
        if snapped is array:  # every position is a boundary
            return positions
        kept = set(snapped.tolist())
        return [p for p in positions if p in kept]

    def snap_to_clusters(self, positions: np.ndarray) -> np.ndarray:
        """`positions` (sorted) with each cut inside a cluster replaced by the cluster's two ends."""
        return positions if self.plain else _snap_to_clusters(self.text, self.codes, positions, self.doubtful)

    def word_start(self, positions: np.ndarray) -> np.ndarray:
        """True where a cut at the position falls before a word (see `_word_starts_at`)."""
        return _word_starts_at(self.codes, positions)

    def token_index(self, positions: Sequence[int]) -> list[int]:
        """For each character position, how many tokens of the whole text start before it."""
        return self.bounds.searchsorted(positions).tolist()

    def exact(self, a: int, b: int, *, stripped: bool = False) -> int:
        """The recount of text[a:b] (without surrounding white space if `stripped`).

        For tiktoken only the ends are re-encoded: between the first and the last word
        start inside the span (or at its end), the whole text's tokens are exactly the span's tokens.
        """
        if stripped:
            a, b = _strip(self.text, a, b)
        if a >= b:
            return 0
        count, text = self.tokenizer.count, self.text
        words = self.word_starts_within(a, b) if self.exact_inside else None
        if words is None:
            return count(text[a:b])
        m1, m2 = words
        inside = int(self.bounds.searchsorted(m2)) - int(self.bounds.searchsorted(m1))  # tokens from m1 to m2
        return count(text[a:m1]) + inside + (count(text[m2:b]) if m2 < b else 0)

    def approx(self, a: int, b: int) -> int:
        """Tokens of the whole text's tokenization that start in [a, b) (exact if no offsets)."""
        if self.bounds is None:
            return self.exact(a, b)
        first, last = self.token_index((a, b))
        return last - first

    def approx_sizes(self, pieces: Sequence[tuple[int, int]]) -> list[int]:
        """`approx` of each of `pieces`, which follow one another (one search for all of them)."""
        if self.bounds is None:
            return [self.exact(a, b) for a, b in pieces]
        ends = self.token_index([pieces[0][0], *(b for _, b in pieces)])
        return [last - first for first, last in pairwise(ends)]

    def span_counter(self, pieces: Sequence[tuple[int, int]]) -> _SpanCounter:
        """Estimated tokens from the start of one piece to the end of another (see `_SpanCounter`)."""
        return _SpanCounter(self, pieces)


class _SpanCounter:
    """`counter(i, j)`: estimated tokens from the start of pieces[i] to the end of pieces[j]
    (pieces in source order, their ends increasing): tokens of the whole text that start in
    between, or an exact count for a tokenizer without offsets."""

    def __init__(self, measure: _Measure, pieces: Sequence[tuple[int, int]]):
        self.measure, self.pieces = measure, pieces
        self.firsts = self.lasts = None
        if measure.bounds is not None:
            flat = np.fromiter(chain.from_iterable(pieces), np.int64, 2 * len(pieces))  # start, end, start, ...
            ends = measure.token_index(flat)
            self.firsts, self.lasts = ends[0::2], ends[1::2]

    def __call__(self, i: int, j: int) -> int:
        if self.lasts is None:
            return self.measure.exact(self.pieces[i][0], self.pieces[j][1])
        return self.lasts[j] - self.firsts[i]

    def first_over(self, i: int, j: int, size: int) -> int:
        """The first k >= j with `self(i, k) > size`, or len(pieces) if there is none."""
        if self.lasts is None:
            while j < len(self.pieces) and self(i, j) <= size:
                j += 1
            return j
        return bisect_right(self.lasts, self.firsts[i] + size, j)  # the lasts never decrease


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
    return Chunk(text[start:end], start, end, n_tokens, metadata)


