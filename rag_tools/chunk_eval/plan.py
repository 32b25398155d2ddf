"""chunk-eval's stages before scoring: chunk, plan, embed.

`chunk_all` chunks every document with each distinct chunking once (`headers:`, `hybrid:`, `late:` and
`rerank:` of one chunker share its chunks); `make_plan` works out which vectors the cache lacks (each
distinct text once, whichever strategies share it, and for late strategies each document once; `bm25:`
strategies embed nothing) and `plan_counts` sums it up for the plan line; `embed_plan` makes the vectors.
`chunk-eval check` runs the first two without a model (the cache answers with the keys it holds).
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

from course_lib.embed import VectorCache
from course_lib.late import pool_chunks
from course_lib.retrieval import headed_texts
from course_lib.spans import Chunk
from course_lib.strategies import STRATEGIES, TOKENIZER, StrategySpec, chunk_with
from course_lib.tokens import get_encoding
from rag_tools.chunk_eval.inputs import MARKDOWN_SUFFIXES, ChunkEvalError, Document, Question, _one_line
from rag_tools.chunk_eval.rerank import RerankSpec
from rag_tools.chunk_eval.results import Chunked
from rag_tools.chunk_eval.timings import EmbeddingRate, PlanCounts, calibration_rate
from rag_tools.embedders import Embedder, EmbedderError, encode_queries, late_key, vector_key

__all__ = ["Plan", "Spec", "chunk_all", "cl100k_counts", "embed_plan", "has_headings", "make_plan", "plan_counts"]

Spec = StrategySpec | RerankSpec
CALIBRATION_TEXTS = 32  # without a stored rate, this many short and as many long texts of the run measure it
LATENCY_QUESTIONS = 5  # questions embedded one at a time (after one to warm up): a question's embedding latency


def has_headings(doc: Document) -> bool:
    """Whether a document has headings the markdown chunker and `headers:` can use: a Markdown file, or an
    HTML, Word or PDF file whose reader found headings (and wrote them as Markdown lines). A "# " line in a
    PDF's text is not enough: it is often a shell prompt."""
    return doc.path.lower().endswith(MARKDOWN_SUFFIXES) or (doc.kind != "text" and doc.headings > 0)


def chunking_of(spec: Spec) -> StrategySpec:
    """What a strategy chunks by: its chunker, size, overlap and options (no variant, retrieval or rerank)."""
    return StrategySpec(spec.name, spec.size, spec.overlap, spec.options)


def chunk_all(specs: Sequence[Spec], documents: Sequence[Document], model: Any,
              seconds: dict[str, float]) -> Chunked:
    """Every strategy on every document, each distinct chunking once (its strategies share its time in `seconds`)."""
    users: dict[str, list[Spec]] = {}
    for spec in specs:
        users.setdefault(chunking_of(spec).id, []).append(spec)
    chunked: Chunked = {}
    for group in users.values():
        t0 = time.perf_counter()
        pairs = []
        for doc in documents:
            try:
                pairs += [(doc, c) for c in chunk_with(chunking_of(group[0]), doc.text, model=model)]
            except (TypeError, ValueError) as error:
                raise ChunkEvalError(f"--strategy {group[0].id!r} on {doc.path}: "
                                     f"{_one_line(str(error), 300)}") from None
        if not pairs:
            raise ChunkEvalError(f"--strategy {group[0].id!r} made no chunk from any document")
        for spec in group:
            chunked[spec.id] = pairs
            seconds[spec.id] = (time.perf_counter() - t0) / len(group)
    return chunked


def cl100k_counts(specs: Sequence[Spec], chunked: Chunked) -> dict[str, list[int]]:
    """Each strategy's chunks' cl100k tokens: the chunkers' own `n_tokens` for strategies sized in cl100k tokens
    (every chunker counts them on the chunk's text), counted here for the others; once per chunking."""
    encoding = None
    by_chunking: dict[str, list[int]] = {}
    out = {}
    for spec in specs:
        key = chunking_of(spec).id
        if key not in by_chunking:
            pairs = chunked[spec.id]
            if STRATEGIES[spec.name].unit == "cl100k tokens" and TOKENIZER == "cl100k_base":
                by_chunking[key] = [c.n_tokens for _, c in pairs]
            else:
                encoding = encoding or get_encoding("cl100k_base")
                by_chunking[key] = [len(ids) for ids in encoding.encode_ordinary_batch([c.text for _, c in pairs])]
        out[spec.id] = by_chunking[key]
    return out


