"""chunk-eval's pipeline: chunk every document with each strategy, embed, rank, score, decide.

`evaluate` runs five stages, one function each (the last two in `score.py`, the result types in
`results.py`): `_chunk` (every strategy on every document),
`_plan` (which vectors the cache lacks: each distinct text once, and for late strategies each
document once; `bm25:` strategies embed nothing), `_embed` (fill the cache), `_score` (rank every
chunk for every question: `VectorIndex.rank`, BM25 or their reciprocal rank fusion; grade the
ranking with `ReferenceGrades`; cut what is returned at k chunks or at the exact budget; find each
miss's cause) and `_decide` (the verdict, each row's intervals and the warnings).
"""

from __future__ import annotations

import hashlib
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from course_lib.embed import VectorCache
from course_lib.evaluation import (
    METRIC_NAMES,
)
from course_lib.late import pool_chunks
from course_lib.retrieval import headed_texts
from course_lib.spans import Chunk
from course_lib.strategies import StrategySpec, chunk_with, parse_strategy
from course_lib.tokens import check_encodable, get_encoding
from rag_tools.chunk_eval.inputs import (
    MARKDOWN_SUFFIXES,
    ChunkEvalError,
    Document,
    Question,
    _one_line,
    read_documents,
    read_questions,
)
from rag_tools.chunk_eval.results import Chunked, EvalReport, StrategyResult
from rag_tools.chunk_eval.score import TOKENIZER, _bm25_bytes, _decide, _inputs_sha256, _score, _versions
from rag_tools.embedders import (
    DEFAULT_CACHE,
    Embedder,
    EmbedderError,
    SentenceTransformerEmbedder,
    describe,
    encode_queries,
    late_key,
    load_embedder,
    token_vectors_refusal,
    vector_key,
)

__all__ = ["DEFAULT_SIZES", "EvalReport", "StrategyResult", "default_strategies", "evaluate"]


DEFAULT_SIZES = (64, 128, 256, 512)
DEFAULT_BASE = 256  # the size the default grid's variants (fixed, overlap, headers:, hybrid:, late:) use


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
# The stages
# ---------------------------------------------------------------------------


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
          chunked: Chunked, cache: VectorCache, embedder: Embedder) -> _Plan:
    doc_hash = {doc.path: hashlib.sha256(doc.text.encode("utf-8", "surrogatepass")).hexdigest() for doc in documents}
    query_keys = [vector_key(embedder, q.question, query=True) for q in questions]
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
                key = late_key(embedder, doc_hash[d.path], c.start, c.end)
                keys.append(key)
                if key not in cache:
                    plan.late_todo.setdefault(d.path, {})[key] = (c.start, c.end)
                    plan.late_users.setdefault(d.path, set()).add(spec.id)
            continue
        if not spec.embeds:
            continue
        plan.vector_keys[spec.id] = [vector_key(embedder, t) for t in texts]
        plan.todo[spec.id] = _missing(cache, plan.vector_keys[spec.id], texts, planned)
        planned.update(plan.todo[spec.id])
    return plan


def _embed(plan: _Plan, documents: Sequence[Document], embedder: Embedder, cache: VectorCache,
           seconds: dict[str, float], shared: dict[str, float], quiet: bool) -> None:
    """Make every planned vector and put it in the cache; late strategies share each document's encoding time.
    An embedder's failure (an endpoint's refusal, say) keeps what was embedded and is one `ChunkEvalError` line."""
    try:
        _embed_all(plan, documents, embedder, cache, seconds, shared, quiet)
    except EmbedderError as error:
        raise ChunkEvalError(str(error)) from None
    finally:
        cache.flush()


def _embed_all(plan: _Plan, documents: Sequence[Document], embedder: Embedder, cache: VectorCache,
               seconds: dict[str, float], shared: dict[str, float], quiet: bool) -> None:
    from tqdm import tqdm  # deferred: tqdm is only needed once there is something to embed

    total = sum(map(len, plan.todo.values())) + sum(map(len, plan.late_todo.values()))
    with tqdm(total=total, desc="chunk-eval: embedding", unit="vector", file=sys.stderr, disable=quiet,
              leave=False) as bar:
        for sid, texts_by_key in plan.todo.items():
            t0 = time.perf_counter()
            keys = list(texts_by_key)
            for a in range(0, len(keys), cache.flush_every):  # slices: the cache saves each as it goes (Ctrl-C)
                part = keys[a:a + cache.flush_every]
                encode = embedder.encode if sid else lambda texts, progress: encode_queries(embedder, texts, progress)
                cache.put(part, encode([texts_by_key[key] for key in part], progress=bar.update))
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


