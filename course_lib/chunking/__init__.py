"""Chunkers that return exact character offsets and never break their size limit.

Every chunker returns `Chunk`s in source order with `source[c.start:c.end] == c.text`
and `c.n_tokens` = the token count of `c.text` itself (recounted, never summed from
pieces), `c.n_tokens <= size`. Cuts fall only between characters (never inside a
UTF-8 sequence), so no chunk contains U+FFFD that the source did not have.

`tokenizer` may be an encoding name ("cl100k_base", "o200k_base"), "chars", a
tiktoken `Encoding`, a Hugging Face tokenizer, or a callable `str -> int` that counts
(see `course_lib.tokens`).

One file per idea, in the order the course teaches them:
`fixed` (notebook 03), `recursive` (notebook 04), `sentences` (notebook 04),
`markdown` (notebook 07), `page` (notebook 12), `semantic` (notebook 09); `_measure` is the shared span-counting
engine and `registry` the table of strategies that each chunker file joins at its end.
Importing this package imports every chunker file, so the registry is complete.
"""

from course_lib.chunking.fixed import fixed_size_chunks
from course_lib.chunking.markdown import markdown_chunks, markdown_sections
from course_lib.chunking.page import keep_pages, page_chunks, page_ranges
from course_lib.chunking.recursive import SEPARATORS, recursive_chunks
from course_lib.chunking.registry import STRATEGIES, register_strategy
from course_lib.chunking.semantic import semantic_chunks
from course_lib.chunking.sentences import (
    ABBREVIATIONS,
    SENTENCE_END,
    sentence_chunks,
    sentence_end_pattern,
    split_sentences,
)
from course_lib.spans import Chunk, Span, as_spans
from course_lib.tokens import resolve_tokenizer

__all__ = [
    "ABBREVIATIONS",
    "SENTENCE_END",
    "SEPARATORS",
    "STRATEGIES",
    "Chunk",
    "Span",
    "as_spans",
    "fixed_size_chunks",
    "keep_pages",
    "markdown_chunks",
    "markdown_sections",
    "page_chunks",
    "page_ranges",
    "recursive_chunks",
    "register_strategy",
    "resolve_tokenizer",
    "semantic_chunks",
    "sentence_chunks",
    "sentence_end_pattern",
    "split_sentences",
]
