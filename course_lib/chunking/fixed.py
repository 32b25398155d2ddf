"""Fixed-size chunking: windows of at most `size` tokens, with optional overlap.

Taught in notebooks/03_fixed_size_and_overlap.ipynb.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from typing import Any

import numpy as np

from course_lib.chunking._measure import (
    Chunk,
    _make_chunk,
    _Measure,
    _strip,
    _too_big_error,
    _validate,
)
from course_lib.chunking.registry import TOKENIZER, choice, register_strategy
from course_lib.tokens import resolve_tokenizer

__all__ = ["ANCHORS", "ANCHOR_REACH", "fixed_size_chunks"]

ANCHORS = ("paragraph",)  # the values of `anchor`: where cuts are pinned so that an edit only moves cuts near it
# A paragraph start is a cut if its rank is the lowest within this share of `size` tokens on either side:
# 0.65 kept the 90th percentile of chunks re-cut by a one-sentence edit at 2-3 in trials on two Chroma
# corpora with the edits of benchmarks/edit_stability.py (0.5 made smaller chunks, 0.8 re-cut more fixed windows)
ANCHOR_REACH = 0.65
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")  # a blank line: the next paragraph starts where it ends


class _Consecutive:
    """The token index of each cut when the cuts are the bounds of consecutive tokens: what
    `np.arange(first, first + n)` would hold, without the memory of a long array."""

    def __init__(self, first: int, n: int):
        self.first, self.n = first, n

    def __getitem__(self, k: int) -> int:
        return self.first + k

    def searchsorted(self, value: int, side: str = "left") -> int:
        return min(max(value - self.first + (side == "right"), 0), self.n)


class _Windows:
    """Windows of at most `size` tokens over [a, b) of a measured text, laid over legal cuts.

    Legal cuts are token starts that are also character and cluster boundaries (a token
    start inside a cluster moves to the cluster's two ends); a tokenizer that only counts
    allows every cluster boundary. When no legal cut fits after a window's start (the
    tokens there straddle characters), every cluster boundary up to the next legal cut
    joins the candidates; only a single cluster that alone needs more than `size` tokens
    is an error.
    """

    def __init__(self, measure: _Measure, a: int, b: int, size: int, overlap: int, stripped: bool):
        self.measure, self.size, self.overlap, self.stripped = measure, size, overlap, stripped
        tok_index = None
        bounds = measure.raw_bounds
        if bounds is None:  # a tokenizer that only counts: every character offset is a cut
            cuts = np.arange(a, b + 1)
        else:
            lo, hi = measure.token_index((a, b))
            if measure.ordered and bounds[lo] == a and bounds[hi] == b:  # a and b are token bounds:
                cuts = bounds[lo:hi + 1]  # the cuts are the bounds in between
                if measure.all_char_bounds:
                    tok_index = _Consecutive(lo, len(cuts))
                else:  # except the tokens that start inside a character
                    tok_index = np.flatnonzero(cuts >= 0)
                    cuts = cuts[tok_index]
                    tok_index += lo
            else:  # a, b and every token start inside (a, b) that is also a character boundary
                inside = bounds[lo:hi]
                keep = (inside > a) & (inside < b)  # not a, b or -1
                cuts = np.concatenate(([a], inside[keep], [b]))
                if measure.ordered:  # the kept starts increase: each cut's token index is known
                    tok_index = np.concatenate(([lo], lo + np.flatnonzero(keep), [hi]))
                else:  # some tokenizers report offsets out of order
                    cuts = np.sort(cuts)
                    cuts = cuts[np.concatenate(([True], cuts[1:] != cuts[:-1]))]
        snapped = measure.snap_to_clusters(cuts)
        if snapped is not cuts:
            cuts, tok_index = snapped[(snapped >= a) & (snapped <= b)], None
        self._set(cuts, tok_index)
        self.content_end = _strip(measure.text, a, b)[1]

    def _set(self, cuts: np.ndarray, tok_index: np.ndarray | _Consecutive | None = None) -> None:
        self.cuts = cuts
        self.last = len(cuts) - 1
        self.safe = self.measure.word_start(cuts)
        if tok_index is None and self.measure.bounds is not None:
            tok_index = self.measure.bounds.searchsorted(cuts)
        self.tok_index = tok_index

    def index(self, position: int) -> int:
        return int(self.cuts.searchsorted(position))

    def count(self, i: int, j: int) -> int:
        m, tok_index = self.measure, self.tok_index
        if (tok_index is not None and m.tokenizer.exact_at_word_starts and self.safe[i] and self.safe[j]
                and not self.stripped):
            return int(tok_index[j] - tok_index[i])
        return m.exact(int(self.cuts[i]), int(self.cuts[j]), stripped=self.stripped)

    def _fit(self, i: int) -> tuple[int, int]:
        """The farthest cut j > i (preferring word starts) whose window from cut i fits; (i, 0) if none."""
        size, last, safe, tok_index = self.size, self.last, self.safe, self.tok_index
        if tok_index is None:  # largest j whose text fits, by binary search on the count
            lo, hi = i, last
            while lo < hi:
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if self.count(i, mid) <= size else (lo, mid - 1)
            j = lo
        else:
            limit = tok_index[i] + size
            j = last if tok_index[last] <= limit else int(tok_index.searchsorted(limit, side="right")) - 1
        if j < last:
            j = next((k for k in range(j, i, -1) if safe[k]), j)
        j = max(j, i + 1)  # the estimate counts tokens that straddle cut i + 1 on both sides: recount
        n = 0
        while j > i and (n := self.count(i, j)) > size:
            j -= 1
        return j, n

    def _refine(self, i: int) -> bool:
        """Add every cluster boundary between cut i and cut i + 1; False if there is none."""
        a, b = int(self.cuts[i]), int(self.cuts[i + 1])
        inner = self.measure.snap_to_clusters(np.arange(a + 1, b, dtype=np.int64))
        inner = inner[(inner > a) & (inner < b)]
        if len(inner) == 0:
            return False
        self._set(np.concatenate((self.cuts[:i + 1], inner, self.cuts[i + 1:])))
        return True

    def window(self, i: int) -> tuple[int, int]:
        """`(j, n_tokens)` of the window from cut i (cuts after i may be added on the way)."""
        while True:
            j, n = self._fit(i)
            if j > i:
                return j, n
            if not self._refine(i):
                raise _too_big_error(self.measure.text, int(self.cuts[i]), self.size, self.measure.tokenizer)

    def share_from(self, i: int, j: int) -> list[int]:
        """Positions of the cuts k in (i, j) at word starts whose text up to cut j holds at most
        `overlap` tokens (positions, not indices: a window may add cuts, which shifts the indices)."""
        if not self.overlap:
            return []
        m, tok_index, safe = self.measure, self.tok_index, self.safe
        first = i + 1 if tok_index is None else max(i + 1, int(tok_index.searchsorted(tok_index[j] - self.overlap)))
        positions = self.cuts[first + safe[first:j].nonzero()[0]].tolist()  # the word starts
        if m.tokenizer.exact_at_word_starts and safe[j] and not self.stripped:
            return positions  # counted exactly by the token indices
        end = int(self.cuts[j])
        return [p for p in positions if m.exact(p, end) <= self.overlap]

    def spans(self) -> list[tuple[int, int, int]]:
        """Lay windows until the content is covered. The next window starts at the first cut
        allowed to repeat text (`share_from`) whose window still reaches past the last end."""
        out: list[tuple[int, int, int]] = []
        i = 0
        j, n = self.window(0)
        while True:
            start, end = int(self.cuts[i]), int(self.cuts[j])
            out.append((start, end, n))
            if end >= self.content_end:
                return out
            for position in [*self.share_from(i, j), end]:
                k = self.index(position)
                next_j, next_n = self.window(k)
                if self.cuts[next_j] > end:
                    break
            i, j, n = k, next_j, next_n


def _fixed_spans(
    measure: _Measure, a: int, b: int, size: int, overlap: int, *, stripped: bool = False
) -> list[tuple[int, int, int]]:
    """(start, end, n_tokens) windows over [a, b): at most `size` tokens, cut at word starts when possible.

    With `stripped`, `n_tokens` counts each window without its surrounding white space
    (how the recursive splitter will emit it).
    """
    return _Windows(measure, a, b, size, overlap, stripped).spans()


def _paragraph_starts(measure: _Measure, a: int, b: int) -> list[int]:
    """Where each paragraph of [a, b) after the first starts (after a blank line), never inside a
    user-perceived character."""
    starts = [p for m in _PARAGRAPH_BREAK.finditer(measure.text, a, b) if a < (p := m.end()) < b]
    return measure.cluster_boundaries(starts)


def _rank(paragraph: str) -> bytes:
    """A pseudo-random rank that depends on the paragraph's own text only."""
    return hashlib.blake2b(paragraph.encode("utf-8", "surrogatepass"), digest_size=8).digest()


