"""chunk-eval's pipeline: chunk every document with each strategy, embed, rank, score, decide.

`evaluate` runs five stages, one function each: `_chunk` (every strategy on every document),
`_plan` (which vectors the cache lacks: each distinct text once, and for late strategies each
document once; `bm25:` strategies embed nothing), `_embed` (fill the cache), `_score` (rank every
chunk for every question: `VectorIndex.rank`, BM25 or their reciprocal rank fusion; grade the
ranking with `ReferenceGrades`; cut what is returned at k chunks or at the exact budget; find each
miss's cause) and `_decide` (the verdict, each row's intervals and the warnings).
"""

from __future__ import annotations

import bisect
import hashlib
import json
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from course_lib.chunk_eval.inputs import (
    MARKDOWN_SUFFIXES,
    ChunkEvalError,
    Document,
    Question,
    _one_line,
    read_documents,
    read_questions,
)
from course_lib.embed import DEFAULT_CACHE, Embedder, SentenceTransformerEmbedder, VectorCache, text_key
from course_lib.evaluation import (
    CAUSES,
    METRIC_NAMES,
    ReferenceGrades,
    VectorIndex,
    answer_held,
    exact_budget,
    miss_cause,
    ndcg_at_k,
    span_scores,
    token_prefix_end,
)
from course_lib.late import pool_chunks
from course_lib.retrieval import RRF_K, bm25_rankings, headed_texts
from course_lib.stats import Verdict, mean_intervals, verdict
from course_lib.spans import Chunk, DocSpan
from course_lib.strategies import StrategySpec, chunk_with, parse_strategy
from course_lib.tokens import get_encoding

__all__ = ["DEFAULT_SIZES", "EvalReport", "StrategyResult", "default_strategies", "evaluate"]

RETRIEVAL_METRICS = ("recall_at_k", "span_recall", "span_precision", "iou", "answer_recall_at_k")  # of what is returned
ONE_CHUNK_SHARE = 0.9  # warn when the median chunk holds at least this share of its document
EASY_SHARE = 0.8  # warn when at least this share of the questions are hits for every strategy

DEFAULT_SIZES = (64, 128, 256, 512)
DEFAULT_BASE = 256  # the size the default grid's variants (fixed, overlap, headers:, hybrid:, late:) use
TOKENIZER = "cl100k_base"  # mean tokens and --budget are counted in cl100k tokens, as everywhere in the course
QUERY_BATCH = 128  # questions ranked per matrix product


# ---------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------


def default_strategies(documents: Sequence[Document]) -> list[str]:
    """What the course recommends: recursive (and markdown when a document is Markdown) at 64, 128, 256
    and 512 tokens; fixed:256; recursive:256:32; and headers:, hybrid: and late: of each at 256."""
    names = ["recursive"]
    if any(doc.path.lower().endswith(MARKDOWN_SUFFIXES) for doc in documents):
        names.append("markdown")
    grid = [f"{name}:{size}" for name in names for size in DEFAULT_SIZES]
    grid += [f"fixed:{DEFAULT_BASE}", f"recursive:{DEFAULT_BASE}:32"]
    return grid + [f"{prefix}:{name}:{DEFAULT_BASE}" for prefix in ("headers", "hybrid", "late") for name in names]


def _parse(specs: Sequence[str]) -> list[StrategySpec]:
    """The strategies, parsed, each once."""
    parsed, seen = [], set()
    for text in specs:
        try:
            spec = parse_strategy(text)
        except (TypeError, ValueError) as error:
            raise ChunkEvalError(f"--strategy {text!r}: {error}") from None
        if spec.id not in seen:
            seen.add(spec.id)
            parsed.append(spec)
    return parsed


def _family(spec: StrategySpec) -> str:
    """The strategy without its size: what a plot of metrics against size draws one line for."""
    label = ":".join(p for p in (spec.retrieval, spec.variant, spec.name) if p)
    if spec.overlap:
        label += f" overlap {spec.overlap}"
    if spec.options:
        label += " " + "&".join(f"{key}={value}" for key, value in sorted(spec.options.items()))
    return label


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------


