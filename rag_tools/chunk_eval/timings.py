"""Where a chunk-eval run's time goes, the plan printed before embedding, and the embedding rate it estimates from.

`StageClock` adds up the seconds of each stage (`STAGES`: reading, model loading, chunking,
tokenizing, embedding, scoring, bootstrap, report); `--timings` prints them with each stage's share
of the run. `EmbeddingRate` is the measured speed of the model in cl100k tokens a second of
embedding, kept beside the cached vectors (`rate.json` in the model's cache folder) so that a later
run, or `chunk-eval check`, can estimate its time before loading the model. `plan_text` is the
plan line: documents, questions, strategies, chunks, vectors, how many are cached, and the estimate.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = ["STAGES", "EmbeddingRate", "PlanCounts", "StageClock", "calibration_rate", "format_timings", "plan_text"]

# The stages of a run, in order; "model_load" is counted apart from the share the others take.
STAGES = ("reading", "model_load", "chunking", "tokenizing", "embedding", "scoring", "bootstrap", "report")
STAGE_LABELS = {"reading": "reading documents and matching quotes", "model_load": "loading the model",
                "chunking": "chunking", "tokenizing": "tokenizing (cl100k and the model's tokens)",
                "embedding": "embedding", "scoring": "scoring (ranking, metrics, causes, reranking)",
                "bootstrap": "bootstrap (verdict and intervals)", "report": "report (table, JSON, HTML)"}
RATE_FILE = "rate.json"
MIN_RATE_TOKENS = 2000  # a rate measured on fewer tokens is too noisy to keep


class StageClock:
    """Seconds spent in each stage, added up over `with clock.stage(name):` blocks. A stage entered inside
    another pauses it (reranking's encoding inside scoring counts as embedding, not twice)."""

    def __init__(self) -> None:
        self.began = time.perf_counter()
        self.seconds: dict[str, float] = {name: 0.0 for name in STAGES}
        self._open: list[str] = []
        self._mark = self.began

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        if name not in self.seconds:
            raise ValueError(f"stage {name!r} is not one of {', '.join(STAGES)}")
        self._switch()
        self._open.append(name)
        try:
            yield
        finally:
            self._switch()
            self._open.pop()

    def _switch(self) -> None:
        """Give the time since the last switch to the innermost open stage."""
        now = time.perf_counter()
        if self._open:
            self.seconds[self._open[-1]] += now - self._mark
        self._mark = now

    def wall(self) -> float:
        return time.perf_counter() - self.began


@dataclass
class EmbeddingRate:
    """A model's measured embedding speed: `tokens` cl100k tokens of `texts` texts embedded in `seconds`, of which
    `per_text` seconds a text are the cost of a text whatever its length (0: cost by tokens alone)."""

    tokens: int
    seconds: float
    source: str = "this run"  # "this run", "the first texts of this run" or "an earlier run"
    question_ms: float | None = None  # the median milliseconds to embed one question alone
    texts: int = 0
    per_text: float = 0.0

    @property
    def per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    @property
    def token_seconds(self) -> float:
        """Seconds a token takes beyond the texts' own cost."""
        if self.tokens <= 0:
            return 0.0
        return max(self.seconds - self.per_text * self.texts, 0.0) / self.tokens

    def estimate(self, tokens: int, texts: int = 0) -> float | None:
        """Seconds to embed `tokens` cl100k tokens in `texts` texts at this rate (None without a usable rate)."""
        if self.per_second <= 0:
            return None
        if self.per_text > 0 and self.texts:
            return texts * self.per_text + tokens * self.token_seconds
        return tokens / self.per_second

    def text(self) -> str:
        """The rate for people: milliseconds a text (when measured) and tokens a second."""
        if self.per_text > 0 and self.texts and self.token_seconds > 0:
            return f"{1000 * self.per_text:.1f} ms a text plus {1 / self.token_seconds:,.0f} cl100k tokens a second"
        return f"{self.per_second:,.0f} cl100k tokens a second"

    @staticmethod
    def load(folder: Path | None) -> EmbeddingRate | None:
        """The rate an earlier run stored in the model's cache folder, or None."""
        if folder is None:
            return None
        try:
            data = json.loads((folder / RATE_FILE).read_text(encoding="utf-8"))
            question_ms = data.get("question_ms")
            rate = EmbeddingRate(int(data["tokens"]), float(data["seconds"]), "an earlier run",
                                 None if question_ms is None else float(question_ms), int(data.get("texts", 0)),
                                 float(data.get("per_text_seconds", 0.0)))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        return rate if rate.tokens > 0 and rate.seconds > 0 else None

    def save(self, folder: Path | None) -> None:
        """Keep the rate beside the vectors (written whole, then renamed; a failure only means no estimate later)."""
        if folder is None or self.tokens < MIN_RATE_TOKENS or self.seconds <= 0:
            return
        tmp = folder / f".{RATE_FILE}.tmp{os.getpid()}"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps({"tokens": self.tokens, "seconds": round(self.seconds, 3),
                                       "cl100k_tokens_per_second": round(self.per_second, 1),
                                       "question_ms": self.question_ms, "texts": self.texts,
                                       "per_text_seconds": round(self.per_text, 6)}), encoding="utf-8")
            os.replace(tmp, folder / RATE_FILE)
        except OSError:
            tmp.unlink(missing_ok=True)