def header_texts(doc: Document, chunks: Sequence[Chunk]) -> list[str]:
    """What a headers: strategy embeds: "name > heading path", a blank line, the chunk (notebook 10's headers);
    the heading path for documents with headings (`has_headings`)."""
    title = Path(doc.path).with_suffix("").as_posix()
    return headed_texts(doc.text, [(c.start, c.end) for c in chunks], title=title, headings=has_headings(doc))


@dataclass
class Plan:
    """Which vector each strategy's chunks (and each question) read, and which of them still have to be made."""

    query_keys: list[str]
    vector_keys: dict[str, list[str]]  # strategy id -> one cache key per chunk (none for bm25:)
    search_texts: dict[str, list[str]]  # strategy id -> what BM25 and the embedder read per chunk (not late:)
    todo: dict[str, dict[str, str]]  # strategy id ("" for the questions) -> key -> text to embed
    late_todo: dict[str, dict[str, tuple[int, int]]]  # document -> key -> chunk span, for every late strategy
    late_users: dict[str, set[str]]  # document -> the late strategies whose vectors it still has to give
    tokens: dict[str, int] = field(default_factory=dict)  # key -> cl100k tokens of its text (headers included)
    late_tokens: dict[str, int] = field(default_factory=dict)  # document to encode whole -> its cl100k tokens
    requested: int = 0  # vectors the strategies and the questions read
    distinct: int = 0  # distinct keys among them

    @property
    def to_embed(self) -> int:
        return sum(map(len, self.todo.values())) + sum(map(len, self.late_todo.values()))

    @property
    def tokens_to_embed(self) -> int:
        return sum(self.tokens[key] for todo in self.todo.values() for key in todo) + sum(self.late_tokens.values())


def _missing(cache: Any, keys: Sequence[str], texts: Sequence[str], planned: set[str]) -> dict[str, str]:
    """The texts to embed: each distinct key once, unless the cache has it or an earlier step will embed it."""
    todo: dict[str, str] = {}
    for key, text in zip(keys, texts):
        if key not in cache and key not in planned and key not in todo:
            todo[key] = text
    return todo


def make_plan(specs: Sequence[Spec], documents: Sequence[Document], questions: Sequence[Question],
              chunked: Chunked, cache: Any, embedder: Any, cl100k: dict[str, list[int]]) -> Plan:
    """The plan. `cache` answers `key in cache` (a `VectorCache`, or the keys a cache folder holds, for
    `chunk-eval check`); `embedder` needs only its prefixes (`vector_key`, `late_key`)."""
    counter = get_encoding("cl100k_base")
    doc_hash = {doc.path: hashlib.sha256(doc.text.encode("utf-8", "surrogatepass")).hexdigest() for doc in documents}
    query_keys = [vector_key(embedder, q.question, query=True) for q in questions]
    plan = Plan(query_keys, {}, {}, {"": _missing(cache, query_keys, [q.question for q in questions], set())}, {}, {})
    plan.tokens.update((key, len(counter.encode_ordinary(q.question))) for key, q in zip(query_keys, questions))
    planned = set(plan.todo[""])
    header_tokens: dict[str, int] = {}
    made: dict[str, list[str]] = {}  # the search texts of a chunking and variant, made once
    for spec in specs:
        which = f"{spec.variant == 'headers'}|{chunking_of(spec).id}"
        if which not in made:
            if spec.variant == "headers":
                made[which] = [t for doc in documents
                               for t in header_texts(doc, [c for d, c in chunked[spec.id] if d is doc])]
            else:
                made[which] = [c.text for _, c in chunked[spec.id]]
        texts = plan.search_texts[spec.id] = made[which]
        if spec.variant == "late":
            keys = plan.vector_keys[spec.id] = []
            for (d, c), n in zip(chunked[spec.id], cl100k[spec.id]):
                key = late_key(embedder, doc_hash[d.path], c.start, c.end)
                keys.append(key)
                plan.tokens[key] = n
                if key not in cache:
                    plan.late_todo.setdefault(d.path, {})[key] = (c.start, c.end)
                    plan.late_users.setdefault(d.path, set()).add(spec.id)
                    if plan.late_users[d.path] == {spec.id}:  # the document's tokens, from its first late strategy
                        plan.late_tokens[d.path] = plan.late_tokens.get(d.path, 0) + n
            continue
        if not spec.embeds:
            continue
        keys = plan.vector_keys[spec.id] = [vector_key(embedder, t) for t in texts]
        for key, text, (_, c), n in zip(keys, texts, chunked[spec.id], cl100k[spec.id]):
            if key not in plan.tokens:
                header = text[: len(text) - len(c.text)]
                if header not in header_tokens:
                    header_tokens[header] = len(counter.encode_ordinary(header)) if header else 0
                plan.tokens[key] = n + header_tokens[header]
        plan.todo[spec.id] = _missing(cache, keys, texts, planned)
        planned.update(plan.todo[spec.id])
    every = plan.query_keys + [key for keys in plan.vector_keys.values() for key in keys]
    plan.requested, plan.distinct = len(every), len(set(every))
    return plan


