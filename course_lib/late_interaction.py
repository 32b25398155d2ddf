"""Late interaction (ColBERT's MaxSim): keep one vector per token, compare them with the query at search time.

A single-vector index stores one vector per chunk. Late interaction (Khattab & Zaharia, 2020)
stores every token vector of every chunk and scores a chunk by MaxSim: for each query token,
the best cosine with any of the chunk's tokens, summed over the query's tokens. Late chunking
pools the same kind of token vectors into one vector per chunk, so that it fits any vector
index; here they are kept.

Two ways to get a chunk's token vectors from all-MiniLM-L6-v2:

- `chunk_token_index(..., how="alone")`: each chunk encoded on its own (ColBERT's way);
- `chunk_token_index(..., how="late")`: the chunk's tokens taken from its document's macro
  windows (`course_lib.late`), the vectors late chunking averages.

[CLS] and [SEP] are left out on both sides; queries are encoded alone. MiniLM was trained to
be mean-pooled, not for MaxSim: measure before trusting it. Every search returns ranked
character spans `(doc, start, end)`, like `course_lib.retrieval`.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from course_lib.evaluation import unit_rows
from course_lib.late import content_token_ranges, token_vectors, tokenize_document

__all__ = [
    "RERANK_DEPTH",
    "TokenIndex",
    "chunk_token_index",
    "maxsim",
    "query_token_vectors",
    "rerank",
]

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

Span = tuple[Hashable, int, int]
RERANK_DEPTH = 50  # how many results of a first-stage ranking the reranker rescores
BATCH_SIZE = 32  # texts per forward pass when each text is encoded alone


def maxsim(query: Any, document: Any) -> float:
    """MaxSim of two token matrices: the sum over query rows of the best cosine with any document row.

    `query` is (m, d) and `document` (n, d); rows need not be normalized. Computed in float32, as the index stores.
    """
    q, d = unit_rows("query", query), unit_rows("document", document)
    if q.shape[1] != d.shape[1]:
        raise ValueError(f"query has dimension {q.shape[1]} but document {d.shape[1]}; use one model for both")
    return float((q @ d.T).max(axis=1).sum())


@dataclass(frozen=True)
class TokenIndex:
    """Token vectors of ranked units: chunk `i` (`spans[i]`) owns rows `bounds[i]:bounds[i + 1]` of `vectors`.

    Rows are L2-normalized float32, so a dot product is a cosine.
    """

    spans: list[Span]
    vectors: np.ndarray
    bounds: np.ndarray

    def __post_init__(self) -> None:
        bounds = np.asarray(self.bounds)
        if len(bounds) != len(self.spans) + 1 or bounds[0] != 0 or bounds[-1] != len(self.vectors) \
                or (np.diff(bounds) < 1).any():
            raise ValueError("bounds must run from 0 to len(vectors), one step of at least one row per span")
        if len(set(self.spans)) != len(self.spans):
            raise ValueError("spans holds a span twice; index each chunk once")

    def __len__(self) -> int:
        return len(self.spans)

    @property
    def nbytes(self) -> int:
        """Bytes of the token vectors (what the index stores beyond the spans)."""
        return int(self.vectors.nbytes)

    def tokens_per_chunk(self) -> np.ndarray:
        return np.diff(self.bounds)

    def scores(self, query: Any, chunks: Sequence[int] | None = None) -> np.ndarray:
        """MaxSim score of every chunk (or of the chunks numbered `chunks`, in that order) for one
        query's token matrix (m, d)."""
        q, picked = _check_scores_args(self, query, chunks)
        if picked is None:
            vectors, starts = self.vectors, self.bounds[:-1]
        elif picked.size == 0:
            return np.empty(0)
        else:  # the rows of the picked chunks, one chunk after another
            lengths = self.bounds[picked + 1] - self.bounds[picked]
            starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
            rows = np.repeat(self.bounds[picked] - starts, lengths) + np.arange(lengths.sum())
            vectors = self.vectors[rows]
        best = np.maximum.reduceat(vectors @ q.T, starts, axis=0)  # (chunks, query tokens)
        return best.sum(axis=1, dtype=np.float64)

    def search(self, query: Any, k: int | None = None) -> list[Span]:
        """The spans ranked by MaxSim, best first (equal scores keep index order); the top `k` if given."""
        if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1):
            raise ValueError(f"k={k!r} must be a positive int, or None for every chunk")
        order = np.argsort(-self.scores(query), kind="stable")
        return [self.spans[i] for i in order[:k]]