@dataclass
class StrategyResult:
    """One strategy's scores (fractions) and costs, plus per-question detail for the report and the JSON."""

    strategy: str
    family: str
    size: int
    metrics: dict[str, float]
    chunks: int
    mean_tokens: float
    returned_tokens: float
    index_bytes: int
    seconds: float
    windowed_chunks: int
    hit: list[bool] = field(repr=False, default_factory=list)
    first_rank: list[int] = field(repr=False, default_factory=list)  # 0: no relevant chunk at all
    top: list[tuple[str, int, int]] = field(repr=False, default_factory=list)  # each question's first chunk
    best_relevant: list[tuple[str, int, int] | None] = field(repr=False, default_factory=list)
    per_question: dict[str, list[float]] = field(repr=False, default_factory=dict)  # metric -> value per question
    causes: list[str | None] = field(repr=False, default_factory=list)  # None: the answer was returned whole
    retrieved: list[list[DocSpan]] = field(repr=False, default_factory=list)  # what each question got back
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)  # metric -> own 95% interval

    @property
    def cause_counts(self) -> dict[str, int]:
        return {cause: self.causes.count(cause) for cause in CAUSES}

    def to_dict(self) -> dict[str, Any]:
        return {"strategy": self.strategy, **{m: round(self.metrics[m], 6) for m in METRIC_NAMES},
                "intervals": {m: [round(lo, 6), round(hi, 6)] for m, (lo, hi) in self.intervals.items()},
                "chunks": self.chunks, "mean_tokens": round(self.mean_tokens, 1),
                "returned_tokens": round(self.returned_tokens, 1), "index_bytes": self.index_bytes,
                "seconds": round(self.seconds, 2), "windowed_chunks": self.windowed_chunks,
                "causes": self.cause_counts}


@dataclass
class EvalReport:
    """Everything one run measured: `results` best first (the verdict's metric, then recall@k, nDCG@10,
    MRR, IoU), the verdict (None with fewer than two strategies or questions) and the warnings."""

    k: int
    budget: int | None
    model: str
    documents: list[Document]
    questions: list[Question]
    skipped: list[str]
    results: list[StrategyResult]
    shared_seconds: dict[str, float]
    cache: dict[str, int]
    metric: str = "recall_at_k"
    verdict: Verdict | None = None
    warnings: list[str] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    inputs_sha256: str = ""

    def verdict_text(self) -> str:
        if self.verdict is not None:
            return "verdict: " + self.verdict.text()
        why = "one strategy" if len(self.results) < 2 else "one question"
        return f"verdict: none ({why}: a verdict compares at least two strategies on at least two questions)"

    def per_question_records(self) -> list[dict[str, Any]]:
        """The JSON `per_question`: each question's id, text and, per strategy, rank, metrics, cause, retrieved."""
        by_path = {d.path: d for d in self.documents}
        out = []
        for i, q in enumerate(self.questions):
            results = {}
            for r in self.results:
                results[r.strategy] = {
                    "rank": r.first_rank[i] or None,
                    "metrics": {m: round(r.per_question[m][i], 6) for m in METRIC_NAMES},
                    "cause": r.causes[i],
                    "retrieved": [_span_record(by_path[d], s, e) for d, s, e in r.retrieved[i]],
                }
            out.append({"id": q.id, "question": q.question, "results": results})
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.as_dict() if self.verdict is not None else None,
            "verdict_text": self.verdict_text(),
            "warnings": self.warnings,
            "k": self.k, "budget": self.budget, "metric": self.metric, "model": self.model,
            "documents": len(self.documents),
            "document_bytes": sum(len(d.text.encode("utf-8")) for d in self.documents),
            "questions": len(self.questions), "skipped": self.skipped,
            "results": [r.to_dict() for r in self.results],
            "shared_seconds": {key: round(value, 2) for key, value in self.shared_seconds.items()},
            "cache": self.cache, "versions": self.versions, "inputs_sha256": self.inputs_sha256,
            "per_question": self.per_question_records(),
        }


def _span_record(doc: Document, start: int, end: int) -> dict[str, Any]:
    """`{"document", "start", "end"}`, with `page_start`/`page_end` for a paged document (as
    `course_lib.readers.page_span` counts them)."""
    record: dict[str, Any] = {"document": doc.path, "start": start, "end": end}
    if doc.page_ends:
        record["page_start"] = bisect.bisect_left(doc.page_ends, start) + 1
        record["page_end"] = bisect.bisect_left(doc.page_ends, end - 1) + 1
    return record


