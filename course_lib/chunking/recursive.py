"""Recursive splitting: cut on the highest separator that occurs, recurse into pieces still too big, merge.

Taught in notebooks/04_recursive_splitting.ipynb. The private helpers carry the names of
the functions the notebook builds by hand, so the two read side by side:
`_split_on` and `_first_split` (section 1), `_cut_between_tokens` and `_split_without_merge`
(section 2), `_merge` and `_split_recursive` (section 3), `_tail_start` (section 4). The
library adds what the notebook leaves out: one tokenization per text instead of a count
per candidate span, cuts that keep user-perceived characters whole, and a faster search for
the sentence rule (`sentences._SentenceEnds`, same matches as its regular expression).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Union

import regex

from course_lib.chunking._measure import Chunk, _make_chunk, _Measure, _strip
from course_lib.chunking.fixed import ANCHORS, _check_chunker_args, _fixed_spans, _paragraphs
from course_lib.chunking.registry import TOKENIZER, choice, register_strategy
from course_lib.chunking.sentences import SENTENCE_END, _sentence_rules, _SentenceEnds
from course_lib.tokens import resolve_tokenizer

__all__ = ["SEPARATORS", "recursive_chunks"]


SEPARATORS: dict[str, list[str]] = {
    # Regular expressions, highest level first; a cut goes where a match starts, so the
    # separator opens the next piece. Below the last one, pieces are cut between tokens.
    # SENTENCE_END is the sentence rule of split_sentences, English and Spanish abbreviations together.
    "prose": [r"\n[ \t]*\n\s*", r"\n", SENTENCE_END, r"\s+"],
    "markdown": [r"\n(?=# )", r"\n(?=## )", r"\n(?=### )", r"\n(?=#{4,6} )", r"\n[ \t]*\n\s*", r"\n",
                 SENTENCE_END, r"\s+"],
    # a match swallows the decorator lines, so the cut falls before them, not after
    "python": [r"\n(?:@\w[^\n]*\n)*(?=class )", r"\n(?:@\w[^\n]*\n)*(?=(?:async )?def )",
               r"\n(?:[ \t]+@\w[^\n]*\n)*(?=[ \t]+(?:async )?def )", r"\n[ \t]*\n", r"\n", r"\s+"],
    # a new line that opens with a speaker label such as "ANA:", "Speaker 2:" or "[00:12:05] Luis:"
    "transcript": [r"\n(?=[ \t]*(?:\[[\d:.]+\][ \t]*)?[^\s:][^\n:]{0,39}:[ \t])", r"\n", SENTENCE_END, r"\s+"],
    # the separators of Chroma's RecursiveTokenChunker ("Evaluating Chunking Strategies for Retrieval",
    # 2024), as plain text escaped into regexes; its final "" (cut between tokens) is built in here
    "chroma": [re.escape(s) for s in ["\n\n", "\n", ".", "?", "!", " "]],
}


Separator = Union[re.Pattern, regex.Pattern, _SentenceEnds]


@lru_cache(maxsize=64)
def _compile(pattern: str) -> Separator:
    r"""`re` where it can; the `regex` package for what `re` lacks (`\p{...}`, variable-length lookbehind);
    the sentence rule (`sentence_end_pattern`) gets its own faster search, with the same matches."""
    if pattern in _sentence_rules():
        return _SentenceEnds(pattern)
    try:
        return re.compile(pattern)
    except re.error:
        return regex.compile(pattern)


def _resolve_separators(separators: str | Sequence[str] | None) -> list[Separator]:
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
        try:
            patterns.append(_compile(sep))
        except regex.error as error:
            raise ValueError(f"separator {sep!r} is not a valid regular expression: {error}") from None
    return patterns


Pieces = list[tuple[int, int]]


def _split_on(measure: _Measure, a: int, b: int, pattern: Separator) -> Pieces:
    """Cut [a, b) where each match of `pattern` starts (never inside a user-perceived character)."""
    if isinstance(pattern, _SentenceEnds):
        starts = pattern.starts(measure.text, measure.codes, a, b)  # all after a
    else:
        starts = [p for m in pattern.finditer(measure.text, a, b) if a < (p := m.start())]
    cuts = measure.cluster_boundaries(starts)
    return list(zip([a, *cuts], [*cuts, b]))


def _first_split(measure: _Measure, a: int, b: int, patterns: list) -> tuple[Pieces | None, list]:
    """The pieces at the highest separator that occurs in [a, b), and the separators below it."""
    for level, pattern in enumerate(patterns):
        pieces = _split_on(measure, a, b, pattern)
        if len(pieces) > 1:
            return pieces, patterns[level + 1:]
    return None, []


def _cut_between_tokens(measure: _Measure, a: int, b: int, size: int, overlap: int) -> Pieces:
    """Last resort: windows of at most `size` tokens (stripped), as fixed-size chunking cuts them."""
    pieces = [(s, e) for s, e, _ in _fixed_spans(measure, a, b, size, overlap, stripped=True)]
    return _fit_overlaps(measure, pieces, overlap) if overlap else pieces


def _fit_overlaps(measure: _Measure, pieces: Pieces, overlap: int) -> Pieces:
    """Move a window's start forward, word by word, while the text it repeats counts more than `overlap`.

    A window starts `overlap` tokens before the previous one ends, counted in the whole text's
    tokens; stripped of its leading space, the repeated words can count one token more
    (" pump" is one token, "pump" at the start of a text two), which would break the promise.
    """
    text = measure.text
    out = pieces[:1]
    for s, e in pieces[1:]:
        end = out[-1][1]
        while s < end and measure.exact(s, end, stripped=True) > overlap:
            gap = next((i for i in range(s + 1, end) if text[i - 1].isspace() and not text[i].isspace()
                        and measure.cluster_boundaries([i]) == [i]), end)
            s = _strip(text, gap, e)[0]
        out.append((s, e))
    return out


def _split_without_merge(
    measure: _Measure, a: int, b: int, size: int, overlap: int, patterns: list, *, exact: bool
) -> Pieces:
    """Pieces of [a, b) that each fit, found by recursing into the pieces still over `size`;
    each level's pieces are merged before they are returned (by `_split_recursive`)."""
    pieces, below = _first_split(measure, a, b, patterns)
    if pieces is None:  # no separator left: cut between tokens
        return _cut_between_tokens(measure, a, b, size, overlap)
    sizes = [measure.exact(s, e, stripped=True) for s, e in pieces] if exact else measure.approx_sizes(pieces)
    fragments: Pieces = []
    for (s, e), n in zip(pieces, sizes):
        if n <= size:
            fragments.append((s, e))
        else:
            fragments += _split_recursive(measure, s, e, size, overlap, below, exact=exact)
    return fragments


