"""Measuring retrieval: ranking metrics, span metrics over character ranges, an exact vector index.

Ranking metrics score one query's ranked list of ids against the ids judged relevant:
`recall_at_k`, `reciprocal_rank` (and `mrr`, its mean over queries) and `ndcg_at_k`
(binary or graded relevance).

Span metrics follow Chroma's report (Smith & Troynikov, "Evaluating Chunking Strategies
for Retrieval", 2024) and its reference code: relevance is a set of character ranges
(the reference excerpts), and a retrieved chunk is a character range too. A span is
`(doc, start, end)`; a plain `(start, end)` pair belongs to one unnamed document.
How overlaps are counted, as in the report's code:

- covered characters (every numerator) are the *union* of retrieved ∩ reference: a
  character that two overlapping retrieved chunks both hold counts once;
- "retrieved characters" (the precision and IoU denominators) are the *sum* of the
  retrieved chunks' lengths: text retrieved twice is read twice, so overlap costs;
- precision-omega takes the union of every chunk that shares at least one character
  with a reference (the report's code also counts a chunk that only touches a
  reference end to end; here it has to share a character).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from course_lib.spans import DocSpan

__all__ = [
    "METRIC_NAMES",
    "SpanScores",
    "VectorIndex",
    "budget_cutoff",
    "covered_characters",
    "evaluate_spans",
    "exact_budget",
    "mrr",
    "ndcg_at_k",
    "overlapping_indices",
    "overlaps_any",
    "precision_omega",
    "recall_at_k",
    "reciprocal_rank",
    "span_scores",
    "summarize",
    "token_prefix_end",
    "unit_rows",
]

# The names every results file and comparison uses, each stored as a fraction in [0, 1]
# (percent only in tables for people): recall_at_k = share of questions with a relevant
# chunk in the top k; mrr; ndcg_at_10; Chroma's span metrics; and answer_recall_at_k = share
# of questions for which every quote has an occurrence wholly inside one chunk of the top k.
METRIC_NAMES: tuple[str, ...] = ("recall_at_k", "mrr", "ndcg_at_10", "span_recall", "span_precision", "iou",
                                 "answer_recall_at_k")

# --- Ranking metrics ---


def recall_at_k(ranking: Sequence[Hashable], relevant: Iterable[Hashable], k: int) -> float:
    """Share of the relevant ids found among the first `k` of `ranking` (0..1).

    Taught in notebooks/08_measuring_chunkers.ipynb, section 1 (first used in
    notebooks/06_late_chunking_xr12.ipynb, section 3).
    """
    k, ranking, relevant = _check_k(k), _check_ranking(ranking), _check_relevant(relevant)
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def reciprocal_rank(ranking: Sequence[Hashable], relevant: Iterable[Hashable], k: int | None = None) -> float:
    """1 / rank of the first relevant id (ranks start at 1); 0 if none in the first `k` (or anywhere).

    Taught in notebooks/08_measuring_chunkers.ipynb, section 1.
    """
    k, ranking, relevant = _check_k(k, optional=True), _check_ranking(ranking), _check_relevant(relevant)
    for rank, item in enumerate(ranking[:k], start=1):
        if item in relevant:
            return 1.0 / rank
    return 0.0


def mrr(rankings: Sequence[Sequence[Hashable]], relevants: Sequence[Iterable[Hashable]], k: int | None = None) -> float:
    """Mean reciprocal rank over queries: `rankings[i]` is scored against `relevants[i]`.

    Taught in notebooks/08_measuring_chunkers.ipynb, section 1.
    """
    rankings, relevants = _check_mrr_args(rankings, relevants)
    return float(np.mean([reciprocal_rank(r, rel, k) for r, rel in zip(rankings, relevants)]))


def ndcg_at_k(ranking: Sequence[Hashable], relevance: Mapping[Hashable, float] | Iterable[Hashable], k: int) -> float:
    """Normalized discounted cumulative gain of the first `k` results (0..1).

    `relevance` is either a collection of relevant ids (binary: gain 1) or a mapping
    id -> grade >= 0 (graded; ids not in it have grade 0). Gains are linear and the
    result at rank r is discounted by log2(r + 1); the ideal order of the grades gives
    the normalizer, so a ranking in that order scores 1.

    Taught in notebooks/08_measuring_chunkers.ipynb, section 1 (first used in
    notebooks/07_structure_aware_chunking.ipynb, section 3).
    """
    k, ranking, grades = _check_k(k), _check_ranking(ranking), _check_grades(relevance)  # grades: {id: grade}
    ideal = sorted(grades.values(), reverse=True)[:k]
    discounts = 1.0 / np.log2(np.arange(2, k + 2))
    idcg = float(np.dot(ideal, discounts[: len(ideal)]))
    gains = [grades.get(item, 0.0) for item in ranking[:k]]
    return float(np.dot(gains, discounts[: len(gains)])) / idcg


def budget_cutoff(token_counts: Sequence[int], budget: int) -> int:
    """How many ranked chunks fit a retrieved-token budget: take them in rank order until
    the next one would pass `budget`, but always at least one.

    `token_counts[i]` is the size of the chunk at rank i (cl100k_base tokens, as `budget`).
    Comparing chunkers at equal k favours big chunks; at an equal budget every chunker
    hands the reader the same amount of text.

    Taught in notebooks/09_semantic_chunking.ipynb, section 5; used in the exercises of
    notebooks/05_overlap_cost_arithmetic.ipynb and notebooks/08_measuring_chunkers.ipynb.
    """
    counts = _check_budget(token_counts, budget)
    total = 0
    for i, n in enumerate(counts):
        total += _checked_count(i, n)  # checked one by one: counts after the cut are not looked at
        if total > budget:
            return max(i, 1)
    return len(counts)


def exact_budget(token_counts: Sequence[int], budget: int) -> list[int]:
    """Tokens each ranked chunk gives under an exact budget: whole chunks in rank order while they
    fit, then the first tokens of the next chunk, so the returned text totals `budget` tokens (less
    only when the ranking runs out). Returns one count per chunk used, best first; the last may be
    a part of its chunk. Text that overlapping chunks repeat counts toward the budget, as in
    `budget_cutoff` (the whole-chunk rule, kept for the exercises of notebooks 05 and 08).

    `token_counts[i]` is the size of the chunk at rank i in cl100k_base tokens; cut the last chunk
    at its token boundary with `token_prefix_end`. An empty ranking returns `[]`.
    """
    counts = _check_budget(token_counts, budget, empty_ok=True)
    taken: list[int] = []
    left = int(budget)
    for i, n in enumerate(counts):
        n = _checked_count(i, n)  # checked one by one: counts after the cut are not looked at
        if left == 0:
            break
        taken.append(min(n, left))
        left -= taken[-1]
    return taken


def token_prefix_end(text: str, n_tokens: int, tokenizer: Any = "cl100k_base") -> int:
    """The character offset in `text` where its first `n_tokens` tokens end: the last token boundary
    that keeps at most `n_tokens` tokens (a token that ends inside a character is left out).

    `exact_budget`'s cut of the last chunk: `text[:token_prefix_end(text, m)]`.
    """
    from course_lib.tokens import resolve_tokenizer

    _check_token_prefix_end_args(text, n_tokens)
    bounds = resolve_tokenizer(tokenizer).token_bounds(text)
    if bounds is None:
        raise ValueError(f"tokenizer {tokenizer!r} only counts tokens; use one that gives token offsets")
    if n_tokens >= len(bounds) - 1:
        return len(text)
    usable = bounds[:n_tokens + 1]
    return int(usable[usable >= 0].max())


# --- Span metrics (character ranges) ---

SpanLike = Union[DocSpan, tuple[int, int]]  # (doc, start, end), or (start, end) in one unnamed document


def _union(spans: Iterable[tuple[Hashable, int, int]]) -> list[tuple[Hashable, int, int]]:
    """Merge overlapping or adjacent ranges of the same document."""
    merged: list[tuple[Hashable, int, int]] = []
    for doc, start, end in sorted(spans, key=lambda s: (repr(s[0]), s[1], s[2])):
        if merged and merged[-1][0] == doc and start <= merged[-1][2]:
            merged[-1] = (doc, merged[-1][1], max(merged[-1][2], end))
        else:
            merged.append((doc, start, end))
    return merged


def _length(spans: Iterable[tuple[Hashable, int, int]]) -> int:
    return sum(end - start for _, start, end in spans)


def _intersection(a: list[tuple[Hashable, int, int]], b: list[tuple[Hashable, int, int]]) -> int:
    """Characters in both `union(a)` and `union(b)`."""
    total = 0
    for doc, s1, e1 in _union(a):
        for doc2, s2, e2 in _union(b):
            if doc2 == doc:
                total += max(0, min(e1, e2) - max(s1, s2))
    return total


def _overlaps(chunk: tuple[Hashable, int, int], references: list[tuple[Hashable, int, int]]) -> bool:
    doc, start, end = chunk
    return any(rdoc == doc and start < rend and rstart < end for rdoc, rstart, rend in references)


def overlaps_any(chunk: Any, references: Iterable[SpanLike]) -> bool:
    """True when `chunk` shares at least one character with any of the reference spans.

    `chunk` is a `Chunk` (its `start` and `end`) or a span, `(start, end)` or
    `(doc, start, end)`; `references` is a list of spans of the same kind. Both are
    half-open character ranges, so `(0, 10)` and `(10, 20)` only touch: no overlap.
    No references means nothing to overlap: False.

    Taught in notebooks/01_why_chunking.ipynb, section 3 (written by hand there first,
    then checked against this function); used in notebooks/07_structure_aware_chunking.ipynb,
    section 1.
    """
    span, refs = _check_overlaps_any_args(chunk, references)
    return _overlaps(span, refs)


def overlapping_indices(chunks: Iterable[Any], references: Iterable[SpanLike]) -> list[int]:
    """Positions in `chunks` of the chunks that share a character with any reference, in order.

    Each chunk is a `Chunk` or a span, as in `overlaps_any`; use the result as the set of
    relevant chunk ids for `recall_at_k`, `mrr` or `ndcg_at_k`. No references: `[]`.

    Taught in notebooks/01_why_chunking.ipynb, section 3; used to find the relevant chunks
    in notebooks/06_late_chunking_xr12.ipynb, sections 3 and 4,
    notebooks/07_structure_aware_chunking.ipynb, section 3, notebooks/08_measuring_chunkers.ipynb,
    section 5, and notebooks/10_context_for_chunks.ipynb, section 1.
    """
    spans, refs = _check_overlapping_indices_args(chunks, references)
    return [i for i, span in enumerate(spans) if _overlaps(span, refs)]


def covered_characters(spans: Sequence[SpanLike]) -> int:
    """Distinct characters the spans hold, text they share counted once (a union of ranges); `[]` holds 0.

    Taught in notebooks/05_overlap_cost_arithmetic.ipynb, section 6 (written by hand there as `covered`);
    used in notebooks/08_measuring_chunkers.ipynb, section 2.
    """
    return _length(_union(_spans("spans", spans)))


@dataclass(frozen=True)
class SpanScores:
    """One question's span scores, each 0..1."""

    recall: float
    precision: float
    iou: float


