"""chunk-eval: measure chunking strategies on your own documents, from one command.

    chunk-eval DOCS QUESTIONS [--strategy SPEC]... [--k 5] [--budget TOKENS] [--json OUT.json] [--html OUT.html]
    python -m course_lib.chunk_eval DOCS QUESTIONS ...

Taught in notebooks/11_your_documents.ipynb (the capstone). The method is notebook 08's:
chunk every document with each strategy, embed every chunk, put all chunks of a strategy in one
exact cosine index, search it with each question, and score the ranking against the question's
reference text (its quote, found in the documents, or its character spans).

Metrics (names and units of `course_lib.evaluation.METRIC_NAMES`, fractions in JSON, percent in the
terminal table). A chunk is relevant to a question when it shares at least one character with the
question's reference text; its grade is the share of the reference characters it holds.
- `recall_at_k`: share of questions with a relevant chunk among the first k;
- `mrr`: mean of 1 / rank of the first relevant chunk in the whole ranking (0 if no chunk is relevant);
- `ndcg_at_10`: nDCG of the first 10 chunks with those grades;
- `span_recall`, `span_precision`, `iou`: Chroma's character metrics (`course_lib.evaluation.span_scores`)
  of the first k chunks, or, with `--budget`, of the chunks that fit the budget (`budget_cutoff`).
Costs per strategy: `chunks`, `mean_tokens` (cl100k tokens per chunk), `index_bytes` (the float32
vectors: chunks x dimensions x 4 bytes) and `seconds` (chunking, embedding and scoring in this run;
late strategies share each document's encoding equally; vectors read from the cache cost nothing).

Embedding: a chunk that fits the model (at most its window minus the special tokens: 510 WordPiece
tokens for all-MiniLM-L6-v2) is encoded on its own; a longer one is embedded by pooling its token
vectors over overlapping windows (`course_lib.late` applied to the chunk alone), never truncated.
`late:` strategies encode each document once (long late chunking in 512-token windows) and pool
every late strategy's chunks from those token vectors. `headers:` strategies embed each chunk
prefixed with its document's name and heading path (the chunk's offsets still point at the source).
Vectors are cached on disk by model and text hash, so a repeated run embeds only new chunks.
"""

from __future__ import annotations

import argparse
import base64
import csv
import difflib
import hashlib
import html
import io
import json
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from course_lib.chunking import Chunk
from course_lib.embed import DEFAULT_CACHE, Embedder, SentenceTransformerEmbedder, VectorCache
from course_lib.embed import text_key as _key
from course_lib.evaluation import METRIC_NAMES, VectorIndex, budget_cutoff, ndcg_at_k, span_scores
from course_lib.late import pool_chunks

__all__ = [
    "DEFAULT_SIZES",
    "TEXT_SUFFIXES",
    "ChunkEvalError",
    "Document",
    "Embedder",
    "EvalReport",
    "Question",
    "SentenceTransformerEmbedder",
    "StrategyResult",
    "VectorCache",
    "default_strategies",
    "evaluate",
    "format_table",
    "main",
    "read_documents",
    "read_questions",
    "render_html",
]

TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".text", ".rst", ".py", ".adoc", ".org", ".tex")
MARKDOWN_SUFFIXES = (".md", ".markdown")
DEFAULT_SIZES = (128, 256, 384)
TOKENIZER = "cl100k_base"  # mean tokens and --budget are counted in cl100k tokens, as everywhere in the course
QUERY_BATCH = 128
MISSED_SHOWN = 25  # questions every strategy missed, shown in the HTML report


class ChunkEvalError(ValueError):
    """Bad input: the command prints the message on one line and exits with status 2."""


# ---------------------------------------------------------------------------
# Documents and questions
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Document:
    """A text file of DOCS: `path` relative to DOCS (with "/"), `text` decoded from UTF-8, newlines as stored."""

    path: str
    text: str


@dataclass(frozen=True)
class Question:
    """One question and its reference text as `(document path, start, end)` character spans."""

    id: str
    question: str
    spans: tuple[tuple[str, int, int], ...]
    document: str | None = None
    line: int = 0


