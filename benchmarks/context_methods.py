"""Context methods side by side: headers, small-to-big, sentence windows, hybrid BM25, late chunking, a blend.

    COURSE_DATA_DIR=/path/to/datasets nice -n 19 .venv/bin/python -m benchmarks.context_methods
    .venv/bin/python -m benchmarks.context_methods --datasets collection reports    # the course's own, ~1-2 min

Three data sets, each written to results/context_<dataset>.json:

- `chroma`: Chroma's benchmark (five corpora, 472 questions with reference excerpts). Base
  chunks are benchmarks/chroma_eval.py's recursive 250-token chunks (Chroma's separators);
  the corpora have no Markdown headings, so a "header" is only the corpus title, and a
  parent is a larger recursive window (512 tokens).
- `collection`: the course's late-chunking collection (data/late_collection.json, notebook 06):
  12 Markdown documents, 44 questions, base chunks = pairs of sentences as in notebook 06.
- `reports`: the course's English Markdown documents with the 30 questions of notebook 08's Exercise 8.4
  (data/eval_questions.json), base chunks = pairs of sentences.

Every method returns ranked character spans; all are scored with course_lib.evaluation at
an equal budget of returned cl100k tokens (`budget_cutoff`), because small-to-big returns
more text than it indexes. Each question is also ranked twice: across the whole index
("which document, and which part?") and within its own document only ("which part?"),
MRR of the first returned span that overlaps the answer. Paired bootstrap intervals of
each method minus naive over questions. Each distinct text is embedded once per run,
with one torch thread.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from course_lib.datasets import (
    CHROMA_CORPORA,
)
from course_lib.embed import WINDOW, VectorCache, text_key
from course_lib.evalsets import (
    N_RESAMPLES,
    EvalSet,
    chroma_set,
    course_set,
    dense_order,
    first_hit,
    paired_interval,
    versions,
)
from course_lib.evaluation import budget_cutoff, span_scores
from course_lib.late import late_chunk_embeddings, pool_chunks, token_vectors, tokenize_document
from course_lib.models import MODEL_NAME, load_embedding_model
from course_lib.retrieval import (
    blend_vectors,
    bm25_index,
    bm25_rankings,
    headed_texts,
    lexical_words,
    parent_of,
    reciprocal_rank_fusion,
    sentence_windows,
    small_to_big,
)
from course_lib.tokens import count_tokens
from rag_tools.embedders import SentenceTransformerEmbedder

ROOT = Path(__file__).resolve().parent.parent

DATA = ROOT / "data"
TOKENIZER = "cl100k_base"
MAX_SEQ_LENGTH = WINDOW
BLEND_WEIGHT = 0.5  # exercise 6.3's fixed weight, not tuned here
METHODS = ("naive", "headers", "bm25", "hybrid", "hybrid+headers", "late", "blend", "parent-child", "sentence-window")
DESCRIPTIONS = {
    "naive": "each base chunk embedded on its own (MiniLM), cosine ranking",
    "headers": "base chunks embedded with the document title and heading path in front (offsets unchanged)",
    "bm25": "BM25 (bm25s) over the base chunks' text",
    "hybrid": "reciprocal rank fusion (k=60) of naive and bm25",
    "hybrid+headers": "reciprocal rank fusion of headers and BM25 over the headed text",
    "late": "late chunking of the base chunks (course_lib.late, 512-token windows)",
    "blend": "0.5 * late + 0.5 * naive vectors, normalized",
    "parent-child": "sentences (cut at the sentence limit) indexed, their parent returned once",
    "sentence-window": "sentences indexed, each hit returned with its neighbouring sentences, never twice",
}


class _TimedVectors:
    """MiniLM vectors of distinct texts (`course_lib.embed`: cached in memory, long texts pooled), each
    computed once per run, with the seconds spent per text."""

    def __init__(self, model):
        self.embedder = SentenceTransformerEmbedder(model)
        self.cache = VectorCache(None, self.embedder.name)
        self.seconds: dict[str, float] = {}

    def __call__(self, texts: list[str], desc: str) -> tuple[np.ndarray, float]:
        keys = [text_key("text", t) for t in texts]
        new = sorted({k: t for k, t in zip(keys, texts) if k not in self.cache}.items(), key=lambda kt: kt[1])
        if new:
            began = time.perf_counter()
            print(f"{desc}: embedding {len(new)} texts", file=sys.stderr, flush=True)
            self.cache.put([k for k, _ in new], self.embedder.encode([t for _, t in new]))
            per_text = (time.perf_counter() - began) / len(new)
            self.seconds.update((k, per_text) for k, _ in new)
        return np.stack([self.cache[k] for k in keys]), sum(self.seconds[k] for k in set(keys))


def run(ds: EvalSet, model, embedder: _TimedVectors) -> dict:
    """Every method on one data set: per-question scores, summaries, intervals, time and index size."""
    t0 = time.perf_counter()
    query_vectors = model.encode(ds.questions, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
    query_seconds = time.perf_counter() - t0
    docs_of = {"base": np.array([s[0] for s in ds.base]), "sentences": np.array([s[0] for s in ds.sentences])}
    base_texts = [ds.documents[d][s:e] for d, s, e in ds.base]
    headed = []
    for doc in ds.documents:
        rows = [(s, e) for d, s, e in ds.base if d == doc]
        headed += headed_texts(ds.documents[doc], rows, ds.titles[doc], headings=ds.headings)
    sentence_texts = [ds.documents[d][s:e] for d, s, e in ds.sentences]
    tokens = {name: np.array([count_tokens(ds.documents[d][s:e], TOKENIZER) for d, s, e in spans])
              for name, spans in (("base", ds.base), ("parents", ds.parents))}

    cost: dict[str, dict] = {}
    vectors: dict[str, np.ndarray] = {}
    vectors["naive"], seconds = embedder(base_texts, f"{ds.name}: chunks")
    cost["naive"] = {"embedding_s": seconds, "vectors": len(ds.base)}
    vectors["headers"], seconds = embedder(headed, f"{ds.name}: headed chunks")
    cost["headers"] = {"embedding_s": seconds, "vectors": len(ds.base)}
    vectors["sentences"], seconds = embedder(sentence_texts, f"{ds.name}: sentences")
    cost["parent-child"] = cost["sentence-window"] = {"embedding_s": seconds, "vectors": len(ds.sentences)}
    began = time.perf_counter()
    if ds.name == "chroma":  # long corpora: token vectors once, pooled per chunk
        late = []
        for c, text in ds.documents.items():
            doc = tokenize_document(model, text)
            late.append(pool_chunks(doc, token_vectors(model, doc, WINDOW), text,
                                    [(s, e) for d, s, e in ds.base if d == c]))
        vectors["late"] = np.concatenate(late)
    else:
        vectors["late"] = np.concatenate([
            late_chunk_embeddings(model, ds.documents[c], [(s, e) for d, s, e in ds.base if d == c], window=WINDOW)
            for c in ds.documents])
    cost["late"] = {"embedding_s": time.perf_counter() - began, "vectors": len(ds.base)}
    vectors["blend"] = blend_vectors(vectors["naive"], vectors["late"], BLEND_WEIGHT)
    cost["blend"] = {"embedding_s": cost["naive"]["embedding_s"] + cost["late"]["embedding_s"],
                     "vectors": len(ds.base)}
    began = time.perf_counter()
    order = {how: dense_order(query_vectors, vectors[how])
             for how in ("naive", "headers", "late", "blend", "sentences")}
    dense_search_s = (time.perf_counter() - began) / 5
    began = time.perf_counter()
    order["bm25"] = bm25_rankings(base_texts, ds.questions)
    bm25_s = time.perf_counter() - began
    began = time.perf_counter()
    order["bm25 headers"] = bm25_rankings(headed, ds.questions)
    cost["bm25"] = {"embedding_s": 0.0, "bm25_index_and_search_s": bm25_s, "vectors": 0}
    cost["hybrid"] = {"embedding_s": cost["naive"]["embedding_s"], "bm25_index_and_search_s": bm25_s,
                      "vectors": len(ds.base)}
    cost["hybrid+headers"] = {"embedding_s": cost["headers"]["embedding_s"],
                              "bm25_index_and_search_s": time.perf_counter() - began, "vectors": len(ds.base)}
    parent_index = parent_of(ds.sentences, ds.parents)

    def returned(how: str, q: int, doc: str | None) -> list[tuple[str, int, int]]:
        """Ranked spans of method `how` for question q, over the whole index or within `doc`."""
        def keep(ranking: list[int], unit: str = "base") -> list[int]:
            return ranking if doc is None else [i for i in ranking if docs_of[unit][i] == doc]

        if how in ("naive", "headers", "late", "blend", "bm25"):
            return [ds.base[i] for i in keep(order[how][q])]
        if how == "hybrid":
            return [ds.base[i] for i in reciprocal_rank_fusion([keep(order["naive"][q]), keep(order["bm25"][q])])]
        if how == "hybrid+headers":
            return [ds.base[i] for i in reciprocal_rank_fusion([keep(order["headers"][q]),
                                                                  keep(order["bm25 headers"][q])])]
        hits = keep(order["sentences"][q], "sentences")
        if how == "parent-child":
            return [ds.parents[p] for p in small_to_big(hits, parent_index)]
        return sentence_windows(hits, ds.sentences, ds.window)

    def token_count(span: tuple[str, int, int]) -> int:
        return count_tokens(ds.documents[span[0]][span[1]:span[2]], TOKENIZER)

    per_question: dict[str, dict[str, list[float]]] = {}
    seconds_per_method: dict[str, float] = {}
    for how in METHODS:
        began = time.perf_counter()
        scores: dict[str, list[float]] = {k: [] for k in ("rr", "rr_within", "right_document_first", "span_recall",
                                                           "span_precision", "iou", "returned_tokens")}
        for q in range(len(ds.questions)):
            spans = returned(how, q, None)
            if not spans:  # BM25 found no shared word: nothing returned
                for values in scores.values():
                    values.append(0.0)
                scores["rr_within"][-1] = first_hit(returned(how, q, ds.question_docs[q]), ds.references[q])
                continue
            head = spans[:64]
            counts = [token_count(s) for s in head]
            n = budget_cutoff(counts, ds.budget)
            s = span_scores(head[:n], ds.references[q])
            scores["rr"].append(first_hit(spans, ds.references[q]))
            scores["rr_within"].append(first_hit(returned(how, q, ds.question_docs[q]), ds.references[q]))
            scores["right_document_first"].append(float(spans[0][0] == ds.question_docs[q]))
            scores["span_recall"].append(s.recall)
            scores["span_precision"].append(s.precision)
            scores["iou"].append(s.iou)
            scores["returned_tokens"].append(float(sum(counts[:n])))
        per_question[how] = scores
        seconds_per_method[how] = time.perf_counter() - began

    def index_bytes(how: str) -> int:
        dense = cost[how]["vectors"] * 384 * 4  # float32 vectors
        if how in ("bm25", "hybrid", "hybrid+headers"):  # the index bm25_rankings builds (lexical_words)
            retriever, _ = bm25_index(lexical_words(base_texts if how != "hybrid+headers" else headed))
            dense += sum(a.nbytes for a in retriever.scores.values() if isinstance(a, np.ndarray))
        return int(dense)

    summary = {}
    for how in METHODS:
        sc = {k: np.array(v) for k, v in per_question[how].items()}
        base_sc = {k: np.array(v) for k, v in per_question["naive"].items()}
        summary[how] = {
            "description": DESCRIPTIONS[how],
            "mrr": round(float(sc["rr"].mean()), 4),
            "mrr_within_document": round(float(sc["rr_within"].mean()), 4),
            "right_document_first": round(float(sc["right_document_first"].mean()), 4),
            "span_recall": round(float(sc["span_recall"].mean()), 4),
            "span_precision": round(float(sc["span_precision"].mean()), 4),
            "iou": round(float(sc["iou"].mean()), 4),
            "mean_returned_tokens": round(float(sc["returned_tokens"].mean()), 1),
            "vs_naive": {k: paired_interval(sc[key] - base_sc[key]) for k, key in
                         (("mrr", "rr"), ("mrr_within_document", "rr_within"), ("span_recall", "span_recall"),
                          ("iou", "iou"))},
            "index_vectors": cost[how]["vectors"],
            "index_bytes": index_bytes(how),
            "embedding_s": round(cost[how]["embedding_s"], 2),
            "bm25_s": round(cost[how].get("bm25_index_and_search_s", 0.0), 3),
            "search_and_score_s": round(seconds_per_method[how], 2),
        }
    return {
        "dataset": ds.name,
        "setup": {**ds.setup, "n_documents": len(ds.documents), "n_questions": len(ds.questions),
                  "n_base_chunks": len(ds.base), "n_parents": len(ds.parents), "n_sentences": len(ds.sentences),
                  "mean_tokens": {"base": round(float(tokens["base"].mean()), 1),
                                  "parents": round(float(tokens["parents"].mean()), 1)},
                  "model": MODEL_NAME, "max_seq_length": MAX_SEQ_LENGTH, "blend_weight": BLEND_WEIGHT,
                  "tokenizer": TOKENIZER, "bootstrap_resamples": N_RESAMPLES,
                  "relevance": "a returned span is a hit if it shares a character with a reference excerpt",
                  "metrics": {"mrr": "1/rank of the first hit, whole index", "mrr_within_document":
                              "the same, ranking only the question's own document",
                              "span_recall/span_precision/iou": "course_lib.evaluation.span_scores of the spans "
                              "within the token budget (budget_cutoff)"}},
        "methods": summary,
        "per_question": {how: {k: [round(x, 4) for x in v] for k, v in per_question[how].items()
                               if k in ("rr", "rr_within", "span_recall", "iou")} for how in METHODS},
        "query_embedding_s": round(query_seconds, 2),
        "dense_search_s": round(dense_search_s, 3),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["collection", "reports", "chroma"],
                        choices=["collection", "reports", "chroma"])
    parser.add_argument("--corpora", nargs="+", default=list(CHROMA_CORPORA), choices=CHROMA_CORPORA,
                        help="a subset of Chroma's corpora for a quick check (files are then named *_subset)")
    parser.add_argument("--out", type=Path, default=ROOT / "results")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    began = time.perf_counter()
    model = load_embedding_model(max_seq_length=MAX_SEQ_LENGTH)
    builders: dict[str, Callable[[], EvalSet]] = {
        "collection": lambda: course_set("collection"), "reports": lambda: course_set("reports"),
        "chroma": lambda: chroma_set(args.corpora)}
    for name in args.datasets:
        t0 = time.perf_counter()
        ds = builders[name]()
        result = run(ds, model, _TimedVectors(model))
        result["versions"] = versions()
        result["seconds"] = round(time.perf_counter() - t0, 1)
        result["load_average_1min"] = round(os.getloadavg()[0], 2)
        stem = "context_" + name + ("_subset" if name == "chroma" and len(args.corpora) < len(CHROMA_CORPORA) else "")
        (args.out / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(f"{name}: {len(ds.questions)} questions, {result['seconds']:.0f} s", flush=True)
        print(f"  {'method':16s} {'MRR':>6s} {'within':>6s} {'doc@1':>6s} {'recall':>6s} {'IoU':>6s} {'tokens':>6s}")
        for how, m in result["methods"].items():
            print(f"  {how:16s} {m['mrr']:6.3f} {m['mrr_within_document']:6.3f} {m['right_document_first']:6.3f} "
                  f"{m['span_recall']:6.3f} {m['iou']:6.3f} {m['mean_returned_tokens']:6.0f}", flush=True)
    print(f"total {time.perf_counter() - began:.0f} s", flush=True)


if __name__ == "__main__":
    main()
