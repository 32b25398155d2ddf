"""chunk-eval's scoring: rank every chunk for every question, cut what is returned, find each miss's cause, decide.

`_score` ranks with `VectorIndex.rank`, BM25 or their reciprocal rank fusion, grades the ranking with
`ReferenceGrades`, cuts what is returned at k chunks or at the exact budget and names each miss's
cause; `_decide` gives the verdict, each row's intervals and the warnings.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from course_lib.evaluation import (
    METRIC_NAMES,
    VectorIndex,
    exact_budget,
    ndcg_at_k,
    span_scores,
    token_prefix_end,
)
from course_lib.retrieval import RRF_K, bm25_index, lexical_words
from course_lib.spans import DocSpan
from course_lib.stats import DEFAULT_MARGIN, Verdict, mean_intervals, verdict
from course_lib.strategies import StrategySpec
from rag_tools.chunk_eval.grades import ReferenceGrades, answer_held, miss_cause
from rag_tools.chunk_eval.inputs import Document, Question, _one_line
from rag_tools.chunk_eval.language import Language
from rag_tools.chunk_eval.rerank import RerankSpec, reranked, token_index
from rag_tools.chunk_eval.results import Chunked, StrategyResult
from rag_tools.embedders import Embedder

__all__ = ["TOKENIZER", "Bm25Index", "query_latency", "size_warnings"]  # the rest is chunk-eval's own (run.py)

ONE_CHUNK_SHARE = 0.9  # warn when the median chunk holds at least this share of its document
SMALL_MEDIAN = 16  # warn when the median chunk holds fewer cl100k tokens than this: too small to hold an answer
LATENCY_PROBES = 200  # questions ranked one at a time to measure a search's latency (spread over the set)
EASY_SHARE = 0.8  # warn when at least this share of the questions are hits for every strategy
TOKENIZER = "cl100k_base"  # mean tokens and --budget are counted in cl100k tokens, as everywhere in the course
QUERY_BATCH = 128  # questions ranked per matrix product
QUESTION_BATCH = 256  # questions whose rankings exist at once (BM25 gives lists of ints: about 36 bytes a chunk)


def _fuse(dense: np.ndarray, lexical: Sequence[int]) -> np.ndarray:
    """`course_lib.retrieval.reciprocal_rank_fusion([dense, lexical])` (k=60) over row indices, vectorized:
    `dense` ranks every row, so ties keep the dense order."""
    n = len(dense)
    position = np.empty(n, dtype=np.int64)
    position[dense] = np.arange(n)
    score = 1.0 / (RRF_K + position + 1.0)
    if len(lexical):
        rows = np.asarray(lexical, dtype=np.int64)
        score[rows] += 1.0 / (RRF_K + np.arange(1, len(rows) + 1, dtype=np.float64))
    return np.lexsort((position, -score))


class Bm25Index:
    """`course_lib.retrieval.bm25_rankings` with its index built once: the same tokenizer (`lexical_words` in
    `language`, chunks and questions alike), scores and order (the rows with a positive score, best first, equal
    scores in row order), one question at a time; each question's milliseconds are kept in `ms`."""

    def __init__(self, texts: Sequence[str], language: str | None = "en", *, stem: bool = True):
        self.language, self.stem = language, stem
        self.retriever, self.vocabulary = bm25_index(lexical_words(list(texts), language, stem=stem))
        self.ms: list[float] = []

    @property
    def nbytes(self) -> int:
        """The bytes of bm25s's score arrays, as benchmarks/context_methods.py counts them."""
        return int(sum(a.nbytes for a in self.retriever.scores.values() if isinstance(a, np.ndarray)))

    def ranking(self, query: str) -> np.ndarray:
        t0 = time.perf_counter()
        words = lexical_words([query], self.language, stem=self.stem)[0]
        known = [w for w in words if w in self.vocabulary]
        if known:
            scores = self.retriever.get_scores(known)
            order = np.argsort(-scores, kind="stable")
            out = order[scores[order] > 0].astype(np.int64)
        else:
            out = np.empty(0, dtype=np.int64)
        self.ms.append(1000 * (time.perf_counter() - t0))
        return out


def _rankings(spec: StrategySpec, vectors: np.ndarray | None, query_vectors: np.ndarray,
              questions: Sequence[Question], lexical: Bm25Index | None) -> Iterator[np.ndarray]:
    """Each question's ranking of the chunk rows, best first: dense, BM25 (only the rows it scores) or fused.

    Yielded one at a time, `QUESTION_BATCH` questions computed at once, so memory does not grow with the
    number of questions."""
    index = VectorIndex(vectors) if spec.retrieval != "bm25" else None
    for b in range(0, len(questions), QUESTION_BATCH):
        part = questions[b:b + QUESTION_BATCH]
        if index is None:
            yield from (lexical.ranking(q.question) for q in part)
            continue
        dense = index.rank(query_vectors[b:b + QUESTION_BATCH], QUERY_BATCH)
        if lexical is None:
            yield from dense
        else:
            yield from (_fuse(d, lexical.ranking(q.question)) for d, q in zip(dense, part))


