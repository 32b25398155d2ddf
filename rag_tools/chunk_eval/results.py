"""chunk-eval's results: one row per strategy (`StrategyResult`) and the whole report (`EvalReport`, its JSON)."""

from __future__ import annotations

import bisect
import json
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from course_lib.evaluation import METRIC_NAMES
from course_lib.spans import Chunk, DocSpan
from course_lib.stats import Interval, Verdict, mean_intervals, verdict
from rag_tools.chunk_eval.grades import CAUSES
from rag_tools.chunk_eval.inputs import Document, Question
from rag_tools.chunk_eval.timings import StageClock

__all__ = ["BudgetPoint", "Chunked", "EvalReport", "StrategyResult", "budget_curve", "smallest_within_margin"]


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
    vectors: int = 0  # vectors the index stores (chunks; for rerank: also every chunk's token vectors)
    embed_tokens: int = 0  # cl100k tokens embedding the index alone takes (what it embeds, headers included)
    embed_seconds: float | None = None  # those tokens at the run's measured rate (None: no rate measured)
    latency_ms: dict[str, float | None] = field(default_factory=dict)  # question_embedding, search, first_stage, rerank
    health: dict[str, Any] = field(default_factory=dict)  # `health.ChunkHealth.to_dict()`
    rerank_seconds: float | None = None  # rerank: its own stage (token vectors and MaxSim)
    pages: dict[str, Any] = field(default_factory=dict)  # paged documents: `grades.page_report`

    @property
    def cause_counts(self) -> dict[str, int]:
        return {cause: self.causes.count(cause) for cause in CAUSES}

    def to_dict(self) -> dict[str, Any]:
        return {"strategy": self.strategy, **{m: round(self.metrics[m], 6) for m in METRIC_NAMES},
                "intervals": {m: [round(lo, 6), round(hi, 6)] for m, (lo, hi) in self.intervals.items()},
                "chunks": self.chunks, "mean_tokens": round(self.mean_tokens, 1),
                "returned_tokens": round(self.returned_tokens, 1), "index_bytes": self.index_bytes,
                "seconds": round(self.seconds, 2), "windowed_chunks": self.windowed_chunks,
                "causes": self.cause_counts, "health": self.health, "cost": self.cost(),
                **({"pages": {key: round(v, 6) if isinstance(v, float) else v for key, v in self.pages.items()}}
                   if self.pages else {})}

    def cost_key(self, budget: int | None) -> tuple[float, ...]:
        """What "cheaper" means for the verdict and the tie rule: fewest returned tokens, then the smallest index;
        under a budget (every strategy returns it) the smallest index, then the fewest tokens to embed it."""
        return (self.index_bytes, self.embed_tokens) if budget else (self.returned_tokens, self.index_bytes)

    def cost(self) -> dict[str, Any]:
        """What the strategy costs: to build its index, to store it, per query, and what the reader reads."""
        return {"vectors": self.vectors, "index_bytes": self.index_bytes, "embed_tokens": self.embed_tokens,
                "embed_seconds": None if self.embed_seconds is None else round(self.embed_seconds, 2),
                "latency_ms": self.latency_ms, "returned_tokens": round(self.returned_tokens, 1),
                "rerank_seconds": None if self.rerank_seconds is None else round(self.rerank_seconds, 2)}


@dataclass(frozen=True)
class BudgetPoint:
    """One budget of a curve: each strategy's mean of the verdict's metric with its 95% interval, and the verdict."""

    budget: int
    intervals: Mapping[str, Interval]
    verdict: Verdict | None


def budget_curve(per_budget: Mapping[int, Mapping[str, Sequence[float]]], costs: Mapping[str, tuple[float, ...]],
                 metric: str, margin: float) -> list[BudgetPoint]:
    """The metric at each budget (smallest first), scored on the same questions and vectors: per strategy its
    mean and 95% interval (`mean_intervals`), and the verdict at that budget (None with one strategy)."""
    points = []
    for budget in sorted(per_budget):
        values = per_budget[budget]
        ruling = verdict(values, costs=costs, metric=metric, margin=margin) if len(values) >= 2 else None
        points.append(BudgetPoint(budget, mean_intervals(values), ruling))
    return points


