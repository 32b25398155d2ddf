"""The chunk playground: registry dispatch, the library's errors in the view, the widget and its stored picture."""

from __future__ import annotations

import html
import re

import pytest

from course_lib.chunking import Chunk
from course_lib.display import chunks_to_html
from course_lib.playground import (
    MINILM,
    SENTENCE_LIMITS,
    STATIC_NOTE,
    TOKEN_LIMITS,
    TOKENIZERS,
    VIEW_HEIGHT,
    chunk,
    offered_strategies,
    playground,
    render,
    summary,
)
from course_lib.strategies import STRATEGIES, chunk_with

TEXT = (
    "# Pumps\n\nThe XR-12 pump circulates coolant. It must be replaced after 10,000 hours. "
    "Dr. Ruiz signs off every replacement.\n\n## Seals\n\nCheck the seals monthly. Replace a seal "
    "that weeps. Keep spare seals in the store room.\n"
)


def n_chunks(page: str) -> int:
    """The chunk count stated in the legend of `chunks_to_html`."""
    return int(re.search(r"(\d+) chunks?;", page).group(1))


def test_the_menu_offers_every_registered_strategy_that_needs_no_model():
    assert set(offered_strategies()) == {name for name, info in STRATEGIES.items() if not info.needs_model}
    assert {"fixed", "recursive", "sentence", "markdown"} <= set(offered_strategies())


@pytest.mark.parametrize("strategy", ["fixed", "recursive", "markdown", "sentence"])
def test_render_shows_the_chunks_of_the_registry(strategy):
    chunks = chunk_with(f"{strategy}:12:3", TEXT)
    assert chunk(TEXT, strategy, 12, 3) == chunks
    page = render(TEXT, strategy, 12, 3, "cl100k_base")
    assert chunks_to_html(TEXT, chunks) in page
    assert n_chunks(page) == len(chunks)
    assert html.escape(f"{strategy}:12:3 · " + summary(TEXT, chunks)) in page


def test_strategies_differ_on_the_same_text():
    pages = {strategy: render(TEXT, strategy, 12, 0) for strategy in ("fixed", "recursive", "markdown")}
    assert len(set(pages.values())) == 3


def test_markdown_never_crosses_a_heading():
    for c in chunk(TEXT, "markdown", 40, 0):
        assert "## Seals" not in c.text or c.text.startswith("## Seals")


def test_sentence_counts_sentences_not_tokens():
    chunks = chunk(TEXT, "sentence", 2, 0)
    assert [c.metadata["sentences"] for c in chunks] == [2, 2, 2, 2]  # Dr. does not end a sentence
    assert chunks[0].text.startswith("# Pumps")


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_the_summary_counts_the_same_chunks_in_each_tokenizer(tokenizer):
    chunks = chunk(TEXT, "recursive", 30, 0)
    line = summary(TEXT, chunks, tokenizer)
    unit = "characters" if tokenizer == "chars" else f"{tokenizer} tokens"
    assert f"{unit} per chunk:" in line and line in html.unescape(render(TEXT, "recursive", 30, 0, tokenizer))
    if tokenizer == "chars":
        assert f"max {max(len(c.text) for c in chunks)}" in line
    if tokenizer == "cl100k_base":
        assert f"max {max(c.n_tokens for c in chunks)}" in line  # the registry's unit: cl100k tokens


def test_minilm_counts_differ_and_the_window_is_flagged():
    chunks = chunk(TEXT, "fixed", 1000, 0)
    minilm = summary(TEXT, chunks, MINILM)
    assert f"max {chunks[0].n_tokens}" not in minilm  # WordPiece counts this text differently
    assert minilm.endswith("0 over the model's 256-token window")
    long_text = "word " * 400
    assert summary(long_text, chunk(long_text, "fixed", 300, 0), MINILM).endswith("1 over the model's 256-token window")


@pytest.mark.parametrize(
    "strategy, size, overlap",
    [("fixed", 10, 10), ("recursive", 10, 25), ("markdown", 0, 0), ("sentence", 3, 3),
     ("fixed", 1, 0)],  # the emoji alone takes three tokens
)
def test_invalid_combinations_show_the_librarys_message_instead_of_raising(strategy, size, overlap):
    text = "A gift 🎁 for you."
    with pytest.raises(ValueError) as error:
        chunk_with(f"{strategy}:{size}:{overlap}", text)
    page = render(text, strategy, size, overlap)
    assert html.escape(f"ValueError: {error.value}") in page
    assert "chunk" not in page.split("ValueError")[0]  # no stale chunk view above the error