def query_latency(spec: StrategySpec, vectors: np.ndarray | None, query_vectors: np.ndarray,
                  questions: Sequence[Question], bm25_ms: Sequence[float] | None) -> float:
    """The median milliseconds of the first stage's search for one question (its embedding apart): ranking every
    chunk by cosine, timed one question at a time over up to `LATENCY_PROBES` questions spread over the set,
    plus BM25's own time for each question (timed while scoring) for `bm25:` and `hybrid:`."""
    dense = np.zeros(len(questions))
    if spec.retrieval != "bm25" and vectors is not None:
        index = VectorIndex(vectors)
        picked = np.unique(np.linspace(0, len(questions) - 1, min(LATENCY_PROBES, len(questions)), dtype=int))
        times = []
        for i in picked:
            t0 = time.perf_counter()
            next(index.rank(query_vectors[i:i + 1], 1))
            times.append(1000 * (time.perf_counter() - t0))
        dense = np.full(len(questions), float(np.median(times)))
    lexical = np.asarray(bm25_ms, dtype=float) if bm25_ms else np.zeros(len(questions))
    return float(np.median(dense + lexical))


def _quote_groups(question: Question, by_path: dict[str, Document]) -> list[list[DocSpan]]:
    """The question's reference spans grouped by quote: occurrences of one quote read alike once
    whitespace and line-end hyphens are left out (each given span is a quote of its own)."""
    groups: dict[str, list[DocSpan]] = {}
    for doc, s, e in question.spans:
        key = re.sub(r"[\s\-]+", "", by_path[doc].text[s:e])
        groups.setdefault(key, []).append((doc, s, e))
    return list(groups.values())


def _returned(ranking: np.ndarray, chunk_spans: Sequence[DocSpan], texts: Sequence[str], tokens: Sequence[int],
              k: int, budget: int | None) -> tuple[list[DocSpan], int, list[int]]:
    """What the reader gets, its cl100k tokens and the chunk rows it comes from: the top k chunks, or
    `exact_budget`'s text of `budget` tokens."""
    if budget is None:
        rows = [int(i) for i in ranking[:k]]
        return [chunk_spans[i] for i in rows], int(sum(tokens[i] for i in rows)), rows
    head = ranking[:budget + 1]  # every chunk holds at least one token: enough to fill the budget
    taken = exact_budget([tokens[i] for i in head], budget)
    out, rows = [], []
    for i, n in zip(head, taken):
        doc, s, e = chunk_spans[i]
        if n < tokens[i]:
            e = s + token_prefix_end(texts[i], n, TOKENIZER)
        if e > s:
            out.append((doc, s, e))
            rows.append(int(i))
    return out, int(sum(taken)), rows


def _reranker(spec: RerankSpec, chunk_spans: list[DocSpan], vectors: np.ndarray | None, query_vectors: np.ndarray,
              questions: Sequence[Question], lexical: Bm25Index | None,
              token_source: Callable[[list[int]], list[np.ndarray]],
              query_tokens: Sequence[tuple[np.ndarray, float]], out: dict[str, Any]) -> Iterator[np.ndarray]:
    """The first stage's rankings with their first `spec.depth` rows re-ordered by MaxSim. The candidates'
    token vectors are made once (`token_source(rows)`), then each question is reranked; the median of its
    milliseconds (the question's token vectors and the MaxSim) goes to `out["rerank_ms"]`, the stage's
    seconds to `out["rerank_seconds"]` and the token vectors' bytes to `out["rerank_bytes"]`."""
    t0 = time.perf_counter()
    candidates = sorted({int(row) for ranking in _rankings(spec, vectors, query_vectors, questions, lexical)
                         for row in ranking[:spec.depth]})
    if lexical is not None:
        lexical.ms.clear()  # this pass only found the candidates: BM25's time is kept from the pass below
    index = token_index([chunk_spans[row] for row in candidates], token_source(candidates))
    rows_of = {chunk_spans[row]: row for row in candidates}
    out["rerank_bytes"] = index.nbytes
    stage, per_question = time.perf_counter() - t0, []
    out["rerank_ms"], out["rerank_seconds"] = 0.0, stage
    for (query, query_seconds), ranking in zip(query_tokens,
                                               _rankings(spec, vectors, query_vectors, questions, lexical)):
        t1 = time.perf_counter()
        ranking = reranked(ranking, spec.depth, index, rows_of, chunk_spans, query)
        took = time.perf_counter() - t1
        per_question.append(1000 * (took + query_seconds))
        stage += took + query_seconds
        out["rerank_ms"], out["rerank_seconds"] = float(np.median(per_question)), stage  # kept up to date: the
        yield ranking  # caller stops after the last question, before this generator would finish


