"""chunk-eval's scoring: rank every chunk for every question, cut what is returned, find each miss's cause, decide.

`_score` ranks with `VectorIndex.rank`, BM25 or their reciprocal rank fusion, grades the ranking with
`ReferenceGrades`, cuts what is returned at k chunks or at the exact budget and names each miss's
cause; `_decide` gives the verdict, each row's intervals and the warnings.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
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
from course_lib.retrieval import RRF_K, bm25_rankings
from course_lib.spans import DocSpan
from course_lib.stats import Verdict, mean_intervals, verdict
from course_lib.strategies import StrategySpec
from rag_tools.chunk_eval.grades import ReferenceGrades, answer_held, miss_cause
from rag_tools.chunk_eval.inputs import Document, Question, _one_line
from rag_tools.chunk_eval.results import Chunked, StrategyResult
from rag_tools.embedders import Embedder

__all__ = ["TOKENIZER"]  # the rest is chunk-eval's own (run.py calls it)

ONE_CHUNK_SHARE = 0.9  # warn when the median chunk holds at least this share of its document
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


def _rankings(spec: StrategySpec, texts: Sequence[str], vectors: np.ndarray | None, query_vectors: np.ndarray,
              questions: Sequence[Question]) -> Iterator[np.ndarray]:
    """Each question's ranking of the chunk rows, best first: dense, BM25 (only the rows it scores) or fused.

    Yielded one at a time, `QUESTION_BATCH` questions computed at once, so memory does not grow with the
    number of questions (BM25's index is built again for each batch)."""
    index = VectorIndex(vectors) if spec.retrieval != "bm25" else None
    for b in range(0, len(questions), QUESTION_BATCH):
        part = questions[b:b + QUESTION_BATCH]
        lexical = bm25_rankings(texts, [q.question for q in part]) if spec.retrieval else None
        if index is None:
            yield from (np.asarray(r, dtype=np.int64) for r in lexical)
            continue
        dense = index.rank(query_vectors[b:b + QUESTION_BATCH], QUERY_BATCH)
        yield from (_fuse(d, lex) for d, lex in zip(dense, lexical)) if lexical is not None else dense


def _quote_groups(question: Question, by_path: dict[str, Document]) -> list[list[DocSpan]]:
    """The question's reference spans grouped by quote: occurrences of one quote read alike once
    whitespace and line-end hyphens are left out (each given span is a quote of its own)."""
    groups: dict[str, list[DocSpan]] = {}
    for doc, s, e in question.spans:
        key = re.sub(r"[\s\-]+", "", by_path[doc].text[s:e])
        groups.setdefault(key, []).append((doc, s, e))
    return list(groups.values())


def _returned(ranking: np.ndarray, chunk_spans: Sequence[DocSpan], texts: Sequence[str], tokens: Sequence[int],
              k: int, budget: int | None) -> tuple[list[DocSpan], int]:
    """What the reader gets and its cl100k tokens: the top k chunks, or `exact_budget`'s text of `budget` tokens."""
    if budget is None:
        rows = ranking[:k]
        return [chunk_spans[i] for i in rows], int(sum(tokens[i] for i in rows))
    head = ranking[:budget + 1]  # every chunk holds at least one token: enough to fill the budget
    taken = exact_budget([tokens[i] for i in head], budget)
    out = []
    for i, n in zip(head, taken):
        doc, s, e = chunk_spans[i]
        if n < tokens[i]:
            e = s + token_prefix_end(texts[i], n, TOKENIZER)
        if e > s:
            out.append((doc, s, e))
    return out, int(sum(taken))


def _score(spec: StrategySpec, chunk_spans: list[DocSpan], texts: list[str], search_texts: list[str],
           tokens: list[int], vectors: np.ndarray | None, query_vectors: np.ndarray,
           questions: Sequence[Question], documents: Sequence[Document], k: int, budget: int | None) -> dict[str, Any]:
    """Rank the chunks for every question and score what is returned; per-question values and causes.

    A chunk that BM25 does not rank (it shares no word with the question) is not retrieved, for every metric.
    """
    by_path = {d.path: d for d in documents}
    texts_by_path = {d.path: d.text for d in documents}
    grade = ReferenceGrades(chunk_spans)
    values: dict[str, list[float]] = {m: [] for m in METRIC_NAMES}
    out: dict[str, Any] = {"hit": [], "first_rank": [], "top": [], "best_relevant": [], "causes": [],
                           "retrieved": [], "returned_tokens": []}
    for question, ranking in zip(questions, _rankings(spec, search_texts, vectors, query_vectors, questions)):
        grades = grade(question.spans)
        positions = np.flatnonzero(np.isin(ranking, list(grades))) if grades else np.array([], dtype=int)
        rank = int(positions[0]) + 1 if positions.size else 0
        returned, n_tokens = _returned(ranking, chunk_spans, texts, tokens, k, budget)
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
    out["per_question"] = values
    return out


def _bm25_bytes(texts: Sequence[str]) -> int:
    """The bytes of the BM25 index (bm25s's score arrays), as benchmarks/context_methods.py counts them."""
    import bm25s

    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(list(texts), stopwords="en", show_progress=False), show_progress=False)
    return int(sum(a.nbytes for a in retriever.scores.values() if isinstance(a, np.ndarray)))


def _decide(results: list[StrategyResult], documents: Sequence[Document], questions: Sequence[Question],
            chunked: Chunked, metric: str, k: int, budget: int | None) -> tuple[Verdict | None, list[str]]:
    """The verdict over the strategies, each row's own 95% intervals (set in place) and the warnings."""
    if len(questions) >= 2:
        for r in results:
            r.intervals = {m: (iv.low, iv.high) for m, iv in mean_intervals(r.per_question).items()}
    ruling = None
    if len(results) >= 2 and len(questions) >= 2:
        costs = {r.strategy: (r.index_bytes, r.seconds) if budget else (r.returned_tokens,) for r in results}
        ruling = verdict({r.strategy: r.per_question[metric] for r in results}, costs=costs, metric=metric)
    warnings = []
    length = {d.path: len(d.text) for d in documents}
    for r in results:
        share = float(np.median([(c.end - c.start) / length[d.path] for d, c in chunked[r.strategy]]))
        if share >= ONE_CHUNK_SHARE:
            warnings.append(f"{r.strategy}: the median chunk holds {share:.0%} of its document; every document is "
                            f"one chunk, so recall@{k} only says which document")
    warnings += _ambiguous_quotes(documents, questions)
    if len(results) >= 2 and questions:
        easy = float(np.mean([all(r.hit[i] for r in results) for i in range(len(questions))]))
        if easy >= EASY_SHARE:
            scope = f"within {budget} tokens" if budget else f"in the top {k}"
            warnings.append(f"{easy:.0%} of the questions are hits {scope} for every strategy: the set cannot "
                            "separate them; write harder questions")
    return ruling, warnings


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


def _versions(embedder: Embedder, specs: Sequence[StrategySpec]) -> dict[str, str]:
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
    return out