def rerank(index: TokenIndex, query: Any, ranking: Sequence[Span], depth: int = RERANK_DEPTH) -> list[Span]:
    """`ranking` with its first `depth` spans reordered by MaxSim (ties keep their order); the rest follow unchanged.

    Every span of the first `depth` must be a chunk of `index`.
    """
    head = _check_rerank_args(index, ranking, depth)  # the first `depth` spans
    position = {s: i for i, s in enumerate(index.spans)}
    scores = index.scores(query, [position[s] for s in head])  # only the candidates are scored
    order = sorted(range(len(head)), key=lambda j: (-scores[j], j))
    return [head[j] for j in order] + list(ranking[depth:])


def _encode_alone(model: SentenceTransformer, texts: Sequence[str], what: str) -> list[np.ndarray]:
    """Token vectors of each text encoded on its own, without [CLS] and [SEP], rows L2-normalized."""
    import torch

    transformer = _check_model(model)
    positions = int(transformer.config.max_position_embeddings)
    enc = model.tokenizer(list(texts), add_special_tokens=True, truncation=False, return_special_tokens_mask=True,
                          verbose=False)
    for i, ids in enumerate(enc["input_ids"]):
        if len(ids) > positions:
            raise ValueError(f"{what}[{i}] takes {len(ids)} tokens with [CLS] and [SEP], more than the model's "
                             f"{positions} positions; split it into smaller chunks")
        if all(enc["special_tokens_mask"][i]):
            raise ValueError(f"{what}[{i}] = {texts[i]!r} has no token (empty or whitespace); drop it")
    out: list[np.ndarray] = [np.empty(0)] * len(texts)
    order = sorted(range(len(texts)), key=lambda i: len(enc["input_ids"][i]))  # similar lengths, little padding
    with torch.inference_mode():
        for b in range(0, len(order), BATCH_SIZE):
            batch = order[b:b + BATCH_SIZE]
            width = max(len(enc["input_ids"][i]) for i in batch)
            ids = torch.zeros((len(batch), width), dtype=torch.long)
            mask = torch.zeros_like(ids)
            for row, i in enumerate(batch):
                n = len(enc["input_ids"][i])
                ids[row, :n] = torch.tensor(enc["input_ids"][i])
                mask[row, :n] = 1
            hidden = transformer(input_ids=ids, attention_mask=mask).last_hidden_state.float().numpy()
            for row, i in enumerate(batch):
                keep = np.flatnonzero(np.array(enc["special_tokens_mask"][i]) == 0)
                out[i] = hidden[row, keep]
    return [unit_rows(f"{what}[{i}]", v) for i, v in enumerate(out)]


def query_token_vectors(model: SentenceTransformer, queries: Sequence[str]) -> list[np.ndarray]:
    """One (tokens, 384) matrix per query, each query encoded alone, [CLS] and [SEP] left out, rows normalized."""
    _check_queries(queries)
    return _encode_alone(model, queries, "queries")


def chunk_token_index(model: SentenceTransformer, documents: Mapping[Hashable, str], spans: Sequence[Span],
                      how: str = "alone", *, window: int = 512, overlap: int | None = None) -> TokenIndex:
    """A `TokenIndex` of the chunks `spans` (`(doc, start, end)` into `documents`).

    `how="alone"` encodes each chunk's text on its own; `how="late"` encodes each document once
    in macro windows of `window` tokens (`course_lib.late.token_vectors`) and gives each chunk the
    vectors of the tokens whose characters intersect it, as late chunking pools them (a token
    straddling a boundary belongs to both chunks). [CLS] and [SEP] are never included.
    """
    spans = _check_chunk_token_index_args(model, documents, spans, how, window)
    if how == "alone":
        per_chunk = _encode_alone(model, [documents[d][s:e] for d, s, e in spans], "spans")
    else:  # "late"
        per_chunk = [np.empty(0)] * len(spans)
        for doc in dict.fromkeys(d for d, _, _ in spans):
            rows = [i for i, (d, _, _) in enumerate(spans) if d == doc]
            tokens = tokenize_document(model, documents[doc])
            vectors = token_vectors(model, tokens, window, overlap)
            ranges = content_token_ranges(tokens, documents[doc], [spans[i][1:] for i in rows])
            for i, (a, b) in zip(rows, ranges):
                per_chunk[i] = unit_rows(f"spans[{i}]", vectors[a:b])
    bounds = np.concatenate([[0], np.cumsum([len(v) for v in per_chunk])]).astype(np.int64)
    return TokenIndex(spans, np.concatenate(per_chunk), bounds)