def _paragraphs(measure: _Measure, a: int, b: int, size: int) -> list[tuple[int, int]]:
    """[a, b) cut at anchored paragraph starts: groups of whole paragraphs, each cut chosen by the text near it.

    A paragraph start is a cut when its paragraph's rank (`_rank`) is the lowest among the
    paragraph starts less than `reach = 0.65 * size` tokens away on either side (tokens counted
    paragraph by paragraph). Whether a start is a cut depends only on the text within `reach`
    tokens of it, so an edit moves at most the cuts that near it (content-defined chunking).
    Consecutive cuts are at least `reach` tokens apart; a group longer than `size` is split by
    the caller, inside the group.
    """
    starts = _paragraph_starts(measure, a, b)
    if not starts:
        return [(a, b)]
    bounds = [a, *starts, b]
    text = measure.text
    lengths = [measure.exact(s, e) for s, e in itertools.pairwise(bounds)]
    positions = np.cumsum([0, *lengths[:-1]])[1:]  # the token position of each paragraph start
    ranks = [_rank(text[s:e]) for s, e in zip(starts, bounds[2:])]
    reach = max(1, int(size * ANCHOR_REACH))
    cuts = []
    lo = hi = 0
    for k, position in enumerate(positions):
        while positions[lo] <= position - reach:
            lo += 1
        while hi < len(positions) and positions[hi] < position + reach:
            hi += 1
        if all(ranks[k] < ranks[m] for m in range(lo, hi) if m != k):
            cuts.append(starts[k])
    return list(zip([a, *cuts], [*cuts, b]))


