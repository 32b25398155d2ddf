"""Late chunking's memory, measured, and how long the answers are that chunks must hold.

    COURSE_DATA_DIR=/path/to/datasets nice -n 19 .venv/bin/python benchmarks/memory_and_answers.py

Memory. For notebook 06's handbook (the XR-12 manual and the collection's manuals and articles,
3,186 MiniLM tokens) and Chroma's corpora: bytes of the full token matrix (tokens x 384 x 4)
against the chunk vectors (chunks x 384 x 4). Peak resident memory (VmHWM in /proc/self/status)
of each configuration in a fresh subprocess, after loading the model and with the peak reset
(`/proc/self/clear_refs`), so the figure is the work's own: late chunking as course_lib does it
(pooling window by window), the full token matrix kept, naive chunk vectors, macro windows in
batches of 1, 8 or 32, and the collection's documents one at a time against all token matrices
held at once. One torch thread.

Answer lengths. cl100k tokens of Chroma's 790 reference excerpts (and per question, their sum),
and of the capstone's answers (data/capstone, notebook 13); for each chunk size, the share of
references longer than a chunk of that size, which no single chunk of that size can hold.

Writes results/memory_and_answers.json.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from course_lib.settings import apply_quiet_offline_env

apply_quiet_offline_env()
ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
CORPUS = "state_of_the_union"  # the Chroma corpus whose peak memory is measured
CHUNK_SIZES = (64, 128, 200, 250, 256, 384, 512)
HIDDEN = 384
FLOAT_BYTES = 4


def handbook() -> str:
    """Notebook 06's handbook: the XR-12 manual, then each non-glossary document of the collection."""
    collection = json.loads((DATA / "late_collection.json").read_text(encoding="utf-8"))
    parts = [(DATA / "xr12_manual.md").read_text(encoding="utf-8")]
    parts += [d["text"] for d in collection["documents"] if d["kind"] != "glossary"]
    return "\n\n".join(parts)


def documents_of(name: str) -> dict[str, str]:
    from course_lib.datasets import load_chroma_corpus

    if name == "handbook":
        return {"handbook": handbook()}
    if name == "collection":
        collection = json.loads((DATA / "late_collection.json").read_text(encoding="utf-8"))
        return {d["id"]: d["text"] for d in collection["documents"]}
    return {name: load_chroma_corpus(name)}


def chunks_of(name: str, text: str) -> list[tuple[int, int]]:
    from course_lib.strategies import chunk_with

    spec = "sentence:2" if name in ("handbook", "collection") else "recursive:250?separators=chroma"
    return [(c.start, c.end) for c in chunk_with(spec, text)]


def vm_hwm_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM line in /proc/self/status")


def child(config: str, name: str) -> dict:
    """Run one configuration in this (fresh) process and report its peak resident memory."""
    import torch

    from course_lib.late import late_chunk_embeddings, naive_chunk_embeddings, token_vectors, tokenize_document
    from course_lib.models import load_embedding_model

    torch.set_num_threads(1)
    model = load_embedding_model(max_seq_length=512)
    docs = documents_of(name)
    chunks = {d: chunks_of(name, t) for d, t in docs.items()}
    model.encode(["warm up"], show_progress_bar=False)
    after_load = vm_hwm_kib()
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak to the current resident set
    reset = vm_hwm_kib()
    began = time.perf_counter()
    kind, _, arg = config.partition("=")
    if kind == "late":  # course_lib: pool window by window, 8 windows a pass unless told
        for d, t in docs.items():
            late_chunk_embeddings(model, t, chunks[d], window=512, batch_size=int(arg or 8))
    elif kind == "matrix":  # keep every document's full token matrix, then pool
        kept = {d: token_vectors(model, tokenize_document(model, t), 512) for d, t in docs.items()}
        assert sum(len(v) for v in kept.values()) > 0
    elif kind == "naive":
        for d, t in docs.items():
            naive_chunk_embeddings(model, [t[s:e] for s, e in chunks[d]])
    elif kind == "idle":
        pass
    else:
        raise SystemExit(f"unknown configuration {config!r}")
    return {"config": config, "data": name, "peak_after_load_kib": after_load, "rss_at_reset_kib": reset,
            "peak_during_work_kib": vm_hwm_kib(), "added_peak_mib": round((vm_hwm_kib() - reset) / 1024, 1),
            "seconds": round(time.perf_counter() - began, 2)}


