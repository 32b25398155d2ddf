"""The strategy registry and its ids: parsing, canonical ids, chunking by id, results file names."""

from __future__ import annotations

import re

import pytest

from course_lib.chunking import (
    SEPARATORS,
    fixed_size_chunks,
    markdown_chunks,
    recursive_chunks,
    registry,
    sentence_chunks,
)
from course_lib.strategies import (
    EMBEDDING_VARIANTS,
    STRATEGIES,
    StrategySpec,
    chunk_with,
    parse_strategy,
    register_strategy,
    result_stem,
)

TEXT = ("# Returns\n\nDr. Gil wrote the policy. Items can be returned within thirty days. "
        "Custom items cannot.\n\n## Refunds\n\nRefunds take five days. They go to the card used.\n") * 3


def spans(chunks):
    return [(c.start, c.end, c.n_tokens) for c in chunks]


@pytest.mark.parametrize(("spec", "expected"), [
    ("fixed:256", StrategySpec("fixed", 256)),
    ("recursive:256:32", StrategySpec("recursive", 256, 32)),
    ("recursive:256:0", StrategySpec("recursive", 256)),
    ("sentence:5:1", StrategySpec("sentence", 5, 1)),
    ("late:recursive:256", StrategySpec("recursive", 256, variant="late")),
    ("headers:markdown:256", StrategySpec("markdown", 256, variant="headers")),
    ("recursive:200?separators=chroma", StrategySpec("recursive", 200, options={"separators": "chroma"})),
])
def test_parse(spec, expected):
    assert parse_strategy(spec) == expected


@pytest.mark.parametrize(("spec", "canonical"), [
    ("recursive:256:0", "recursive:256"),
    ("late:recursive:256:32", "late:recursive:256:32"),
    ("sentence:5:1?language=es", "sentence:5:1?language=es"),
    (" fixed:512 ", "fixed:512"),
])
def test_canonical_id_round_trips(spec, canonical):
    parsed = parse_strategy(spec)
    assert parsed.id == str(parsed) == canonical
    assert parse_strategy(parsed.id) == parsed


def test_options_are_sorted_in_the_id():
    spec = StrategySpec("semantic_test", 64, options={"b": "2", "a": "1"})
    assert spec.id == "semantic_test:64?a=1&b=2"