def _one_line(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def read_documents(folder: str | Path, *, skip_bad_files: bool = False) -> tuple[list[Document], list[str]]:
    """Every text file under `folder` (recursively, sorted; hidden files and folders left out).

    Returns `(documents, skipped)`: `skipped` names the files that are not text (by suffix,
    `TEXT_SUFFIXES`), empty, or (with `skip_bad_files`) not valid UTF-8. Raises `ChunkEvalError`
    for a missing folder, a folder without any document, or a file that is not UTF-8.
    """
    root = Path(folder)
    if not root.exists():
        raise ChunkEvalError(f"DOCS folder {str(root)!r} does not exist; pass the folder that holds your documents")
    if not root.is_dir():
        raise ChunkEvalError(f"DOCS {str(root)!r} is a file, not a folder; pass the folder that holds it")
    documents, skipped = [], []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if any(part.startswith(".") for part in relative.parts) or not path.is_file():
            continue
        name = relative.as_posix()
        if path.suffix.lower() not in TEXT_SUFFIXES:
            skipped.append(name)
            continue
        data = path.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            if skip_bad_files:
                skipped.append(f"{name} (not UTF-8)")
                continue
            raise ChunkEvalError(
                f"{name} is not valid UTF-8 (byte 0x{data[error.start]:02x} at byte offset {error.start}); "
                "convert it to UTF-8, or pass --skip-bad-files to leave it out") from None
        if not text.strip():
            skipped.append(f"{name} (empty)")
            continue
        documents.append(Document(name, text))
    if not documents:
        raise ChunkEvalError(
            f"DOCS folder {str(root)!r} holds no text document ({', '.join(TEXT_SUFFIXES)}); "
            + (f"skipped: {', '.join(skipped[:5])}" if skipped else "it is empty"))
    return documents, skipped


def _quote_pattern(quote: str) -> re.Pattern:
    """The quote with any run of whitespace matching any run of whitespace (line breaks included)."""
    return re.compile(r"\s+".join(re.escape(word) for word in quote.split()))


def _closest_passage(quote: str, documents: Sequence[Document]) -> str:
    """Where the quote's words come closest: '<path>: "<passage>"'.

    Every window of as many words as the quote is scored by the words it shares with the quote
    (case and punctuation ignored); ties go to a window that starts with the quote's first word,
    then to the one that reads most alike (difflib's ratio).
    """
    wanted = quote.split()
    target = Counter(_bare(w) for w in wanted)
    scored: list[tuple[int, str, list[str]]] = []
    for doc in documents:
        words = doc.text.split()
        bare = [_bare(w) for w in words]
        for i in range(max(1, len(words) - len(wanted) + 1)):
            window = Counter(bare[i:i + len(wanted)])
            scored.append((sum((window & target).values()), doc.path, words[i:i + len(wanted)]))
    top = max(score for score, _, _ in scored)
    if top == 0:
        return "none (no passage shares a word with it)"
    ties = [(path, window) for score, path, window in scored if score == top][:200]
    matcher = difflib.SequenceMatcher(None, "", " ".join(wanted), autojunk=False)

    def likeness(candidate: tuple[str, list[str]]) -> tuple[bool, float]:
        matcher.set_seq1(" ".join(candidate[1]))
        return _bare(candidate[1][0]) == _bare(wanted[0]), matcher.ratio()

    path, window = max(ties, key=likeness)
    return f'{path}: "{_one_line(" ".join(window), 80)}"'


def _bare(word: str) -> str:
    return word.strip(".,;:!?\"'()[]{}*_`").lower()


def _spans_of_quote(quote: str, documents: Sequence[Document]) -> list[tuple[str, int, int]]:
    pattern = _quote_pattern(quote)
    return [(doc.path, m.start(), m.end()) for doc in documents for m in pattern.finditer(doc.text)]


def _field(record: dict, name: str, where: str, kind: type | tuple[type, ...], required: bool = True) -> Any:
    value = record.get(name)
    if value is None or value == "":
        if required:
            raise ChunkEvalError(f"{where}: the field {name!r} is missing or empty; every question needs it")
        return None
    if not isinstance(value, kind):
        raise ChunkEvalError(f"{where}: {name!r} must be {getattr(kind, '__name__', 'a list')}, "
                             f"not {type(value).__name__}")
    return value


def _resolve(record: dict, number: int, line: int, where: str, by_path: dict[str, Document]) -> Question:
    """One record (from a JSONL line or a CSV row) as a `Question` with its reference spans."""
    text = _field(record, "question", where, str)
    if not text.strip():
        raise ChunkEvalError(f"{where}: the field 'question' is empty")
    document = _field(record, "document", where, str, required=False)
    if document is not None:
        document = Path(document).as_posix()
        if document not in by_path:
            close = difflib.get_close_matches(document, list(by_path), n=1)
            raise ChunkEvalError(f"{where}: document {document!r} is not a document of DOCS"
                                 + (f"; did you mean {close[0]!r}?" if close else
                                    f"; give a path relative to DOCS, e.g. {next(iter(by_path))!r}"))
    qid = str(record.get("id") or number)
    label = f'{where} (question {qid}: "{_one_line(text, 50)}")'
    if record.get("spans") not in (None, ""):
        spans = record["spans"]
        if document is None:
            raise ChunkEvalError(f"{label}: 'spans' are character offsets in one document; add its 'document'")
        length = len(by_path[document].text)
        if not isinstance(spans, list) or not spans:
            raise ChunkEvalError(f"{label}: 'spans' must be a non-empty list of [start, end] pairs")
        out = []
        for span in spans:
            ok = isinstance(span, list) and len(span) == 2 and all(
                isinstance(v, int) and not isinstance(v, bool) for v in span)
            if not ok or not 0 <= span[0] < span[1] <= length:
                raise ChunkEvalError(f"{label}: span {span!r} is not a [start, end] pair with "
                                     f"0 <= start < end <= {length} (the length of {document})")
            out.append((document, span[0], span[1]))
        return Question(qid, text, tuple(out), document, line)
    answer = _field(record, "answer", where, (str, list))
    quotes = [answer] if isinstance(answer, str) else answer
    if not quotes or not all(isinstance(q, str) and q.strip() for q in quotes):
        raise ChunkEvalError(f"{label}: 'answer' must be a quote, or a non-empty list of quotes, with some text")
    scope = [by_path[document]] if document else list(by_path.values())
    spans = []
    for quote in quotes:
        found = _spans_of_quote(quote, scope)
        if not found:
            where_in = f"in {document}" if document else "in any document"
            raise ChunkEvalError(f'{label}: the answer "{_one_line(quote, 60)}" is not {where_in}; '
                                 f"closest passage {_closest_passage(quote, scope)}")
        spans += found
    return Question(qid, text, tuple(spans), document, line)


def read_questions(path: str | Path, documents: Sequence[Document]) -> list[Question]:
    """Questions from a JSONL file (one object a line) or a CSV file (a header row), by suffix.

    Fields: `question`; `answer`, an exact quote from the documents (JSONL: or a list of quotes;
    whitespace and line breaks may differ); optional `document` (path relative to DOCS); optional
    `id`. In JSONL, `spans` (`[[start, end], ...]`, character offsets in `document`) may replace
    `answer`. The reference text is every occurrence of each quote (in `document`, if given).
    """
    path = Path(path)
    if not path.is_file():
        raise ChunkEvalError(f"QUESTIONS file {str(path)!r} does not exist; pass a .jsonl or .csv file of questions")
    by_path = {doc.path: doc for doc in documents}
    try:
        raw = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ChunkEvalError(f"QUESTIONS file {path.name} is not valid UTF-8 (byte offset {error.start})") from None
    questions = []
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(raw, newline=""))
        missing = [c for c in ("question", "answer") if c not in (reader.fieldnames or [])]
        if missing:
            raise ChunkEvalError(f"{path.name} line 1: the header has no column {' or '.join(map(repr, missing))}; "
                                 f"it needs question,answer (and optionally document); found {reader.fieldnames}")
        for row in reader:
            where = f"{path.name} line {reader.line_num}"
            if None in row:
                raise ChunkEvalError(f"{where}: more fields than the header has columns; quote fields with commas")
            questions.append(_resolve(row, len(questions) + 1, reader.line_num, where, by_path))
    elif path.suffix.lower() in (".jsonl", ".ndjson"):
        for number, line in enumerate(raw.splitlines(), start=1):
            if not line.strip():
                continue
            where = f"{path.name} line {number}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ChunkEvalError(f"{where}: not valid JSON ({error.msg} at column {error.colno}); "
                                     "write one JSON object per line") from None
            if not isinstance(record, dict):
                raise ChunkEvalError(f"{where}: a JSON object is needed, not {type(record).__name__}")
            questions.append(_resolve(record, len(questions) + 1, number, where, by_path))
    else:
        raise ChunkEvalError(f"QUESTIONS file {path.name} must end in .jsonl or .csv")
    if not questions:
        raise ChunkEvalError(f"QUESTIONS file {path.name} holds no question")
    return questions


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


