"""How chunk-eval grades a question: graded relevance for nDCG, whether the answer was returned whole, and the
cause of each miss (the first of `CAUSES` that applies), each with the fix the course teaches; and, for paged
documents (PDF), whether the pages a strategy's returned chunks state hold the answer (`page_report`).

The span arithmetic behind them is `course_lib.evaluation`'s (notebook 08).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from course_lib.spans import DocSpan


class ReferenceGrades:
    """Graded relevance of a fixed list of chunk spans: the share of a reference's characters each chunk holds.

    Built once per list of `(doc, start, end)` chunk spans; calling it with a question's
    reference spans returns `{chunk row: grade}` for the chunks that share at least one
    character with the reference (overlapping reference spans are merged first, so the
    grades of a question sum to at most 1). These are the grades chunk-eval's nDCG uses.
    """

    def __init__(self, chunk_spans: Sequence[DocSpan]):
        rows: dict[Hashable, list[int]] = {}
        for i, (doc, _, _) in enumerate(chunk_spans):
            rows.setdefault(doc, []).append(i)
        self.rows = {doc: np.array(r) for doc, r in rows.items()}
        self.starts = {doc: np.array([chunk_spans[i][1] for i in r]) for doc, r in rows.items()}
        self.ends = {doc: np.array([chunk_spans[i][2] for i in r]) for doc, r in rows.items()}

    def __call__(self, references: Iterable[DocSpan]) -> dict[int, float]:
        merged: dict[Hashable, list[tuple[int, int]]] = {}
        for doc, s, e in sorted(references):
            spans = merged.setdefault(doc, [])
            if spans and s <= spans[-1][1]:
                spans[-1] = (spans[-1][0], max(spans[-1][1], e))
            else:
                spans.append((s, e))
        total = sum(e - s for spans in merged.values() for s, e in spans)
        grades: dict[int, float] = {}
        for doc, spans in merged.items():
            if doc not in self.rows:
                continue
            for s, e in spans:
                shared = np.minimum(self.ends[doc], e) - np.maximum(self.starts[doc], s)
                for row in np.flatnonzero(shared > 0):
                    index = int(self.rows[doc][row])
                    grades[index] = grades.get(index, 0.0) + float(shared[row]) / total
        return grades


def reference_grades(references: Iterable[DocSpan], chunk_spans: Sequence[DocSpan]) -> dict[int, float]:
    """`{chunk row: share of the reference characters inside that chunk}` (only rows that share any).

    One question at a time; build a `ReferenceGrades` once to grade many questions against the same chunks.
    """
    return ReferenceGrades(chunk_spans)(references)


def answer_held(retrieved: Iterable[DocSpan], quotes: Iterable[Iterable[DocSpan]]) -> bool:
    """True when, for every quote, at least one of its occurrences lies wholly inside one retrieved span.

    `quotes` holds one list of `(doc, start, end)` occurrences per quote of a question; `retrieved`
    the returned chunks. The per-question value of `answer_recall_at_k`: stricter than sharing a
    character, which a chunk holding one word of the answer already does.
    """
    spans = list(retrieved)
    groups = [list(q) for q in quotes]
    if not groups or not all(groups):
        raise ValueError("quotes must hold at least one quote, each with at least one occurrence")
    return all(any(d == doc and a <= s and e <= b for d, s, e in group for doc, a, b in spans) for group in groups)


# Notebook 06's list of reference openers (section 7): a chunk that opens with one of them leans on
# text it does not hold ("It must be replaced...", "Esto obliga a...").
REFERENCE_OPENERS: dict[str, tuple[str, ...]] = {
    "en": ("It", "Its", "This", "These", "That", "Those", "They", "Their", "He", "His", "She", "Her",
           "The device", "The machine", "The unit", "Such"),
    "es": ("Su", "Sus", "Esto", "Este", "Esta", "Estos", "Estas", "Ello", "Él", "Ella", "Dicho", "Dicha",
           "Dichos", "Dichas", "Lo anterior", "El anterior", "La anterior"),
}
_HEADINGS = re.compile(r"\s*(?:#{1,6} [^\n]*\n\s*)*")


def orphan_opener(text: str) -> str | None:
    """The reference word `text` opens with, after any Markdown heading lines ("It", "Su", ...), or None.

    Taught in notebooks/06_late_chunking_xr12.ipynb, section 6 (English and Spanish lists).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    body = text[_HEADINGS.match(text).end():]
    return next((w for words in REFERENCE_OPENERS.values() for w in words if re.match(rf"{w}\b", body)), None)