# ---------------------------------------------------------------------------
# The stages
# ---------------------------------------------------------------------------

Chunked = dict[str, list[tuple[Document, Chunk]]]  # strategy id -> (document, chunk) pairs, in document order


def _chunk(specs: Sequence[StrategySpec], documents: Sequence[Document], model: Any,
           seconds: dict[str, float]) -> Chunked:
    """Every strategy on every document; adds each strategy's chunking time to `seconds`."""
    chunked: Chunked = {}
    for spec in specs:
        t0 = time.perf_counter()
        pairs = []
        for doc in documents:
            try:
                pairs += [(doc, c) for c in chunk_with(spec, doc.text, model=model)]
            except (TypeError, ValueError) as error:
                raise ChunkEvalError(f"--strategy {spec.id!r} on {doc.path}: {_one_line(str(error), 300)}") from None
        if not pairs:
            raise ChunkEvalError(f"--strategy {spec.id!r} made no chunk from any document")
        chunked[spec.id] = pairs
        seconds[spec.id] = time.perf_counter() - t0
    return chunked


def _header_texts(doc: Document, chunks: Sequence[Chunk]) -> list[str]:
    """What a headers: strategy embeds: "name > heading path", a blank line, the chunk (notebook 10's headers)."""
    title = Path(doc.path).with_suffix("").as_posix()
    return headed_texts(doc.text, [(c.start, c.end) for c in chunks], title=title,
                        headings=doc.path.lower().endswith(MARKDOWN_SUFFIXES))


@dataclass
class _Plan:
    """Which vector each strategy's chunks (and each question) read, and which of them still have to be made."""

    query_keys: list[str]
    vector_keys: dict[str, list[str]]  # strategy id -> one cache key per chunk (none for bm25:)
    search_texts: dict[str, list[str]]  # strategy id -> what BM25 and the embedder read per chunk (not late:)
    todo: dict[str, dict[str, str]]  # strategy id ("" for the questions) -> key -> text to embed
    late_todo: dict[str, dict[str, tuple[int, int]]]  # document -> key -> chunk span, for every late strategy
    late_users: dict[str, set[str]]  # document -> the late strategies whose vectors it still has to give


def _missing(cache: VectorCache, keys: Sequence[str], texts: Sequence[str], planned: set[str]) -> dict[str, str]:
    """The texts to embed: each distinct key once, unless the cache has it or an earlier step will embed it."""
    todo: dict[str, str] = {}
    for key, text in zip(keys, texts):
        if key not in cache and key not in planned and key not in todo:
            todo[key] = text
    return todo


def _plan(specs: Sequence[StrategySpec], documents: Sequence[Document], questions: Sequence[Question],
          chunked: Chunked, cache: VectorCache) -> _Plan:
    doc_hash = {doc.path: hashlib.sha256(doc.text.encode("utf-8", "surrogatepass")).hexdigest() for doc in documents}
    query_keys = [text_key("text", q.question) for q in questions]
    todo = {"": _missing(cache, query_keys, [q.question for q in questions], set())}
    plan = _Plan(query_keys, {}, {}, todo, {}, {})
    planned = set(plan.todo[""])
    for spec in specs:
        if spec.variant == "headers":
            texts = [t for doc in documents for t in _header_texts(doc, [c for d, c in chunked[spec.id] if d is doc])]
        else:
            texts = [c.text for _, c in chunked[spec.id]]
        plan.search_texts[spec.id] = texts
        if spec.variant == "late":
            keys = plan.vector_keys[spec.id] = []
            for d, c in chunked[spec.id]:
                key = text_key("late", doc_hash[d.path], str(c.start), str(c.end))
                keys.append(key)
                if key not in cache:
                    plan.late_todo.setdefault(d.path, {})[key] = (c.start, c.end)
                    plan.late_users.setdefault(d.path, set()).add(spec.id)
            continue
        if not spec.embeds:
            continue
        plan.vector_keys[spec.id] = [text_key("text", t) for t in texts]
        plan.todo[spec.id] = _missing(cache, plan.vector_keys[spec.id], texts, planned)
        planned.update(plan.todo[spec.id])
    return plan