def _parse(specs: Sequence[str]) -> list:
    from course_lib.strategies import EMBEDDING_VARIANTS, parse_strategy

    parsed, seen = [], set()
    for text in specs:
        try:
            spec = parse_strategy(text)
        except (TypeError, ValueError) as error:
            raise ChunkEvalError(f"--strategy {text!r}: {error}") from None
        if spec.variant not in (None, "late", "headers"):
            raise ChunkEvalError(f"--strategy {text!r}: chunk-eval embeds the variants late: and headers: "
                                 f"(of {list(EMBEDDING_VARIANTS)}); drop the prefix {spec.variant}:")
        if spec.id not in seen:
            seen.add(spec.id)
            parsed.append(spec)
    return parsed


def _family(spec: Any) -> str:
    """The strategy without its size: what a plot of metrics against size draws one line for."""
    label = f"{spec.variant}:{spec.name}" if spec.variant else spec.name
    if spec.overlap:
        label += f" overlap {spec.overlap}"
    if spec.options:
        label += " " + "&".join(f"{key}={value}" for key, value in sorted(spec.options.items()))
    return label


# ---------------------------------------------------------------------------
# Embedding: course_lib.embed (Embedder, SentenceTransformerEmbedder, VectorCache), re-exported here
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# Evaluation
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