def test_unknown_strategy_model_strategy_or_tokenizer_is_reported_in_the_view():
    assert "unknown chunker 'nope'" in html.unescape(render(TEXT, "nope", 10, 0))
    if "semantic" in STRATEGIES:
        assert "strategy='semantic' needs an embedding model" in html.unescape(render(TEXT, "semantic", 10, 0))
    assert "tokenizer='gpt2' is not offered" in html.unescape(render(TEXT, "fixed", 10, 0, "gpt2"))


def test_error_messages_are_escaped():
    page = render(TEXT, "fixed", 10, 10)
    assert "<" not in re.sub(r"<[^>]*>", "", page)


def test_empty_text_gives_no_chunks_and_no_error():
    for strategy in offered_strategies():
        page = render("   \n", strategy, 5, 1)
        assert "0 chunks" in page and "Error" not in page


def test_summary_counts_sizes_and_repeated_text():
    chunks = [Chunk("abcd", 0, 4, 4), Chunk("cdef", 2, 6, 4), Chunk("gh", 6, 8, 2)]
    line = summary("abcdefgh", chunks, "chars")
    assert line.startswith("3 chunks · characters per chunk: min 2, median 4, max 4")
    assert line.endswith("25% of the text repeated by overlap")  # "cd" twice: 2 of 8 characters


def test_playground_renders_live_and_shows_errors():
    box = playground(TEXT, "recursive", 20, 2)
    assert box.view.value == render(TEXT, "recursive", 20, 2)

    box.size_slider.value = 30
    assert box.size_box.value == 30 and box.view.value == render(TEXT, "recursive", 30, 2)
    box.overlap_box.value = 30  # typed into the number box
    assert box.overlap_slider.value == 30
    assert box.view.value == render(TEXT, "recursive", 30, 30) and "ValueError" in box.view.value
    box.overlap_box.value = 3
    box.tokenizer_menu.value = "chars"
    assert box.view.value == render(TEXT, "recursive", 30, 3, "chars")
    assert box.size_slider.description == "size (cl100k tokens)"  # counting in characters cuts nothing differently


def test_the_number_box_gives_every_size_the_slider_spans():
    box = playground(TEXT, "fixed", 40, 0)
    low, high = TOKEN_LIMITS["size"]
    assert (box.size_box.min, box.size_box.max) == (box.size_slider.min, box.size_slider.max) == (low, high)
    for value in (low, 37, 41, high):
        box.size_box.value = value
        assert box.size_slider.value == value and box.view.value == render(TEXT, "fixed", value, 0)


def test_playground_switches_units_for_sentences_and_back():
    box = playground(TEXT, "fixed", 40, 4)
    box.strategy_menu.value = "sentence"
    assert (box.size_slider.max, box.size_box.max, box.size_slider.description) == (
        SENTENCE_LIMITS["size"][1], SENTENCE_LIMITS["size"][1], "size (sentences)")
    assert (box.size_slider.value, box.overlap_slider.value) == (5, 1)
    assert box.view.value == render(TEXT, "sentence", 5, 1)
    box.strategy_menu.value = "markdown"
    assert (box.size_slider.value, box.overlap_slider.value) == (40, 4)  # the token settings come back
    assert box.view.value == render(TEXT, "markdown", 40, 4)


def test_the_chunks_scroll_inside_the_view_below_the_summary():
    page = render(TEXT, "recursive", 12, 0)
    summary_end, scroll_start = page.index("</b></div>"), page.index(f"max-height:{VIEW_HEIGHT};overflow:auto")
    assert summary_end < scroll_start < page.index(chunks_to_html(TEXT, chunk(TEXT, "recursive", 12, 0)))


def test_stored_output_is_the_starting_view_not_the_widget_repr():
    box = playground(TEXT, "markdown", 25, 0)
    data = box._repr_mimebundle_()
    assert "VBox" not in data["text/plain"] and "JupyterLab" in data["text/plain"]
    assert data["text/html"] == STATIC_NOTE + render(TEXT, "markdown", 25, 0)
    assert "application/vnd.jupyter.widget-view+json" in data  # live where a kernel runs


def test_playground_rejects_bad_arguments():
    with pytest.raises(TypeError, match="text must be a str"):
        playground(b"bytes")
    with pytest.raises(ValueError, match="strategy='nope' is unknown"):
        playground(TEXT, strategy="nope")
    with pytest.raises(ValueError, match="tokenizer='gpt2'"):
        playground(TEXT, tokenizer="gpt2")
    with pytest.raises(ValueError, match=r"size=5000 is outside the playground's range 1\.\.1000"):
        playground(TEXT, size=5000)
    with pytest.raises(ValueError, match=r"overlap=60 is outside .* 0\.\.49 for strategy='sentence'"):
        playground(TEXT, "sentence", 10, 60)
