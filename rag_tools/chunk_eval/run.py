"""chunk-eval's pipeline: chunk every document with each strategy, embed, rank, score, decide.

`evaluate` runs these stages (each timed by a `timings.StageClock`): reading the documents and
questions; loading the model; `plan.chunk_all` (each distinct chunking once); `plan.make_plan`
(which vectors the cache lacks: each distinct text once, and for late strategies each document once;
`bm25:` strategies embed nothing), whose counts and time estimate go to `on_plan` before anything is
embedded; `plan.embed_plan` (fill the cache); `score._score` (rank every chunk for every question:
`VectorIndex.rank`, BM25 or their reciprocal rank fusion, then MaxSim for `rerank:`; grade the
ranking with `ReferenceGrades`; cut what is returned at k chunks or at the exact budget; find each
miss's cause); each strategy's costs and chunk health (`health.py`); and `score._decide` (the
verdict, each row's intervals and the warnings).
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from course_lib.embed import VectorCache
from course_lib.evaluation import METRIC_NAMES
from course_lib.stats import DEFAULT_MARGIN, rank_order
from course_lib.strategies import STRATEGIES
from course_lib.tokens import check_encodable
from rag_tools.chunk_eval.grades import page_report
from rag_tools.chunk_eval.health import chunk_health, health_warning
from rag_tools.chunk_eval.inputs import ChunkEvalError, Document, Question, read_documents, read_questions
from rag_tools.chunk_eval.language import language_warning, model_languages, resolve_language
from rag_tools.chunk_eval.plan import (
    Plan,
    Spec,
    chunk_all,
    cl100k_counts,
    embed_plan,
    has_headings,
    make_plan,
    plan_counts,
)
from rag_tools.chunk_eval.rerank import (
    RerankSpec,
    TokenVectorCache,
    TokenVectorError,
    parse_with_rerank,
    token_matrices,
)
from rag_tools.chunk_eval.results import EvalReport, StrategyResult, budget_curve
from rag_tools.chunk_eval.score import _decide, _inputs_sha256, _score, _versions, query_latency
from rag_tools.chunk_eval.timings import MIN_RATE_TOKENS, EmbeddingRate, StageClock, plan_text
from rag_tools.embedders import (
    DEFAULT_CACHE,
    Embedder,
    SentenceTransformerEmbedder,
    describe,
    load_embedder,
    token_vectors_refusal,
)

__all__ = ["DEFAULT_SIZES", "EvalReport", "StrategyResult", "default_strategies", "evaluate", "has_headings"]


DEFAULT_SIZES = (64, 128, 256, 512)
DEFAULT_BASE = 256  # the size the default grid's variants (fixed, overlap, headers:, hybrid:, late:) use
REQUESTS_FILE = "models.json"  # in the cache folder: which model folder each set of model options used last


# ---------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------


def default_strategies(documents: Sequence[Document]) -> list[str]:
    """What the course recommends: recursive (and markdown when a document has headings, `has_headings`) at
    64, 128, 256 and 512 tokens; fixed:256; recursive:256:32; and headers:, hybrid:, hybrid:headers: (the
    course's recommended default) and late: of each at 256."""
    names = ["recursive"]
    if any(has_headings(doc) for doc in documents):
        names.append("markdown")
    grid = [f"{name}:{size}" for name in names for size in DEFAULT_SIZES]
    grid += [f"fixed:{DEFAULT_BASE}", f"recursive:{DEFAULT_BASE}:32"]
    return grid + [f"{prefix}:{name}:{DEFAULT_BASE}" for prefix in ("headers", "hybrid", "hybrid:headers", "late")
                   for name in names]


def parse_strategies(specs: Sequence[str]) -> list[Spec]:
    """The strategies, parsed (`rerank:<n>:` allowed in front), each once."""
    parsed, seen = [], set()
    for text in specs:
        try:
            spec = parse_with_rerank(text)
        except (TypeError, ValueError) as error:
            raise ChunkEvalError(f"--strategy {text!r}: {error}") from None
        if spec.id not in seen:
            seen.add(spec.id)
            parsed.append(spec)
    return parsed


def _family(spec: Spec) -> str:
    """The strategy without its size: what a plot of metrics against size draws one line for."""
    rerank = f"rerank {spec.depth}" if isinstance(spec, RerankSpec) else None
    label = ":".join(p for p in (rerank, spec.retrieval, spec.variant, spec.name) if p)
    if spec.overlap:
        label += f" overlap {spec.overlap}"
    if spec.options:
        label += " " + "&".join(f"{key}={value}" for key, value in sorted(spec.options.items()))
    return label


def _token_vector_strategies(specs: list[Spec], embedder: Embedder, *, explicit: bool,
                             on_warning: Callable[[str], Any] | None) -> list[Spec]:
    """The strategies, refused (explicit ones) or left out with a warning (the default grid) when they need
    token vectors (`late:`, MaxSim reranking) and the model gives none."""
    refusal = token_vectors_refusal(embedder)
    if refusal is None and not callable(getattr(embedder, "token_vectors", None)):
        refusal = f"the model {describe(embedder).get('model')!r} gives no token vectors"
    needing = [s for s in specs if s.variant == "late" or isinstance(s, RerankSpec)]
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
# Which model folder of the cache a set of model options used (for `chunk-eval check`)
# ---------------------------------------------------------------------------


def model_request(model: str | Path | None, embedding: Mapping[str, Any] | None) -> str:
    """The model options as one string: the key under which a run records its model's cache folder."""
    options = {key: value for key, value in (embedding or {}).items() if value is not None and key != "timeout"}
    return json.dumps({"model": None if model is None else str(model), **options}, sort_keys=True)


def record_model(cache: str | Path | None, request: str, embedder: Embedder) -> None:
    """Remember, in the cache folder, the model name and prefixes these options gave (best effort)."""
    if cache is None:
        return
    path = Path(cache) / REQUESTS_FILE
    try:
        known = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        if not isinstance(known, dict):
            known = {}
        known[request] = {"name": embedder.name, "query_prefix": getattr(embedder, "query_prefix", "") or "",
                          "document_prefix": getattr(embedder, "document_prefix", "") or ""}
        tmp = path.with_name(f".{REQUESTS_FILE}.tmp{os.getpid()}")
        tmp.write_text(json.dumps(known, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
    except (OSError, ValueError):
        pass


# ---------------------------------------------------------------------------
# The whole run
# ---------------------------------------------------------------------------


def _budgets(budget: int | Sequence[int] | None) -> list[int]:
    """`--budget` as a list: none, one, or several for a curve (the first is the report's), each a whole number >= 1
    and each once."""
    values = [] if budget is None else [budget] if isinstance(budget, int) else budget
    if not isinstance(values, (list, tuple)) or any(isinstance(b, bool) or not isinstance(b, int) or b < 1
                                                    for b in values):
        raise ChunkEvalError(f"--budget {budget!r}: use whole numbers >= 1, one (1000) or several (250,500,1000,2000)")
    if len(set(values)) < len(values):
        raise ChunkEvalError(f"--budget {budget!r}: give each budget once")
    return list(values)


def ordered(results: Sequence[StrategyResult], metric: str, budget: int | None) -> list[StrategyResult]:
    """The rows best first by the verdict's tie rule (`course_lib.stats.rank_order`): the higher mean of `metric`;
    equal means, the cheaper (`StrategyResult.cost_key`), then the name. The table, JSON and HTML keep this order."""
    by_name = {r.strategy: r for r in results}
    names = rank_order({r.strategy: r.metrics[metric] for r in results}, {r.strategy: r.cost_key(budget)
                                                                         for r in results})
    return [by_name[s] for s in names]


def _model_tokens(embedder: Embedder, texts_by_spec: dict[str, list[str]]) -> dict[str, list[int]]:
    """The model's tokens of every text a strategy embeds on its own (each distinct text counted once)."""
    distinct = list(dict.fromkeys(t for texts in texts_by_spec.values() for t in texts))
    counts = dict(zip(distinct, embedder.token_counts(distinct))) if distinct else {}
    return {sid: [counts[t] for t in texts] for sid, texts in texts_by_spec.items()}


def _question_tokens(embedder: Embedder, questions: Sequence[Question]) -> list[tuple[np.ndarray, float]]:
    """Each question's token vectors (for MaxSim) and the seconds they took: a reranked query's own encoding."""
    out = []
    for q in questions:
        t0 = time.perf_counter()
        try:
            matrix = token_matrices(embedder, [q.question], "questions")[0]
        except TokenVectorError as error:
            raise ChunkEvalError(f"rerank: {error}") from None
        out.append((matrix, time.perf_counter() - t0))
    return out


def _chunk_tokens(embedder: Embedder, spec: Spec, plan: Plan, rows: Sequence[int], clock: StageClock,
                  made: dict[str, np.ndarray], stored: TokenVectorCache) -> list[np.ndarray]:
    """The token vectors of a rerank strategy's candidate chunks `rows` (their texts as the first stage embeds
    them): from `stored` (the disk cache) or encoded, timed as embedding, and stored; `made` keeps them by text,
    so rerank strategies sharing a chunk encode it once."""
    texts = [plan.search_texts[spec.id][row] for row in rows]
    new = [t for t in dict.fromkeys(texts) if t not in made]
    made.update((t, m) for t in new if (m := stored.get(t)) is not None)
    new = [t for t in new if t not in made]
    with clock.stage("embedding"):
        try:
            made.update(zip(new, token_matrices(embedder, new, "chunks")))
        except TokenVectorError as error:
            raise ChunkEvalError(f"--strategy {spec.id!r}: {error}") from None
    for t in new:
        stored.put(t, made[t])
    return [made[t] for t in texts]


def load_model(model: str | Path | None, options: Mapping[str, Any], *, progress: bool) -> Embedder:
    """The embedder that `model` and the other model `options` name (the course's MiniLM when none);
    `ChunkEvalError` for options it cannot load."""
    try:
        return load_embedder(model, progress=progress, **options) if model is not None or options \
            else SentenceTransformerEmbedder()
    except ValueError as error:
        raise ChunkEvalError(str(error)) from None


def semantic_note(specs: Sequence[Spec], embedder: Embedder) -> str:
    """The plan's line naming the model the `semantic:` strategies' breakpoints come from ("" without one)."""
    semantic = [s.id for s in specs if STRATEGIES[s.name].needs_model]
    return (f"\nsemantic: {', '.join(semantic)} find their breakpoints with the evaluated model, "
            f"{describe(embedder).get('model') or embedder.name}" if semantic else "")


def evaluate(
    docs: str | Path,
    questions: str | Path,
    strategies: Sequence[str] | None = None,
    *,
    k: int = 5,
    budget: int | Sequence[int] | None = None,
    metric: str = "recall_at_k",
    margin: float = DEFAULT_MARGIN,
    model: str | Path | None = None,
    embedding: Mapping[str, Any] | None = None,
    embedder: Embedder | None = None,
    cache: str | Path | None = DEFAULT_CACHE,
    cache_read_only: bool = False,
    skip_bad_files: bool = False,
    quiet: bool = True,
    on_warning: Callable[[str], Any] | None = None,
    on_plan: Callable[[str], Any] | None = None,
    language: str | None = "auto",
    languages_of_model: Sequence[str] | None = None,
) -> EvalReport:
    """Chunk, embed, search and score every strategy on the documents of `docs`; see `rag_tools.chunk_eval`.

    `budget` may list several budgets (`--budget 250,500,1000,2000`): the first is the report's (its table,
    questions and verdict), and every one is scored on the same vectors for `EvalReport.curve`.
    `metric` (one of `METRIC_NAMES`) is the verdict's, and `margin` (in its units) the loss against the leader
    a strategy may show and still be "as good as the leader" (`course_lib.stats.verdict`). `model` is a registry
    name or a local sentence-transformers folder (default: the course's MiniLM) and `embedding` the rest of
    `rag_tools.embedders.load_embedder`'s options (window, prefixes, an endpoint); `embedder` replaces the
    model altogether (tests pass a small stand-in). `late:` and `rerank:` strategies are refused when the
    model gives no token vectors (the default grid leaves them out, with a warning). `cache=None` keeps no
    vectors on disk; `cache_read_only=True` reads it and writes nothing. `quiet=False` shows progress bars on
    stderr. A damaged cache file or a failed cache write is a warning, sent to `on_warning` (default
    `warnings.warn`): the run goes on. `on_plan` receives the plan (documents, questions, strategies,
    chunks, vectors, cached) and the time estimate before anything is embedded. Raises `ChunkEvalError` on
    bad input. `language` is the documents' (an ISO 639-1 code, or "auto" to detect it): BM25's stop words and
    stems, and a warning when the model was not trained on it (its languages: the registry's model card, or
    `languages_of_model` for a folder or an endpoint). Taught in notebooks/13_your_documents.ipynb, section 2.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ChunkEvalError(f"--k {k!r}: use a whole number >= 1")
    budgets = _budgets(budget)
    budget = budgets[0] if budgets else None
    if metric not in METRIC_NAMES:
        raise ChunkEvalError(f"--metric {metric!r} is not a metric; choose one of {', '.join(METRIC_NAMES)}")
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 < margin < 1:
        raise ChunkEvalError(f"--margin {margin!r}: use a number between 0 and 1 in the metric's units "
                             f"(0.05 = 5 points; the default is {DEFAULT_MARGIN})")
    clock = StageClock()
    with clock.stage("reading"):
        documents, skipped = read_documents(docs, skip_bad_files=skip_bad_files, on_warning=on_warning)
        question_list = read_questions(questions, documents)
        for q in question_list:  # a document's are found by the chunkers (chunk_with), a question's here
            try:
                check_encodable(q.question, f"{Path(questions).name} line {q.line}: question {q.id!r}")
            except ValueError as error:
                raise ChunkEvalError(str(error)) from None
        found_language = resolve_language(language, documents)
    specs = parse_strategies(strategies if strategies else default_strategies(documents))

    with clock.stage("model_load"):
        options = {key: value for key, value in (embedding or {}).items() if value is not None}
        loaded_here = embedder is None  # a model named by options: its cache folder is recorded for `check`
        if embedder is None:
            embedder = load_model(model, options, progress=not quiet)
    specs = _token_vector_strategies(specs, embedder, explicit=bool(strategies), on_warning=on_warning)
    wrong_language = language_warning(found_language, describe(embedder).get("model") or embedder.name,
                                      model_languages(model, options, None if loaded_here else embedder,
                                                      languages_of_model))
    if wrong_language and on_warning is not None:
        on_warning(wrong_language)

    seconds: dict[str, float] = {}
    with clock.stage("chunking"):
        chunked = chunk_all(specs, documents, embedder, seconds)  # semantic: breakpoints from the evaluated model
    vector_cache = VectorCache(cache, embedder.name, dim=getattr(embedder, "dim", None), read_only=cache_read_only,
                               on_warning=on_warning)
    if getattr(embedder, "dim", 0) is None and vector_cache.dim:  # an endpoint learns its dimension: the cache's
        embedder.dim, embedder.dim_from = vector_cache.dim, f"the vector cache {vector_cache.folder}"
    token_cache = TokenVectorCache(vector_cache.folder, read_only=not vector_cache.writable)
    with clock.stage("tokenizing"):  # cl100k counts, and the plan's count of what it will embed
        cl100k = cl100k_counts(specs, chunked)
        plan = make_plan(specs, documents, question_list, chunked, vector_cache, embedder, cl100k)
    counts = plan_counts(plan, specs, documents, question_list, chunked, cl100k)
    stored = EmbeddingRate.load(vector_cache.folder)
    if on_plan is not None:
        on_plan(f"{plan_text(counts, stored)}\n{found_language.text()}{semantic_note(specs, embedder)}")
    shared: dict[str, float] = {"reading": clock.seconds["reading"], "model_load": clock.seconds["model_load"]}
    with clock.stage("embedding"):
        measured, question_ms = embed_plan(plan, documents, embedder, vector_cache, seconds, shared, quiet, stored,
                                           on_plan)
        if question_ms is None and stored is not None:  # every question was cached: the last measured latency
            question_ms = stored.question_ms
        measured.question_ms = question_ms
        if vector_cache.writable:  # the rate, and which model folder these options use, for later estimates
            measured.save(vector_cache.folder)
            if loaded_here:
                record_model(cache, model_request(model, embedding), embedder)
        reranks = [s for s in specs if isinstance(s, RerankSpec)]
        question_tokens = _question_tokens(embedder, question_list) if reranks else []
    rate = measured if measured.tokens >= MIN_RATE_TOKENS or stored is None else stored
    query_vectors = np.stack([vector_cache[key] for key in plan.query_keys])
    dim = int(query_vectors.shape[1])

    with clock.stage("tokenizing"):
        alone = {s.id: plan.search_texts[s.id] for s in specs
                 if (s.embeds and s.variant != "late") or isinstance(s, RerankSpec)}
        model_tokens = _model_tokens(embedder, alone)
    texts_by_path = {d.path: d.text for d in documents}
    results, healths, returned_rows, token_made = [], {}, {}, {}
    curve_values: dict[int, dict[str, list[float]]] = {b: {} for b in budgets[1:]}  # budget -> strategy -> values
    page_ends = {d.path: d.page_ends for d in documents if d.page_ends}  # paged documents (PDF): cited pages
    page_warnings = []
    for spec in specs:
        t0 = time.perf_counter()
        pairs = chunked[spec.id]
        spans = [(d.path, c.start, c.end) for d, c in pairs]
        tokens = cl100k[spec.id]
        vectors = np.stack([vector_cache[key] for key in plan.vector_keys[spec.id]]) if spec.embeds else None
        rerank = isinstance(spec, RerankSpec)
        with clock.stage("scoring"):
            for other in budgets[1:]:  # the curve's other budgets: the same vectors, another cut
                curve_values[other][spec.id] = _score(
                    spec, spans, [c.text for _, c in pairs], plan.search_texts[spec.id], tokens, vectors, query_vectors,
                    question_list, documents, k, other,
                    token_source=(lambda rows, s=spec: _chunk_tokens(embedder, s, plan, rows, clock, token_made,
                                                                     token_cache)) if rerank else None,
                    query_tokens=question_tokens, language=found_language.lexical)["per_question"][metric]
            scored = _score(spec, spans, [c.text for _, c in pairs], plan.search_texts[spec.id], tokens, vectors,
                            query_vectors, question_list, documents, k, budget,
                            token_source=(lambda rows, s=spec: _chunk_tokens(embedder, s, plan, rows, clock,
                                                                             token_made, token_cache))
                            if rerank else None, query_tokens=question_tokens, language=found_language.lexical)
            search_ms = query_latency(spec, vectors, query_vectors, question_list, scored["bm25_ms"])
        pages, unpaged = page_report(spans, scored["retrieved"], [q.spans for q in question_list], page_ends)
        if unpaged:
            page_warnings.append(f"{spec.id}: {unpaged} chunks of paged documents carry no page range (they lie "
                                 "past the last page's form feed), so no page can be cited for them")
        embeds_alone = spec.embeds and spec.variant != "late"
        windowed = sum(n > embedder.max_tokens for n in model_tokens[spec.id]) if embeds_alone else 0
        index_tokens = sum(plan.tokens[key] for key in plan.vector_keys[spec.id]) if spec.embeds else 0
        token_rows = sum(model_tokens[spec.id]) if rerank else 0  # every chunk's token vectors, in a real index
        stored_vectors = (len(pairs) if spec.embeds else 0) + token_rows
        embed_seconds = rate.estimate(index_tokens * (2 if rerank else 1), len(pairs) * (2 if rerank else 1)) \
            if spec.embeds else 0.0  # None: no rate
        seconds[spec.id] += time.perf_counter() - t0
        with clock.stage("tokenizing"):
            healths[spec.id] = chunk_health(spans, tokens, texts_by_path, size=spec.size,
                                            sized_in_tokens=STRATEGIES[spec.name].unit == "cl100k tokens",
                                            pooled=windowed if embeds_alone else None)
        returned_rows[spec.id] = scored["returned_rows"]
        first_ms = None if spec.embeds and question_ms is None else (question_ms or 0.0) * spec.embeds + search_ms
        latency = {"question_embedding": None if question_ms is None or not spec.embeds else round(question_ms, 2),
                   "search": round(search_ms, 3), "first_stage": None if first_ms is None else round(first_ms, 2),
                   "rerank": round(scored["rerank_ms"], 2) if rerank else None}
        per_question = scored["per_question"]
        results.append(StrategyResult(
            strategy=spec.id, family=_family(spec), size=spec.size,
            metrics={m: float(np.mean(v)) for m, v in per_question.items()}, chunks=len(pairs),
            mean_tokens=float(np.mean(tokens)), returned_tokens=float(np.mean(scored["returned_tokens"])),
            index_bytes=stored_vectors * dim * 4 + scored["bm25_bytes"], seconds=seconds[spec.id],
            windowed_chunks=windowed, hit=scored["hit"], first_rank=scored["first_rank"], top=scored["top"],
            best_relevant=scored["best_relevant"], per_question=per_question, causes=scored["causes"],
            retrieved=scored["retrieved"], vectors=stored_vectors, embed_tokens=index_tokens,
            embed_seconds=embed_seconds, latency_ms=latency, health=healths[spec.id].to_dict(),
            rerank_seconds=scored.get("rerank_seconds"), pages=pages))
    results = ordered(results, metric, budget)
    with clock.stage("bootstrap"):
        ruling, warned = _decide(results, documents, question_list, chunked, metric, k, budget, margin)
    if wrong_language:
        warned.insert(0, wrong_language)
    warned += page_warnings
    for r in results:
        line = health_warning(r.strategy, healths[r.strategy], r.causes, returned_rows[r.strategy],
                              cl100k[r.strategy])
        if line:
            warned.append(line)
    shared["verdict"] = clock.seconds["bootstrap"]
    shared["total"] = clock.wall()
    loaded = vector_cache.loaded
    model_facts = {**describe(embedder)}
    if model_facts.get("dimension") is None:
        model_facts["dimension"] = dim
    return EvalReport(k=k, budget=budget, model=model_facts["model"], embedding=model_facts, documents=documents,
                      questions=question_list, skipped=skipped, results=results, shared_seconds=shared,
                      cache={"vectors_loaded": loaded, "vectors_embedded": len(vector_cache.vectors) - loaded},
                      metric=metric, verdict=ruling, warnings=warned, margin=margin,
                      curve=budget_curve({budget: {r.strategy: r.per_question[metric] for r in results},
                                          **curve_values}, {r.strategy: r.cost_key(budget) for r in results},
                                         metric, margin) if len(budgets) > 1 and len(question_list) >= 2 else [],
                      versions=_versions(embedder, specs, found_language),
                      inputs_sha256=_inputs_sha256(documents, question_list), clock=clock,
                      vectors={"requested": plan.requested, "distinct": plan.distinct,
                               "cached": plan.distinct - plan.to_embed, "embedded": plan.to_embed,
                               "tokens_embedded": plan.tokens_to_embed,
                               "cl100k_tokens_per_second": round(rate.per_second, 1),
                               "rate_measured_on": rate.source if rate.tokens else None,
                               "question_embedding_ms": None if question_ms is None else round(question_ms, 2),
                               "token_vector_texts": len(token_made),
                               "token_vector_texts_cached": token_cache.hits,
                               "token_vector_questions": len(question_tokens)})
