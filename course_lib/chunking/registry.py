"""The registry of chunking strategies: a plain dict, filled by each chunker next to its definition.

It knows no chunker. Each chunker file registers its strategy at its end, with the decorator:

    @register_strategy("fixed", unit="cl100k tokens", description="...")
    def _fixed(text: str, size: int, overlap: int) -> list[Chunk]: ...

and `course_lib.chunking` imports every chunker file, so importing the package fills the
registry. Adding a chunker = one new file in `chunking/` plus one import line in its
`__init__.py` (CONTRIBUTING.md, "Adding a chunker"). The id grammar and the dispatch that read
this registry live in `course_lib.strategies`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from course_lib.spans import Chunk

__all__ = [
    "EMBEDDING_VARIANTS",
    "SENTENCE_LIMITS",
    "STRATEGIES",
    "TOKENIZER",
    "TOKEN_LIMITS",
    "StrategyInfo",
    "choice",
    "register_strategy",
]

EMBEDDING_VARIANTS: tuple[str, ...] = ("late", "headers")  # id prefixes that change the embedding, not the chunks
TOKENIZER = "cl100k_base"  # the unit of every token-sized strategy
# the useful range of size and overlap in a strategy's unit (the playground's controls read them)
TOKEN_LIMITS: Mapping[str, tuple[int, int]] = MappingProxyType({"size": (1, 1000), "overlap": (0, 500)})
SENTENCE_LIMITS: Mapping[str, tuple[int, int]] = MappingProxyType({"size": (1, 50), "overlap": (0, 49)})

ChunkerFn = Callable[..., list[Chunk]]
_NAME = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class StrategyInfo:
    """What the registry knows about one strategy.

    `chunker(text, size, overlap, **options)` returns `Chunk`s; a strategy with
    `needs_model` is also given `model=` (possibly None: it then loads or asks for one).
    `options` maps each accepted option to a function that converts its text value
    (None: any option is passed through as text). `unit` says what `size` counts and
    `limits` gives the useful `(low, high)` range of `size` and `overlap` in that unit.
    """

    name: str
    chunker: ChunkerFn
    unit: str
    description: str
    needs_model: bool = False
    options: Mapping[str, Callable[[str], Any]] | None = None
    limits: Mapping[str, tuple[int, int]] = field(default_factory=lambda: TOKEN_LIMITS, hash=False)


_entries: dict[str, StrategyInfo] = {}
STRATEGIES: Mapping[str, StrategyInfo] = MappingProxyType(_entries)  # read-only, names in alphabetical order


def _check_limits(limits: Any) -> dict[str, tuple[int, int]]:
    if not isinstance(limits, Mapping) or set(limits) != {"size", "overlap"}:
        raise ValueError(f"limits={limits!r}: give {{'size': (low, high), 'overlap': (low, high)}}")
    for key, pair in limits.items():
        if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(v, int) for v in pair)
                and 0 <= pair[0] <= pair[1]):
            raise ValueError(f"limits[{key!r}]={pair!r}: use a (low, high) pair of ints with 0 <= low <= high")
    return dict(limits)


def register_strategy(
    name: str,
    chunker: ChunkerFn | None = None,
    *,
    unit: str,
    description: str,
    needs_model: bool = False,
    options: Mapping[str, Callable[[str], Any]] | None = None,
    limits: Mapping[str, tuple[int, int]] = TOKEN_LIMITS,
) -> Any:
    """Add (or replace) the strategy `name`: `chunker(text, size, overlap, **options)`.

    Called with a chunker, registers it and returns None; called without one, returns a
    decorator that registers the function it decorates and gives it back unchanged.
    `unit` says what `size` counts ("cl100k tokens", "sentences"); `options` lists the
    accepted `?key=value` options with a converter for each value; `limits` the useful range
    of size and overlap (`TOKEN_LIMITS`, or `SENTENCE_LIMITS`).
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"name={name!r}: use lower-case letters, digits and '_', starting with a letter")
    if name in EMBEDDING_VARIANTS:
        raise ValueError(f"name={name!r} is an embedding variant ({', '.join(EMBEDDING_VARIANTS)}); choose another")
    checked = _check_limits(limits)

    def register(function: ChunkerFn) -> ChunkerFn:
        if not callable(function):
            raise TypeError(f"chunker must be callable, not {type(function).__name__}")
        _entries[name] = StrategyInfo(name, function, unit, description, needs_model,
                                      None if options is None else dict(options), MappingProxyType(checked))
        for key in sorted(_entries):  # keep the names in alphabetical order, whatever the import order
            _entries[key] = _entries.pop(key)
        return function

    if chunker is None:
        return register
    register(chunker)
    return None


def choice(allowed: Sequence[str], kind: str = "") -> Callable[[str], str]:
    """An option converter that accepts only the values in `allowed` (`kind` names them in the error)."""
    allowed = tuple(allowed)
    named = f"{kind} " if kind else ""

    def convert(value: str) -> str:
        if value not in allowed:
            raise ValueError(f"use one of {named}{', '.join(allowed)}")
        return value

    return convert
