"""The engine under every size-limited chunker: `Chunk`, spans, and token counts of spans.

A `_Measure` tokenizes a text once and answers "how many tokens in text[a:b]?" from
that single tokenization where it is exact (tiktoken and "chars" at word starts),
re-encoding only the ends of a span otherwise. Internal; the chunkers build on it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np

from course_lib.tokens import _Tokenizer

__all__ = ["Chunk", "Span", "as_spans"]


@dataclass(frozen=True)
class Chunk:
    """A piece of a source text: `source[start:end] == text`, `n_tokens` counted on `text`."""

    text: str
    start: int
    end: int
    n_tokens: int
    metadata: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


Span = Union[Chunk, tuple[int, int]]


def as_spans(text: str, chunks: Sequence[Span]) -> list[tuple[int, int]]:
    """`(start, end)` pairs from `Chunk`s or pairs, checked against `text`."""
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


_IS_SPACE = np.array([chr(c).isspace() for c in range(0x3001)])  # no white space above U+3000


def _word_start_mask(text: str) -> np.ndarray:
    """mask[p] is True where a cut at p falls before a word: p == 0, p == len(text), or a space
    that follows a non-space character. For tiktoken such a space always opens a new
    pre-tokenizer piece, so a cut there never changes how the text around it tokenizes."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    mask = np.zeros(len(text) + 1, dtype=bool)
    before = codes[:-1]
    space_before = np.zeros(len(before), dtype=bool)
    low = before < len(_IS_SPACE)
    space_before[low] = _IS_SPACE[before[low]]
    mask[1:-1] = (codes[1:] == 32) & ~space_before
    mask[0] = mask[-1] = True
    return mask


class _Measure:
    """Token counts of spans of one text, from a single tokenization where possible."""

    def __init__(self, text: str, tokenizer: _Tokenizer):
        self.text = text
        self.tokenizer = tokenizer
        self.raw_starts = tokenizer.token_starts(text)  # -1 where a token starts inside a character
        self.word_start = _word_start_mask(text)
        self.starts = None if self.raw_starts is None else np.maximum.accumulate(self.raw_starts)
        exact_splits = tokenizer.exact_at_word_starts and self.starts is not None
        self._word_starts = np.flatnonzero(self.word_start[1:-1]) + 1 if exact_splits else None

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
    """Shrink [a, b) to exclude whitespace at both ends."""
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def _too_big_error(text: str, pos: int, size: int, tokenizer: _Tokenizer) -> ValueError:
    char = text[pos]
    return ValueError(
        f"size={size} is too small: the character {char!r} (U+{ord(char):04X}) at offset {pos} alone takes "
        f"{tokenizer.count(char)} tokens, and chunks never split a character; use a larger size"
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


