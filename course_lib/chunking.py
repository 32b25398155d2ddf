"""Chunkers that return exact character offsets and never break their size limit.

Every chunker returns `Chunk`s in source order with `source[c.start:c.end] == c.text`
and `c.n_tokens` = the token count of `c.text` itself (recounted, never summed from
pieces), `c.n_tokens <= size`. Cuts fall only between characters (never inside a
UTF-8 sequence), so no chunk contains U+FFFD that the source did not have.

`tokenizer` may be an encoding name ("cl100k_base", "o200k_base"), "chars", a
tiktoken `Encoding`, a Hugging Face tokenizer, or a callable `str -> int` that counts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Union

import numpy as np
import tiktoken

from course_lib.tokens import ENCODINGS, get_encoding


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


# ---------------------------------------------------------------------------
# Tokenizers: one small adapter per kind
# ---------------------------------------------------------------------------


class _Tokenizer:
    """Counts tokens and, where it can, says where each token of a text starts."""

    # True when a text cut at word starts (a space after a non-space) tokenizes exactly
    # like the slice of the whole text's tokens, so counts need no re-encoding.
    exact_at_word_starts = False

    def count(self, text: str) -> int:
        raise NotImplementedError

    def token_starts(self, text: str) -> np.ndarray | None:
        """Char offset where each token starts (-1 if it starts inside a character)."""
        return None


class _Tiktoken(_Tokenizer):
    exact_at_word_starts = True

    def __init__(self, encoding: tiktoken.Encoding):
        self.encoding = encoding

    def count(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))

    def token_starts(self, text: str) -> np.ndarray:
        ids = self.encoding.encode_to_numpy(text, disallowed_special=())
        byte_starts = np.zeros(len(ids), dtype=np.int64)
        np.cumsum(_token_byte_lengths(self.encoding)[ids[:-1]], out=byte_starts[1:])
        data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        is_char_start = (data & 0xC0) != 0x80
        char_of_byte = np.cumsum(is_char_start) - 1
        return np.where(is_char_start[byte_starts], char_of_byte[byte_starts], -1)


@lru_cache(maxsize=None)
def _token_byte_lengths(encoding: tiktoken.Encoding) -> np.ndarray:
    lengths = np.zeros(encoding.max_token_value + 1, dtype=np.int64)
    for token_bytes, rank in encoding._mergeable_ranks.items():  # the BPE vocabulary
        lengths[rank] = len(token_bytes)
    return lengths


class _Chars(_Tokenizer):
    exact_at_word_starts = True

    def count(self, text: str) -> int:
        return len(text)

    def token_starts(self, text: str) -> np.ndarray:
        return np.arange(len(text), dtype=np.int64)


class _HuggingFace(_Tokenizer):
    """A fast (Rust) Hugging Face tokenizer, counted without special tokens or truncation."""

    def __init__(self, tokenizer: Any):
        # a private copy: a model's tokenizer may carry padding and truncation settings
        backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
        self.backend = type(backend).from_str(backend.to_str())
        self.backend.no_padding()
        self.backend.no_truncation()

    def count(self, text: str) -> int:
        return len(self.backend.encode(text, add_special_tokens=False).ids)

    def token_starts(self, text: str) -> np.ndarray:
        offsets = self.backend.encode(text, add_special_tokens=False).offsets
        return np.array([start for start, _ in offsets], dtype=np.int64)


class _Callable(_Tokenizer):
    def __init__(self, fn: Callable[[str], int]):
        self.fn = fn

    def count(self, text: str) -> int:
        n = self.fn(text)
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"the tokenizer callable must return an int, got {type(n).__name__}")
        return int(n)


def resolve_tokenizer(tokenizer: Any) -> _Tokenizer:
    """Wrap any supported `tokenizer` value in an adapter (see the module docstring)."""
    if isinstance(tokenizer, str):
        if tokenizer == "chars":
            return _Chars()
        if tokenizer in ENCODINGS:
            return _Tiktoken(get_encoding(tokenizer))
        raise ValueError(f'tokenizer={tokenizer!r} is unknown; use "chars", {", ".join(map(repr, ENCODINGS))}, '
                         "a tiktoken Encoding, a Hugging Face tokenizer or a callable that counts")
    if isinstance(tokenizer, tiktoken.Encoding):
        return _Tiktoken(tokenizer)
    backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
    if hasattr(backend, "encode") and hasattr(backend, "get_vocab_size"):
        return _HuggingFace(tokenizer)
    if hasattr(tokenizer, "encode") and hasattr(tokenizer, "convert_tokens_to_ids"):  # a slow HF tokenizer
        return _Callable(lambda text: len(tokenizer.encode(text, add_special_tokens=False)))
    if callable(tokenizer):
        return _Callable(tokenizer)
    raise TypeError(f"tokenizer of type {type(tokenizer).__name__} is not supported; pass an encoding name, "
                    '"chars", a tiktoken Encoding, a Hugging Face tokenizer or a callable str -> int')


# ---------------------------------------------------------------------------
# Measuring spans of one text
# ---------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------
# Recursive splitting
# ---------------------------------------------------------------------------

_SENTENCE_END = r"(?:(?<=[.!?…])|(?<=[.!?…][\"'”’»)\]]))\s+"

SEPARATORS: dict[str, list[str]] = {
    # Regular expressions, highest level first; a cut goes where a match starts, so the
    # separator opens the next piece. Below the last one, pieces are cut between tokens.
    "prose": [r"\n[ \t]*\n\s*", r"\n", _SENTENCE_END, r"\s+"],
    "markdown": [r"\n(?=# )", r"\n(?=## )", r"\n(?=### )", r"\n(?=#{4,6} )", r"\n[ \t]*\n\s*", r"\n",
                 _SENTENCE_END, r"\s+"],
    # a match swallows the decorator lines, so the cut falls before them, not after
    "python": [r"\n(?:@\w[^\n]*\n)*(?=class )", r"\n(?:@\w[^\n]*\n)*(?=(?:async )?def )",
               r"\n(?:[ \t]+@\w[^\n]*\n)*(?=[ \t]+(?:async )?def )", r"\n[ \t]*\n", r"\n", r"\s+"],
    # a new line that opens with a speaker label such as "ANA:", "Speaker 2:" or "[00:12:05] Luis:"
    "transcript": [r"\n(?=[ \t]*(?:\[[\d:.]+\][ \t]*)?[^\s:][^\n:]{0,39}:[ \t])", r"\n", _SENTENCE_END, r"\s+"],
}


@lru_cache(maxsize=64)
def _compile(pattern: str) -> re.Pattern:
    return re.compile(pattern)


def _resolve_separators(separators: str | Sequence[str] | None) -> list[re.Pattern]:
    if separators is None:
        separators = "prose"
    if isinstance(separators, str):
        if separators not in SEPARATORS:
            raise ValueError(f"separators={separators!r} is not a preset; use one of {sorted(SEPARATORS)} "
                             "or a list of regular expressions")
        separators = SEPARATORS[separators]
    patterns = []
    for sep in separators:
        if not isinstance(sep, str) or not sep:
            raise ValueError(f"separators must be non-empty regular expressions (use re.escape for plain "
                             f"text); got {sep!r}")
        patterns.append(_compile(sep))
    return patterns


def _recursive(
    measure: _Measure, a: int, b: int, size: int, overlap: int, patterns: list[re.Pattern], *, exact: bool = False
) -> list[tuple[int, int]]:
    """The course's algorithm on [a, b): cut on the first separator that occurs, recurse only
    into pieces still over `size`, then merge neighbours while they fit. Sizes are one-pass
    estimates, or exact recounts with `exact`."""
    if (measure.exact(a, b, stripped=True) if exact else measure.approx(a, b)) <= size:
        return [(a, b)]
    for level, pattern in enumerate(patterns):
        cuts = [m.start() for m in pattern.finditer(measure.text, a, b) if a < m.start()]
        if cuts:
            break
    else:  # no separator left: cut between tokens
        return [(s, e) for s, e, _ in _fixed_spans(measure, a, b, size, overlap, stripped=True)]
    pieces = list(zip([a, *cuts], [*cuts, b]))
    if exact:
        sizes = [measure.exact(s, e, stripped=True) for s, e in pieces]
    else:
        estimate = measure.span_counter(pieces)
        sizes = [estimate(k, k) for k in range(len(pieces))]
    fragments: list[tuple[int, int]] = []
    for (s, e), n in zip(pieces, sizes):
        if n <= size:
            fragments.append((s, e))
        else:
            fragments += _recursive(measure, s, e, size, overlap, patterns[level + 1:], exact=exact)
    return [(s, e) for s, e, _ in _merge(measure, fragments, size, overlap, patterns, exact=exact)]


def _merge(
    measure: _Measure, pieces: list[tuple[int, int]], size: int, overlap: int, patterns: list[re.Pattern],
    *, exact: bool,
) -> list[tuple[int, int, int]]:
    """Join neighbouring pieces while they fit; start each chunk with the previous one's tail.

    Returns stripped `(start, end, n_tokens)`. With `exact`, every chunk is recounted and
    pieces are given back until it fits (a single piece that only looked small enough is
    split again on `patterns`, counting exactly); otherwise sizes are one-pass estimates.
    """
    text, pieces = measure.text, list(pieces)
    estimate = measure.span_counter(pieces)
    out: list[tuple[int, int, int]] = []
    i = 0  # first piece of the current chunk
    new = 0  # first piece in no chunk yet: the current chunk must contain it
    while new < len(pieces):
        j = new + 1
        while j < len(pieces) and estimate(i, j) <= size:
            j += 1
        while True:
            s, e = _strip(text, pieces[i][0], pieces[j - 1][1])
            n = (measure.exact(s, e) if exact else estimate(i, j - 1)) if s < e else 0
            if n <= size:
                break
            if j - 1 > new:
                j -= 1
            elif i < new:
                i += 1
            elif not exact:  # an estimate only: the final, exact pass settles it
                break
            else:  # one piece that only looked small enough: split it again, counting exactly
                pa, pb = pieces[new]
                pieces[new:new + 1] = _recursive(measure, pa, pb, size, 0, patterns, exact=True)
                estimate = measure.span_counter(pieces)
                j = new + 1
        emitted = s < e and not (out and out[-1][0] <= s and e <= out[-1][1])  # nothing new: skip
        if emitted:
            if out and out[-1][0] == s:  # the previous chunk is a prefix of this one
                out.pop()
            out.append((s, e, n))
        k = j
        if overlap and emitted and j < len(pieces):
            while k - 1 > i:
                ts, te = _strip(text, pieces[k - 1][0], e)
                if ts <= s or measure.exact(ts, te) > overlap or estimate(k - 1, j) > size:
                    break
                k -= 1
        i, new = k, j
    return out


def _recursive_chunks(measure: _Measure, a: int, b: int, size: int, overlap: int,
                      patterns: list[re.Pattern]) -> list[tuple[int, int, int]]:
    """Recursive splitting of [a, b) followed by one exact merge pass that enforces `size`."""
    return _merge(measure, _recursive(measure, a, b, size, overlap, patterns), size, overlap, patterns, exact=True)


def recursive_chunks(
    text: str,
    size: int,
    overlap: int = 0,
    separators: str | Sequence[str] | None = None,
    tokenizer: Any = "cl100k_base",
) -> list[Chunk]:
    """Split on a hierarchy of separators, recurse into oversized pieces, merge neighbours that fit.

    `separators` is a preset name from `SEPARATORS` ("prose", the default; "markdown",
    "python", "transcript") or a list of regular expressions, highest level first. Each
    chunk is stripped of surrounding whitespace; with `overlap`, a chunk starts with the
    last whole pieces of the previous one, at most `overlap` tokens of them.
    """
    _validate(text, size, overlap)
    patterns = _resolve_separators(separators)
    if not text.strip():
        return []
    measure = _Measure(text, resolve_tokenizer(tokenizer))
    return [_make_chunk(text, s, e, n) for s, e, n in _recursive_chunks(measure, 0, len(text), size, overlap, patterns)]


# ---------------------------------------------------------------------------
# Sentences
# ---------------------------------------------------------------------------

ABBREVIATIONS: dict[str, frozenset[str]] = {
    "en": frozenset(
        "mr mrs ms dr prof sr jr st vs e.g i.e inc ltd co corp no nos fig figs approx dept est al cf ca "
        "jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k a.m p.m ph.d vol pp op"
        .split()
    ),
    "es": frozenset(
        "sr sra srta sres dr dra drs ud uds lic ing arq núm nº pág págs art arts av avda aprox tel dpto "
        "depto cap caps vol fig figs ej ee uu admón gral prof profa col máx mín cía s.a"
        .split()
    ),
}
_SENTENCE_CANDIDATE = re.compile(r"[.!?…]+[\"'”’»)\]]*(?=\s)|\n[ \t]*\n")


def split_sentences(text: str, language: str = "en") -> list[tuple[int, int]]:
    """`(start, end)` spans of the sentences of `text`, without surrounding whitespace.

    A sentence ends at `.`, `!`, `?` or `…` (and closing quotes) before white space,
    unless the word is a known abbreviation of `language` ("en" or "es") or a single
    initial, or the next sentence would start in lower case. Decimals such as 3.85 and
    Spanish `¿…?` and `¡…!` stay whole. A blank line always ends a sentence.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    if language not in ABBREVIATIONS:
        raise ValueError(f"language={language!r} is not supported; use one of {sorted(ABBREVIATIONS)}")
    abbreviations = ABBREVIATIONS[language]
    cuts = [0]
    for m in _SENTENCE_CANDIDATE.finditer(text):
        if m.group().startswith("."):
            word = text[:m.start()].rsplit(None, 1)[-1] if text[:m.start()].strip() else ""
            word = word.lstrip("¿¡(\"'«“").lower()
            if len(word) == 1 and word.isalpha() or word in abbreviations:
                continue
        if not m.group().startswith("\n"):
            following = text[m.end():].lstrip()
            if following[:1].islower():
                continue
        cuts.append(m.end())
    cuts.append(len(text))
    spans = [_strip(text, a, b) for a, b in zip(cuts, cuts[1:])]
    return [(a, b) for a, b in spans if a < b]