def _split_recursive(
    measure: _Measure, a: int, b: int, size: int, overlap: int, patterns: list, *, exact: bool = False
) -> Pieces:
    """The course's algorithm on [a, b): a span that fits is one piece; otherwise split on
    the first separator that occurs, recurse only into pieces still over `size`, then merge
    neighbours while they fit. Sizes are one-pass estimates, or exact recounts with `exact`."""
    if (measure.exact(a, b, stripped=True) if exact else measure.approx(a, b)) <= size:
        return [(a, b)]
    fragments = _split_without_merge(measure, a, b, size, overlap, patterns, exact=exact)
    return [(s, e) for s, e, _ in _merge(measure, fragments, size, overlap, patterns, exact=exact)]


def _tail_start(measure: _Measure, pieces: Pieces, i: int, j: int, end: int, size: int, overlap: int,
                estimate) -> int:
    """The first piece of the next chunk: the previous chunk's last whole pieces (from piece i
    to piece j - 1, ending at `end`) that hold at most `overlap` tokens, or piece j."""
    text, k = measure.text, j
    start = _strip(text, pieces[i][0], end)[0]
    while k - 1 > i:
        ts, te = _strip(text, pieces[k - 1][0], end)
        if ts <= start or measure.exact(ts, te) > overlap or estimate(k - 1, j) > size:
            break
        k -= 1
    return k