def memory() -> dict:
    from course_lib.datasets import CHROMA_CORPORA
    from course_lib.late import tokenize_document
    from course_lib.models import load_embedding_model

    model = load_embedding_model(max_seq_length=512)
    sizes = {}
    for name in ("handbook", *CHROMA_CORPORA):
        (text,) = documents_of(name).values()
        n_tokens = len(tokenize_document(model, text).ids)
        n_chunks = len(chunks_of(name, text))
        sizes[name] = {"tokens": n_tokens, "chunks": n_chunks,
                       "token_matrix_bytes": n_tokens * HIDDEN * FLOAT_BYTES,
                       "chunk_vector_bytes": n_chunks * HIDDEN * FLOAT_BYTES,
                       "ratio": round(n_tokens / n_chunks, 1)}
        print(f"{name}: {n_tokens} tokens, {n_chunks} chunks, token matrix {sizes[name]['token_matrix_bytes']:,} B, "
              f"chunk vectors {sizes[name]['chunk_vector_bytes']:,} B", flush=True)
    runs = []
    plan = [("idle", "handbook"), ("naive", "handbook"), ("late", "handbook"), ("matrix", "handbook"),
            ("idle", CORPUS), ("naive", CORPUS), ("late=1", CORPUS), ("late=8", CORPUS), ("late=32", CORPUS),
            ("matrix", CORPUS), ("late", "collection"), ("matrix", "collection")]
    for config, name in plan:
        out = subprocess.run([sys.executable, __file__, "--child", config, name], capture_output=True, text=True,
                             check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(f"  {config:8s} {name:20s} +{runs[-1]['added_peak_mib']:7.1f} MiB peak over the loaded model "
              f"({runs[-1]['peak_after_load_kib'] / 1024:.0f} MiB after loading), {runs[-1]['seconds']} s", flush=True)
    return {"sizes": sizes, "peak_rss": runs,
            "method": "VmHWM of a fresh subprocess; the peak reset after loading the model (echo 5 > "
                      "/proc/self/clear_refs), so added_peak_mib is the work's own peak above the loaded model"}


def describe(values: Sequence[int]) -> dict:
    a = np.asarray(values)
    return {"n": int(a.size), "mean": round(float(a.mean()), 1), "min": int(a.min()),
            **{f"p{p}": float(np.percentile(a, p)) for p in (10, 25, 50, 75, 90, 95, 99)}, "max": int(a.max()),
            "share_longer_than": {str(s): round(float((a > s).mean()), 4) for s in CHUNK_SIZES}}


def recall_by_length(answer_tokens: np.ndarray) -> dict:
    """Chroma span recall per question (5 chunks, stored by benchmarks/chroma_eval.py in results/) by the
    question's answer length in tokens, and for answers longer than the chunk size."""
    edges = (0, 32, 64, 128, 10**9)
    bins = list(itertools.pairwise(edges))
    out = {"bins_tokens": [f"{a + 1}-{b}" if b < 10**9 else f">{a}" for a, b in bins],
           "questions_per_bin": [int(((answer_tokens > a) & (answer_tokens <= b)).sum())
                                 for a, b in bins]}
    for stem in ("fixed_200_0_naive", "fixed_250_0_naive", "recursive_200_0_naive", "recursive_250_0_naive"):
        recall = np.array(json.loads((ROOT / "results" / f"{stem}.json").read_text(encoding="utf-8"))
                          ["per_question"]["recall"])
        if len(recall) != len(answer_tokens):
            raise SystemExit(f"results/{stem}.json holds {len(recall)} questions, not {len(answer_tokens)}")
        size = int(stem.split("_")[1])
        longer = answer_tokens > size
        out[stem] = {"mean_recall_per_bin": [round(float(recall[(answer_tokens > a) & (answer_tokens <= b)].mean()), 4)
                                             for a, b in bins],
                     "answers_longer_than_chunk": int(longer.sum()),
                     "mean_recall_when_longer": round(float(recall[longer].mean()), 4) if longer.any() else None,
                     "mean_recall_otherwise": round(float(recall[~longer].mean()), 4)}
    return out


def answers() -> dict:
    from course_lib.datasets import load_chroma_questions
    from course_lib.tokens import count_tokens
    from rag_tools.chunk_eval import read_documents, read_questions

    qs = load_chroma_questions()
    refs = [count_tokens(r["content"], "cl100k_base") for q in qs for r in q["references"]]
    per_question = [sum(count_tokens(r["content"], "cl100k_base") for r in q["references"]) for q in qs]
    documents, _ = read_documents(DATA / "capstone" / "docs")
    text_of = {d.path: d.text for d in documents}
    capstone = read_questions(DATA / "capstone" / "questions.jsonl", documents)
    cap = [count_tokens(text_of[d][s:e], "cl100k_base") for q in capstone for d, s, e in q.spans[:1]]
    out = {"chroma_references": describe(refs), "chroma_per_question": describe(per_question),
           "capstone_answers": describe(cap), "tokenizer": "cl100k_base",
           "note": "share_longer_than[s]: references longer than s tokens, which no single chunk of s tokens holds",
           "recall_by_answer_length": recall_by_length(np.array(per_question))}
    for key in ("chroma_references", "chroma_per_question", "capstone_answers"):
        d = out[key]
        print(f"{key}: n={d['n']}, median {d['p50']}, p90 {d['p90']}, max {d['max']}, "
              f"longer than 250: {d['share_longer_than']['250']:.1%}", flush=True)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", nargs=2, metavar=("CONFIG", "DATA"), help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "memory_and_answers.json")
    parser.add_argument("--part", choices=["all", "answers", "memory"], default="all",
                        help="measure one part again; the other stays as stored in --out")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    began = time.perf_counter()
    result = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
    for part, measure in (("answers", answers), ("memory", memory)):
        if args.part in (part, "all"):
            result[part] = measure()
            result[f"{part}_seconds"] = round(time.perf_counter() - began, 1)
    result["load_average_1min"] = round(os.getloadavg()[0], 2)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"total {time.perf_counter() - began:.1f} s", flush=True)


if __name__ == "__main__":
    main()
