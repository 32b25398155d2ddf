"""Sentences: a rule-based sentence splitter and chunks of whole sentences.

Taught in notebooks/04_recursive_splitting.ipynb (sentence chunks) and used by
notebooks/06_late_chunking_xr12.ipynb.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from itertools import combinations, pairwise
from typing import Any

import numpy as np
import regex

from course_lib.chunking._measure import Chunk, _make_chunk, _strip
from course_lib.chunking.registry import SENTENCE_LIMITS, TOKENIZER, choice, register_strategy
from course_lib.tokens import resolve_tokenizer

__all__ = ["ABBREVIATIONS", "SENTENCE_END", "sentence_chunks", "sentence_end_pattern", "split_sentences"]

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
_END_MARKS = "[.!?…]"
_CLOSERS = "[\"'”’»)\\]]"
_OPENERS = "[¿¡(\"'«“]"


def sentence_end_pattern(languages: Sequence[str] = ("en", "es")) -> str:
    """The course's sentence rule as one regular expression (for the `regex` package): it
    matches the white space after the end of a sentence.

    A sentence ends at a run of `.`, `!`, `?` or `…` (and closing quotes or brackets)
    followed by white space, unless the run starts with `.` right after a known
    abbreviation of `languages` or a single letter (an initial, "p. ej."), or it is a
    point after a short lower-case word ("etc.", "ca.": an abbreviation the lists do not
    know) and the next word starts in lower case. A lower-case next word alone does not
    block a cut, so lower-cased text still splits into sentences. Decimals such as 3.85
    never match (no white space after the point). `split_sentences` and the recursive presets' sentence level
    both use this rule; the presets have no language, so theirs knows the English and
    Spanish abbreviations together.

    Taught in notebooks/04_recursive_splitting.ipynb, section 8 (the recursive presets use it from section 5 on).
    """
    unknown = sorted(set(languages) - set(ABBREVIATIONS))
    if unknown or not languages:
        raise ValueError(f"languages={tuple(languages)!r}: use a non-empty selection of {sorted(ABBREVIATIONS)}")
    words = sorted(set().union(*(ABBREVIATIONS[lang] for lang in languages)), key=lambda w: (-len(w), w))
    abbreviation = "|".join(regex.escape(w) for w in words)
    not_after_abbreviation = rf"(?<!(?:^|\s){_OPENERS}*+(?i:{abbreviation}|\p{{L}}))"
    end_of_sentence = rf"(?<![.!?…])(?:{not_after_abbreviation}\.|[!?…]){_END_MARKS}*{_CLOSERS}*"
    # an unknown abbreviation looks like a short lower-case word and a point ("etc.", "ca."):
    # after one, a next word in lower case continues the sentence
    short_word_and_point = rf"(?<=(?:^|\s){_OPENERS}*+\p{{Ll}}{{1,3}}\.{_CLOSERS}*)"
    after_short_word = short_word_and_point[4:-1]
    # the match opens on the sentence end's last character, dropped from the match by \K: the
    # search then stops only there, which is about 1.6 times faster than a lookbehind alone
    return (rf"{_LAST_CHARACTER}(?<={end_of_sentence})"
            rf"(?:{short_word_and_point}\s++(?!\p{{Lowercase}})|(?<!{after_short_word})\s++)")


_LAST_CHARACTER = rf"[{_END_MARKS[1:-1]}{_CLOSERS[1:-1]}]\K(?=\s)"


@cache
def _sentence_rules() -> frozenset[str]:
    """Every pattern `sentence_end_pattern` makes (one per choice of languages)."""
    names = sorted(ABBREVIATIONS)
    choices = [c for r in range(1, len(names) + 1) for c in combinations(names, r)]
    return frozenset(sentence_end_pattern(c) for c in choices)


# What the fast sentence search needs to know of a character, as bits (see `_character_kinds`)
_MARK, _POINT, _CLOSER, _OPENS, _LETTER = 1, 2, 4, 8, 16


@cache
def _character_kinds() -> tuple[np.ndarray, np.ndarray]:
    """Per code point up to U+3001 (the last entry stands for every code point above): (bits:
    _MARK an end mark . ! ? …, _POINT ".", _CLOSER a closing quote or bracket, _OPENS white space
    or an opener, one of which an abbreviation or short word needs before it, _LETTER a letter as
    `regex` reads \\p{L}, set above the table too; white space as `regex` reads \\s)."""
    chars = "".join(map(chr, range(0x3002)))

    def where(pattern: str) -> list[int]:
        return [m.start() for m in regex.finditer(pattern, chars)]

    kinds = np.zeros(len(chars), dtype=np.uint8)
    for pattern, bit in ((_END_MARKS, _MARK), (r"\.", _POINT), (_CLOSERS, _CLOSER), (_OPENERS, _OPENS),
                         (r"\p{L}", _LETTER)):
        kinds[where(pattern)] |= bit
    kinds[[c.isspace() for c in chars]] |= _OPENS
    kinds[-1] |= _LETTER
    space = np.zeros(len(chars), dtype=bool)
    space[where(r"\s")] = True
    return kinds, space


class _SentenceEnds:
    """A pattern of `sentence_end_pattern`, searched fast over long texts (the recursive presets'
    sentence level). Same matches as the `regex` pattern; property-tested.

    Every match is white space right after an end mark or a closer, so numpy finds those places
    at once from the code points. Most places are settled from a few characters before them,
    by what the rule implies (a point needs an abbreviation, an initial or a short lower-case
    word right before it to be kept, and every one of those ends in a letter):
    - a sentence end: `!`, `?` or `…` not after another end mark; a point not after an end mark
      and not after a letter; a point after seven characters with no white space or opener;
    - no sentence end: a closer after a character that is neither an end mark nor a closer.
    The `regex` pattern decides the other places.
    """

    def __init__(self, pattern: str):
        if pattern not in _sentence_rules():
            raise ValueError("pattern must come from sentence_end_pattern()")
        self.pattern = pattern
        self._decide = regex.compile(pattern[len(_LAST_CHARACTER):])
        self._kinds, self._space = _character_kinds()

    def starts(self, text: str, codes: np.ndarray, pos: int, endpos: int) -> list[int]:
        """Where the pattern matches, as `regex.finditer(pattern, text, pos, endpos)` would find it;
        `codes` are the code points of the whole `text`."""
        kinds, near = self._kinds, codes[pos:endpos]
        ends = (kinds.take(near[:-1], mode="clip") & (_MARK | _CLOSER)) != 0
        places = np.flatnonzero(ends & self._space.take(near[1:], mode="clip")) + (pos + 1)
        # the kinds of the 8 characters before each place: the mark or closer, then 7 more
        before = kinds.take(codes.take(places[:, None] - _BACK, mode="clip"), mode="clip")
        end, previous = before[:, 0], before[:, 1]
        settled = (places >= 8) & ((previous & _MARK) == 0)  # not after another end mark
        word_before = np.bitwise_or.reduce(before[:, 1:], axis=1)
        point_ends = ((previous & _LETTER) == 0) | ((word_before & _OPENS) == 0)
        yes = settled & np.where((end & _POINT) != 0, point_ends, (end & _MARK) != 0)
        no = settled & ((end & _CLOSER) != 0) & ((previous & _CLOSER) == 0)
        found = yes.copy()
        decide = self._decide.match
        for k in np.flatnonzero(~(yes | no)).tolist():  # the places the regex decides
            found[k] = decide(text, int(places[k]), endpos) is not None
        return places[found].tolist()


_BACK = np.arange(1, 9)


@cache
def _sentence_boundaries(language: str) -> regex.Pattern:
    """Where `split_sentences` cuts: white space after a sentence end, or a blank line."""
    return regex.compile(rf"{sentence_end_pattern((language,))}|\n[ \t]*\n")


# The sentence level of the recursive presets (notebook 04): English and Spanish together.
SENTENCE_END = sentence_end_pattern(("en", "es"))


def split_sentences(text: str, language: str = "en") -> list[tuple[int, int]]:
    """`(start, end)` spans of the sentences of `text`, without surrounding whitespace.

    A sentence ends at `.`, `!`, `?` or `…` (and closing quotes) before white space,
    unless the word is a known abbreviation of `language` ("en" or "es") or a single
    initial, or a short lower-case word ("etc.") followed by a lower-case word. Decimals such as 3.85 and
    Spanish `¿…?` and `¡…!` stay whole. A blank line always ends a sentence. The rule is
    `sentence_end_pattern`, which the recursive presets share.

    Taught in notebooks/04_recursive_splitting.ipynb, section 8 (sentence-based chunking).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    if language not in ABBREVIATIONS:
        raise ValueError(f"language={language!r} is not supported; use one of {sorted(ABBREVIATIONS)}")
    cuts = [0, *(m.start() for m in _sentence_boundaries(language).finditer(text)), len(text)]
    spans = [_strip(text, a, b) for a, b in pairwise(cuts)]
    return [(a, b) for a, b in spans if a < b]


def sentence_chunks(
    text: str,
    max_sentences: int = 5,
    overlap_sentences: int = 1,
    language: str = "en",
    tokenizer: Any = "cl100k_base",
) -> list[Chunk]:
    """Groups of up to `max_sentences` sentences; each group repeats the previous one's last
    `overlap_sentences`. Sizes are counted in sentences, so `n_tokens` (by `tokenizer`) varies.

    Taught in notebooks/04_recursive_splitting.ipynb, section 8; used for prose in
    notebooks/07_structure_aware_chunking.ipynb, section 7.
    """
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


@register_strategy("sentence", unit="sentences", options={"language": choice(sorted(ABBREVIATIONS))},
                   limits=SENTENCE_LIMITS,
                   description="groups of whole sentences (notebook 04); option language=en|es")
def _sentence(text: str, size: int, overlap: int, language: str = "en") -> list[Chunk]:
    return sentence_chunks(text, size, overlap, language=language, tokenizer=TOKENIZER)