def _merge(
    measure: _Measure, pieces: Pieces, size: int, overlap: int, patterns: list, *, exact: bool,
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
        j = estimate.first_over(i, new + 1, size)
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
                pieces[new:new + 1] = _split_recursive(measure, pa, pb, size, 0, patterns, exact=True)
                estimate = measure.span_counter(pieces)
                j = new + 1
        emitted = s < e and not (out and out[-1][0] <= s and e <= out[-1][1])  # nothing new: skip
        if emitted:
            if out and out[-1][0] == s:  # the previous chunk is a prefix of this one
                out.pop()
            out.append((s, e, n))
        k = j
        if overlap and emitted and j < len(pieces):
            k = _tail_start(measure, pieces, i, j, e, size, overlap, estimate)
        i, new = k, j
    return out


def _recursive_chunks(measure: _Measure, a: int, b: int, size: int, overlap: int,
                      patterns: list, *, anchor: str | None = None) -> list[tuple[int, int, int]]:
    """Recursive splitting of [a, b) followed by one exact merge pass that enforces `size`;
    with `anchor="paragraph"`, each group of paragraphs between anchored starts on its own."""
    if anchor is not None:
        return [chunk for pa, pb in _paragraphs(measure, a, b, size)
                for chunk in _recursive_chunks(measure, pa, pb, size, overlap, patterns)]
    pieces = _split_recursive(measure, a, b, size, overlap, patterns)
    return _merge(measure, pieces, size, overlap, patterns, exact=True)


def recursive_chunks(
    text: str,
    size: int,
    overlap: int = 0,
    separators: str | Sequence[str] | None = None,
    tokenizer: Any = "cl100k_base",
    anchor: str | None = None,
) -> list[Chunk]:
    """Split on a hierarchy of separators, recurse into oversized pieces, merge neighbours that fit.

    `separators` is a preset name from `SEPARATORS` ("prose", the default; "markdown",
    "python", "transcript", "chroma") or a list of regular expressions, highest level
    first (compiled with `re`, or with the `regex` package when `re` cannot). The presets'
    sentence level is `SENTENCE_END`, the rule of `split_sentences` with the English and
    Spanish abbreviations together (the presets take no language). Each chunk is stripped
    of surrounding whitespace; with `overlap`, a chunk starts with the last whole pieces
    of the previous one, at most `overlap` tokens of them. No cut falls inside a
    user-perceived character (an extended grapheme cluster).

    `anchor="paragraph"` chunks the whole paragraphs between anchored paragraph starts on their
    own (starts picked by the text around them alone, as `fixed_size_chunks` does): the merge
    never carries across one, so a cascade stops there and an edit re-cuts only the chunks near
    it (taught in notebooks/14_from_notebook_to_production.ipynb, section 2). The default `None` merges across
    the whole text.

    Taught in notebooks/04_recursive_splitting.ipynb, section 5 (the library version of
    the hand-built `hand_chunks`).
    """
    _check_chunker_args(text, size, overlap, anchor)
    patterns = _resolve_separators(separators)
    if not text.strip():
        return []
    measure = _Measure(text, resolve_tokenizer(tokenizer))
    return [_make_chunk(text, s, e, n)
            for s, e, n in _recursive_chunks(measure, 0, len(text), size, overlap, patterns, anchor=anchor)]


@register_strategy("recursive", unit="cl100k tokens",
                   options={"separators": choice(sorted(SEPARATORS), "the presets"),
                            "anchor": choice(ANCHORS, "anchors")},
                   description="separators highest level first, recurse, merge (notebook 04); "
                               "options separators=<preset>, anchor=paragraph")
def _recursive(text: str, size: int, overlap: int, separators: str = "prose",
               anchor: str | None = None) -> list[Chunk]:
    return recursive_chunks(text, size, overlap, separators=separators, tokenizer=TOKENIZER, anchor=anchor)