def plan_counts(plan: Plan, specs: Sequence[Spec], documents: Sequence[Document], questions: Sequence[Question],
                chunked: Chunked, cl100k: dict[str, list[int]]) -> PlanCounts:
    """The plan's counts for the plan line (`timings.plan_text`)."""
    rerank_texts: dict[str, int] = {}
    for spec in specs:
        if isinstance(spec, RerankSpec):  # at most every chunk: only the candidates are encoded
            rerank_texts.update(zip(plan.search_texts[spec.id], cl100k[spec.id]))
    return PlanCounts(
        documents=len(documents), document_bytes=sum(len(d.text.encode("utf-8", "surrogatepass")) for d in documents),
        questions=len(questions), strategies=len(specs), chunks=sum(len(chunked[s.id]) for s in specs),
        vectors=plan.requested, distinct=plan.distinct, cached=plan.distinct - plan.to_embed, to_embed=plan.to_embed,
        tokens_to_embed=plan.tokens_to_embed, late_documents=len(plan.late_todo),
        token_vector_texts=len(rerank_texts), token_vector_tokens=sum(rerank_texts.values()))


def embed_plan(plan: Plan, documents: Sequence[Document], embedder: Embedder, cache: VectorCache,
               seconds: dict[str, float], shared: dict[str, float], quiet: bool, rate: EmbeddingRate | None,
               on_plan: Callable[[str], Any] | None) -> tuple[EmbeddingRate, float | None]:
    """Make every planned vector and put it in the cache; late strategies share each document's encoding time.

    The questions come last, when the model is warm, the first `LATENCY_QUESTIONS` one at a time, which
    measures a question's embedding latency. Without a stored `rate`, a timed sample of the run's own texts
    (`calibration_rate`: after one text to warm the model up, `CALIBRATION_TEXTS` short ones and as many long
    ones) measures the seconds a text and a token take, and `on_plan` gets the estimate for the whole
    embedding. Returns the rate measured over the chunk texts and documents embedded (with the sample's seconds
    a text), and the median milliseconds of one question (None when every question was cached). An embedder's
    failure (an endpoint's refusal, say) keeps what was embedded and is one `ChunkEvalError` line.
    """
    try:
        return _embed_all(plan, documents, embedder, cache, seconds, shared, quiet, rate, on_plan)
    except EmbedderError as error:
        raise ChunkEvalError(str(error)) from None
    finally:
        cache.flush()


