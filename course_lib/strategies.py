"""One registry of chunking strategies, named by short ids such as `recursive:256:32`.

An id is `name:size[:overlap][?key=value&...]`, optionally behind an embedding variant:

- `name` is a registered strategy (`fixed`, `recursive`, `sentence`, `markdown`, and
  `semantic` once `course_lib.chunking.semantic` is available);
- `size` and `overlap` are in the strategy's own unit: cl100k_base tokens for the token
  chunkers, sentences for `sentence` (`sentence:5:1` = five sentences, one repeated);
  an overlap of 0 is left out of the canonical id;
- options follow `?`, sorted in the canonical id: `recursive:256?separators=chroma`;
- an embedding variant is a prefix (`late:recursive:256`, `headers:markdown:256`): it
  changes how chunks are embedded, never the chunks themselves.

`parse_strategy` turns an id into a `StrategySpec`, `chunk_with` chunks a text by it and
`result_stem` names results files after it. The playground, the benchmarks and the tests
use this one registry instead of their own dispatch. The vocabulary is described in
CONTRIBUTING.md ("Shared vocabulary").
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from course_lib.chunking import (
    SEPARATORS,
    Chunk,
    fixed_size_chunks,
    markdown_chunks,
    recursive_chunks,
    sentence_chunks,
)

__all__ = [
    "EMBEDDING_VARIANTS",
    "STRATEGIES",
    "StrategyInfo",
    "StrategySpec",
    "chunk_with",
    "parse_strategy",
    "register_strategy",
    "result_stem",
]

EMBEDDING_VARIANTS: tuple[str, ...] = ("late", "headers")
TOKENIZER = "cl100k_base"  # the unit of every token-sized strategy

_NAME = re.compile(r"[a-z][a-z0-9_]*")
_OPTION = re.compile(r"[A-Za-z0-9_.\-]+")
_OPTIONAL_MODULES = ("course_lib.chunking.semantic",)  # register themselves when imported


@dataclass(frozen=True)
class StrategyInfo:
    """What the registry knows about one strategy.

    `chunker(text, size, overlap, **options)` returns `Chunk`s; a strategy with
    `needs_model` is also given `model=` (possibly None: it then loads or asks for one).
    `options` maps each accepted option to a function that converts its text value
    (None: any option is passed through as text).
    """

    name: str
    chunker: Callable[..., list[Chunk]]
    unit: str
    description: str
    needs_model: bool = False
    options: Mapping[str, Callable[[str], Any]] | None = None


class _Registry(Mapping):
    """A read-only view of the registered strategies; reading it first loads the optional ones."""

    def __init__(self) -> None:
        self._entries: dict[str, StrategyInfo] = {}
        self._state = "unloaded"

    def _load(self) -> None:
        if self._state != "unloaded":
            return
        self._state = "loading"  # the modules call register_strategy while they import
        try:
            for module in _OPTIONAL_MODULES:
                if importlib.util.find_spec(module) is not None:
                    importlib.import_module(module)
        except BaseException:
            self._state = "unloaded"  # a broken optional module fails every time, not once
            raise
        self._state = "loaded"

    def __getitem__(self, name: str) -> StrategyInfo:
        self._load()
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        self._load()
        return iter(sorted(self._entries))

    def __len__(self) -> int:
        self._load()
        return len(self._entries)

    def __repr__(self) -> str:
        return f"STRATEGIES({', '.join(self)})"


STRATEGIES: Mapping[str, StrategyInfo] = _Registry()


def register_strategy(
    name: str,
    chunker: Callable[..., list[Chunk]],
    *,
    unit: str,
    description: str,
    needs_model: bool = False,
    options: Mapping[str, Callable[[str], Any]] | None = None,
) -> None:
    """Add (or replace) the strategy `name`: `chunker(text, size, overlap, **options)`.

    `unit` says what `size` counts ("cl100k tokens", "sentences"); `options` lists the
    accepted `?key=value` options with a converter for each value.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"name={name!r}: use lower-case letters, digits and '_', starting with a letter")
    if name in EMBEDDING_VARIANTS:
        raise ValueError(f"name={name!r} is an embedding variant ({', '.join(EMBEDDING_VARIANTS)}); choose another")
    if not callable(chunker):
        raise TypeError(f"chunker must be callable, not {type(chunker).__name__}")
    STRATEGIES._entries[name] = StrategyInfo(name, chunker, unit, description, needs_model,
                                             None if options is None else dict(options))