def _embed(plan: _Plan, documents: Sequence[Document], embedder: Embedder, cache: VectorCache,
           seconds: dict[str, float], shared: dict[str, float], quiet: bool) -> None:
    """Make every planned vector and put it in the cache; late strategies share each document's encoding time."""
    from tqdm import tqdm  # deferred: tqdm is only needed once there is something to embed

    total = sum(map(len, plan.todo.values())) + sum(map(len, plan.late_todo.values()))
    with tqdm(total=total, desc="chunk-eval: embedding", unit="vector", file=sys.stderr, disable=quiet,
              leave=False) as bar:
        for sid, texts_by_key in plan.todo.items():
            t0 = time.perf_counter()
            keys = list(texts_by_key)
            for a in range(0, len(keys), cache.flush_every):  # slices: the cache saves each as it goes (Ctrl-C)
                part = keys[a:a + cache.flush_every]
                cache.put(part, embedder.encode([texts_by_key[key] for key in part], progress=bar.update))
            if sid:
                seconds[sid] += time.perf_counter() - t0
            else:
                shared["queries"] = time.perf_counter() - t0
        for doc in documents:
            wanted = plan.late_todo.get(doc.path)
            if not wanted:
                continue
            t0 = time.perf_counter()
            bar.set_description(f"chunk-eval: late, {doc.path}")
            try:
                tokens, vectors = embedder.token_vectors(doc.text)
                pooled = pool_chunks(tokens, vectors, doc.text, list(wanted.values()))
            except ValueError as error:
                raise ChunkEvalError(f"late chunking of {doc.path}: {_one_line(str(error), 300)}") from None
            cache.put(list(wanted), pooled)
            bar.update(len(wanted))
            users = plan.late_users[doc.path]
            for sid in users:  # one encoding serves every late strategy: they share its time
                seconds[sid] += (time.perf_counter() - t0) / len(users)
    cache.flush()


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
              questions: Sequence[Question]) -> list[np.ndarray]:
    """Each question's ranking of the chunk rows, best first: dense, BM25 (only the rows it scores) or fused."""
    lexical = bm25_rankings(texts, [q.question for q in questions]) if spec.retrieval else None
    if spec.retrieval == "bm25":
        return [np.asarray(r, dtype=np.int64) for r in lexical]
    dense = list(VectorIndex(vectors).rank(query_vectors, QUERY_BATCH))
    if spec.retrieval == "hybrid":
        return [_fuse(d, lex) for d, lex in zip(dense, lexical)]
    return dense


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
    by_path = {d.path: d for d in documents}
    for q in questions:
        if q.document is not None:
            continue
        for group in _quote_groups(q, by_path):
            docs = sorted({d for d, _, _ in group})
            if len(docs) >= 2:
                doc, s, e = group[0]
                warnings.append(f'question {q.id}: the quote "{_one_line(by_path[doc].text[s:e], 50)}" occurs in '
                                f"{' and '.join(docs)}; add a 'document' to say which one is meant")
    if len(results) >= 2 and questions:
        easy = float(np.mean([all(r.hit[i] for r in results) for i in range(len(questions))]))
        if easy >= EASY_SHARE:
            scope = f"within {budget} tokens" if budget else f"in the top {k}"
            warnings.append(f"{easy:.0%} of the questions are hits {scope} for every strategy: the set cannot "
                            "separate them; write harder questions")
    return ruling, warnings


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


# ---------------------------------------------------------------------------
# The whole run
# ---------------------------------------------------------------------------


