"""The three question sets of notebook 10's comparison, and how its benchmarks score a ranking.

`benchmarks/context_methods.py` (notebook 10's table), `benchmarks/late_interaction.py` (notebook 11)
and `benchmarks/llm_context.py` all measure on the same sets, built here once:

- `course_set("collection")`: the late-chunking collection of notebook 06 (`data/late_collection.json`,
  12 Markdown documents, 44 questions); `course_set("reports")`: the course's English Markdown
  documents with the 30 questions of notebook 08's Exercise 8.4; base chunks are pairs of sentences;
- `chroma_set(corpora)`: Chroma's benchmark, base chunks of 250 tokens with Chroma's separators.

Everything is a character span `(document, start, end)`. A ranking is scored by the reciprocal
rank of the first span that overlaps a reference (`first_hit`).
"""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version

import numpy as np

from course_lib.chunking import Chunk, fixed_size_chunks, markdown_sections, split_sentences
from course_lib.datasets import REPO_ROOT, load_chroma_corpus, load_chroma_questions
from course_lib.evaluation import VectorIndex, budget_cutoff, span_scores
from course_lib.stats import mean_interval
from course_lib.strategies import chunk_with, parse_strategy
from course_lib.tokens import count_tokens

__all__ = ["CHROMA_BASE", "CHROMA_PARENT", "CHROMA_TITLES", "COURSE_BASE", "SENTENCE_LIMIT", "EvalSet",
           "chroma_set", "course_set", "dense_order", "first_hit", "markdown_parents", "overlaps",
           "paired_interval", "score_methods", "sentence_units", "spans_of", "versions"]

DATA = REPO_ROOT / "data"
TOKENIZER = "cl100k_base"
COURSE_BASE = parse_strategy("sentence:2")  # pairs of sentences, as in notebook 06
CHROMA_BASE = parse_strategy("recursive:250?separators=chroma")  # benchmarks/chroma_eval.py's recursive_250_0
CHROMA_PARENT = parse_strategy("recursive:512?separators=chroma")
N_RESAMPLES = 5000  # bootstrap resamples of the benchmarks' intervals (results/context_*.json)
SENTENCE_LIMIT = 96  # cl100k tokens; a longer "sentence" (a table, a log line) is cut into windows of this size
CHROMA_TITLES = {"chatlogs": "Chat logs", "finance": "Finance", "pubmed": "PubMed articles",
                 "state_of_the_union": "State of the Union address", "wikitexts": "Wikipedia articles"}


@dataclass
class EvalSet:
    """Documents, questions and the units each method indexes or returns, all as character spans."""

    name: str
    documents: dict[str, str]
    titles: dict[str, str | None]
    questions: list[str]
    question_docs: list[str]
    references: list[list[tuple[str, int, int]]]
    base: list[tuple[str, int, int]]
    parents: list[tuple[str, int, int]]
    sentences: list[tuple[str, int, int]]
    budget: int
    window: int
    headings: bool
    setup: dict = field(default_factory=dict)


def sentence_units(text: str, limit: int = SENTENCE_LIMIT) -> list[tuple[int, int]]:
    """The sentences of `text`; one longer than `limit` cl100k tokens is cut into fixed windows of `limit`."""
    out = []
    for s, e in split_sentences(text):
        if count_tokens(text[s:e], TOKENIZER) <= limit:
            out.append((s, e))
        else:
            out += [(s + c.start, s + c.end) for c in fixed_size_chunks(text[s:e], limit, tokenizer=TOKENIZER)]
    return out


def spans_of(doc: str, chunks: Sequence[Chunk | tuple[int, int]]) -> list[tuple[str, int, int]]:
    return [(doc, c.start, c.end) if isinstance(c, Chunk) else (doc, *c) for c in chunks]


def markdown_parents(doc: str, text: str) -> list[tuple[str, int, int]]:
    """The Markdown sections of a document (heading line included), as parents."""
    out = []
    for s, e, _ in markdown_sections(text):
        while e > s and text[e - 1].isspace():
            e -= 1
        out.append((doc, s, e))
    return out


def course_set(name: str) -> EvalSet:
    """The late-chunking collection or notebook 08's reports, with sentence pairs as base chunks."""
    if name == "collection":
        data = json.loads((DATA / "late_collection.json").read_text(encoding="utf-8"))
        documents = {d["id"]: d["text"] for d in data["documents"]}
        titles = {d["id"]: d["title"] for d in data["documents"]}
        qs = data["questions"]
        questions = [q["question"] for q in qs]
        qdocs = [q["doc_id"] for q in qs]
        refs = [[(q["doc_id"], q["start"], q["end"])] for q in qs]
    else:
        data = json.loads((DATA / "eval_questions.json").read_text(encoding="utf-8"))
        files = ["annual_report.md", "city_report.md", "neighbourhood_bulletin.md", "xr12_manual.md"]
        documents = {f: (DATA / f).read_text(encoding="utf-8") for f in files}
        titles = dict.fromkeys(files)  # the heading path starts with each file's own "# Title"
        qs = data["questions"]
        questions = [q["question"] for q in qs]
        qdocs = [q["file"] for q in qs]
        refs = []
        for q in qs:
            start = documents[q["file"]].index(q["answer"])
            refs.append([(q["file"], start, start + len(q["answer"]))])
    base = [s for d, t in documents.items() for s in spans_of(d, chunk_with(COURSE_BASE, t))]
    parents = [s for d, t in documents.items() for s in markdown_parents(d, t)]
    sentences = [s for d, t in documents.items() for s in spans_of(d, sentence_units(t))]
    return EvalSet(name, documents, titles, questions, qdocs, refs, base, parents, sentences, budget=150, window=1,
                   headings=True, setup={"base": f"{COURSE_BASE.id} (pairs of sentences, no overlap)",
                                         "parents": "Markdown sections (markdown_sections)",
                                         "sentences": f"split_sentences, longer than {SENTENCE_LIMIT} tokens cut",
                                         "sentence_window": 1, "budget_tokens": 150,
                                         "headers": "document title and heading path"})


