"""Fixed-size chunking: windows of at most `size` tokens, with optional overlap.

Taught in notebooks/03_fixed_size_and_overlap.ipynb.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from course_lib.chunking._measure import Chunk, _make_chunk, _Measure, _strip, _too_big_error, _validate
from course_lib.tokens import resolve_tokenizer

__all__ = ["fixed_size_chunks"]


def _drive_windows(
    cuts: Sequence[int],
    content_end: int,
    window: Callable[[int], tuple[int, int]],
    share_from: Callable[[int, int], Iterable[int]],
) -> list[tuple[int, int, int]]:
    """Lay windows over `cuts` (legal cut positions) until `content_end` is covered.

    `window(i)` gives `(j, n_tokens)` for the window from cut i. The next window starts at
    the first cut k from `share_from(i, j)` (cuts allowed to repeat text up to cut j) whose
    window still reaches past cut j, else at j.
    """
    out: list[tuple[int, int, int]] = []
    i = 0
    j, n = window(0)
    while True:
        out.append((int(cuts[i]), int(cuts[j]), n))
        if cuts[j] >= content_end:
            return out
        for k in [*share_from(i, j), j]:
            next_j, next_n = window(k)
            if next_j > j:
                break
        i, j, n = k, next_j, next_n


def _fixed_spans(
    measure: _Measure, a: int, b: int, size: int, overlap: int, *, stripped: bool = False
) -> list[tuple[int, int, int]]:
    """(start, end, n_tokens) windows over [a, b): at most `size` tokens, cut at word starts when possible.

    With `stripped`, `n_tokens` counts each window without its surrounding white space
    (how the recursive splitter will emit it).
    """
    text, tok = measure.text, measure.tokenizer
    if measure.starts is None:  # a tokenizer that only counts: every character offset is a cut
        cut_array = np.arange(a, b + 1)
        tok_index = None
    else:  # a, b and every token start inside (a, b) that is also a character boundary
        lo, hi = np.searchsorted(measure.starts, (a, b))
        inside = measure.raw_starts[lo:hi]  # increasing, apart from the -1s
        cut_array = np.concatenate(([a], inside[(inside > a) & (inside < b)], [b]))
        tok_index = np.searchsorted(measure.starts, cut_array)
    cuts = cut_array
    safe = measure.word_start[cut_array]
    last = len(cuts) - 1

    def count(i: int, j: int) -> int:
        if tok_index is not None and tok.exact_at_word_starts and safe[i] and safe[j] and not stripped:
            return int(tok_index[j] - tok_index[i])
        return measure.exact(int(cuts[i]), int(cuts[j]), stripped=stripped)

    def window(i: int) -> tuple[int, int]:
        if tok_index is None:  # largest j whose text fits, by binary search on the count
            lo, hi = i, last
            while lo < hi:
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if count(i, mid) <= size else (lo, mid - 1)
            j = lo
        else:
            limit = tok_index[i] + size
            j = last if tok_index[last] <= limit else int(np.searchsorted(tok_index, limit, side="right")) - 1
        if j < last:
            j = next((k for k in range(j, i, -1) if safe[k]), j)
        while j > i and (n := count(i, j)) > size:
            j -= 1
        if j <= i:
            raise _too_big_error(text, int(cuts[i]), size, tok)
        return j, n

    def share_from(i: int, j: int) -> Iterator[int]:
        """Cuts k in (i, j) at word starts whose text up to cut j holds at most `overlap` tokens."""
        first = i + 1 if tok_index is None else max(i + 1, int(np.searchsorted(tok_index, tok_index[j] - overlap)))
        exact_j = tok.exact_at_word_starts and safe[j] and not stripped
        for k in range(first, j):
            if safe[k] and (exact_j or measure.exact(int(cuts[k]), int(cuts[j])) <= overlap):
                yield k

    content_end = _strip(text, a, b)[1]
    return _drive_windows(cuts, content_end, window, share_from if overlap else lambda i, j: ())


def fixed_size_chunks(text: str, size: int, overlap: int = 0, tokenizer: Any = "cl100k_base") -> list[Chunk]:
    """Windows of at most `size` tokens, each starting `overlap` tokens or fewer before the last one ended.

    A cut moves back to the nearest word start inside the window, so words are not cut
    in half unless a single "word" is longer than the window (then any token boundary
    that is also a character boundary is used). Whitespace-only windows are dropped.
    """
    _validate(text, size, overlap)
    if not text.strip():
        return []
    measure = _Measure(text, resolve_tokenizer(tokenizer))
    return [
        _make_chunk(text, s, e, n) for s, e, n in _fixed_spans(measure, 0, len(text), size, overlap) if text[s:e].strip()
    ]


