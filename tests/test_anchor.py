"""anchor="paragraph": the same contract as every chunker, cuts pinned at paragraph starts, edits stay local."""

from __future__ import annotations

import random
import re

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course_lib.chunking import fixed_size_chunks, markdown_chunks, recursive_chunks
from course_lib.chunking._measure import _Measure
from course_lib.chunking.fixed import ANCHORS, _paragraphs
from course_lib.strategies import STRATEGIES, chunk_with, parse_strategy, result_stem
from course_lib.tokens import resolve_tokenizer

ANCHORED = sorted(name for name, info in STRATEGIES.items() if info.options and "anchor" in info.options)
FUNCTIONS = {"fixed": fixed_size_chunks, "recursive": recursive_chunks, "markdown": markdown_chunks}
CL100K = resolve_tokenizer("cl100k_base")

PIECES = ["The pump circulates coolant. ", "Replace it after 10,000 hours.", "\n\n", "\n", " \n \n", "\n\n\n",
          "# Heading\n", "## Sub\n", "¿Cuándo? ¡Ahora! ", "中文没有空格的句子", "👨‍👩‍👧‍👦", " \u0301", "e\u0301",
          "\r\n\r\n", "\t", "x" * 30, "a", " ", "🇪🇸"]
texts = st.one_of(st.lists(st.sampled_from(PIECES), max_size=40).map("".join),
                  st.text(st.sampled_from(list("ab \n\t.\u0301")), max_size=120))


def clusters(text: str) -> set[int]:
    return {0} | {m.end() for m in regex.finditer(r"\X", text)}


def test_the_three_token_chunkers_take_the_option():
    assert {"fixed", "markdown", "recursive"} <= set(ANCHORED)
    assert ANCHORS == ("paragraph",)


@pytest.mark.parametrize("name", ANCHORED)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, size=st.integers(2, 60), data=st.data())
def test_anchored_chunks_keep_the_chunker_contract(name, text, size, data):
    """Exact offsets, at most `size` tokens (recounted), source order, whole characters, nothing lost,
    and no chunk across an anchored paragraph start."""
    overlap = data.draw(st.integers(0, size - 1))
    try:
        chunks = chunk_with(f"{name}:{size}:{overlap}?anchor=paragraph", text)
    except ValueError as error:  # only a character that alone needs more than `size` tokens
        assert "is too small" in str(error)
        with pytest.raises(ValueError, match="is too small"):
            chunk_with(f"{name}:{size}:{overlap}", text)
        return
    boundaries = clusters(text)
    covered = [False] * len(text)
    cuts = [a for a, _ in _paragraphs(_Measure(text, CL100K), 0, len(text), size)][1:] if text.strip() else []
    for i, c in enumerate(chunks):
        assert text[c.start:c.end] == c.text and c.text.strip()
        assert c.start in boundaries and c.end in boundaries, f"{c!r} cuts a user-perceived character"
        assert c.n_tokens == CL100K.count(c.text) <= size
        if i:
            assert chunks[i - 1].start < c.start and chunks[i - 1].end < c.end
        assert not any(c.start < cut < c.end for cut in cuts), f"{c!r} crosses the anchored cut"
        covered[c.start:c.end] = [True] * (c.end - c.start)
    assert all(covered[i] for i, ch in enumerate(text) if not ch.isspace()), "a character is in no chunk"


@pytest.mark.parametrize("name", ANCHORED)
@settings(max_examples=60, deadline=None)
@given(text=st.text(st.sampled_from(list("abc .,\n\t")), max_size=300), size=st.integers(2, 40))
def test_without_blank_lines_the_anchor_changes_nothing(name, text, size):
    while re.search(r"\n[ \t]*\n", text):  # no blank line left
        text = re.sub(r"\n([ \t]*)\n", r"\n\1x\n", text)
    assert chunk_with(f"{name}:{size}?anchor=paragraph", text) == chunk_with(f"{name}:{size}", text)


def paragraphs_text(seed: int, n: int = 80) -> str:
    """A long text of short, different paragraphs (2-4 sentences of 6-14 words each)."""
    rng = random.Random(seed)
    words = "pump coolant valve hours filter pressure service sheet engineer replaced checked alarm".split()
    paragraphs = []
    for _ in range(n):
        sentences = [" ".join(rng.choice(words) for _ in range(rng.randint(6, 14))).capitalize() + "."
                     for _ in range(rng.randint(2, 4))]
        paragraphs.append(" ".join(sentences))
    return "\n\n".join(paragraphs)


def changed_after_inserts(spec: str, text: str) -> list[int]:
    """Chunks of each edited version (a sentence added at the end of every fifth paragraph) not in the old version."""
    old = {c.text for c in chunk_with(spec, text)}
    ends = [m.start() for m in re.finditer(r"\n\n", text)][::5]
    return [sum(c.text not in old for c in chunk_with(spec, text[:e] + " Then the alarm stopped." + text[e:]))
            for e in ends]


@pytest.mark.parametrize("name", ["fixed", "recursive", "markdown"])
def test_a_one_sentence_edit_recuts_only_the_chunks_near_it(name):
    text = paragraphs_text(1)
    anchored = sorted(changed_after_inserts(f"{name}:64?anchor=paragraph", text))
    goal = 4 if name == "fixed" else 3  # the goal: about 3 for recursive and markdown, a few for fixed
    assert anchored[int(0.9 * len(anchored))] <= goal and anchored[-1] <= 5, anchored
    if name != "fixed":  # fixed windows without the anchor shift everything after the edit
        return
    plain = changed_after_inserts(f"{name}:64", text)
    assert sorted(plain)[len(plain) // 2] > 3, "the unanchored windows should shift after the edit"


def test_anchored_chunks_far_from_an_edit_keep_their_text_and_shifted_offsets():
    text = paragraphs_text(2, n=120)
    size = 64
    old = recursive_chunks(text, size, anchor="paragraph")
    at = [m.start() for m in re.finditer(r"\n\n", text)][60]
    insert = " Then the alarm stopped."
    new = recursive_chunks(text[:at] + insert + text[at:], size, anchor="paragraph")
    margin = 3 * size  # tokens: cuts farther than this from the edit cannot move
    before = [c for c in old if CL100K.count(text[c.end:at]) > margin]
    after = [c for c in old if CL100K.count(text[at:c.start]) > margin]
    assert before and after
    spans = {(c.start, c.end, c.text) for c in new}
    assert all((c.start, c.end, c.text) in spans for c in before)
    assert all((c.start + len(insert), c.end + len(insert), c.text) in spans for c in after)


def test_anchor_groups_short_paragraphs_instead_of_one_chunk_each():
    text = paragraphs_text(3)
    anchored = recursive_chunks(text, 256, anchor="paragraph")
    assert len(anchored) < text.count("\n\n") / 3, "short paragraphs should share chunks"


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_a_bad_anchor_is_explained(name):
    with pytest.raises(ValueError, match=r"anchor='line'.*'paragraph'"):
        FUNCTIONS[name]("Some text.\n\nMore text.", 16, anchor="line")
    with pytest.raises(ValueError, match="option anchor='line' is invalid"):
        chunk_with(f"{name}:16?anchor=line", "Some text.")


def test_anchor_in_the_strategy_id():
    spec = parse_strategy("recursive:256?separators=chroma&anchor=paragraph")
    assert spec.id == "recursive:256?anchor=paragraph&separators=chroma"
    assert result_stem("recursive:256?anchor=paragraph") == "recursive_256__anchor-paragraph"
    assert parse_strategy("headers:markdown:256?anchor=paragraph").variant == "headers"