def span_scores(retrieved: Sequence[SpanLike], references: Sequence[SpanLike]) -> SpanScores:
    """Recall, precision and IoU of the retrieved chunks against one question's reference excerpts.

    covered = reference characters inside at least one retrieved chunk (counted once);
    recall = covered / reference characters; precision = covered / retrieved characters
    (the sum of chunk lengths: overlapping chunks count their shared text twice);
    IoU = covered / (retrieved characters + reference characters not covered).

    Taught in notebooks/08_measuring_chunkers.ipynb, section 2.
    """
    retrieved, references = _check_span_scores_args(retrieved, references)
    reference_chars = _length(_union(references))
    covered = _intersection(retrieved, references)
    retrieved_chars = _length(retrieved)
    return SpanScores(
        recall=covered / reference_chars,
        precision=covered / retrieved_chars,
        iou=covered / (retrieved_chars + reference_chars - covered),
    )


def precision_omega(chunks: Sequence[SpanLike], references: Sequence[SpanLike]) -> float:
    """Precision if retrieval were perfect: keep every chunk that shares a character with a reference.

    covered / union(those chunks and any reference text no chunk holds). It depends
    only on the chunking, not on the embedding model: the best precision the chunker allows.

    Taught in notebooks/08_measuring_chunkers.ipynb, section 2.
    """
    chunks, references = _check_precision_omega_args(chunks, references)
    refs = _union(references)
    by_doc: dict[Hashable, list[tuple[int, int]]] = {}
    for doc, start, end in refs:
        by_doc.setdefault(doc, []).append((start, end))
    touching = [
        (doc, s, e) for doc, s, e in chunks if any(min(e, re) > max(s, rs) for rs, re in by_doc.get(doc, ()))
    ]
    covered = _intersection(touching, refs)
    return covered / _length(_union(touching + refs))