def _relevance(question: Question, chunk_spans: Sequence[tuple[str, int, int]],
               starts: dict[str, np.ndarray], ends: dict[str, np.ndarray],
               offsets: dict[str, int]) -> dict[int, float]:
    """Chunk row -> share of the question's reference characters inside that chunk (only rows > 0)."""
    refs: dict[str, list[tuple[int, int]]] = {}
    for doc, s, e in sorted(question.spans):
        merged = refs.setdefault(doc, [])
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    total = sum(e - s for spans in refs.values() for s, e in spans)
    grades: dict[int, float] = {}
    for doc, spans in refs.items():
        for s, e in spans:
            shared = np.minimum(ends[doc], e) - np.maximum(starts[doc], s)
            for row in np.flatnonzero(shared > 0):
                index = offsets[doc] + int(row)
                grades[index] = grades.get(index, 0.0) + float(shared[row]) / total
    return grades


def _score(spec: Any, chunk_spans: list[tuple[str, int, int]], tokens: list[int], vectors: np.ndarray,
           query_vectors: np.ndarray, questions: Sequence[Question], k: int, budget: int | None,
           ) -> tuple[dict[str, float], list[bool], list[int], list, list]:
    """Rank every chunk for every question (exact cosine, `VectorIndex`'s order) and average the metrics."""
    index = VectorIndex(vectors)
    q = query_vectors.astype(np.float32)
    q = q / np.linalg.norm(q, axis=1, keepdims=True)  # as VectorIndex.search normalizes its queries
    docs = sorted({d for d, _, _ in chunk_spans}, key=[d for d, _, _ in chunk_spans].index)
    offsets = {d: [s[0] for s in chunk_spans].index(d) for d in docs}
    starts = {d: np.array([s for dd, s, _ in chunk_spans if dd == d]) for d in docs}
    ends = {d: np.array([e for dd, _, e in chunk_spans if dd == d]) for d in docs}
    per_question: dict[str, list[float]] = {m: [] for m in METRIC_NAMES}
    hit, first_rank, top, best = [], [], [], []
    for b in range(0, len(questions), QUERY_BATCH):
        order = np.argsort(-(q[b:b + QUERY_BATCH] @ index.vectors.T), axis=1, kind="stable")
        for question, ranking in zip(questions[b:b + QUERY_BATCH], order):
            grades = _relevance(question, chunk_spans, starts, ends, offsets)
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


