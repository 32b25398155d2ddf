"""Chunking strategies named by short ids such as `recursive:256:32`.

An id is `[rerank:][bm25:|hybrid:][late:|headers:]name:size[:overlap][?key=value&...]`, each part as
CONTRIBUTING.md ("Shared vocabulary") describes it; `name` is a strategy of `course_lib.chunking.registry`,
whose `STRATEGIES` and `register_strategy` this module re-exports. Every token strategy also takes
`?pages=keep` (`PAGE_OPTION`): it chunks each page (pages end at form feeds) on its own, so no chunk crosses
a page, and marks `page_start`/`page_end`.

This module holds the id grammar and the dispatch only: `parse_strategy` turns an id into a `StrategySpec`,
`chunk_with` chunks a text by it and `result_stem` names results files after it. The playground, chunk-eval,
the benchmarks and the tests use this one dispatch instead of their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from course_lib.chunking import Chunk
from course_lib.chunking.page import keep_pages
from course_lib.chunking.registry import (  # re-exported: the registry lives at the bottom of chunking/
    EMBEDDING_VARIANTS,
    STRATEGIES,
    TOKENIZER,
    StrategyInfo,
    register_strategy,
)
from course_lib.tokens import check_encodable

__all__ = [
    "EMBEDDING_VARIANTS",
    "PAGE_OPTION",
    "RERANK_PREFIX",
    "RETRIEVAL_MODES",
    "STRATEGIES",
    "TOKENIZER",
    "StrategyInfo",
    "StrategySpec",
    "chunk_with",
    "parse_strategy",
    "register_strategy",
    "result_stem",
]

_OPTION = re.compile(r"[A-Za-z0-9_.\-]+")
RETRIEVAL_MODES: tuple[str, ...] = ("bm25", "hybrid")  # id prefixes that change how chunks are ranked
RERANK_PREFIX = "rerank"  # chunk-eval's: re-scores the top n of the ranking that follows (rag_tools.chunk_eval.rerank)
PAGE_OPTION = ("pages", "keep")  # `?pages=keep`, accepted by every strategy sized in cl100k tokens


@dataclass(frozen=True)
class StrategySpec:
    """A parsed strategy id; `str(spec)` and `spec.id` give the canonical id."""

    name: str
    size: int
    overlap: int = 0
    options: dict[str, str] = field(default_factory=dict, hash=False)
    variant: str | None = None  # "late", "headers" or None (`EMBEDDING_VARIANTS`)
    retrieval: str | None = None  # "bm25", "hybrid" or None: dense only (`RETRIEVAL_MODES`)

    @property
    def id(self) -> str:
        text = f"{self.name}:{self.size}" + (f":{self.overlap}" if self.overlap else "")
        if self.options:
            text += "?" + "&".join(f"{k}={v}" for k, v in sorted(self.options.items()))
        return ":".join(p for p in (self.retrieval, self.variant, text) if p)

    @property
    def embeds(self) -> bool:
        """Whether the strategy needs vectors: every one but `bm25:`."""
        return self.retrieval != "bm25"

    def __str__(self) -> str:
        return self.id


def _known() -> str:
    return ", ".join(STRATEGIES)


def _int_field(spec: str, what: str, value: str) -> int:
    if not re.fullmatch(r"\d+", value):
        raise ValueError(f"strategy {spec!r}: {what} {value!r} is not a whole number; e.g. 'recursive:256:32'")
    return int(value)


def parse_strategy(spec: str) -> StrategySpec:
    """Parse `[rerank:][bm25:|hybrid:][late:|headers:]name:size[:overlap][?key=value&...]` into a `StrategySpec`.

    Raises `ValueError` naming the part that is wrong and how to write it (`rerank:` is parsed and
    refused: chunk-eval runs it).
    """
    if isinstance(spec, StrategySpec):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"spec must be a strategy id such as 'recursive:256:32', not {type(spec).__name__}")
    body, _, query = spec.strip().partition("?")
    parts = body.split(":")
    rerank = retrieval = variant = None
    if parts[0] == RERANK_PREFIX:
        rerank, parts = parts[0], parts[1:]
    if parts and parts[0] in RETRIEVAL_MODES:
        retrieval, parts = parts[0], parts[1:]
    if parts and parts[0] in EMBEDDING_VARIANTS:
        variant, parts = parts[0], parts[1:]
    if parts and parts[0] in (*EMBEDDING_VARIANTS, *RETRIEVAL_MODES, RERANK_PREFIX):
        hint = (f"embedding variants ({', '.join(EMBEDDING_VARIANTS)}) go first, once" if parts[0] in EMBEDDING_VARIANTS
                else f"retrieval modes ({', '.join(RETRIEVAL_MODES)}) and {RERANK_PREFIX} come before them, once")
        raise ValueError(f"strategy {spec!r}: prefix {parts[0]!r} is misplaced or repeated; {hint}: write "
                         "[rerank:][bm25:|hybrid:][late:|headers:]name:size, e.g. 'hybrid:headers:recursive:256'")
    if retrieval == "bm25" and variant == "late":
        raise ValueError(f"strategy {spec!r}: bm25 embeds nothing, so late chunking does not apply; "
                         "write 'bm25:recursive:256', or 'hybrid:late:recursive:256' to fuse BM25 with late vectors")
    if not parts or not parts[0]:
        raise ValueError(f"strategy {spec!r} names no chunker; write name:size, e.g. 'recursive:256'")
    name = parts[0]
    if name not in STRATEGIES:
        hint = (f"; embedding variants ({', '.join(EMBEDDING_VARIANTS)}) go first, once"
                if name in EMBEDDING_VARIANTS else "")
        raise ValueError(f"strategy {spec!r}: unknown chunker {name!r}; known: {_known()}{hint}")
    info = STRATEGIES[name]
    if len(parts) < 2 or not parts[1]:
        raise ValueError(f"strategy {spec!r} needs a size in {info.unit}: write '{name}:256' or '{name}:256:32'")
    if len(parts) > 3:
        raise ValueError(f"strategy {spec!r} has {len(parts)} fields after the variant; "
                         "use name:size[:overlap], e.g. 'recursive:256:32'")
    size = _int_field(spec, "size", parts[1])
    overlap = _int_field(spec, "overlap", parts[2]) if len(parts) == 3 else 0
    if size < 1:
        raise ValueError(f"strategy {spec!r}: size must be at least 1 {info.unit}")
    if overlap >= size:
        raise ValueError(f"strategy {spec!r}: overlap {overlap} must be smaller than size {size}")
    options: dict[str, str] = {}
    if query:
        for item in query.split("&"):
            key, eq, value = item.partition("=")
            if not eq or not _OPTION.fullmatch(key) or not _OPTION.fullmatch(value):
                raise ValueError(f"strategy {spec!r}: option {item!r} must be key=value "
                                 "(letters, digits, '_', '.', '-'), e.g. '?separators=chroma'")
            if key in options:
                raise ValueError(f"strategy {spec!r}: option {key!r} is given twice")
            if key == PAGE_OPTION[0] and _pages_apply(info):
                if value != PAGE_OPTION[1]:
                    raise ValueError(f"strategy {spec!r}: option pages={value!r}; the only value is "
                                     f"'pages=keep' (leave it out to let chunks cross pages)")
            elif info.options is not None and key not in info.options:
                allowed = ", ".join(sorted(info.options)) or "none"
                also = "; every token strategy also takes pages=keep" if _pages_apply(info) else ""
                raise ValueError(f"strategy {spec!r}: {name!r} has no option {key!r}; options: {allowed}{also}")
            options[key] = value
    if rerank:
        rest = ":".join(p for p in (retrieval, variant, StrategySpec(name, size, overlap, options).id) if p)
        raise ValueError(f"strategy {spec!r}: rerank: (re-scoring the top 50 of {rest!r}) runs in chunk-eval "
                         f"(rerank:<n>:<strategy>), not in chunk_with; use {rest!r} here")
    return StrategySpec(name, size, overlap, options, variant, retrieval)


def chunk_with(spec: str | StrategySpec, text: str, *, model: Any = None) -> list[Chunk]:
    """Chunk `text` by the strategy id `spec` (its embedding variant and retrieval mode do not change the chunks).

    Raises `ValueError` naming the position of a lone surrogate in `text` (undecodable bytes), for every strategy.
    """
    spec = parse_strategy(spec)
    if isinstance(text, str):
        check_encodable(text)
    info = STRATEGIES[spec.name]
    options: dict[str, Any] = dict(spec.options)
    keep = _pages_apply(info) and options.pop(PAGE_OPTION[0], None) == PAGE_OPTION[1]
    if info.options is not None:
        for key, value in options.items():
            try:
                options[key] = info.options[key](value)
            except ValueError as error:
                raise ValueError(f"strategy {spec.id!r}: option {key}={value!r} is invalid: {error}") from None
    if info.needs_model:
        options["model"] = model
    if keep:
        return keep_pages(lambda page: info.chunker(page, spec.size, spec.overlap, **options), text)
    return info.chunker(text, spec.size, spec.overlap, **options)


def _pages_apply(info: StrategyInfo) -> bool:
    """`pages=keep` applies to the token strategies except `page`, whose chunks never cross a page."""
    return info.unit == "cl100k tokens" and info.name != "page"


def result_stem(spec: str | StrategySpec) -> str:
    """A file-name stem for results of `spec`: `late:recursive:256:32` -> `late_recursive_256_32`,
    `hybrid:headers:markdown:256` -> `hybrid_headers_markdown_256`.

    `:` becomes `_`, the options part starts with `__`, `=` becomes `-` and `&` `__`, so
    `semantic:256?method=cluster` -> `semantic_256__method-cluster`.
    """
    spec = parse_strategy(spec)
    body, _, query = spec.id.partition("?")
    stem = body.replace(":", "_")
    if query:
        stem += "__" + query.replace("=", "-").replace("&", "__")
    return stem