@dataclass(frozen=True)
class StrategySpec:
    """A parsed strategy id; `str(spec)` and `spec.id` give the canonical id."""

    name: str
    size: int
    overlap: int = 0
    options: dict[str, str] = field(default_factory=dict, hash=False)
    variant: str | None = None

    @property
    def id(self) -> str:
        text = f"{self.name}:{self.size}" + (f":{self.overlap}" if self.overlap else "")
        if self.options:
            text += "?" + "&".join(f"{k}={v}" for k, v in sorted(self.options.items()))
        return f"{self.variant}:{text}" if self.variant else text

    def __str__(self) -> str:
        return self.id


def _known() -> str:
    return ", ".join(STRATEGIES)


def _int_field(spec: str, what: str, value: str) -> int:
    if not re.fullmatch(r"\d+", value):
        raise ValueError(f"strategy {spec!r}: {what} {value!r} is not a whole number; e.g. 'recursive:256:32'")
    return int(value)


def parse_strategy(spec: str) -> StrategySpec:
    """Parse `[variant:]name:size[:overlap][?key=value&...]` into a `StrategySpec`.

    Raises `ValueError` naming the part that is wrong and how to write it.
    """
    if isinstance(spec, StrategySpec):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"spec must be a strategy id such as 'recursive:256:32', not {type(spec).__name__}")
    body, _, query = spec.strip().partition("?")
    parts = body.split(":")
    variant = None
    if parts[0] in EMBEDDING_VARIANTS:
        variant, parts = parts[0], parts[1:]
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
            if info.options is not None and key not in info.options:
                allowed = ", ".join(sorted(info.options)) or "none"
                raise ValueError(f"strategy {spec!r}: {name!r} has no option {key!r}; options: {allowed}")
            options[key] = value
    return StrategySpec(name, size, overlap, options, variant)


def chunk_with(spec: str | StrategySpec, text: str, *, model: Any = None) -> list[Chunk]:
    """Chunk `text` by the strategy id `spec` (the embedding variant does not change the chunks)."""
    spec = parse_strategy(spec)
    info = STRATEGIES[spec.name]
    options: dict[str, Any] = dict(spec.options)
    if info.options is not None:
        for key, value in spec.options.items():
            try:
                options[key] = info.options[key](value)
            except ValueError as error:
                raise ValueError(f"strategy {spec.id!r}: option {key}={value!r} is invalid: {error}") from None
    if info.needs_model:
        options["model"] = model
    return info.chunker(text, spec.size, spec.overlap, **options)


def result_stem(spec: str | StrategySpec) -> str:
    """A file-name stem for results of `spec`: `late:recursive:256:32` -> `late_recursive_256_32`.

    `:` becomes `_`, the options part starts with `__`, `=` becomes `-` and `&` `__`, so
    `semantic:256?method=cluster` -> `semantic_256__method-cluster`.
    """
    spec = parse_strategy(spec)
    body, _, query = spec.id.partition("?")
    stem = body.replace(":", "_")
    if query:
        stem += "__" + query.replace("=", "-").replace("&", "__")
    return stem


def _separators_preset(value: str) -> str:
    if value not in SEPARATORS:
        raise ValueError(f"use one of the presets {', '.join(sorted(SEPARATORS))}")
    return value


def _language(value: str) -> str:
    from course_lib.chunking import ABBREVIATIONS

    if value not in ABBREVIATIONS:
        raise ValueError(f"use one of {', '.join(sorted(ABBREVIATIONS))}")
    return value


def _fixed(text: str, size: int, overlap: int) -> list[Chunk]:
    return fixed_size_chunks(text, size, overlap, tokenizer=TOKENIZER)


def _recursive(text: str, size: int, overlap: int, separators: str = "prose") -> list[Chunk]:
    return recursive_chunks(text, size, overlap, separators=separators, tokenizer=TOKENIZER)


def _sentence(text: str, size: int, overlap: int, language: str = "en") -> list[Chunk]:
    return sentence_chunks(text, size, overlap, language=language, tokenizer=TOKENIZER)


def _markdown(text: str, size: int, overlap: int) -> list[Chunk]:
    return markdown_chunks(text, size, overlap, tokenizer=TOKENIZER)


register_strategy("fixed", _fixed, unit="cl100k tokens", options={},
                  description="windows of at most `size` tokens, cut at word starts (notebook 03)")
register_strategy("recursive", _recursive, unit="cl100k tokens", options={"separators": _separators_preset},
                  description="separators highest level first, recurse, merge (notebook 04); "
                              "option separators=<preset>")
register_strategy("sentence", _sentence, unit="sentences", options={"language": _language},
                  description="groups of whole sentences (notebook 04); option language=en|es")
register_strategy("markdown", _markdown, unit="cl100k tokens", options={},
                  description="Markdown sections, never across a heading (notebook 07)")
