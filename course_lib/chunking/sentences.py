"""Sentences: a rule-based sentence splitter and chunks of whole sentences.

Taught in notebooks/04_recursive_splitting.ipynb (sentence chunks) and used by
notebooks/06_late_chunking_xr12.ipynb.
"""

from __future__ import annotations

import re
from typing import Any

from course_lib.chunking._measure import Chunk, _make_chunk, _strip
from course_lib.tokens import resolve_tokenizer

__all__ = ["ABBREVIATIONS", "sentence_chunks", "split_sentences"]

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