def _embed_all(plan: Plan, documents: Sequence[Document], embedder: Embedder, cache: VectorCache,
               seconds: dict[str, float], shared: dict[str, float], quiet: bool, rate: EmbeddingRate | None,
               on_plan: Callable[[str], Any] | None) -> tuple[EmbeddingRate, float | None]:
    from tqdm import tqdm  # deferred: tqdm is only needed once there is something to embed

    with tqdm(total=plan.to_embed, desc="chunk-eval: embedding", unit="vector", file=sys.stderr, disable=quiet,
              leave=False) as bar:
        work = [(sid, key, text) for sid, todo in plan.todo.items() if sid for key, text in todo.items()]
        tokens_done, seconds_done, per_text = 0, 0.0, 0.0

        def embed(part: list[tuple[str, str, str]]) -> float:
            t0 = time.perf_counter()
            cache.put([key for _, key, _ in part], embedder.encode([text for _, _, text in part], progress=bar.update))
            took = time.perf_counter() - t0
            counts = [max(plan.tokens[key], 1) for _, key, _ in part]
            for (sid, _, _), n in zip(part, counts):  # a slice may serve several strategies: shared by tokens
                seconds[sid] += took * n / sum(counts)
            return took

        if rate is None and on_plan is not None and len(work) > 2 * CALIBRATION_TEXTS + 1:
            order = sorted(range(len(work)), key=lambda i: plan.tokens[work[i][1]])
            half = len(order) // 2
            picks = [[order[j] for j in np.linspace(lo, hi - 1, CALIBRATION_TEXTS).round().astype(int)]
                     for lo, hi in ((1, half), (half, len(order)))]  # order[0] warms the model up
            embed([work[order[0]]])
            timed = [(len(p), sum(plan.tokens[work[i][1]] for i in p), embed([work[i] for i in p])) for p in picks]
            first = calibration_rate(timed)
            per_text = first.per_text
            taken = {order[0], *picks[0], *picks[1]}
            tokens_done = sum(max(plan.tokens[work[i][1]], 1) for i in taken)
            seconds_done = sum(t for _, _, t in timed)
            work = [w for i, w in enumerate(work) if i not in taken]
            left = sum(plan.tokens[key] for _, key, _ in work) + sum(plan.late_tokens.values())
            whole = seconds_done + (first.estimate(left, len(work) + len(plan.late_todo)) or 0)
            on_plan(f"estimate: about {whole:.0f} s of embedding in all ({first.text()}, measured on "
                    f"{CALIBRATION_TEXTS} short and {CALIBRATION_TEXTS} long texts of this run)")
        for at in range(0, len(work), cache.flush_every):
            part = work[at:at + cache.flush_every]
            seconds_done += embed(part)
            tokens_done += sum(max(plan.tokens[key], 1) for _, key, _ in part)
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
            took = time.perf_counter() - t0
            tokens_done, seconds_done = tokens_done + plan.late_tokens[doc.path], seconds_done + took
            users = plan.late_users[doc.path]
            for sid in users:  # one encoding serves every late strategy: they share its time
                seconds[sid] += took / len(users)
        question_ms = _embed_questions(plan, embedder, cache, shared, bar.update)  # last: the model is warm
    texts = sum(map(len, plan.todo.values())) - len(plan.todo[""]) + len(plan.late_todo)
    return EmbeddingRate(tokens_done, seconds_done, texts=texts, per_text=per_text), question_ms


def _embed_questions(plan: Plan, embedder: Embedder, cache: VectorCache, shared: dict[str, float],
                     progress: Callable[[int], Any]) -> float | None:
    """Embed the questions to embed: the first one alone (it warms the model up if nothing else was embedded:
    the first calls are several times slower), the next `LATENCY_QUESTIONS` one at a time (their median
    milliseconds is returned; None if none was timed), the rest in slices."""
    todo = plan.todo[""]
    keys = list(todo)
    t0 = time.perf_counter()
    times = []
    for i, key in enumerate(keys[:LATENCY_QUESTIONS + 1]):
        t1 = time.perf_counter()
        cache.put([key], encode_queries(embedder, [todo[key]], progress))
        if i:
            times.append(1000 * (time.perf_counter() - t1))
    for a in range(LATENCY_QUESTIONS + 1, len(keys), cache.flush_every):
        part = keys[a:a + cache.flush_every]
        cache.put(part, encode_queries(embedder, [todo[key] for key in part], progress))
    shared["queries"] = time.perf_counter() - t0
    return float(np.median(times)) if times else None