def _score(spec: StrategySpec | RerankSpec, chunk_spans: list[DocSpan], texts: list[str], search_texts: list[str],
           tokens: list[int], vectors: np.ndarray | None, query_vectors: np.ndarray,
           questions: Sequence[Question], documents: Sequence[Document], k: int, budget: int | None, *,
           token_source: Callable[[list[int]], list[np.ndarray]] | None = None,
           query_tokens: Sequence[tuple[np.ndarray, float]] = (), language: str | None = "en") -> dict[str, Any]:
    """Rank the chunks for every question and score what is returned; per-question values and causes.

    A chunk that BM25 does not rank (it shares no word with the question) is not retrieved, for every metric.
    A `rerank:` strategy needs `token_source` (chunk rows -> their token matrices) and `query_tokens` (each
    question's token matrix and the seconds it took). `language` is BM25's (`course_lib.retrieval.lexical_words`).
    """
    by_path = {d.path: d for d in documents}
    texts_by_path = {d.path: d.text for d in documents}
    grade = ReferenceGrades(chunk_spans)
    values: dict[str, list[float]] = {m: [] for m in METRIC_NAMES}
    out: dict[str, Any] = {"hit": [], "first_rank": [], "top": [], "best_relevant": [], "causes": [],
                           "retrieved": [], "returned_tokens": [], "returned_rows": []}
    lexical = Bm25Index(search_texts, language) if spec.retrieval else None
    if isinstance(spec, RerankSpec):
        if token_source is None or len(query_tokens) != len(questions):
            raise ValueError("a rerank: strategy needs token_source and one query token matrix per question")
        rankings = _reranker(spec, chunk_spans, vectors, query_vectors, questions, lexical, token_source,
                             query_tokens, out)
    else:
        rankings = _rankings(spec, vectors, query_vectors, questions, lexical)
    for question, ranking in zip(questions, rankings):
        grades = grade(question.spans)
        positions = np.flatnonzero(np.isin(ranking, list(grades))) if grades else np.array([], dtype=int)
        rank = int(positions[0]) + 1 if positions.size else 0
        returned, n_tokens, rows = _returned(ranking, chunk_spans, texts, tokens, k, budget)
        quotes = _quote_groups(question, by_path)
        refs = list(question.spans)
        found = any(d == rd and s < re_ and rs < e for d, s, e in returned for rd, rs, re_ in refs)
        values["recall_at_k"].append(float(found))
        values["mrr"].append(1.0 / rank if rank else 0.0)
        values["ndcg_at_10"].append(ndcg_at_k(ranking[:10].tolist(), grades, 10) if grades and len(ranking) else 0.0)
        scores = span_scores(returned, refs) if returned else None
        values["span_recall"].append(scores.recall if scores else 0.0)
        values["span_precision"].append(scores.precision if scores else 0.0)
        values["iou"].append(scores.iou if scores else 0.0)
        held = answer_held(returned, quotes)
        values["answer_recall_at_k"].append(float(held))
        cause = None
        if not held:  # the chunks that can hold an occurrence share a character with it: rank order, unranked last
            where = {int(row): p for p, row in enumerate(ranking)}
            candidates = sorted(grades, key=lambda row: (where.get(row, len(chunk_spans)), row))
            cause = miss_cause(returned, [chunk_spans[row] for row in candidates], quotes, texts_by_path)
        out["hit"].append(found)
        out["first_rank"].append(rank)
        out["top"].append(chunk_spans[int(ranking[0])] if len(ranking) else None)
        out["best_relevant"].append(chunk_spans[int(ranking[positions[0]])] if positions.size else None)
        out["causes"].append(cause)
        out["retrieved"].append(returned)
        out["returned_tokens"].append(n_tokens)
        out["returned_rows"].append(rows)
    out["per_question"] = values
    out["bm25_bytes"] = lexical.nbytes if lexical is not None else 0
    out["bm25_ms"] = list(lexical.ms) if lexical is not None else None
    return out


