"""chunk-eval's pipeline: chunk every document with each strategy, embed, rank, score.

`evaluate` runs four stages, one function each: `_chunk` (every strategy on every document),
`_plan` (which vectors the cache lacks: each distinct text once, and for late strategies each
document once), `_embed` (fill the cache) and `_score` (rank every chunk for every question with
`VectorIndex.rank`, grade the ranking with `ReferenceGrades`, average the metrics).
"""

from __future__ import annotations

import hashlib
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
    METRIC_NAMES,
    ReferenceGrades,
    VectorIndex,
    budget_cutoff,
    ndcg_at_k,
    span_scores,
)
from course_lib.late import pool_chunks
from course_lib.retrieval import headed_texts
from course_lib.spans import Chunk, DocSpan
from course_lib.strategies import StrategySpec, chunk_with, parse_strategy
from course_lib.tokens import get_encoding

__all__ = ["DEFAULT_SIZES", "EvalReport", "StrategyResult", "default_strategies", "evaluate"]

DEFAULT_SIZES = (128, 256, 384)
TOKENIZER = "cl100k_base"  # mean tokens and --budget are counted in cl100k tokens, as everywhere in the course
QUERY_BATCH = 128  # questions ranked per matrix product


# ---------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------


def default_strategies(documents: Sequence[Document]) -> list[str]:
    """fixed and recursive (and markdown when a document is Markdown) at 128, 256 and 384 tokens, naive and late."""
    names = ["fixed", "recursive"]
    if any(doc.path.lower().endswith(MARKDOWN_SUFFIXES) for doc in documents):
        names.append("markdown")
    naive = [f"{name}:{size}" for name in names for size in DEFAULT_SIZES]
    return naive + [f"late:{spec}" for spec in naive]


def _parse(specs: Sequence[str]) -> list[StrategySpec]:
    """The strategies, parsed, each once; every embedding variant (`late:`, `headers:`) is one chunk-eval embeds."""
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
    label = f"{spec.variant}:{spec.name}" if spec.variant else spec.name
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
    """One strategy's scores (fractions) and costs, plus per-question detail for the report."""

    strategy: str
    family: str
    size: int
    metrics: dict[str, float]
    chunks: int
    mean_tokens: float
    index_bytes: int
    seconds: float
    windowed_chunks: int
    hit: list[bool] = field(repr=False, default_factory=list)
    first_rank: list[int] = field(repr=False, default_factory=list)  # 0: no relevant chunk at all
    top: list[tuple[str, int, int]] = field(repr=False, default_factory=list)  # each question's first chunk
    best_relevant: list[tuple[str, int, int] | None] = field(repr=False, default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"strategy": self.strategy, **{m: round(self.metrics[m], 6) for m in METRIC_NAMES},
                "chunks": self.chunks, "mean_tokens": round(self.mean_tokens, 1), "index_bytes": self.index_bytes,
                "seconds": round(self.seconds, 2), "windowed_chunks": self.windowed_chunks}


@dataclass
class EvalReport:
    """Everything one run measured: `results` best first (recall@k, then nDCG@10, MRR, IoU)."""

    k: int
    budget: int | None
    model: str
    documents: list[Document]
    questions: list[Question]
    skipped: list[str]
    results: list[StrategyResult]
    shared_seconds: dict[str, float]
    cache: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k, "budget": self.budget, "model": self.model, "documents": len(self.documents),
            "document_bytes": sum(len(d.text.encode("utf-8")) for d in self.documents),
            "questions": len(self.questions), "skipped": self.skipped,
            "results": [r.to_dict() for r in self.results],
            "shared_seconds": {key: round(value, 2) for key, value in self.shared_seconds.items()},
            "cache": self.cache,
        }


# ---------------------------------------------------------------------------
# The four stages
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
    vector_keys: dict[str, list[str]]  # strategy id -> one cache key per chunk
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
    plan = _Plan(query_keys, {}, {"": _missing(cache, query_keys, [q.question for q in questions], set())}, {}, {})
    planned = set(plan.todo[""])
    for spec in specs:
        if spec.variant == "late":
            keys = plan.vector_keys[spec.id] = []
            for d, c in chunked[spec.id]:
                key = text_key("late", doc_hash[d.path], str(c.start), str(c.end))
                keys.append(key)
                if key not in cache:
                    plan.late_todo.setdefault(d.path, {})[key] = (c.start, c.end)
                    plan.late_users.setdefault(d.path, set()).add(spec.id)
            continue
        if spec.variant == "headers":
            texts = [t for doc in documents for t in _header_texts(doc, [c for d, c in chunked[spec.id] if d is doc])]
        else:
            texts = [c.text for _, c in chunked[spec.id]]
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