# The causes of a miss, first match wins, each with the fix the course teaches for it.
CAUSES: dict[str, str] = {
    "wrong_document": "no returned chunk comes from a document that holds the answer: give chunks their "
                      "document's name and headings (headers:, notebook 10) or add BM25 for names and codes "
                      "(hybrid:, notebook 10)",
    "split": "no chunk holds the whole answer: the boundary cut it; use larger chunks or an overlap "
             "(notebook 03) or a structure-aware chunker (markdown, notebook 07)",
    "orphan": "the chunk holding the answer opens with a reference (It, This, Su, ...) to text before it: "
              "give it its heading path (headers:, notebook 10); late chunking (late:) was meant for this, but "
              "with MiniLM it lost most on such text (notebook 06)",
    "self_contained": "the chunk holds the answer and names its subject, yet ranks too low: a query or ranking "
                      "problem; try hybrid: (notebook 10) or rewrite the question",
}


def miss_cause(returned: Sequence[DocSpan], ranked: Sequence[DocSpan], quotes: Sequence[Sequence[DocSpan]],
               documents: Mapping[Hashable, str]) -> str:
    """Why a question's answer is not wholly in the returned chunks: the first of `CAUSES` that applies.

    `returned` are the chunks given to the reader, `ranked` every chunk of the strategy, best ranked
    first, `quotes` the occurrences of each quote and `documents` the texts. `wrong_document`: no
    returned chunk comes from a document holding an occurrence; `split`: some quote has no occurrence
    wholly inside any chunk; `orphan`: the best-ranked chunk holding an occurrence wholly opens with a
    reference word (`orphan_opener`); `self_contained` otherwise.
    """
    answer_docs = {d for group in quotes for d, _, _ in group}
    if not any(d in answer_docs for d, _, _ in returned):
        return "wrong_document"
    if not all(answer_held(ranked, [group]) for group in quotes):
        return "split"
    holder = next(c for c in ranked if any(answer_held([c], [group]) for group in quotes))
    return "orphan" if orphan_opener(documents[holder[0]][holder[1]:holder[2]]) else "self_contained"


def page_of(page_ends: Sequence[int], offset: int) -> int:
    """1-based page of character `offset` of a paged document, as `rag_tools.readers.page_span` counts it:
    `page_ends[i]` is the offset of the form feed that ends page i + 1. Past the last form feed it is
    `len(page_ends) + 1`, a page the document does not have."""
    return bisect.bisect_left(page_ends, offset) + 1


def page_report(chunk_spans: Sequence[DocSpan], retrieved: Sequence[Sequence[DocSpan]],
                references: Sequence[Sequence[DocSpan]], page_ends: Mapping[Hashable, Sequence[int]]
                ) -> tuple[dict[str, Any], int]:
    """Whether a strategy cites pages right, over the questions whose reference lies in a paged document.

    `page_recall_at_k`: share of those questions for which some returned chunk's page range (first to last
    page) contains the page of the first character of one of the question's reference spans in that document.
    `hits_pages_right`: of the returned chunks that share a character with a reference span (hits), the share
    whose page range contains the page of that span's first character (None without hits). Also returns how
    many chunks of paged documents carry no page range (they lie past the last form feed). `{}` when no
    question's reference is paged.
    """
    questions, found, hits, right = 0, 0, 0, 0
    for returned, refs in zip(retrieved, references):
        paged = [(d, s, e) for d, s, e in refs if d in page_ends]
        if not paged:
            continue
        questions += 1
        pages = {(d, page_of(page_ends[d], s)) for d, s, _ in paged}
        ranges = [(d, page_of(page_ends[d], s), page_of(page_ends[d], e - 1)) for d, s, e in returned if d in page_ends]
        found += any(d == rd and a <= p <= b for d, a, b in ranges for rd, p in pages)
        for d, s, e in returned:
            for rd, rs, re_ in paged:
                if d == rd and s < re_ and rs < e:
                    hits += 1
                    right += page_of(page_ends[d], s) <= page_of(page_ends[d], rs) <= page_of(page_ends[d], e - 1)
    unpaged = sum(1 for d, _, e in chunk_spans if d in page_ends and page_of(page_ends[d], e - 1) > len(page_ends[d]))
    if not questions:
        return {}, unpaged
    return {"questions": questions, "page_recall_at_k": found / questions, "hits": hits,
            "hits_pages_right": right / hits if hits else None}, unpaged
