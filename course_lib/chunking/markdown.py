"""Markdown: sections under their heading path, and chunks that never cross a heading.

Taught in notebooks/07_structure_aware_chunking.ipynb.
"""

from __future__ import annotations

import re
from typing import Any

from course_lib.chunking._measure import Chunk, _make_chunk, _Measure, _validate
from course_lib.chunking.fixed import ANCHORS, _check_anchor
from course_lib.chunking.recursive import _recursive_chunks, _resolve_separators
from course_lib.chunking.registry import TOKENIZER, choice, register_strategy
from course_lib.tokens import resolve_tokenizer

__all__ = ["markdown_chunks", "markdown_sections"]

_MD_LINE = re.compile(r"^.*(?:\n|$)", re.MULTILINE)
_MD_HEADING = re.compile(r" {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*\r?\n?$")
_MD_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def markdown_sections(text: str) -> list[tuple[int, int, list[str]]]:
    """`(start, end, heading_path)` for the preamble and each ATX-headed section.

    `heading_path` lists the enclosing headings as written, e.g. `["# Guide", "## Install"]`.
    Lines starting with `#` inside fenced code blocks are not headings.

    Taught in notebooks/07_structure_aware_chunking.ipynb, sections 1-2.
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


def markdown_chunks(text: str, size: int, overlap: int = 0, tokenizer: Any = "cl100k_base",
                    anchor: str | None = None) -> list[Chunk]:
    """Chunk each Markdown section on its own, so no chunk crosses a heading.

    Every chunk's `metadata["headings"]` holds its heading path. A section larger than
    `size` is split recursively (paragraphs, lines, sentences, words) with `overlap`;
    `anchor="paragraph"` anchors the cuts inside each section at paragraph starts, as
    `recursive_chunks` does (taught in notebooks/14_from_notebook_to_production.ipynb, section 2).

    Taught in notebooks/07_structure_aware_chunking.ipynb, section 2 (first met in
    notebooks/04_recursive_splitting.ipynb, section 6).
    """
    _validate(text, size, overlap)
    _check_anchor(anchor)
    if not text.strip():
        return []
    measure = _Measure(text, resolve_tokenizer(tokenizer))
    patterns = _resolve_separators("prose")
    chunks = []
    for a, b, path in markdown_sections(text):
        chunks += [_make_chunk(text, s, e, n, headings=path)
                   for s, e, n in _recursive_chunks(measure, a, b, size, overlap, patterns, anchor=anchor)]
    return chunks


@register_strategy("markdown", unit="cl100k tokens", options={"anchor": choice(ANCHORS, "anchors")},
                   description="Markdown sections, never across a heading (notebook 07); option anchor=paragraph")
def _markdown(text: str, size: int, overlap: int, anchor: str | None = None) -> list[Chunk]:
    return markdown_chunks(text, size, overlap, tokenizer=TOKENIZER, anchor=anchor)