@pytest.mark.parametrize(("spec", "message"), [
    ("nosuch:256", "unknown chunker 'nosuch'; known: fixed, markdown, page, recursive"),
    ("recursive", "needs a size in cl100k tokens"),
    ("recursive:abc", "size 'abc' is not a whole number"),
    ("recursive:256:x", "overlap 'x' is not a whole number"),
    ("recursive:0", "size must be at least 1"),
    ("recursive:256:256", "overlap 256 must be smaller than size 256"),
    ("recursive:1:2:3", "use name:size[:overlap]"),
    ("late:late:recursive:256", "embedding variants (late, headers) go first, once"),
    ("recursive:256?separators", "must be key=value"),
    ("recursive:256?colour=red", "'recursive' has no option 'colour'; options: anchor, separators"),
    ("fixed:256?separators=prose", "'fixed' has no option 'separators'; options: anchor"),
    ("recursive:256?separators=prose&separators=chroma", "given twice"),
    ("late:", "names no chunker"),
])
def test_bad_ids_are_explained(spec, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_strategy(spec)


def test_parse_rejects_non_strings():
    with pytest.raises(TypeError, match="strategy id"):
        parse_strategy(256)


def test_chunk_with_matches_the_chunkers():
    assert spans(chunk_with("fixed:40:8", TEXT)) == spans(fixed_size_chunks(TEXT, 40, 8))
    assert spans(chunk_with("recursive:40:8", TEXT)) == spans(recursive_chunks(TEXT, 40, 8))
    assert spans(chunk_with("recursive:40?separators=chroma", TEXT)) == \
        spans(recursive_chunks(TEXT, 40, separators="chroma"))
    assert spans(chunk_with("sentence:3:1", TEXT)) == spans(sentence_chunks(TEXT, 3, 1))
    assert spans(chunk_with("markdown:40", TEXT)) == spans(markdown_chunks(TEXT, 40))
    # the variant changes embedding, not chunks
    assert spans(chunk_with("late:recursive:40:8", TEXT)) == spans(chunk_with("recursive:40:8", TEXT))


def test_option_values_are_checked_when_chunking():
    with pytest.raises(ValueError, match=r"separators=.nosuch. is invalid: use one of the presets"):
        chunk_with("recursive:40?separators=nosuch", TEXT)
    with pytest.raises(ValueError, match=r"language=.xx. is invalid: use one of en, es"):
        chunk_with("sentence:3?language=xx", TEXT)


def test_result_stems_are_filesystem_safe_and_distinct():
    ids = ["fixed:256", "recursive:256:32", "late:recursive:256:32", "headers:markdown:256",
           "recursive:200?separators=chroma", "sentence:5:1?language=es"]
    stems = [result_stem(i) for i in ids]
    assert stems[:3] == ["fixed_256", "recursive_256_32", "late_recursive_256_32"]
    assert stems[4] == "recursive_200__separators-chroma"
    assert all(re.fullmatch(r"[A-Za-z0-9_.\-]+", s) for s in stems)
    assert len(set(stems)) == len(stems)
    assert result_stem("recursive:256:0") == result_stem(parse_strategy("recursive:256"))


def test_registry_is_read_only_and_describes_units():
    assert {"fixed", "recursive", "sentence", "markdown"} <= set(STRATEGIES)
    assert STRATEGIES["sentence"].unit == "sentences"
    assert STRATEGIES["recursive"].unit == "cl100k tokens"
    with pytest.raises(TypeError):
        STRATEGIES["x"] = None  # type: ignore[index]
    assert {"late", "headers"} <= set(EMBEDDING_VARIANTS)


def test_register_a_strategy_and_pass_a_model():
    seen = {}

    def by_lines(text, size, overlap, model=None, every="1"):
        seen["model"], seen["every"] = model, every
        return recursive_chunks(text, size, overlap, separators=[r"\n"])

    register_strategy("lines_test", by_lines, unit="cl100k tokens", description="test only", needs_model=True,
                      options={"every": int})
    try:
        chunks = chunk_with("lines_test:30?every=2", TEXT, model="MODEL")
        assert chunks and seen == {"model": "MODEL", "every": 2}
        assert "lines_test" in STRATEGIES
    finally:
        registry._entries.pop("lines_test")


def test_register_strategy_as_a_decorator_returns_the_function():
    @register_strategy("decorated_test", unit="sentences", description="test only", limits=registry.SENTENCE_LIMITS)
    def by_sentences(text, size, overlap):
        return sentence_chunks(text, size, overlap)

    try:
        assert by_sentences("One. Two.", 1, 0)  # still the plain function
        assert STRATEGIES["decorated_test"].chunker is by_sentences
        assert STRATEGIES["decorated_test"].limits == registry.SENTENCE_LIMITS
        assert list(STRATEGIES) == sorted(STRATEGIES), "names stay in alphabetical order"
        assert chunk_with("decorated_test:1", "One. Two.") == sentence_chunks("One. Two.", 1, 0)
    finally:
        registry._entries.pop("decorated_test")


def test_register_rejects_bad_limits():
    with pytest.raises(ValueError, match="limits"):
        register_strategy("bad_limits", fixed_size_chunks, unit="cl100k tokens", description="x",
                          limits={"size": (5, 1)})
    assert "bad_limits" not in STRATEGIES


@pytest.mark.parametrize(("name", "error"), [("Bad Name", ValueError), ("late", ValueError)])
def test_register_rejects_bad_names(name, error):
    with pytest.raises(error):
        register_strategy(name, fixed_size_chunks, unit="cl100k tokens", description="x")


def test_chroma_preset_is_the_benchmarks_separator_list():
    assert SEPARATORS["chroma"] == [re.escape(s) for s in ["\n\n", "\n", ".", "?", "!", " "]]


class _Words:
    """A tiny deterministic stand-in model for `semantic`: hashed word counts, never all zero."""

    def encode(self, texts):
        import zlib

        import numpy as np

        out = np.full((len(texts), 16), 0.05, dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, zlib.crc32(word.encode("utf-8", "surrogatepass")) % 15] += 1.0
        return out


VARIANTS = [f"{name}:32{option}" for name in ("fixed", "recursive", "markdown")
            for option in ("", "?anchor=paragraph", "?pages=keep", "?anchor=paragraph&pages=keep")]
VARIANTS += ["page:32", "sentence:3", "semantic:32", "semantic:32?method=cluster", "semantic:32?pages=keep"]


@pytest.mark.parametrize("spec", VARIANTS)
@pytest.mark.parametrize("text, position", [("caf\udce9", 3), (TEXT[:90] + "\ud800 and more.\fPage two.", 90)])
def test_lone_surrogates_give_one_value_error_naming_the_position(spec, text, position):
    """K1 (review 2026-12-02): 15 of these 17 variants raised a raw UnicodeEncodeError."""
    assert len(VARIANTS) == 17
    with pytest.raises(ValueError, match=rf"holds a lone surrogate '\\ud[8-f][0-9a-f]{{2}}' at position "
                                         rf"{position} .*errors='replace'") as caught:
        chunk_with(spec, text, model=_Words())
    assert not isinstance(caught.value, UnicodeError)
