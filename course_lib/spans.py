"""The shared vocabulary of the course: a `Chunk`, a span of one text, a span of a corpus.

The bottom layer of `course_lib`: chunking, late chunking, retrieval, evaluation and the
store all speak these types, and this module imports nothing from the package.

- `Chunk`: a piece of one source text with its exact character offsets;
- `Span`: a `Chunk` or a `(start, end)` pair in one text (`as_spans` checks and converts);
- `DocSpan`: `(doc, start, end)`, characters `[start, end)` of the document `doc` of a corpus.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np

__all__ = ["Chunk", "DocSpan", "Span", "as_spans"]


@dataclass(frozen=True)
class Chunk:
    """A piece of a source text: `source[start:end] == text`, `n_tokens` counted on `text`.

    Taught in notebooks/03_fixed_size_and_overlap.ipynb, section 3 (first met in
    notebooks/00_start_here.ipynb, section 3).
    """

    text: str
    start: int
    end: int
    n_tokens: int
    metadata: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


Span = Union[Chunk, tuple[int, int]]  # in one text
DocSpan = tuple[Hashable, int, int]  # (doc, start, end): characters [start, end) of document `doc`


def as_spans(text: str, chunks: Sequence[Span]) -> list[tuple[int, int]]:
    """`(start, end)` pairs from `Chunk`s or pairs, checked against `text`.

    Taught in notebooks/04_recursive_splitting.ipynb, section 5.
    """
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