def _header_texts(doc: Document, chunks: Sequence[Chunk]) -> list[str]:
    """What a headers: strategy embeds: "name > heading path", a blank line, the chunk (notebook 10's headers)."""
    from course_lib.retrieval import headed_texts

    title = Path(doc.path).with_suffix("").as_posix()
    return headed_texts(doc.text, [(c.start, c.end) for c in chunks], title=title,
                        headings=doc.path.lower().endswith(MARKDOWN_SUFFIXES))


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
    skip_bad_files: bool = False,
    quiet: bool = True,
) -> EvalReport:
    """Chunk, embed, search and score every strategy on the documents of `docs`; see the module docstring.

    `model` is a local SentenceTransformer folder (default: the course's MiniLM); `embedder`
    replaces the model altogether (tests pass a small stand-in). `cache=None` keeps no vectors on
    disk. `quiet=False` shows progress bars on stderr. Raises `ChunkEvalError` on bad input.
    Taught in notebooks/11_your_documents.ipynb.
    """
    from tqdm import tqdm

    from course_lib.strategies import chunk_with
    from course_lib.tokens import get_encoding

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
    st_model = getattr(embedder, "model", None)

    seconds: dict[str, float] = {}
    chunked: dict[str, list[tuple[Document, Chunk]]] = {}
    for spec in specs:
        t0 = time.perf_counter()
        pairs = []
        for doc in documents:
            try:
                pairs += [(doc, c) for c in chunk_with(spec, doc.text, model=st_model)]
            except (TypeError, ValueError) as error:
                raise ChunkEvalError(f"--strategy {spec.id!r} on {doc.path}: {_one_line(str(error), 300)}") from None
        if not pairs:
            raise ChunkEvalError(f"--strategy {spec.id!r} made no chunk from any document")
        chunked[spec.id] = pairs
        seconds[spec.id] = time.perf_counter() - t0

    store = VectorCache(cache, embedder.name)
    doc_hash = {doc.path: hashlib.sha256(doc.text.encode("utf-8", "surrogatepass")).hexdigest() for doc in documents}
    query_keys = [_key("text", q.question) for q in question_list]
    todo: dict[str, dict[str, str]] = {"": _missing(store, query_keys, [q.question for q in question_list], {})}
    vector_keys: dict[str, list[str]] = {}
    late_todo: dict[str, dict[str, tuple[int, int]]] = {}  # document -> key -> chunk span, for every late strategy
    late_users: dict[str, set[str]] = {}  # document -> the late strategies whose vectors it still has to give
    planned = set(todo[""])
    for spec in specs:
        if spec.variant == "late":
            vector_keys[spec.id] = []
            for d, c in chunked[spec.id]:
                key = _key("late", doc_hash[d.path], str(c.start), str(c.end))
                vector_keys[spec.id].append(key)
                if key not in store:
                    late_todo.setdefault(d.path, {})[key] = (c.start, c.end)
                    late_users.setdefault(d.path, set()).add(spec.id)
            continue
        if spec.variant == "headers":
            texts = [t for doc in documents for t in _header_texts(doc, [c for d, c in chunked[spec.id] if d is doc])]
        else:
            texts = [c.text for _, c in chunked[spec.id]]
        vector_keys[spec.id] = [_key("text", t) for t in texts]
        todo[spec.id] = _missing(store, vector_keys[spec.id], texts, planned)
        planned.update(todo[spec.id])

    total = sum(map(len, todo.values())) + sum(map(len, late_todo.values()))
    with tqdm(total=total, desc="chunk-eval: embedding", unit="vector", file=sys.stderr, disable=quiet,
              leave=False) as bar:
        for sid, texts_by_key in todo.items():
            t0 = time.perf_counter()
            if texts_by_key:
                store.put(list(texts_by_key), embedder.encode(list(texts_by_key.values()), progress=bar.update))
            if sid:
                seconds[sid] += time.perf_counter() - t0
            else:
                shared["queries"] = time.perf_counter() - t0
        for doc in documents:
            wanted = late_todo.get(doc.path)
            if not wanted:
                continue
            t0 = time.perf_counter()
            bar.set_description(f"chunk-eval: late, {doc.path}")
            try:
                tokens, vectors = embedder.token_vectors(doc.text)
                pooled = pool_chunks(tokens, vectors, doc.text, list(wanted.values()))
            except ValueError as error:
                raise ChunkEvalError(f"late chunking of {doc.path}: {_one_line(str(error), 300)}") from None
            store.put(list(wanted), pooled)
            bar.update(len(wanted))
            for sid in late_users[doc.path]:  # one encoding serves every late strategy: they share its time
                seconds[sid] += (time.perf_counter() - t0) / len(late_users[doc.path])
    store.flush()
    query_vectors = np.stack([store[key] for key in query_keys])

    encoding = get_encoding(TOKENIZER)
    results = []
    for spec in specs:
        t0 = time.perf_counter()
        pairs = chunked[spec.id]
        spans = [(d.path, c.start, c.end) for d, c in pairs]
        tokens = [len(ids) for ids in encoding.encode_ordinary_batch([c.text for _, c in pairs])]
        vectors = np.stack([store[key] for key in vector_keys[spec.id]])
        metrics, hit, first_rank, top, best = _score(spec, spans, tokens, vectors, query_vectors, question_list,
                                                     k, budget)
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
    return EvalReport(k=k, budget=budget, model=embedder.name, documents=documents, questions=question_list,
                      skipped=skipped, results=results, shared_seconds=shared,
                      cache={"vectors_loaded": store.loaded, "vectors_embedded": len(store.vectors) - store.loaded})