@dataclass
class PlanCounts:
    """What a run will do: every count of the plan line."""

    documents: int
    document_bytes: int
    questions: int
    strategies: int
    chunks: int  # over all strategies
    vectors: int  # chunk vectors the strategies read, plus one per question
    distinct: int  # distinct texts (and late chunk spans) among them: identical texts are embedded once
    cached: int  # of the distinct ones, found in the cache
    to_embed: int  # distinct vectors still to make
    tokens_to_embed: int  # their cl100k tokens (late chunking: the documents' tokens, once each)
    late_documents: int = 0  # documents to encode whole for late strategies
    token_vector_texts: int = 0  # chunk texts that may be encoded for their token vectors (rerank:; at most)
    token_vector_tokens: int = 0


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.1f} kB"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def plan_text(counts: PlanCounts, rate: EmbeddingRate | None) -> str:
    """The plan in two lines: what will be chunked and embedded, then the time it should take."""
    c = counts
    late = f", {c.late_documents} document{'s' if c.late_documents != 1 else ''} encoded whole for late:" \
        if c.late_documents else ""
    rerank = f", at most {c.token_vector_texts:,} chunk texts encoded for token vectors (rerank:, cached once made)" \
        if c.token_vector_texts else ""
    what = (f"plan: {c.documents} document{'s' if c.documents != 1 else ''} ({_size(c.document_bytes)}), "
            f"{c.questions} question{'s' if c.questions != 1 else ''}, {c.strategies} "
            f"strateg{'ies' if c.strategies != 1 else 'y'}, {c.chunks:,} chunks; {c.vectors:,} vectors, "
            f"{c.distinct:,} distinct, {c.cached:,} cached, {c.to_embed:,} to embed "
            f"({c.tokens_to_embed:,} cl100k tokens){late}{rerank}")
    work = c.tokens_to_embed + c.token_vector_tokens
    if work == 0:
        return what + "\nestimate: nothing to embed; every vector is in the cache"
    seconds = rate.estimate(work, c.to_embed + c.token_vector_texts) if rate is not None else None
    if seconds is None:
        return what + ("\nestimate: no embedding rate measured yet for this model; chunk-eval measures one on "
                       "the first texts it embeds")
    return what + (f"\nestimate: about {_duration(seconds)} of embedding at {rate.text()} (measured on "
                   f"{rate.source}), plus loading the model")


def calibration_rate(timed: list[tuple[int, int, float]]) -> EmbeddingRate:
    """The rate of two timed batches `(texts, cl100k tokens, seconds)`, short texts and long ones: the seconds a
    text and a token take (seconds = a * texts + b * tokens, solved for a and b); by tokens alone when that gives
    a negative cost or the batches hold as many tokens a text (a and b cannot be told apart)."""
    (n1, t1, s1), (n2, t2, s2) = timed
    rate = EmbeddingRate(t1 + t2, s1 + s2, "a sample of this run's texts", texts=n1 + n2)
    det = n1 * t2 - n2 * t1
    if det:
        per_text = (s1 * t2 - s2 * t1) / det
        per_token = (n1 * s2 - n2 * s1) / det
        if per_text > 0 and per_token > 0:
            rate.per_text = per_text
    return rate


def format_timings(seconds: dict[str, float], wall: float, embedding: dict[str, int]) -> str:
    """The `--timings` table: each stage's seconds and its share of the run without model loading, and what
    the embedding stage did (texts asked for by the strategies, distinct, embedded)."""
    loading = seconds.get("model_load", 0.0)
    rest = max(wall - loading, 1e-9)
    lines = [f"timings: {wall:.1f} s wall, of which {loading:.1f} s loading the model; shares are of the other "
             f"{rest:.1f} s", f"  {'stage':45s} {'seconds':>8s} {'share':>6s}"]
    for name in STAGES:
        if name == "model_load":
            continue
        lines.append(f"  {STAGE_LABELS[name]:45s} {seconds.get(name, 0.0):8.2f} {seconds.get(name, 0.0) / rest:6.1%}")
    accounted = sum(v for k, v in seconds.items() if k != "model_load")
    other = max(rest - accounted, 0.0)
    lines.append(f"  {'other (reading the cache, parsing arguments)':45s} {other:8.2f} {other / rest:6.1%}")
    non_embedding = rest - seconds.get("embedding", 0.0)
    lines.append(f"  {'every stage but embedding':45s} {non_embedding:8.2f} {non_embedding / rest:6.1%}")
    if embedding:
        lines.append(f"  embedding: {embedding.get('requested', 0):,} vectors asked for by the strategies and the "
                     f"questions, {embedding.get('distinct', 0):,} distinct (identical texts embedded once), "
                     f"{embedding.get('cached', 0):,} from the cache, {embedding.get('embedded', 0):,} embedded "
                     f"({embedding.get('tokens_embedded', 0):,} cl100k tokens)"
                     + (f"; token vectors of {embedding['token_vector_texts']:,} candidate chunks and "
                        f"{embedding.get('token_vector_questions', 0):,} questions for rerank:"
                        if embedding.get("token_vector_texts") else ""))
    return "\n".join(lines)