def evaluate(
    docs: str | Path,
    questions: str | Path,
    strategies: Sequence[str] | None = None,
    *,
    k: int = 5,
    budget: int | None = None,
    metric: str = "recall_at_k",
    model: str | Path | None = None,
    embedder: Embedder | None = None,
    cache: str | Path | None = DEFAULT_CACHE,
    cache_read_only: bool = False,
    skip_bad_files: bool = False,
    quiet: bool = True,
    on_warning: Callable[[str], Any] | None = None,
) -> EvalReport:
    """Chunk, embed, search and score every strategy on the documents of `docs`; see `course_lib.chunk_eval`.

    `metric` (one of `METRIC_NAMES`) is the verdict's. `model` is a local SentenceTransformer folder
    (default: the course's MiniLM); `embedder` replaces the model altogether (tests pass a small
    stand-in). `cache=None` keeps no vectors on disk; `cache_read_only=True` reads it and writes nothing.
    `quiet=False` shows progress bars on stderr. A damaged cache file or a failed cache write is a
    warning, sent to `on_warning` (default `warnings.warn`): the run goes on. Raises `ChunkEvalError`
    on bad input. Taught in notebooks/11_your_documents.ipynb, section 2.
    """
    for name, value in (("k", k), ("budget", budget)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ChunkEvalError(f"--{name} {value!r}: use a whole number >= 1")
    if metric not in METRIC_NAMES:
        raise ChunkEvalError(f"--metric {metric!r} is not a metric; choose one of {', '.join(METRIC_NAMES)}")
    began = time.perf_counter()
    documents, skipped = read_documents(docs, skip_bad_files=skip_bad_files)
    question_list = read_questions(questions, documents)
    specs = _parse(strategies if strategies else default_strategies(documents))
    shared: dict[str, float] = {"reading": time.perf_counter() - began}

    t0 = time.perf_counter()
    if embedder is None:
        try:
            embedder = SentenceTransformerEmbedder(model)
        except ValueError as error:
            raise ChunkEvalError(f"--model: {error}") from None
    shared["model_load"] = time.perf_counter() - t0

    seconds: dict[str, float] = {}
    chunked = _chunk(specs, documents, getattr(embedder, "model", None), seconds)
    vector_cache = VectorCache(cache, embedder.name, dim=getattr(embedder, "dim", None), read_only=cache_read_only,
                               on_warning=on_warning)
    plan = _plan(specs, documents, question_list, chunked, vector_cache)
    _embed(plan, documents, embedder, vector_cache, seconds, shared, quiet)
    query_vectors = np.stack([vector_cache[key] for key in plan.query_keys])

    encoding = get_encoding(TOKENIZER)
    results = []
    for spec in specs:
        t0 = time.perf_counter()
        pairs = chunked[spec.id]
        spans = [(d.path, c.start, c.end) for d, c in pairs]
        texts = [c.text for _, c in pairs]
        tokens = [len(ids) for ids in encoding.encode_ordinary_batch(texts)]
        vectors = np.stack([vector_cache[key] for key in plan.vector_keys[spec.id]]) if spec.embeds else None
        scored = _score(spec, spans, texts, plan.search_texts[spec.id], tokens, vectors, query_vectors,
                        question_list, documents, k, budget)
        index_bytes = (int(vectors.nbytes) if vectors is not None else 0) + (
            _bm25_bytes(plan.search_texts[spec.id]) if spec.retrieval else 0)
        windowed = sum(n > embedder.max_tokens for n in embedder.token_counts(texts)) \
            if spec.embeds and spec.variant != "late" else 0
        seconds[spec.id] += time.perf_counter() - t0
        per_question = scored["per_question"]
        results.append(StrategyResult(
            strategy=spec.id, family=_family(spec), size=spec.size,
            metrics={m: float(np.mean(v)) for m, v in per_question.items()}, chunks=len(pairs),
            mean_tokens=float(np.mean(tokens)), returned_tokens=float(np.mean(scored["returned_tokens"])),
            index_bytes=index_bytes, seconds=seconds[spec.id], windowed_chunks=windowed, hit=scored["hit"],
            first_rank=scored["first_rank"], top=scored["top"], best_relevant=scored["best_relevant"],
            per_question=per_question, causes=scored["causes"], retrieved=scored["retrieved"]))
    results.sort(key=lambda r: (-r.metrics[metric], -r.metrics["recall_at_k"], -r.metrics["ndcg_at_10"],
                                -r.metrics["mrr"], -r.metrics["iou"], r.strategy))
    t0 = time.perf_counter()
    ruling, warnings = _decide(results, documents, question_list, chunked, metric, k, budget)
    shared["verdict"] = time.perf_counter() - t0
    shared["total"] = time.perf_counter() - began
    loaded = vector_cache.loaded
    return EvalReport(k=k, budget=budget, model=embedder.name, documents=documents, questions=question_list,
                      skipped=skipped, results=results, shared_seconds=shared,
                      cache={"vectors_loaded": loaded, "vectors_embedded": len(vector_cache.vectors) - loaded},
                      metric=metric, verdict=ruling, warnings=warnings, versions=_versions(embedder, specs),
                      inputs_sha256=_inputs_sha256(documents, question_list))