def _missing(store: VectorCache, keys: Sequence[str], texts: Sequence[str], planned: set[str]) -> dict[str, str]:
    """The texts to embed: each distinct key once, unless the cache has it or an earlier step will embed it."""
    todo: dict[str, str] = {}
    for key, text in zip(keys, texts):
        if key not in store and key not in planned and key not in todo:
            todo[key] = text
    return todo


# ---------------------------------------------------------------------------
# Output: terminal table, JSON, HTML
# ---------------------------------------------------------------------------

COLUMNS = (("recall_at_k", "recall@{k}"), ("mrr", "MRR"), ("ndcg_at_10", "nDCG@10"),
           ("span_recall", "span recall"), ("iou", "IoU"))


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.1f} kB"


def format_table(report: EvalReport, *, seconds: bool = True) -> str:
    """The results as a plain-text table, best first, metrics in percent (`seconds=False`: no timings)."""
    head = ["strategy", *(title.format(k=report.k) for _, title in COLUMNS), "chunks", "mean tokens", "index"]
    rows = [[r.strategy, *(f"{100 * r.metrics[m]:.1f}" for m, _ in COLUMNS), str(r.chunks), f"{r.mean_tokens:.0f}",
             _size(r.index_bytes)] for r in report.results]
    if seconds:
        head.append("seconds")
        for row, r in zip(rows, report.results):
            row.append(f"{r.seconds:.1f}")
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]

    def line(row: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))

    return "\n".join([line(head), line(["-" * w for w in widths]), *map(line, rows)])


def _summary(report: EvalReport) -> str:
    n_bytes = sum(len(d.text.encode("utf-8")) for d in report.documents)
    scope = (f"span metrics over a budget of {report.budget} tokens" if report.budget
             else f"span metrics over top {report.k}")
    text = (f"{len(report.documents)} documents ({_size(n_bytes)}), {len(report.questions)} questions, "
            f"{len(report.results)} strategies; {scope}; metrics in percent")
    if report.skipped:
        more = len(report.skipped) - 8
        shown = ", ".join(report.skipped[:8]) + (f" and {more} more" if more > 0 else "")
        text += f"\nskipped {len(report.skipped)} files: {shown}"
    return text