def summarize(scores: Sequence[float]) -> dict[str, float]:
    """Mean and population standard deviation of per-question scores, in percent.

    Taught in notebooks/08_measuring_chunkers.ipynb, section 4.
    """
    values = np.asarray(list(scores), dtype=float)
    if values.ndim != 1 or values.size == 0:
        raise ValueError("scores must be a non-empty flat list of per-question scores")
    return {"mean": float(values.mean() * 100), "std": float(values.std() * 100)}


# --- Exact vector index ---


def unit_rows(name: str, vectors: Any) -> np.ndarray:
    """`vectors` (n, d) as float32 rows of length 1, so a dot product is a cosine; `name` names it in errors."""
    array = np.asarray(vectors)
    if array.dtype == object or not np.issubdtype(array.dtype, np.number):
        raise TypeError(f"{name} must be numeric vectors (a 2-D array), not {array.dtype}")
    if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(f"{name} has shape {array.shape}; pass a 2-D array (n_vectors, dim) with n_vectors >= 1")
    array = array.astype(np.float32)
    if not np.isfinite(array).all():
        raise ValueError(f"{name} holds NaN or infinite values; check the embedding step")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    if (norms == 0).any():
        raise ValueError(f"{name} has an all-zero vector at row {int(np.argmax(norms[:, 0] == 0))}; "
                         "a zero vector has no direction, drop it before indexing")
    return array / norms