def smallest_within_margin(curve: Sequence[BudgetPoint], margin: float) -> dict[str, int]:
    """Per strategy, the smallest budget whose mean is within `margin` of the strategy's best mean over the curve
    (point estimates: where more text stops paying, not a test)."""
    names = list(curve[0].intervals)
    best = {s: max(p.intervals[s].mean for p in curve) for s in names}
    return {s: next(p.budget for p in curve if p.intervals[s].mean >= best[s] - margin - 1e-12) for s in names}


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
    embedding: dict[str, Any] = field(default_factory=dict)  # `rag_tools.embedders.describe` of the model
    clock: StageClock | None = field(default=None, repr=False)  # each stage's seconds (`--timings`)
    vectors: dict[str, Any] = field(default_factory=dict)  # asked for, distinct, cached, embedded, the rate
    curve: list[BudgetPoint] = field(default_factory=list)  # `--budget 250,500,...`: every budget, smallest first
    margin: float | None = None  # the verdict's margin (the curve's "within one margin of its best")

    def model_text(self) -> str:
        """One line: the model, its kind, window, dimension, prefixes and, for an endpoint, its requests."""
        facts = self.embedding or {"model": self.model}
        window, name, kind = facts.get("window"), facts.get("model", self.model), facts.get("kind")
        parts = [f"model: {name}" + (f" ({kind})" if kind and kind != name else ""),
                 f"window {window} tokens" if window else ("the service's window" if kind == "endpoint"
                                                           else "no window of its own"),
                 f"{facts['dimension']} dimensions" if facts.get("dimension") else ""]
        for role in ("query", "document"):
            if facts.get(f"{role}_prefix"):
                parts.append(f"{role} prefix {facts[f'{role}_prefix']!r}")
        if "requests" in facts:
            retries = f"{facts['retries']} {'retry' if facts['retries'] == 1 else 'retries'}"
            parts.append(f"{facts['requests']} requests to the endpoint ({retries})")
        return ", ".join(p for p in parts if p)

    def curve_dict(self) -> dict[str, Any] | None:
        """The JSON `curve` (None without one): the budgets, per strategy its mean and 95% interval at each and the
        smallest budget within one margin of its best, and the verdict at each budget."""
        if not self.curve:
            return None
        names = [r.strategy for r in self.results]
        within = smallest_within_margin(self.curve, self.margin)
        return {"metric": self.metric, "margin": self.margin, "budgets": [p.budget for p in self.curve],
                "strategies": {s: {"mean": [round(p.intervals[s].mean, 6) for p in self.curve],
                                   "low": [round(p.intervals[s].low, 6) for p in self.curve],
                                   "high": [round(p.intervals[s].high, 6) for p in self.curve],
                                   "smallest_budget_within_margin": within[s]} for s in names},
                "verdicts": {str(p.budget): None if p.verdict is None else {**p.verdict.as_dict(),
                                                                            "text": p.verdict.text()}
                             for p in self.curve}}

    def verdict_text(self) -> str:
        if self.verdict is not None:
            return "verdict: " + self.verdict.text()
        why = "one strategy" if len(self.results) < 2 else "one question"
        return f"verdict: none ({why}: a verdict compares at least two strategies on at least two questions)"

    def per_question_records(self) -> list[dict[str, Any]]:
        """The JSON `per_question`: each question's id, text and, per strategy, rank, metrics, cause, retrieved."""
        return list(self._records())

    def _records(self) -> Iterator[dict[str, Any]]:
        """`per_question_records`, made one at a time."""
        by_path = {d.path: d for d in self.documents}
        for i, q in enumerate(self.questions):
            results = {}
            for r in self.results:
                results[r.strategy] = {
                    "rank": r.first_rank[i] or None,
                    "metrics": {m: round(r.per_question[m][i], 6) for m in METRIC_NAMES},
                    "cause": r.causes[i],
                    "retrieved": [_span_record(by_path[d], s, e) for d, s, e in r.retrieved[i]],
                }
            yield {"id": q.id, "question": q.question, "results": results}

    def to_dict(self) -> dict[str, Any]:
        return {**self._head(), "per_question": self.per_question_records()}

    def json_pieces(self) -> Iterator[str]:
        """`json.dumps(self.to_dict(), indent=1) + "\n"` piece by piece: one per-question record is made and
        encoded at a time, so neither the records nor the whole text are ever held at once."""
        head = json.dumps(self._head(), indent=1)
        yield head[:-2] + ',\n "per_question": ['  # the head ends with "\n}"
        empty = True
        for record in self._records():
            yield ("\n" if empty else ",\n") + textwrap.indent(json.dumps(record, indent=1), "  ")
            empty = False
        yield ("]" if empty else "\n ]") + "\n}\n"

    def _head(self) -> dict[str, Any]:
        """Every JSON key but `per_question`, in order."""
        return {
            "verdict": self.verdict.as_dict() if self.verdict is not None else None,
            "verdict_text": self.verdict_text(),
            "warnings": self.warnings,
            "k": self.k, "budget": self.budget, "metric": self.metric, "model": self.model,
            "curve": self.curve_dict(),
            "embedding": self.embedding,
            "documents": len(self.documents),
            "document_bytes": sum(len(d.text.encode("utf-8")) for d in self.documents),
            "questions": len(self.questions), "skipped": self.skipped,
            "results": [r.to_dict() for r in self.results],
            "shared_seconds": {key: round(value, 2) for key, value in self.shared_seconds.items()},
            "cache": self.cache, "vectors": self.vectors,
            "timings": {name: round(value, 3) for name, value in self.clock.seconds.items()} if self.clock else {},
            "versions": self.versions, "inputs_sha256": self.inputs_sha256,
        }


def _span_record(doc: Document, start: int, end: int) -> dict[str, Any]:
    """`{"document", "start", "end"}`, with `page_start`/`page_end` for a paged document (as
    `rag_tools.readers.page_span` counts them)."""
    record: dict[str, Any] = {"document": doc.path, "start": start, "end": end}
    if doc.page_ends:
        record["page_start"] = bisect.bisect_left(doc.page_ends, start) + 1
        record["page_end"] = bisect.bisect_left(doc.page_ends, end - 1) + 1
    return record


Chunked = dict[str, list[tuple[Document, Chunk]]]  # strategy id -> (document, chunk) pairs, in document order