def _figure_png(report: EvalReport) -> bytes:
    """Recall@k and IoU against mean chunk size, one line per strategy family, as PNG bytes."""
    from matplotlib.figure import Figure  # no pyplot: the caller's backend stays as it is

    fig = Figure(figsize=(11, 4.2), dpi=100)
    axes = fig.subplots(1, 2)
    families = sorted({r.family for r in report.results})
    palette = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:gray")
    colour = {name: palette[i % len(palette)] for i, name in enumerate(sorted({f.split(":")[-1] for f in families}))}
    for family in families:
        rows = sorted((r for r in report.results if r.family == family), key=lambda r: r.mean_tokens)
        x = [r.mean_tokens for r in rows]
        late = family.startswith("late:")
        for ax, metric in zip(axes, ("recall_at_k", "iou")):
            ax.plot(x, [100 * r.metrics[metric] for r in rows], "--" if late else "-", marker="s" if late else "o",
                    color=colour[family.split(":")[-1]], label=family)
    iou = "IoU" + (f" (budget {report.budget} tokens)" if report.budget else f" (top {report.k})")
    for ax, title in zip(axes, (f"recall@{report.k}", iou)):
        ax.set_xlabel("mean chunk size (cl100k tokens)")
        ax.set_ylabel(f"{title} (%)")
        ax.set_title(f"{title} against chunk size")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _passage_html(report: EvalReport, span: tuple[str, int, int], title: str, context: int = 160) -> str:
    from course_lib.display import chunks_to_html

    text = next(d.text for d in report.documents if d.path == span[0])
    a, b = max(0, span[1] - context), min(len(text), span[2] + context)
    return chunks_to_html(text[a:b], [(span[1] - a, span[2] - a)], title=title)


def render_html(report: EvalReport) -> str:
    """A self-contained HTML report: the table, the plots (inline PNG) and the questions every strategy missed."""
    e = html.escape
    head = "".join(f"<th>{e(t.format(k=report.k))}</th>" for t in
                   ["strategy", *(t for _, t in COLUMNS), "chunks", "mean tokens", "index", "seconds"])
    body = "".join(
        "<tr>" + f"<td>{e(r.strategy)}</td>" + "".join(f"<td>{100 * r.metrics[m]:.1f}</td>" for m, _ in COLUMNS)
        + f"<td>{r.chunks}</td><td>{r.mean_tokens:.0f}</td><td>{_size(r.index_bytes)}</td><td>{r.seconds:.1f}</td></tr>"
        for r in report.results)
    png = base64.b64encode(_figure_png(report)).decode("ascii")
    missed = [i for i in range(len(report.questions)) if not any(r.hit[i] for r in report.results)]
    best = report.results[0]
    items = []
    for i in missed[:MISSED_SHOWN]:
        q = report.questions[i]
        reference = " … ".join(_one_line(next(d.text for d in report.documents if d.path == doc)[s:t], 300)
                               for doc, s, t in q.spans[:3])
        parts = [f"<h3>{e(q.id)}. {e(q.question)}</h3>", f"<p><b>reference:</b> {e(reference)}</p>",
                 _passage_html(report, best.top[i], f"{best.strategy}: first chunk retrieved ({best.top[i][0]})")]
        if best.best_relevant[i] is not None:
            parts.append(_passage_html(report, best.best_relevant[i],
                                       f"{best.strategy}: best chunk holding the reference, "
                                       f"rank {best.first_rank[i]} ({best.best_relevant[i][0]})"))
        items.append('<div class="missed">' + "".join(parts) + "</div>")
    more = f"<p>and {len(missed) - MISSED_SHOWN} more.</p>" if len(missed) > MISSED_SHOWN else ""
    missed_html = ("".join(items) + more) if missed else "<p>None: every question was found by some strategy.</p>"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>chunk-eval report</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}