def fixed_size_chunks(text: str, size: int, overlap: int = 0, tokenizer: Any = "cl100k_base",
                      anchor: str | None = None) -> list[Chunk]:
    """Windows of at most `size` tokens, each starting `overlap` tokens or fewer before the last one ended.

    A cut moves back to the nearest word start inside the window, so words are not cut
    in half unless a single "word" is longer than the window (then any token boundary
    that keeps user-perceived characters whole is used: never inside "e" + a combining
    accent, an emoji sequence, a flag or CR LF). Whitespace-only windows are dropped.
    A single user-perceived character that alone takes more than `size` tokens raises
    `ValueError` naming it.

    `anchor="paragraph"` restarts the windows at anchored paragraph starts: paragraph starts
    (after a blank line) picked by the text around them alone, at least 0.65 x `size` tokens
    apart (`_paragraphs`). No window crosses one, so an edit re-cuts only the windows near it
    instead of shifting every later window (taught in
    notebooks/14_from_notebook_to_production.ipynb, section 2). The default `None` lays windows
    over the whole text.

    Taught in notebooks/03_fixed_size_and_overlap.ipynb, section 3 (the library version of
    the token windows cut by hand in section 2).
    """
    _check_chunker_args(text, size, overlap, anchor)
    if not text.strip():
        return []
    measure = _Measure(text, resolve_tokenizer(tokenizer))
    blocks = _paragraphs(measure, 0, len(text), size) if anchor else [(0, len(text))]
    spans = [span for a, b in blocks for span in _fixed_spans(measure, a, b, size, overlap)]
    return [_make_chunk(text, s, e, n) for s, e, n in spans if text[s:e].strip()]


@register_strategy("fixed", unit="cl100k tokens", options={"anchor": choice(ANCHORS, "anchors")},
                   description="windows of at most `size` tokens, cut at word starts (notebook 03); "
                               "option anchor=paragraph")
def _fixed(text: str, size: int, overlap: int, anchor: str | None = None) -> list[Chunk]:
    return fixed_size_chunks(text, size, overlap, tokenizer=TOKENIZER, anchor=anchor)


def _check_chunker_args(text: Any, size: Any, overlap: Any, anchor: Any) -> None:
    """The argument checks of `fixed_size_chunks` and `recursive_chunks`: `_validate`, then `anchor`."""
    _validate(text, size, overlap)
    _check_anchor(anchor)


def _check_anchor(anchor: Any) -> None:
    if anchor is not None and anchor not in ANCHORS:
        raise ValueError(f"anchor={anchor!r}: use None (no anchor) or one of {', '.join(map(repr, ANCHORS))}")