def chroma_set(corpora: Sequence[str]) -> EvalSet:
    documents = {c: load_chroma_corpus(c) for c in corpora}
    qs = [q for q in load_chroma_questions() if q["corpus_id"] in documents]
    base = [s for c, t in documents.items() for s in spans_of(c, chunk_with(CHROMA_BASE, t))]
    parents = [s for c, t in documents.items() for s in spans_of(c, chunk_with(CHROMA_PARENT, t))]
    sentences = [s for c, t in documents.items() for s in spans_of(c, sentence_units(t))]
    return EvalSet("chroma", documents, {c: CHROMA_TITLES[c] for c in documents}, [q["question"] for q in qs],
                   [q["corpus_id"] for q in qs], [_references(q) for q in qs], base, parents, sentences,
                   budget=1000, window=2, headings=False,
                   setup={"base": f"{CHROMA_BASE.id} (the chunks of benchmarks/chroma_eval.py's recursive_250_0)",
                          "parents": f"{CHROMA_PARENT.id}",
                          "sentences": f"split_sentences, longer than {SENTENCE_LIMIT} tokens cut",
                          "sentence_window": 2, "budget_tokens": 1000, "headers": "corpus title only"})


def _references(question: dict) -> list[tuple[str, int, int]]:
    """A Chroma question's reference excerpts as (corpus, start, end) spans."""
    return [(question["corpus_id"], r["start_index"], r["end_index"]) for r in question["references"]]


def dense_order(query_vectors: np.ndarray, vectors: np.ndarray) -> list[list[int]]:
    ranked, _ = VectorIndex(vectors).search(query_vectors, k=len(vectors))
    return ranked


def overlaps(span: tuple[str, int, int], refs: Sequence[tuple[str, int, int]]) -> bool:
    return any(span[0] == d and span[1] < e and span[2] > s for d, s, e in refs)


def first_hit(spans: Sequence[tuple[str, int, int]], refs) -> float:
    for rank, span in enumerate(spans, start=1):
        if overlaps(span, refs):
            return 1.0 / rank
    return 0.0


def paired_interval(diff: np.ndarray, seed: int = 0) -> list[float]:
    """Mean per-question difference and its 95% paired bootstrap interval (`course_lib.stats`), 4 decimals."""
    return [round(float(v), 4) for v in mean_interval(diff, resamples=N_RESAMPLES, seed=seed)]


def versions() -> dict[str, str]:
    """The versions a benchmark's numbers depend on, stored with its results."""
    names = ["numpy", "torch", "sentence-transformers", "transformers", "tokenizers", "tiktoken", "bm25s"]
    return {"python": platform.python_version(), **{n: version(n) for n in names}}


def score_methods(ds: EvalSet, ranking: Callable[[str, int, str | None], list[int]],
                  methods: Sequence[str]) -> tuple[dict, dict, dict]:
    """Score each method's rankings of `ds.base` as benchmarks/context_methods.py scores its own: MRR of the first
    span overlapping a reference (whole index and within the question's document), span recall and IoU
    of the spans within the token budget, paired bootstrap intervals against `methods[0]`.

    `ranking(method, q, doc)` gives base-chunk numbers for question q, best first (only `doc`'s if not None).
    Returns (summary, per-question scores, seconds per question of ranking the whole index)."""
    per_question: dict[str, dict[str, list[float]]] = {}
    seconds: dict[str, float] = {}
    for method in methods:
        t0 = time.perf_counter()
        ranked = [ranking(method, q, None) for q in range(len(ds.questions))]
        seconds[method] = (time.perf_counter() - t0) / len(ds.questions)
        scores: dict[str, list[float]] = {k: [] for k in ("rr", "rr_within", "span_recall", "iou", "returned_tokens")}
        for q in range(len(ds.questions)):
            spans = [ds.base[i] for i in ranked[q]]
            within = [ds.base[i] for i in ranking(method, q, ds.question_docs[q])]
            head = spans[:64]
            counts = [count_tokens(ds.documents[d][s:e], TOKENIZER) for d, s, e in head]
            n = budget_cutoff(counts, ds.budget) if head else 0
            s = span_scores(head[:n], ds.references[q]) if head else None
            scores["rr"].append(first_hit(spans, ds.references[q]))
            scores["rr_within"].append(first_hit(within, ds.references[q]))
            scores["span_recall"].append(s.recall if s else 0.0)
            scores["iou"].append(s.iou if s else 0.0)
            scores["returned_tokens"].append(float(sum(counts[:n])))
        per_question[method] = scores
    summary = {}
    base = {k: np.array(v) for k, v in per_question[methods[0]].items()}
    for method in methods:
        sc = {k: np.array(v) for k, v in per_question[method].items()}
        summary[method] = {
            "mrr": round(float(sc["rr"].mean()), 4),
            "mrr_within_document": round(float(sc["rr_within"].mean()), 4),
            "recall_at_1": round(float((sc["rr"] == 1).mean()), 4),
            "span_recall": round(float(sc["span_recall"].mean()), 4),
            "iou": round(float(sc["iou"].mean()), 4),
            "mean_returned_tokens": round(float(sc["returned_tokens"].mean()), 1),
            f"vs_{methods[0]}": {k: paired_interval(sc[key] - base[key]) for k, key in
                                 (("mrr", "rr"), ("mrr_within_document", "rr_within"),
                                  ("span_recall", "span_recall"), ("iou", "iou"))},
        }
    return summary, per_question, seconds