# --- Argument checks: the error messages of the functions above, kept out of their way ---


def _check_scores_args(index: TokenIndex, query: Any, chunks: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """The query's rows normalized, and `chunks` as an array of chunk numbers (None: every chunk)."""
    q = unit_rows("query", query)
    if q.shape[1] != index.vectors.shape[1]:
        raise ValueError(f"query has dimension {q.shape[1]} but the index {index.vectors.shape[1]}; "
                         "embed queries with the model that built the index")
    if chunks is None:
        return q, None
    picked = np.asarray(chunks, dtype=np.int64).reshape(-1)
    if picked.size and (picked.min() < 0 or picked.max() >= len(index.spans)):
        raise ValueError(f"chunks must be numbers 0..{len(index.spans) - 1} of the index's spans")
    return q, picked


def _check_rerank_args(index: TokenIndex, ranking: Any, depth: Any) -> list[Span]:
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1:
        raise ValueError(f"depth={depth!r} must be a positive int (how many results to rescore), e.g. 50")
    if isinstance(ranking, (str, bytes)) or not isinstance(ranking, Sequence):
        raise TypeError("ranking must be a sequence of (doc, start, end) spans, best first")
    known = set(index.spans)
    head = list(ranking[:depth])
    missing = [s for s in head if s not in known]
    if missing:
        raise ValueError(f"ranking holds {missing[0]!r}, which is not a chunk of the index; rank the index's spans")
    if len(set(head)) != len(head):
        raise ValueError("ranking lists a span twice; remove duplicates (keep the first)")
    return head


def _check_model(model: SentenceTransformer) -> Any:
    modules = list(model)
    if not modules or not hasattr(modules[0], "auto_model") or not getattr(model.tokenizer, "is_fast", False):
        raise ValueError("need a SentenceTransformer whose first module is a Hugging Face transformer "
                         "(model[0].auto_model) with a fast tokenizer, to read its token vectors")
    return modules[0].auto_model


def _check_queries(queries: Any) -> None:
    if isinstance(queries, str):
        raise TypeError("queries must be a list of strings; wrap a single query in a list")
    for i, q in enumerate(queries):
        if not isinstance(q, str):
            raise TypeError(f"queries[{i}] must be a str, not {type(q).__name__}")


def _check_spans(documents: Mapping[Hashable, str], spans: Sequence[Span]) -> list[Span]:
    if isinstance(spans, (str, bytes)) or not isinstance(spans, Sequence) or not spans:
        raise TypeError("spans must be a non-empty sequence of (doc, start, end) tuples")
    out = []
    for i, span in enumerate(spans):
        if not isinstance(span, tuple) or len(span) != 3:
            raise TypeError(f"spans[{i}] = {span!r}: use a (doc, start, end) tuple")
        doc, start, end = span
        if doc not in documents:
            raise ValueError(f"spans[{i}] = {span!r} names a document that is not in documents")
        if isinstance(start, bool) or isinstance(end, bool) or not isinstance(start, (int, np.integer)) \
                or not isinstance(end, (int, np.integer)) or not 0 <= start < end <= len(documents[doc]):
            raise ValueError(f"spans[{i}] = {span!r}: need ints 0 <= start < end <= {len(documents[doc])} "
                             f"(the length of document {doc!r})")
        out.append((doc, int(start), int(end)))
    return out


def _check_chunk_token_index_args(model: SentenceTransformer, documents: Mapping[Hashable, str], spans: Any,
                                  how: Any, window: Any) -> list[Span]:
    spans = _check_spans(documents, spans)
    if how == "late":
        positions = int(_check_model(model).config.max_position_embeddings)
        if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or not 3 <= window <= positions:
            raise ValueError(f"window={window!r} must be an int between 3 and {positions} (the model's positions), "
                             "e.g. 512")
    elif how != "alone":
        raise ValueError(f"how={how!r}: use 'alone' (each chunk encoded on its own) or 'late' (tokens from the "
                         "document's macro windows)")
    return spans