class VectorIndex:
    """Exact cosine search: vectors normalized to float32, scored by one matrix product.

    Results come best first; equal scores keep insertion order (the lower row first),
    so a search is deterministic. `ids` (default 0..n-1) label the rows.

    Taught in notebooks/06_late_chunking_xr12.ipynb, section 3 and notebooks/08_measuring_chunkers.ipynb, section 4.
    """

    def __init__(self, vectors: Any, ids: Sequence[Any] | None = None):
        self.vectors = unit_rows("vectors", vectors)
        n = len(self.vectors)
        self.ids = list(range(n)) if ids is None else list(ids)
        if len(self.ids) != n:
            raise ValueError(f"ids has {len(self.ids)} labels for {n} vectors; pass one id per vector")

    def __len__(self) -> int:
        return len(self.vectors)

    @property
    def dim(self) -> int:
        return self.vectors.shape[1]

    def search(self, queries: Any, k: int) -> tuple[list[list[Any]], np.ndarray]:
        """For each query row: the ids of the `k` most similar vectors and their cosine scores.

        Returns `(ids, scores)`: `ids[q]` is a list of ids best first and `scores[q]` the
        matching float32 cosines. `k` larger than the index returns every vector.
        """
        k, q = _check_k(k), _check_queries(self, queries)
        scores = q @ self.vectors.T
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        top = np.take_along_axis(scores, order, axis=1)
        return [[self.ids[i] for i in row] for row in order], top

    def rank(self, queries: Any, batch_size: int = 128) -> Iterator[np.ndarray]:
        """The full ranking for each query in turn: every row index, best first (equal scores: lower row first).

        `search`'s order without a cut-off, computed `batch_size` queries per matrix product, so
        memory stays at `batch_size` x `len(self)` scores however many queries there are.
        """
        return self._rankings(_check_rank_args(self, queries, batch_size), batch_size)

    def _rankings(self, q: np.ndarray, batch_size: int) -> Iterator[np.ndarray]:
        for b in range(0, len(q), batch_size):
            yield from np.argsort(-(q[b:b + batch_size] @ self.vectors.T), axis=1, kind="stable")


# --- Argument checks: the error messages of the functions above, kept out of their way ---


