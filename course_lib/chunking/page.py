"""Page-based chunking: one chunk per page when it fits, never a chunk across a page.

Pages are marked in the text itself, as `rag_tools.readers` writes a PDF: a form feed
(U+000C) ends each page, so page `p` (1-based) is the text between form feeds `p - 1` and
`p`, and a text without form feeds is one page. Every chunk's metadata holds its
`page_start` and `page_end` (equal here: no chunk crosses a page).

- `page_chunks` is the `page` strategy (`page:512`): a page that fits `size` tokens is one
  chunk; a longer page is split by the recursive chunker, inside the page only.
- `keep_pages` runs any chunker page by page: the `?pages=keep` option of the token
  strategies in `course_lib.strategies` (`recursive:256?pages=keep`).

Taught in notebooks/12_documents_with_pages.ipynb, section 5.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from course_lib.chunking._measure import Chunk, _make_chunk, _Measure, _validate
from course_lib.chunking.recursive import _recursive_chunks, _resolve_separators
from course_lib.chunking.registry import TOKENIZER, register_strategy
from course_lib.tokens import resolve_tokenizer

__all__ = ["PAGE_BREAK", "keep_pages", "page_chunks", "page_ranges"]

PAGE_BREAK = "\f"  # the form feed that ends a page (pdftotext's mark, and rag_tools.readers')


def page_ranges(text: str) -> list[tuple[int, int, int]]:
    """`(page, start, end)` of every page that holds more than white space; `text[start:end]`
    excludes the form feed. Pages are numbered from 1 by counting form feeds, empty ones included."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}; decode bytes first")
    ranges, start = [], 0
    for page, piece in enumerate(text.split(PAGE_BREAK), start=1):
        end = start + len(piece)
        if piece.strip():
            ranges.append((page, start, end))
        start = end + 1
    return ranges


def page_chunks(text: str, size: int, overlap: int = 0, tokenizer: Any = "cl100k_base") -> list[Chunk]:
    """One chunk per page of at most `size` tokens; a longer page split recursively within itself.

    Pages end at form feeds (U+000C). Each chunk is stripped of surrounding white space and
    carries `metadata["page_start"]` and `metadata["page_end"]`, 1-based. `overlap` applies only
    between the pieces of one split page: no chunk repeats text of another page.
    """
    _validate(text, size, overlap)
    if not text.strip():
        return []
    measure = _Measure(text, resolve_tokenizer(tokenizer))
    patterns = _resolve_separators("prose")
    return [_make_chunk(text, s, e, n, page_start=page, page_end=page)
            for page, a, b in page_ranges(text)
            for s, e, n in _recursive_chunks(measure, a, b, size, overlap, patterns)]


def keep_pages(chunker: Callable[[str], list[Chunk]], text: str) -> list[Chunk]:
    """Run `chunker(page_text)` on each page alone and give back its chunks with offsets into
    `text`, their metadata extended by `page_start`/`page_end`: no chunk crosses a page."""
    if not callable(chunker):
        raise TypeError(f"chunker must be callable, not {type(chunker).__name__}")
    chunks = []
    for page, a, b in page_ranges(text):
        for c in chunker(text[a:b]):
            chunks.append(Chunk(c.text, c.start + a, c.end + a, c.n_tokens,
                                {**c.metadata, "page_start": page, "page_end": page}))
    return chunks


@register_strategy("page", unit="cl100k tokens", options={},
                   description="one chunk per page (pages end at form feeds), a long page split "
                               "recursively, never across a page (notebook 12)")
def _page(text: str, size: int, overlap: int) -> list[Chunk]:
    return page_chunks(text, size, overlap, tokenizer=TOKENIZER)