td:first-child,th:first-child{{text-align:left}}th{{background:#f0f0f0}}.missed{{margin-bottom:2em}}</style>
</head><body>
<h1>chunk-eval report</h1>
<p>{e(_summary(report)).replace(chr(10), "<br>")}. Model: {e(report.model)}.</p>
<h2>Results, best first</h2>
<table id="results"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>
<h2>Recall and IoU against chunk size</h2>
<img id="plots" alt="recall@{report.k} and IoU against mean chunk size, one line per strategy"
 src="data:image/png;base64,{png}">
<h2>Questions every strategy missed (top {report.k}): {len(missed)}</h2>
{missed_html}
</body></html>
"""


def _write_atomically(outputs: dict[Path, str]) -> None:
    """Write every file under a temporary name first, then rename them all: no half-written output."""
    temporary = {}
    try:
        for path, content in outputs.items():
            tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
            tmp.write_text(content, encoding="utf-8")
            temporary[path] = tmp
        for path, tmp in temporary.items():
            os.replace(tmp, path)
    finally:
        for tmp in temporary.values():
            tmp.unlink(missing_ok=True)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, status 2, as for every other bad input
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="chunk-eval", description="Measure chunking strategies on your own documents: "
                     "recall@k, MRR, nDCG@10, span recall and IoU for each strategy, best first.")
    parser.add_argument("docs", metavar="DOCS", help="folder of documents, read recursively "
                        f"({' '.join(TEXT_SUFFIXES)}; UTF-8)")
    parser.add_argument("questions", metavar="QUESTIONS", help="JSONL or CSV: question, answer (an exact quote), "
                        "optional document; JSONL may give spans instead of answer")
    parser.add_argument("--strategy", action="append", metavar="SPEC", help="a strategy id such as fixed:256, "
                        "recursive:256:32, sentence:5:1, late:recursive:256 (repeatable; default: a grid of "
                        "fixed, recursive and markdown at 128, 256, 384 tokens, naive and late)")
    parser.add_argument("--k", type=int, default=5, help="chunks retrieved per question (default 5)")
    parser.add_argument("--budget", type=int, metavar="TOKENS", help="score span metrics on the chunks that fit "
                        "this many cl100k tokens instead of the top k")
    parser.add_argument("--model", metavar="PATH", help="a local SentenceTransformer folder (default: the "
                        "course's all-MiniLM-L6-v2)")
    parser.add_argument("--cache", metavar="DIR", default=str(DEFAULT_CACHE),
                        help=f"folder of cached vectors (default {DEFAULT_CACHE})")
    parser.add_argument("--no-cache", action="store_true", help="keep no vectors on disk")
    parser.add_argument("--json", metavar="OUT.json", type=Path, help="write the results as JSON")
    parser.add_argument("--html", metavar="OUT.html", type=Path, help="write a self-contained HTML report")
    parser.add_argument("--skip-bad-files", action="store_true", help="skip files that are not valid UTF-8")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The `chunk-eval` command; returns the exit status (2 on bad input, with a one-line message)."""
    for name, value in (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1"), ("HF_HUB_DISABLE_TELEMETRY", "1"),
                        ("HF_HUB_DISABLE_PROGRESS_BARS", "1"), ("TRANSFORMERS_VERBOSITY", "error"),
                        ("TOKENIZERS_PARALLELISM", "false")):
        os.environ.setdefault(name, value)
    args = _parser().parse_args(argv)
    try:
        outputs = [p for p in (args.json, args.html) if p is not None]
        for path in outputs:
            if path.is_dir() or not path.parent.is_dir():
                raise ChunkEvalError(f"cannot write {str(path)!r}: " + (
                    "it is a folder" if path.is_dir() else f"the folder {str(path.parent)!r} does not exist"))
        report = evaluate(args.docs, args.questions, args.strategy, k=args.k, budget=args.budget, model=args.model,
                          cache=None if args.no_cache else args.cache, skip_bad_files=args.skip_bad_files,
                          quiet=args.quiet)
        contents = {}
        if args.json is not None:
            contents[args.json] = json.dumps(report.to_dict(), indent=1) + "\n"
        if args.html is not None:
            contents[args.html] = render_html(report)
        _write_atomically(contents)
    except ChunkEvalError as error:
        print(f"chunk-eval: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"chunk-eval: error: {error.strerror or error}: {error.filename or ''}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("chunk-eval: interrupted; nothing written", file=sys.stderr)
        return 130
    print(_summary(report))
    print(format_table(report))
    written = " and ".join(str(p) for p in contents)
    if written:
        print(f"wrote {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
