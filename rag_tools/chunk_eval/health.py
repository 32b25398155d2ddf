"""Chunk health: what a strategy's chunks look like, so a reader of the table can see why a strategy loses.

Per strategy (`chunk_health`): the number of chunks, the median and the 10th/90th percentiles of their
cl100k tokens, the share of tiny chunks (fewer tokens than a tenth of the size; for a strategy sized in
another unit, a tenth of its median), the share of chunk ends that fall inside a sentence (the chunk's
text does not end with sentence punctuation, and the next text of its document starts on the same line),
and the share of chunks longer than the model's window, whose vectors are pooled over windows.
`health_warning` gives one line when that health explains a strategy's misses: most misses are answers
cut by a boundary while many ends fall inside sentences; or most misses returned a tiny chunk; or most
misses ranked a whole answer too low while most chunks were pooled over windows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from course_lib.spans import DocSpan

__all__ = ["ChunkHealth", "chunk_health", "health_warning", "sentence_end"]

TINY_SHARE_OF_SIZE = 0.1  # a chunk under a tenth of the size is tiny
WARN_SHARE = 0.5  # a health problem explains the misses when it concerns at least half of them
WARN_INSIDE = 0.3  # ... and at least this share of the chunks end inside a sentence
WARN_TINY = 0.2  # ... or at least this share of the chunks are tiny
WARN_POOLED = 0.5  # ... or at least this share of the chunks are pooled over windows
_CLOSING = "\"')]}»”’*_`"
_SENTENCE_END = re.compile(r"[.!?。！？…:;][" + re.escape(_CLOSING) + r"]*$")


@dataclass(frozen=True)
class ChunkHealth:
    """One strategy's chunk health (shares are fractions in [0, 1])."""

    chunks: int
    median_tokens: float
    p10_tokens: float
    p90_tokens: float
    tiny_under: float  # the token count under which a chunk is tiny
    tiny_share: float
    inside_sentence_share: float
    pooled_share: float | None  # None: the strategy embeds no chunk alone (bm25:, late:)

    def to_dict(self) -> dict[str, Any]:
        return {"chunks": self.chunks, "median_tokens": round(self.median_tokens, 1),
                "p10_tokens": round(self.p10_tokens, 1), "p90_tokens": round(self.p90_tokens, 1),
                "tiny_under_tokens": round(self.tiny_under, 1), "tiny_share": round(self.tiny_share, 4),
                "inside_sentence_share": round(self.inside_sentence_share, 4),
                "pooled_share": None if self.pooled_share is None else round(self.pooled_share, 4)}


def sentence_end(text: str, start: int, end: int) -> bool:
    """Whether a chunk `text[start:end]` ends where a sentence does: at its document's end, before a line
    break (only spaces between), or after sentence punctuation (. ! ? … : ;, then closing quotes or brackets)."""
    if not 0 <= start < end <= len(text):
        raise ValueError(f"start={start}, end={end}: need 0 <= start < end <= {len(text)} (the text's length)")
    rest = text[end:end + 200].lstrip(" \t")
    if not rest or rest[0] in "\r\n\f" or end == len(text):
        return True
    return bool(_SENTENCE_END.search(text[start:end].rstrip()))


def chunk_health(spans: Sequence[DocSpan], tokens: Sequence[int], texts: dict[str, str], *,
                 size: int, sized_in_tokens: bool, pooled: int | None) -> ChunkHealth:
    """The health of one strategy's chunks `spans` (`(document, start, end)`), with their cl100k `tokens`,
    the documents' `texts`, the strategy's `size` (in cl100k tokens when `sized_in_tokens`) and the number
    of chunks `pooled` over windows (None when the strategy embeds no chunk on its own)."""
    if len(spans) != len(tokens) or not spans:
        raise ValueError(f"spans ({len(spans)}) and tokens ({len(tokens)}) must be equally long and not empty")
    counts = np.asarray(tokens, dtype=float)
    median = float(np.median(counts))
    tiny_under = TINY_SHARE_OF_SIZE * (size if sized_in_tokens else median)
    inside = sum(not sentence_end(texts[d], s, e) for d, s, e in spans)
    return ChunkHealth(len(spans), median, float(np.percentile(counts, 10)), float(np.percentile(counts, 90)),
                       tiny_under, float(np.mean(counts < tiny_under)), inside / len(spans),
                       None if pooled is None else pooled / len(spans))


def health_warning(strategy: str, health: ChunkHealth, causes: Sequence[str | None],
                   returned: Sequence[Sequence[int]], tokens: Sequence[int]) -> str | None:
    """One line when the strategy's health explains at least half of its misses, else None.

    `causes` holds each question's cause of a miss (None: answered), `returned` each question's returned
    chunk rows and `tokens` each chunk row's cl100k tokens."""
    misses = [i for i, cause in enumerate(causes) if cause is not None]
    if not misses:
        return None
    n = len(misses)
    split = sum(causes[i] == "split" for i in misses)
    if split >= WARN_SHARE * n and health.inside_sentence_share >= WARN_INSIDE:
        return (f"{strategy}: {split} of its {n} misses are answers cut by a chunk boundary, and "
                f"{health.inside_sentence_share:.0%} of its chunks end inside a sentence: a chunker that cuts at "
                "sentences or paragraphs (recursive, sentence, markdown) or an overlap keeps answers whole")
    with_tiny = sum(any(tokens[row] < health.tiny_under for row in returned[i]) for i in misses)
    if with_tiny >= WARN_SHARE * n and health.tiny_share >= WARN_TINY:
        return (f"{strategy}: {with_tiny} of its {n} misses returned a tiny chunk (under "
                f"{health.tiny_under:.0f} tokens), and {health.tiny_share:.0%} of its chunks are tiny: short "
                "chunks say too little to rank well; merge them (a larger size, or the markdown chunker's sections)")
    low = sum(causes[i] == "self_contained" for i in misses)
    if health.pooled_share is not None and health.pooled_share >= WARN_POOLED and low >= WARN_SHARE * n:
        return (f"{strategy}: {low} of its {n} misses held the answer whole yet ranked too low, and "
                f"{health.pooled_share:.0%} of its chunks are longer than the model's window (their vectors are "
                "pooled over windows, which blurs them): try smaller chunks")
    return None