def _token_vector_strategies(specs: list[StrategySpec], embedder: Embedder, *, explicit: bool,
                             on_warning: Callable[[str], Any] | None) -> list[StrategySpec]:
    """The strategies, refused (explicit ones) or left out with a warning (the default grid) when they need
    token vectors (`late:`, MaxSim reranking) and the model gives none."""
    refusal = token_vectors_refusal(embedder)
    needing = [s for s in specs if s.variant == "late" or s.id.startswith("rerank:")]
    if refusal is None or not needing:
        return specs
    if explicit:
        raise ChunkEvalError(f"--strategy {needing[0].id!r} needs token vectors, and {refusal}: leave out late: and "
                             "rerank: strategies, or use a sentence-transformers model")
    message = f"the default grid leaves out {', '.join(s.id for s in needing)}: {refusal}"
    if on_warning is None:
        warnings.warn(message, RuntimeWarning, stacklevel=3)
    else:
        on_warning(message)
    return [s for s in specs if s not in needing]


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
    embedding: Mapping[str, Any] | None = None,
    embedder: Embedder | None = None,
    cache: str | Path | None = DEFAULT_CACHE,
    cache_read_only: bool = False,
    skip_bad_files: bool = False,
    quiet: bool = True,
    on_warning: Callable[[str], Any] | None = None,
) -> EvalReport:
    """Chunk, embed, search and score every strategy on the documents of `docs`; see `rag_tools.chunk_eval`.

    `metric` (one of `METRIC_NAMES`) is the verdict's. `model` is a registry name or a local
    sentence-transformers folder (default: the course's MiniLM) and `embedding` the rest of
    `rag_tools.embedders.load_embedder`'s options (window, prefixes, an endpoint); `embedder` replaces the
    model altogether (tests pass a small stand-in). `late:` strategies are refused when the model gives no
    token vectors (the default grid leaves them out, with a warning). `cache=None` keeps no vectors on
    disk; `cache_read_only=True` reads it and writes nothing. `quiet=False` shows progress bars on stderr.
    A damaged cache file or a failed cache write is a warning, sent to `on_warning` (default
    `warnings.warn`): the run goes on. Raises `ChunkEvalError` on bad input.
    Taught in notebooks/13_your_documents.ipynb, section 2.
    """
    for name, value in (("k", k), ("budget", budget)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ChunkEvalError(f"--{name} {value!r}: use a whole number >= 1")
    if metric not in METRIC_NAMES:
        raise ChunkEvalError(f"--metric {metric!r} is not a metric; choose one of {', '.join(METRIC_NAMES)}")
    began = time.perf_counter()
    documents, skipped = read_documents(docs, skip_bad_files=skip_bad_files, on_warning=on_warning)
    question_list = read_questions(questions, documents)
    for q in question_list:  # a document's are found by the chunkers (chunk_with), a question's here
        try:
            check_encodable(q.question, f"{Path(questions).name} line {q.line}: question {q.id!r}")
        except ValueError as error:
            raise ChunkEvalError(str(error)) from None
    specs = _parse(strategies if strategies else default_strategies(documents))
    shared: dict[str, float] = {"reading": time.perf_counter() - began}

    t0 = time.perf_counter()
    options = {key: value for key, value in (embedding or {}).items() if value is not None}
    if embedder is None:
        try:
            embedder = load_embedder(model, progress=not quiet, **options) if model is not None or options \
                else SentenceTransformerEmbedder()
        except ValueError as error:
            raise ChunkEvalError(str(error)) from None
    shared["model_load"] = time.perf_counter() - t0
    specs = _token_vector_strategies(specs, embedder, explicit=bool(strategies), on_warning=on_warning)

    seconds: dict[str, float] = {}
    chunked = _chunk(specs, documents, getattr(embedder, "model", None), seconds)
    vector_cache = VectorCache(cache, embedder.name, dim=getattr(embedder, "dim", None), read_only=cache_read_only,
                               on_warning=on_warning)
    if getattr(embedder, "dim", 0) is None and vector_cache.dim:  # an endpoint learns its dimension: the cache's
        embedder.dim = vector_cache.dim
    plan = _plan(specs, documents, question_list, chunked, vector_cache, embedder)
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
    model_facts = {**describe(embedder)}
    if model_facts.get("dimension") is None:
        model_facts["dimension"] = int(query_vectors.shape[1])
    return EvalReport(k=k, budget=budget, model=model_facts["model"], embedding=model_facts, documents=documents,
                      questions=question_list,
                      skipped=skipped, results=results, shared_seconds=shared,
                      cache={"vectors_loaded": loaded, "vectors_embedded": len(vector_cache.vectors) - loaded},
                      metric=metric, verdict=ruling, warnings=warnings, versions=_versions(embedder, specs),
                      inputs_sha256=_inputs_sha256(documents, question_list))
