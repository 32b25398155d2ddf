"""Late chunking: encode the whole document once, then mean-pool each chunk's token vectors.

Naive chunking embeds every chunk on its own, so a chunk that says "It must be replaced"
never sees what "it" is. Late chunking (Günther et al., 2024) runs the transformer over
the whole document, cuts the sequence of contextualized token vectors at the chunk
boundaries and averages each piece. Boundaries move from characters to tokens through
the tokenizer's offset mapping, never by counting the tokens of pieces.

Documents longer than the model's window are encoded in overlapping macro windows
("long late chunking"); see `macro_windows`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from course_lib.spans import Chunk, Span, as_spans

__all__ = [
    "BATCH_SIZE",
    "DocumentTokens",
    "MacroWindow",
    "check_mean_pooling",
    "chunk_token_spans",
    "content_token_ranges",
    "default_overlap",
    "late_chunk_embeddings",
    "macro_windows",
    "naive_chunk_embeddings",
    "pool_chunks",
    "token_vectors",
    "tokenize_document",
]

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

BATCH_SIZE = 8  # macro windows per forward pass


def default_overlap(window: int) -> int:
    """The default context at each inner edge of a macro window: an eighth of the window (64 for 512 tokens).

    The one rule of the course: late chunking, the long-text policy of `course_lib.embed`, chunk-eval and
    the benchmarks all take their default overlap from here.
    """
    return window // 8


@dataclass(frozen=True)
class DocumentTokens:
    """A document tokenized once: content tokens, their character spans, and the special tokens.

    `ids` and `offsets` exclude the special tokens; `prefix`/`suffix` are the special
    token ids the tokenizer puts before and after any input ([CLS] and [SEP] for BERT).
    """

    ids: list[int]
    offsets: list[tuple[int, int]]
    prefix: list[int]
    suffix: list[int]


@dataclass(frozen=True)
class MacroWindow:
    """Content tokens `[start, end)` go through the model; only `[keep_start, keep_end)` are kept."""

    start: int
    end: int
    keep_start: int
    keep_end: int


def tokenize_document(model: SentenceTransformer, text: str) -> DocumentTokens:
    """Tokenize `text` once with the model's fast tokenizer, without truncation, keeping offsets.

    Taught in notebooks/06_late_chunking_xr12.ipynb, section 1.
    """
    _check_tokenize_document_args(model, text)
    enc = model.tokenizer(text, add_special_tokens=True, truncation=False, return_offsets_mapping=True,
                    return_special_tokens_mask=True, verbose=False)
    ids, special, offsets = enc["input_ids"], enc["special_tokens_mask"], enc["offset_mapping"]
    content = [i for i, s in enumerate(special) if not s]  # the special tokens sit before and after them
    first, last = (content[0], content[-1] + 1) if content else (len(ids), len(ids))
    return DocumentTokens(
        ids=list(ids[first:last]),
        offsets=[tuple(o) for o in offsets[first:last]],
        prefix=list(ids[:first]),
        suffix=list(ids[last:]),
    )


def content_token_ranges(doc: DocumentTokens, text: str, chunks: Sequence[Span]) -> list[tuple[int, int]]:
    """Content-token range `[a, b)` (indices into `doc.ids`, no special tokens) of each chunk of `text`,
    for a document already tokenized by `tokenize_document`: the tokens whose characters intersect it.

    Taught in notebooks/08_measuring_chunkers.ipynb, section 6.
    """
    spans = as_spans(text, chunks)
    starts = np.array([s for s, _ in doc.offsets], dtype=np.int64)
    ends = np.array([e for _, e in doc.offsets], dtype=np.int64)
    ranges = []
    for i, (s, e) in enumerate(spans):
        hit = np.flatnonzero((starts < e) & (ends > s))
        if hit.size == 0:
            raise ValueError(f"chunks[{i}] = ({s}, {e}) covers no token (only whitespace or characters the "
                             "tokenizer drops); remove it or widen it to include some text")
        ranges.append((int(hit[0]), int(hit[-1]) + 1))
    return ranges


def chunk_token_spans(model: SentenceTransformer, text: str, chunks: Sequence[Span]) -> list[tuple[int, int]]:
    """Token range `[a, b)` of each chunk in `model.tokenizer(text)["input_ids"]` (special tokens included).

    A token belongs to a chunk when its characters intersect the chunk's characters, so a
    token that straddles a boundary belongs to both chunks. Index 0 is [CLS] for BERT.

    Taught in notebooks/06_late_chunking_xr12.ipynb, section 1 (how a chunk's characters map to model tokens).
    """
    doc = tokenize_document(model, text)
    shift = len(doc.prefix)
    return [(a + shift, b + shift) for a, b in content_token_ranges(doc, text, chunks)]


def macro_windows(n_tokens: int, capacity: int, overlap: int) -> list[MacroWindow]:
    """Overlapping windows of at most `capacity` content tokens whose kept middles tile `[0, n_tokens)`.

    One window if the document fits. Otherwise every window holds exactly `capacity`
    tokens and keeps all but `overlap` tokens at each inner edge, so every token is kept
    exactly once, from a window where it has at least `overlap` tokens of context on each
    side (fewer only near the start or end of the document).

    Taught in notebooks/06_late_chunking_xr12.ipynb, section 3.
    """
    _check_macro_windows_args(n_tokens, capacity, overlap)
    if n_tokens <= capacity:
        return [MacroWindow(0, n_tokens, 0, n_tokens)]
    windows = [MacroWindow(0, capacity, 0, capacity - overlap)]
    while windows[-1].keep_end < n_tokens:
        keep_start = windows[-1].keep_end
        start = keep_start - overlap
        if start + capacity >= n_tokens:  # the last window: shift it back so it is full
            windows.append(MacroWindow(n_tokens - capacity, n_tokens, keep_start, n_tokens))
        else:
            windows.append(MacroWindow(start, start + capacity, keep_start, start + capacity - overlap))
    return windows


def check_mean_pooling(model: SentenceTransformer) -> None:
    """Raise `ValueError` unless `model` is a transformer followed by mean pooling (and maybe Normalize).

    Taught in notebooks/06_late_chunking_xr12.ipynb, section 4 (the limits: which models late chunking fits).
    """
    modules = list(model)
    if not modules or not hasattr(modules[0], "auto_model"):
        raise ValueError("late chunking needs a SentenceTransformer whose first module is a Hugging Face "
                         "transformer (model[0].auto_model), to read its token vectors")
    names = [type(m).__name__ for m in modules]
    if "Pooling" not in names:
        raise ValueError(f"the model has no Pooling module (modules: {names}); late chunking needs a model "
                         "that mean-pools its token vectors")
    k = names.index("Pooling")
    mode = getattr(modules[k], "pooling_mode", None)
    if mode != "mean":
        raise ValueError(
            f"the model pools with {mode!r}, not 'mean'. Late chunking averages the token vectors of each chunk, "
            "which gives vectors like the model's own only if the model itself averages token vectors. A "
            "CLS-pooling model reads one [CLS] vector per input, and a chunk inside a document has no [CLS] of "
            "its own; use a mean-pooling model (such as all-MiniLM-L6-v2) for late chunking"
        )
    extra = [n for n in names[k + 1:] if n != "Normalize"]
    if extra or k != 1:
        raise ValueError(f"modules {names} are not supported: late chunking here expects transformer -> "
                         "Pooling -> (Normalize), so that pooled token vectors live in the model's space")


def _kept_vectors(model: SentenceTransformer, doc: DocumentTokens, window: int, overlap: int | None,
                  batch_size: int) -> Iterator[tuple[int, np.ndarray]]:
    """`(keep_start, vectors)` of each macro window's kept middle, in document order."""
    import torch

    capacity = window - len(doc.prefix) - len(doc.suffix)
    plan = macro_windows(len(doc.ids), capacity, default_overlap(window) if overlap is None else overlap)
    transformer = model[0].auto_model
    device = next(transformer.parameters()).device
    p = len(doc.prefix)
    with torch.inference_mode():
        for b in range(0, len(plan), batch_size):
            batch = plan[b:b + batch_size]  # when there are several windows, all have one length: no padding
            ids = torch.tensor([doc.prefix + doc.ids[w.start:w.end] + doc.suffix for w in batch], device=device)
            hidden = transformer(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
            for row, w in zip(hidden.float().cpu().numpy(), batch):
                yield w.keep_start, row[p + w.keep_start - w.start:p + w.keep_end - w.start]


def token_vectors(model: SentenceTransformer, doc: DocumentTokens, window: int,
                  overlap: int | None = None, batch_size: int = BATCH_SIZE) -> np.ndarray:
    """Contextualized vector of every content token of `doc` (no special tokens), via macro windows.

    Each window is [CLS] + its content tokens + [SEP], run under `torch.inference_mode()`
    in batches of `batch_size` windows. Meant for inspection: `late_chunk_embeddings`
    pools window by window instead of keeping every token vector in memory.

    Taught in notebooks/06_late_chunking_xr12.ipynb, section 3.
    """
    parts = [v for _, v in _kept_vectors(model, doc, window, overlap, batch_size)]
    return np.concatenate(parts) if parts else np.empty((0, model[0].auto_model.config.hidden_size), np.float32)


def pool_chunks(doc: DocumentTokens, vectors: np.ndarray, text: str, chunks: Sequence[Span]) -> np.ndarray:
    """One L2-normalized vector per chunk: the mean of its content tokens' vectors, from a document
    already tokenized (`tokenize_document`) and encoded (`token_vectors`).

    A token belongs to a chunk when its characters intersect the chunk's (`content_token_ranges`).
    This is the pooling of `late_chunk_embeddings`, for callers that keep a document's token vectors
    to pool several chunkings from one encoding (chunk-eval, the benchmarks).
    Taught in notebooks/08_measuring_chunkers.ipynb, section 6.
    """
    ranges = content_token_ranges(doc, text, chunks)
    if not ranges:
        return np.empty((0, vectors.shape[1]), dtype=np.float32)
    pooled = np.stack([vectors[a:b].mean(axis=0) for a, b in ranges])
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def late_chunk_embeddings(
    model: SentenceTransformer,
    text: str,
    chunks: Sequence[Span],
    *,
    window: int | None = None,
    overlap: int | None = None,
    batch_size: int = BATCH_SIZE,
) -> np.ndarray:
    """One L2-normalized vector per chunk, mean-pooled from token vectors of the whole document.

    `chunks` are `Chunk`s or `(start, end)` character spans of `text`. The document is
    tokenized once; a token belongs to a chunk when its characters intersect the chunk's,
    so a token straddling a boundary counts in both chunks. Special tokens ([CLS], [SEP])
    are excluded from every chunk's mean: they belong to no chunk (so the vectors differ
    slightly from `model.encode`, which averages them in).

    `window` (default `model.max_seq_length`) is the model input length, special tokens
    included. A longer document is encoded in overlapping macro windows (`macro_windows`),
    `batch_size` windows per forward pass: each token's vector comes from a window where it
    had `overlap` tokens of context on each side where possible (default: `default_overlap(window)`,
    an eighth of the window, 64 for a 512-token window). Nothing is truncated.

    Taught in notebooks/06_late_chunking_xr12.ipynb, section 1.
    """
    check_mean_pooling(model)
    doc = tokenize_document(model, text)
    window = _check_late_chunk_args(model, doc, window, batch_size)
    ranges = np.array(content_token_ranges(doc, text, chunks), dtype=np.int64).reshape(-1, 2)
    sums = np.zeros((len(ranges), model[0].auto_model.config.hidden_size))
    if len(ranges):
        for start, vectors in _kept_vectors(model, doc, window, overlap, batch_size):
            # add each chunk's share of this window's kept tokens, through cumulative sums
            cumulative = np.concatenate([np.zeros((1, vectors.shape[1])), np.cumsum(vectors, axis=0, dtype=np.float64)])
            lo = np.clip(ranges[:, 0] - start, 0, len(vectors))
            hi = np.clip(ranges[:, 1] - start, 0, len(vectors))
            sums += cumulative[hi] - cumulative[lo]
    means = sums / np.maximum(ranges[:, 1:] - ranges[:, :1], 1)
    return (means / np.linalg.norm(means, axis=1, keepdims=True)).astype(np.float32)


def naive_chunk_embeddings(model: SentenceTransformer, chunks: Sequence[Chunk | str]) -> np.ndarray:
    """The usual vectors: each chunk encoded on its own by `model.encode`, L2-normalized.

    Raises `ValueError` if a chunk is longer than `model.max_seq_length` tokens
    (special tokens included), because `model.encode` would silently cut it.

    Taught in notebooks/06_late_chunking_xr12.ipynb, section 1.
    """
    texts = _check_naive_chunk_args(model, chunks)  # each chunk's text
    if not texts:
        return np.empty((0, model[0].auto_model.config.hidden_size), dtype=np.float32)
    return model.encode(texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)


# --- Argument checks: the error messages of the functions above, kept out of their way ---


def _check_tokenize_document_args(model: SentenceTransformer, text: Any) -> None:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    if not getattr(model.tokenizer, "is_fast", False):
        raise ValueError("the model's tokenizer is not a fast (Rust) tokenizer, so it has no offset mapping; "
                         "load the model with a fast tokenizer")


def _check_macro_windows_args(n_tokens: Any, capacity: Any, overlap: Any) -> None:
    for name, value in (("n_tokens", n_tokens), ("capacity", capacity), ("overlap", overlap)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if n_tokens < 0 or capacity < 1:
        raise ValueError(f"need n_tokens >= 0 and capacity >= 1, got n_tokens={n_tokens}, capacity={capacity}")
    if overlap < 0 or 2 * overlap >= capacity:
        raise ValueError(
            f"overlap={overlap} does not fit a window of {capacity} content tokens: each window keeps its middle "
            f"{capacity} - 2 * overlap tokens, which must be at least 1; use 0 <= overlap < {(capacity + 1) // 2}, "
            f"e.g. overlap={default_overlap(capacity)}"
        )


def _check_late_chunk_args(model: SentenceTransformer, doc: DocumentTokens, window: Any, batch_size: Any) -> int:
    """The model input length to use (the model's own if `window` is None), once it and `batch_size` are checked."""
    positions = int(model[0].auto_model.config.max_position_embeddings)
    if window is None:
        window = min(int(model.max_seq_length), positions)
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)):
        raise TypeError(f"window must be an int or None, not {type(window).__name__}")
    specials = len(doc.prefix) + len(doc.suffix)
    if not specials < window <= positions:
        raise ValueError(f"window={window} must be between {specials + 1} (the {specials} special tokens plus one) "
                         f"and {positions} (the model's position table); use e.g. window={min(512, positions)}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size={batch_size!r} must be a positive int (windows per forward pass), e.g. 8")
    return int(window)


def _check_naive_chunk_args(model: SentenceTransformer, chunks: Any) -> list[str]:
    """Each chunk's text, once none is empty or longer than the model reads."""
    if isinstance(chunks, (str, Chunk)):
        raise TypeError("chunks must be a sequence of Chunks or strings; wrap a single one in a list")
    texts = []
    for i, c in enumerate(chunks):
        t = c.text if isinstance(c, Chunk) else c
        if not isinstance(t, str):
            raise TypeError(f"chunks[{i}] must be a Chunk or a str, not {type(c).__name__}")
        if not t.strip():
            raise ValueError(f"chunks[{i}] is empty or whitespace; drop it before embedding")
        texts.append(t)
    encoded = model.tokenizer(texts, truncation=False, verbose=False)["input_ids"] if texts else []
    for i, n in enumerate(len(ids) for ids in encoded):
        if n > model.max_seq_length:
            raise ValueError(
                f"chunks[{i}] takes {n} tokens with its special tokens, more than model.max_seq_length="
                f"{model.max_seq_length}: model.encode would silently drop the rest. Raise max_seq_length "
                "(up to 512 for all-MiniLM-L6-v2) or chunk smaller"
            )
    return texts
