"""Late interaction (MaxSim over MiniLM token vectors) as a first-stage retriever and as a top-50 reranker.

    .venv/bin/python benchmarks/late_interaction.py --datasets collection reports     # about 2 minutes
    COURSE_DATA_DIR=/path/to/datasets nice -n 19 .venv/bin/python benchmarks/late_interaction.py --datasets chroma

Same data, base chunks, budget and scoring as benchmarks/context_methods.py (notebook 10's table):
`course_lib.evalsets`' `course_set`/`chroma_set`, `dense_order`, `first_hit` and `paired_interval`
are called, not copied. Methods:

- `naive`, `hybrid`: the baselines (MiniLM cosine; reciprocal rank fusion with BM25);
- `maxsim-alone`, `maxsim-late`: MaxSim over every chunk, token vectors from each chunk encoded
  alone (ColBERT's way) or from the document's 512-token macro windows (the vectors late chunking pools);
- `rerank-<alone|late>:<naive|hybrid>`: the top 50 of the naive or hybrid ranking reordered by MaxSim.

all-MiniLM-L6-v2 was trained for mean pooling, not MaxSim. Also measured: index size (token
vectors per chunk vector, bytes), query latency (query encoding, first-stage MaxSim, reranking)
and, on the collection, notebook 06's questions that naive retrieval missed at rank 1 whose answer
chunk does not open with a reference word, rerun through the reranker. Results:
results/late_interaction_<dataset>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from course_lib.settings import apply_quiet_offline_env

apply_quiet_offline_env()
ROOT = Path(__file__).resolve().parent.parent

from course_lib.datasets import CHROMA_CORPORA  # noqa: E402
from course_lib.embed import embed_texts  # noqa: E402
from course_lib.evalsets import (  # noqa: E402
    EvalSet,
    chroma_set,
    course_set,
    dense_order,
    score_methods,
    versions,
)
from course_lib.late_interaction import RERANK_DEPTH, chunk_token_index, query_token_vectors, rerank  # noqa: E402
from course_lib.models import MODEL_NAME, load_embedding_model  # noqa: E402
from course_lib.retrieval import bm25_rankings, reciprocal_rank_fusion  # noqa: E402

WINDOW = 512
METHODS = ("naive", "hybrid", "maxsim-alone", "maxsim-late", "rerank-alone:naive", "rerank-late:naive",
           "rerank-alone:hybrid", "rerank-late:hybrid")
# notebook 06, section 7 (its orphan-openers cell): the English reference words a chunk may open with
OPENERS = ["It", "Its", "This", "These", "That", "Those", "They", "Their", "He", "His", "She", "Her",
           "The device", "The machine", "The unit", "Such"]
HEADINGS = re.compile(r"\s*(?:#{1,6} [^\n]*\n\s*)*")


def orphan_opener(text: str) -> str | None:
    """The reference word a chunk opens with after any Markdown heading, or None (notebook 06's test)."""
    body = text[HEADINGS.match(text).end():]
    return next((w for w in OPENERS if re.match(rf"{w}\b", body)), None)


def run(ds: EvalSet, model) -> dict:
    began = time.perf_counter()
    base_texts = [ds.documents[d][s:e] for d, s, e in ds.base]
    docs_of = np.array([d for d, _, _ in ds.base])
    t0 = time.perf_counter()
    query_vectors = model.encode(ds.questions, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
    query_pooled_s = (time.perf_counter() - t0) / len(ds.questions)
    t0 = time.perf_counter()
    naive_vectors = embed_texts(model, base_texts)  # what context_methods embeds for `naive`
    naive_s = time.perf_counter() - t0
    naive = dense_order(query_vectors, naive_vectors)
    bm25 = bm25_rankings(base_texts, ds.questions)
    t0 = time.perf_counter()
    query_tokens = query_token_vectors(model, ds.questions)
    query_tokens_s = (time.perf_counter() - t0) / len(ds.questions)

    indexes, build_s = {}, {}
    for how in ("alone", "late"):
        t0 = time.perf_counter()
        indexes[how] = chunk_token_index(model, ds.documents, ds.base, how, window=WINDOW)
        build_s[how] = round(time.perf_counter() - t0, 2)
        print(f"  {ds.name}: {how} token index, {indexes[how].vectors.shape[0]} vectors, {build_s[how]} s", flush=True)
    first_stage: dict[str, list[list[int]]] = {}
    search_s: dict[str, float] = {}
    position = {s: i for i, s in enumerate(ds.base)}
    for how, index in indexes.items():
        t0 = time.perf_counter()
        first_stage[how] = [[position[s] for s in index.search(q)] for q in query_tokens]
        search_s[how] = (time.perf_counter() - t0) / len(ds.questions)

    def ranking(method: str, q: int, doc: str | None) -> list[int]:
        def keep(r: list[int]) -> list[int]:
            return r if doc is None else [i for i in r if docs_of[i] == doc]

        if method == "naive":
            return keep(naive[q])
        if method == "hybrid":
            return reciprocal_rank_fusion([keep(naive[q]), keep(bm25[q])])
        if method.startswith("maxsim-"):
            return keep(first_stage[method.split("-")[1]][q])
        how, stage = method.removeprefix("rerank-").split(":")
        spans = [ds.base[i] for i in ranking(stage, q, doc)]
        return [position[s] for s in rerank(indexes[how], query_tokens[q], spans, depth=RERANK_DEPTH)]

    summary, per_question, seconds = score_methods(ds, ranking, METHODS)
    rerank_s = {m: v for m, v in seconds.items() if m.startswith("rerank-")}
    single_bytes = len(ds.base) * naive_vectors.shape[1] * 4
    index_size = {
        "single_vector": {"vectors": len(ds.base), "bytes": single_bytes},
        **{f"tokens-{how}": {"vectors": int(ix.vectors.shape[0]), "bytes": ix.nbytes,
                             "token_vectors_per_chunk_vector": round(ix.vectors.shape[0] / len(ds.base), 1),
                             "times_single_vector_bytes": round(ix.nbytes / single_bytes, 1),
                             "build_s": build_s[how]} for how, ix in indexes.items()},
    }
    latency_ms = {"query_pooled_encode": round(1000 * query_pooled_s, 2),
                  "query_tokens_encode": round(1000 * query_tokens_s, 2),
                  **{f"maxsim_first_stage_{how}": round(1000 * v, 2) for how, v in search_s.items()},
                  **{f"{m}_given_first_stage_ranking": round(1000 * v, 2) for m, v in rerank_s.items()}}
    t0 = time.perf_counter()
    dense_order(query_vectors, naive_vectors)
    latency_ms["dense_search"] = round(1000 * (time.perf_counter() - t0) / len(ds.questions), 3)
    result = {
        "dataset": ds.name,
        "setup": {**ds.setup, "n_documents": len(ds.documents), "n_questions": len(ds.questions),
                  "n_base_chunks": len(ds.base), "model": MODEL_NAME, "window": WINDOW, "rerank_depth": RERANK_DEPTH,
                  "note": "all-MiniLM-L6-v2 was trained for mean pooling, not for MaxSim",
                  "special_tokens": "[CLS] and [SEP] left out of chunks and queries; queries encoded alone",
                  "scoring": "as benchmarks/context_methods.py: MRR of the first span overlapping a reference, "
                             "within-document MRR, span recall and IoU at the token budget, paired bootstrap vs naive"},
        "methods": summary,
        "index_size": index_size,
        "latency_ms_per_query": latency_ms,
        "naive_embedding_s": round(naive_s, 2),
        "per_question": {m: {k: [round(x, 4) for x in per_question[m][k]] for k in ("rr", "rr_within")}
                         for m in METHODS},
    }
    if ds.name == "collection":
        result["notebook_06_misses"] = misses(ds, per_question)
    result["seconds"] = round(time.perf_counter() - began, 1)
    return result


def misses(ds: EvalSet, per_question: dict[str, dict[str, list[float]]]) -> dict:
    """Notebook 06's questions missed at rank 1 by naive retrieval, split by whether the answer chunk
    opens with a reference word, and how many each reranker brings to rank 1."""
    rr = {m: np.array(v["rr"]) for m, v in per_question.items()}
    failed = [q for q in range(len(ds.questions)) if rr["naive"][q] < 1]
    answer_chunk = []
    for q in failed:
        d, s, e = ds.references[q][0]
        hits = [c for c in ds.base if c[0] == d and c[1] < e and c[2] > s]
        answer_chunk.append(ds.documents[d][hits[0][1]:hits[0][2]])
    groups = {"orphan": [q for q, t in zip(failed, answer_chunk) if orphan_opener(t)],
              "other": [q for q, t in zip(failed, answer_chunk) if not orphan_opener(t)]}
    out = {"naive_missed_rank_1": len(failed), "of_questions": len(ds.questions)}
    for group, idx in groups.items():
        out[group] = {"questions": len(idx), "question_ids": idx}
        for m in METHODS[1:]:
            out[group][m] = {"rank_1": int(sum(rr[m][q] == 1 for q in idx)),
                             "higher": int(sum(rr[m][q] > rr["naive"][q] for q in idx)),
                             "lower": int(sum(rr[m][q] < rr["naive"][q] for q in idx))}
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["collection", "reports", "chroma"],
                        choices=["collection", "reports", "chroma"])
    parser.add_argument("--corpora", nargs="+", default=list(CHROMA_CORPORA), choices=CHROMA_CORPORA,
                        help="a subset of Chroma's corpora (the file is then named *_subset)")
    parser.add_argument("--out", type=Path, default=ROOT / "results")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    model = load_embedding_model(max_seq_length=WINDOW)
    for name in args.datasets:
        ds = chroma_set(args.corpora) if name == "chroma" else course_set(name)
        subset = name == "chroma" and len(args.corpora) < len(CHROMA_CORPORA)
        result = run(ds, model)
        result["versions"] = versions()
        result["load_average_1min"] = round(os.getloadavg()[0], 2)
        result["corpora"] = sorted(ds.documents) if name == "chroma" else None
        stem = f"late_interaction_{name}{'_subset' if subset else ''}"
        (args.out / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(f"{name}: {len(ds.questions)} questions, {result['seconds']:.0f} s", flush=True)
        print(f"  {'method':20s} {'MRR':>6s} {'within':>6s} {'R@1':>6s} {'recall':>6s} {'IoU':>6s}")
        for m, v in result["methods"].items():
            print(f"  {m:20s} {v['mrr']:6.3f} {v['mrr_within_document']:6.3f} {v['recall_at_1']:6.3f} "
                  f"{v['span_recall']:6.3f} {v['iou']:6.3f}", flush=True)
        print("  index:", json.dumps(result["index_size"]))
        print("  latency ms:", json.dumps(result["latency_ms_per_query"]))
        if "notebook_06_misses" in result:
            print("  notebook 06 misses:", json.dumps(result["notebook_06_misses"]), flush=True)


if __name__ == "__main__":
    main()