def _score(chunk_spans: list[DocSpan], tokens: list[int], vectors: np.ndarray, query_vectors: np.ndarray,
           questions: Sequence[Question], k: int, budget: int | None,
           ) -> tuple[dict[str, float], list[bool], list[int], list, list]:
    """Rank every chunk for every question (exact cosine, `VectorIndex.rank`) and average the metrics."""
    grade = ReferenceGrades(chunk_spans)
    per_question: dict[str, list[float]] = {m: [] for m in METRIC_NAMES}
    hit, first_rank, top, best = [], [], [], []
    for question, ranking in zip(questions, VectorIndex(vectors).rank(query_vectors, QUERY_BATCH)):
        grades = grade(question.spans)
        positions = np.flatnonzero(np.isin(ranking, list(grades))) if grades else np.array([], dtype=int)
        rank = int(positions[0]) + 1 if positions.size else 0
        hit.append(0 < rank <= k)
        first_rank.append(rank)
        top.append(chunk_spans[int(ranking[0])])
        best.append(chunk_spans[int(ranking[positions[0]])] if positions.size else None)
        per_question["recall_at_k"].append(float(0 < rank <= k))
        per_question["mrr"].append(1.0 / rank if rank else 0.0)
        per_question["ndcg_at_10"].append(ndcg_at_k(ranking[:10].tolist(), grades, 10) if grades else 0.0)
        n = k if budget is None else budget_cutoff([tokens[i] for i in ranking[:budget + 1]], budget)
        s = span_scores([chunk_spans[i] for i in ranking[:n]], list(question.spans))
        per_question["span_recall"].append(s.recall)
        per_question["span_precision"].append(s.precision)
        per_question["iou"].append(s.iou)
    return {m: float(np.mean(v)) for m, v in per_question.items()}, hit, first_rank, top, best


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
    model: str | Path | None = None,
    embedder: Embedder | None = None,
    cache: str | Path | None = DEFAULT_CACHE,
    cache_read_only: bool = False,
    skip_bad_files: bool = False,
    quiet: bool = True,
    on_warning: Callable[[str], Any] | None = None,
) -> EvalReport:
    """Chunk, embed, search and score every strategy on the documents of `docs`; see `course_lib.chunk_eval`.

    `model` is a local SentenceTransformer folder (default: the course's MiniLM); `embedder`
    replaces the model altogether (tests pass a small stand-in). `cache=None` keeps no vectors on
    disk; `cache_read_only=True` reads it and writes nothing. `quiet=False` shows progress bars on
    stderr. A damaged cache file or a failed cache write is a warning, sent to `on_warning` (default
    `warnings.warn`): the run goes on. Raises `ChunkEvalError` on bad input.
    Taught in notebooks/11_your_documents.ipynb, section 2.
    """
    for name, value in (("k", k), ("budget", budget)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ChunkEvalError(f"--{name} {value!r}: use a whole number >= 1")
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
        tokens = [len(ids) for ids in encoding.encode_ordinary_batch([c.text for _, c in pairs])]
        vectors = np.stack([vector_cache[key] for key in plan.vector_keys[spec.id]])
        metrics, hit, first_rank, top, best = _score(spans, tokens, vectors, query_vectors, question_list, k, budget)
        model_tokens = embedder.token_counts([c.text for _, c in pairs])
        seconds[spec.id] += time.perf_counter() - t0
        results.append(StrategyResult(
            strategy=spec.id, family=_family(spec), size=spec.size, metrics=metrics, chunks=len(pairs),
            mean_tokens=float(np.mean(tokens)), index_bytes=int(vectors.nbytes), seconds=seconds[spec.id],
            windowed_chunks=sum(n > embedder.max_tokens for n in model_tokens) if spec.variant != "late" else 0,
            hit=hit, first_rank=first_rank, top=top, best_relevant=best))
    results.sort(key=lambda r: (-r.metrics["recall_at_k"], -r.metrics["ndcg_at_10"], -r.metrics["mrr"],
                                -r.metrics["iou"], r.strategy))
    shared["total"] = time.perf_counter() - began
    loaded = vector_cache.loaded
    return EvalReport(k=k, budget=budget, model=embedder.name, documents=documents, questions=question_list,
                      skipped=skipped, results=results, shared_seconds=shared,
                      cache={"vectors_loaded": loaded, "vectors_embedded": len(vector_cache.vectors) - loaded})