def _decide(results: list[StrategyResult], documents: Sequence[Document], questions: Sequence[Question],
            chunked: Chunked, metric: str, k: int, budget: int | None,
            margin: float = DEFAULT_MARGIN) -> tuple[Verdict | None, list[str]]:
    """The verdict over the strategies (`margin`: "as good as the leader"), each row's own 95% intervals (set in
    place) and the warnings."""
    if len(questions) >= 2:
        for r in results:
            r.intervals = {m: (iv.low, iv.high) for m, iv in mean_intervals(r.per_question).items()}
    ruling = None
    if len(results) >= 2 and len(questions) >= 2:
        ruling = verdict({r.strategy: r.per_question[metric] for r in results},
                         costs={r.strategy: r.cost_key(budget) for r in results}, metric=metric, margin=margin)
    warnings = size_warnings([r.strategy for r in results], chunked, documents, k, budget)
    warnings += _ambiguous_quotes(documents, questions)
    if len(results) >= 2 and questions:
        easy = float(np.mean([all(r.hit[i] for r in results) for i in range(len(questions))]))
        if easy >= EASY_SHARE:
            scope = f"within {budget} tokens" if budget else f"in the top {k}"
            warnings.append(f"{easy:.0%} of the questions are hits {scope} for every strategy: the set cannot "
                            "separate them; write harder questions")
    return ruling, warnings


def size_warnings(strategies: Sequence[str], chunked: Chunked, documents: Sequence[Document], k: int,
                  budget: int | None) -> list[str]:
    """One warning per degenerate size: the median chunk holds `ONE_CHUNK_SHARE` of its document (recall only
    says which document), the strategy makes no more chunks than are returned (every question gets every
    chunk; not under `budget`), or its median chunk is under `SMALL_MEDIAN` cl100k tokens."""
    length = {d.path: len(d.text) for d in documents}
    warnings = []
    for strategy in strategies:
        pairs = chunked[strategy]
        share = float(np.median([(c.end - c.start) / length[d.path] for d, c in pairs]))
        if share >= ONE_CHUNK_SHARE:
            warnings.append(f"{strategy}: the median chunk holds {share:.0%} of its document; every document is "
                            f"one chunk, so recall@{k} only says which document")
        elif budget is None and len(pairs) <= k:
            warnings.append(f"{strategy}: {len(pairs)} chunks in all, no more than the {k} returned: every question "
                            f"gets every chunk, so recall@{k} is 100% by construction; use a smaller size or k")
        median = float(np.median([c.n_tokens for _, c in pairs]))
        if median < SMALL_MEDIAN:
            warnings.append(f"{strategy}: the median chunk holds {median:.0f} tokens, too few to hold most answers "
                            "whole; use a larger size")
    return warnings


def _ambiguous_quotes(documents: Sequence[Document], questions: Sequence[Question]) -> list[str]:
    """One warning per quote found in two or more documents, naming how many questions without a
    `document` use it (the first few by id)."""
    by_path = {d.path: d for d in documents}
    users: dict[tuple[str, tuple[str, ...]], list[str]] = {}  # (quote, its documents) -> question ids
    for q in questions:
        if q.document is not None:
            continue
        for group in _quote_groups(q, by_path):
            docs = tuple(sorted({d for d, _, _ in group}))
            if len(docs) >= 2:
                doc, s, e = group[0]
                users.setdefault((" ".join(by_path[doc].text[s:e].split()), docs), []).append(q.id)
    warnings = []
    for (quote, docs), ids in users.items():
        where = f'the quote "{_one_line(quote, 50)}" occurs in {" and ".join(docs)}'
        if len(ids) == 1:
            warnings.append(f"question {ids[0]}: {where}; add a 'document' to say which one is meant")
        else:
            shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
            warnings.append(f"{len(ids)} questions ({shown}): {where}; add a 'document' to each to say which "
                            "one is meant")
    return warnings


def _inputs_sha256(documents: Sequence[Document], questions: Sequence[Question]) -> str:
    """sha256 of the documents (path and text) and the questions (id, text, reference spans)."""
    digest = hashlib.sha256()
    for doc in documents:
        digest.update(json.dumps([doc.path, doc.text]).encode("utf-8", "surrogatepass") + b"\n")
    for q in questions:
        digest.update(json.dumps([q.id, q.question, [list(s) for s in q.spans]]).encode("utf-8", "surrogatepass")
                      + b"\n")
    return digest.hexdigest()


def _versions(embedder: Embedder, specs: Sequence[StrategySpec], language: Language | None = None) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    import course_lib

    name = embedder.name
    out = {"course_lib": course_lib.__version__, "model": name,
           "model_files": name.split("@", 1)[1].split("|", 1)[0] if "@" in name else "unknown"}
    for package in ["tiktoken"] + (["bm25s"] if any(s.retrieval for s in specs) else []):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            out[package] = "unknown"
    out["tokenizer"] = f"{TOKENIZER} (tiktoken {out.pop('tiktoken')})"
    if language is not None:
        out["language"] = language.text().removeprefix("language: ")
        if any(s.retrieval for s in specs) and language.lexical:
            out["snowballstemmer"] = version("snowballstemmer")
    return out