def evaluate_spans(chunk_vectors: Any, query_vectors: Any, questions: Sequence[Mapping], spans: Sequence[SpanLike],
                   k: int = 5) -> dict[str, list[float]]:
    """Span recall, precision and IoU per question (Chroma's format) of its k nearest chunks: 08, Exercise 8.1 (c)."""
    hits, _ = VectorIndex(chunk_vectors).search(query_vectors, k=k)
    scored = [span_scores([spans[i] for i in row], [(q["corpus_id"], r["start_index"], r["end_index"])
                                                    for r in q["references"]]) for q, row in zip(questions, hits)]
    return {name: [getattr(s, name) for s in scored] for name in ("recall", "precision", "iou")}


def _check_k(k: Any, *, optional: bool = False) -> int | None:
    if optional and k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be an int, not {type(k).__name__}")
    if k < 1:
        raise ValueError(f"k={k}: look at least one result; use k >= 1")
    return int(k)


def _check_ranking(ranking: Any) -> list:
    if isinstance(ranking, (str, bytes)) or not isinstance(ranking, Iterable):
        raise TypeError(f"ranking must be a sequence of ids, best first, not {type(ranking).__name__}")
    ranking = list(ranking)
    seen = set()
    for item in ranking:
        if item in seen:
            raise ValueError(f"ranking lists {item!r} twice; remove duplicates (keep the first) before scoring")
        seen.add(item)
    return ranking


def _check_relevant(relevant: Any) -> set:
    if isinstance(relevant, (str, bytes)) or not isinstance(relevant, Iterable):
        raise TypeError(f"relevant must be a collection of ids, not {type(relevant).__name__}")
    relevant = set(relevant)
    if not relevant:
        raise ValueError("relevant is empty: the metric is undefined; leave out queries with no relevant item")
    return relevant


def _check_mrr_args(rankings: Any, relevants: Any) -> tuple[list, list]:
    rankings, relevants = list(rankings), list(relevants)
    if len(rankings) != len(relevants):
        raise ValueError(f"rankings has {len(rankings)} queries but relevants has {len(relevants)}; "
                         "pass one set of relevant ids per ranking")
    if not rankings:
        raise ValueError("rankings is empty; pass at least one query")
    return rankings, relevants


def _check_grades(relevance: Any) -> dict[Hashable, float]:
    """`relevance` as `{id: grade}`: a mapping's grades checked, each id of a collection graded 1."""
    if not isinstance(relevance, Mapping):
        return dict.fromkeys(_check_relevant(relevance), 1.0)
    grades = {}
    for item, grade in relevance.items():
        if isinstance(grade, bool) or not isinstance(grade, (int, float, np.integer, np.floating)):
            raise TypeError(f"relevance[{item!r}] must be a number, not {type(grade).__name__}")
        if not grade >= 0:  # also rejects NaN
            raise ValueError(f"relevance[{item!r}] = {grade}: grades must be >= 0 (0 = not relevant)")
        grades[item] = float(grade)
    if not any(grade > 0 for grade in grades.values()):
        raise ValueError("relevance has no grade above 0: nDCG is undefined; leave out queries with nothing relevant")
    return grades


def _check_budget(token_counts: Any, budget: Any, *, empty_ok: bool = False) -> list:
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)):
        raise TypeError(f"budget must be an int (cl100k tokens), not {type(budget).__name__}")
    if budget < 1:
        raise ValueError(f"budget={budget}: allow at least one token; use budget >= 1")
    if isinstance(token_counts, (str, bytes)) or not isinstance(token_counts, Iterable):
        raise TypeError("token_counts must be a sequence of ints, one per ranked chunk, best first")
    counts = list(token_counts)
    if not counts and not empty_ok:
        raise ValueError("token_counts is empty: nothing was retrieved; pass at least one chunk's size")
    return counts


def _checked_count(i: int, n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"token_counts[{i}] = {n!r}: each count must be an int >= 0")
    return int(n)


def _check_token_prefix_end_args(text: Any, n_tokens: Any) -> None:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    if isinstance(n_tokens, bool) or not isinstance(n_tokens, (int, np.integer)) or n_tokens < 0:
        raise ValueError(f"n_tokens={n_tokens!r} must be an int >= 0")