def sentence_chunks(
    text: str,
    max_sentences: int = 5,
    overlap_sentences: int = 1,
    language: str = "en",
    tokenizer: Any = "cl100k_base",
) -> list[Chunk]:
    """Groups of up to `max_sentences` sentences; each group repeats the previous one's last
    `overlap_sentences`. Sizes are counted in sentences, so `n_tokens` (by `tokenizer`) varies."""
    for name, value in (("max_sentences", max_sentences), ("overlap_sentences", overlap_sentences)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if max_sentences < 1:
        raise ValueError(f"max_sentences={max_sentences}: use max_sentences >= 1")
    if not 0 <= overlap_sentences < max_sentences:
        raise ValueError(f"overlap_sentences={overlap_sentences} must be in 0..max_sentences-1 "
                         f"(= {max_sentences - 1}), or no chunk would move forward")
    sentences = split_sentences(text, language)
    tok = resolve_tokenizer(tokenizer)
    chunks = []
    step = max_sentences - overlap_sentences
    for i in range(0, len(sentences), step):
        group = sentences[i:i + max_sentences]
        start, end = group[0][0], group[-1][1]
        chunks.append(_make_chunk(text, start, end, tok.count(text[start:end]), sentences=len(group)))
        if i + max_sentences >= len(sentences):
            break
    return chunks


# ---------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------

_MD_LINE = re.compile(r"^.*(?:\n|$)", re.MULTILINE)
_MD_HEADING = re.compile(r" {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*\r?\n?$")
_MD_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def markdown_sections(text: str) -> list[tuple[int, int, list[str]]]:
    """`(start, end, heading_path)` for the preamble and each ATX-headed section.

    `heading_path` lists the enclosing headings as written, e.g. `["# Guide", "## Install"]`.
    Lines starting with `#` inside fenced code blocks are not headings.
    """
    sections: list[tuple[int, int, list[str]]] = []
    path: list[tuple[int, str]] = []
    start, fence = 0, None
    for m in _MD_LINE.finditer(text):
        line = m.group()
        if not line:
            break
        opener = _MD_FENCE.match(line)
        if fence is None and opener:
            fence = opener.group(1)
        elif fence is not None:
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence) \
                    and not line.strip().strip(fence[0]):
                fence = None
        elif heading := _MD_HEADING.match(line):
            if m.start() > start:
                sections.append((start, m.start(), [h for _, h in path]))
            level = len(heading.group(1))
            path = [(lv, h) for lv, h in path if lv < level] + [(level, f"{heading.group(1)} {heading.group(2)}")]
            start = m.start()
    sections.append((start, len(text), [h for _, h in path]))
    return [(a, b, p) for a, b, p in sections if text[a:b].strip()]


def markdown_chunks(text: str, size: int, overlap: int = 0, tokenizer: Any = "cl100k_base") -> list[Chunk]:
    """Chunk each Markdown section on its own, so no chunk crosses a heading.

    Every chunk's `metadata["headings"]` holds its heading path. A section larger than
    `size` is split recursively (paragraphs, lines, sentences, words) with `overlap`.
    """
    _validate(text, size, overlap)
    if not text.strip():
        return []
    measure = _Measure(text, resolve_tokenizer(tokenizer))
    patterns = _resolve_separators("prose")
    chunks = []
    for a, b, path in markdown_sections(text):
        chunks += [_make_chunk(text, s, e, n, headings=path)
                   for s, e, n in _recursive_chunks(measure, a, b, size, overlap, patterns)]
    return chunks