def _span(label: str, span: Any) -> tuple[Hashable, int, int]:
    if not isinstance(span, (tuple, list)) or len(span) not in (2, 3):
        raise TypeError(f"{label} = {span!r}: use a (doc, start, end) or (start, end) tuple")
    doc, start, end = span if len(span) == 3 else (None, *span)
    for value in (start, end):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{label} = {span!r}: start and end must be ints")
    if not 0 <= start < end:
        raise ValueError(f"{label} = {span!r}: need 0 <= start < end (a non-empty character range)")
    return doc, int(start), int(end)


def _spans(name: str, spans: Any) -> list[tuple[Hashable, int, int]]:
    if isinstance(spans, (str, bytes)) or not isinstance(spans, Iterable):
        raise TypeError(f"{name} must be a list of (doc, start, end) or (start, end) tuples")
    return [_span(f"{name}[{i}]", span) for i, span in enumerate(spans)]


def _chunk_span(label: str, chunk: Any) -> tuple[Hashable, int, int]:
    """A `Chunk` (anything with `start` and `end`, no document) or a span tuple, as (doc, start, end)."""
    if not isinstance(chunk, (tuple, list)) and hasattr(chunk, "start") and hasattr(chunk, "end"):
        return _span(label, (chunk.start, chunk.end))
    if not isinstance(chunk, (tuple, list)):
        raise TypeError(f"{label} = {chunk!r}: use a Chunk, or a (doc, start, end) or (start, end) tuple")
    return _span(label, chunk)


def _one_naming(chunks: list[tuple[Hashable, int, int]], references: list[tuple[Hashable, int, int]],
                name: str) -> None:
    named = {doc is not None for doc, _, _ in chunks} | {doc is not None for doc, _, _ in references}
    if len(named) > 1:
        raise ValueError(f"{name} and references mix (start, end) ranges with (doc, start, end) spans, so the "
                         "ranges without a document can never overlap the named ones; give every span its "
                         "document, or none")


def _check_overlaps_any_args(chunk: Any, references: Any) -> tuple[tuple[Hashable, int, int], list]:
    span = _chunk_span("chunk", chunk)
    refs = _spans("references", references)
    _one_naming([span], refs, "chunk")
    return span, refs


def _check_overlapping_indices_args(chunks: Any, references: Any) -> tuple[list, list]:
    if isinstance(chunks, (str, bytes)) or not isinstance(chunks, Iterable):
        raise TypeError(f"chunks must be a list of Chunks or (doc, start, end) / (start, end) tuples, "
                        f"not {type(chunks).__name__}")
    spans = [_chunk_span(f"chunks[{i}]", c) for i, c in enumerate(chunks)]
    refs = _spans("references", references)
    _one_naming(spans, refs, "chunks")
    return spans, refs


def _check_span_scores_args(retrieved: Any, references: Any) -> tuple[list, list]:
    retrieved, references = _spans("retrieved", retrieved), _spans("references", references)
    if not references:
        raise ValueError("references is empty: the scores are undefined; leave out questions with no excerpt")
    if not retrieved:
        raise ValueError("retrieved is empty; pass the chunks the retriever returned (at least one)")
    return retrieved, references


def _check_precision_omega_args(chunks: Any, references: Any) -> tuple[list, list]:
    chunks, references = _spans("chunks", chunks), _spans("references", references)
    if not references:
        raise ValueError("references is empty: precision-omega is undefined; leave out questions with no excerpt")
    return chunks, references


def _check_queries(index: VectorIndex, queries: Any) -> np.ndarray:
    """The query rows (one query may be a 1-D vector), normalized, once their dimension matches the index."""
    q = np.asarray(queries)
    q = unit_rows("queries", q[None, :] if q.ndim == 1 else q)
    if q.shape[1] != index.dim:
        raise ValueError(f"queries have dimension {q.shape[1]} but the index holds {index.dim}; "
                         "embed queries with the same model as the vectors")
    return q


def _check_rank_args(index: VectorIndex, queries: Any, batch_size: Any) -> np.ndarray:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size={batch_size!r} must be a positive int (queries per matrix product)")
    return _check_queries(index, queries)
