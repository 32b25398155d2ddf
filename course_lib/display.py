"""Show chunks as coloured spans over their source text, with overlaps highlighted; draw a verdict as a forest plot."""

from __future__ import annotations

import html
import itertools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from course_lib.chunking import Span, as_spans

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["OVERLAP_STYLE", "PALETTE", "UNCOVERED_STYLE", "VERDICT_COLORS", "chunks_to_html", "forest_plot",
           "show_chunks"]

PALETTE = ("#cfe8ff", "#c9ede8", "#d6f5d6", "#f3d9ff", "#fff2a8", "#ffd6dc")
OVERLAP_STYLE = "background:#ffb347;outline:1px solid #c46a00"
UNCOVERED_STYLE = "color:#999"


def chunks_to_html(text: str, chunks: Sequence[Span], *, title: str | None = None) -> str:
    """HTML that colours each chunk of `text`; text in two or more chunks is orange.

    `chunks` are `Chunk`s or `(start, end)` character spans. Hovering a span shows
    which chunks hold it. Text in no chunk is grey.

    Taught in notebooks/00_start_here.ipynb, section 3 (what `show_chunks` draws).
    """
    spans = as_spans(text, chunks)
    cuts = sorted({0, len(text), *(s for s, _ in spans), *(e for _, e in spans)})
    parts = []
    for a, b in itertools.pairwise(cuts):
        owners = [i for i, (s, e) in enumerate(spans) if s <= a and b <= e]
        piece = html.escape(text[a:b])
        if not owners:
            style = UNCOVERED_STYLE
        elif len(owners) == 1:
            style = f"background:{PALETTE[owners[0] % len(PALETTE)]}"
        else:
            style = OVERLAP_STYLE
        label = "in no chunk" if not owners else "chunk " + ", ".join(map(str, owners))
        parts.append(f'<span style="{style}" title="{label}">{piece}</span>')
    heading = f"<b>{html.escape(title)}</b><br>" if title else ""
    legend = (
        f'<div style="font-size:85%;margin-top:4px">{len(spans)} chunk{"" if len(spans) == 1 else "s"}; '
        f'<span style="{OVERLAP_STYLE}">orange</span> = text in two or more chunks</div>'
    )
    body = "".join(parts)
    return (
        f'<div style="font-family:monospace;white-space:pre-wrap;line-height:1.6;'
        f'border:1px solid #ddd;padding:8px">{heading}{body}</div>{legend}'
    )


def show_chunks(text: str, chunks: Sequence[Span], *, title: str | None = None):
    """Display `chunks_to_html(...)` in a notebook.

    Taught in notebooks/00_start_here.ipynb, section 3.
    """
    from IPython.display import HTML

    return HTML(chunks_to_html(text, chunks, title=title))


# Colours of a verdict's labels (Okabe-Ito, readable by colour-blind readers); other labels take FALLBACK_COLORS.
VERDICT_COLORS = {"winner": "#009E73", "leader": "#0072B2", "in play": "#E69F00", "ruled out": "#7F7F7F"}
_FALLBACK_COLORS = ("#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
_MARKERS = {"winner": "D", "leader": "D", "in play": "o", "ruled out": "s"}


def forest_plot(names: Sequence[str], means: Sequence[float], lows: Sequence[float], highs: Sequence[float],
                labels: Sequence[str], *, reference: float | None = None, reference_label: str = "reference",
                title: str = "", xlabel: str = "", colors: Mapping[str, str] | None = None) -> Figure:
    """A forest plot: one row per name, a dot at its mean and a line from low to high, coloured by its label.

    - `names`: one row each, drawn top to bottom in the order given (sort them first, best first).
    - `means`, `lows`, `highs`: the estimate and its interval for each row, in the axis's unit (a mean,
      or a difference to the leader); `low <= mean <= high`.
    - `labels`: each row's group, e.g. a verdict's "leader", "in play", "ruled out" (or "winner"): it sets
      the colour and the legend (`VERDICT_COLORS`; `colors` maps other labels, or overrides these).
    - `reference`: an optional vertical dashed line (the leader's mean, or 0 for differences), named
      `reference_label` in the legend.
    - `title` and `xlabel` (say the unit: "recall@1 (%)").

    Returns the matplotlib `Figure` (white background, so it reads in a dark theme too). It is created with
    pyplot, so in a notebook end the cell with `plt.show()` rather than leaving the figure as the cell's
    last value (which would show it twice). In a script, `fig.savefig(path)` then `plt.close(fig)`.

    Taught in notebooks/00_start_here.ipynb, section 3 (the capstone's verdict).
    """
    import matplotlib.pyplot as plt

    rows = _forest_rows(names, means, lows, highs, labels)
    palette = {**VERDICT_COLORS, **(colors or {})}
    extra = iter(_FALLBACK_COLORS * (1 + len(rows)))
    for label in dict.fromkeys(r[4] for r in rows):
        palette.setdefault(label, next(extra))
    fig, ax = plt.subplots(figsize=(9, 1.3 + 0.32 * len(rows)), facecolor="white")
    ax.set_facecolor("white")
    shown: set[str] = set()
    for y, (_, mean, low, high, label) in enumerate(rows):
        ax.plot([low, high], [y, y], color=palette[label], lw=2.5, solid_capstyle="butt")
        ax.plot([mean], [y], _MARKERS.get(label, "o"), color=palette[label], markersize=7,
                label=None if label in shown else label)
        shown.add(label)
    if reference is not None:
        ax.axvline(reference, color="black", ls="--", lw=1, label=reference_label)
    ax.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=10)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # the first row on top
    ax.set_xlabel(xlabel, fontsize=11)
    ax.set_title(title, fontsize=12)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)  # beside, not over, the rows
    fig.tight_layout()
    return fig


def _forest_rows(names, means, lows, highs, labels) -> list[tuple[str, float, float, float, str]]:
    """The rows of `forest_plot`, checked: equal lengths, at least one row, low <= mean <= high."""
    columns = {"names": list(names), "means": list(means), "lows": list(lows), "highs": list(highs),
               "labels": list(labels)}
    lengths = {key: len(value) for key, value in columns.items()}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"names, means, lows, highs and labels must have one entry per row; got lengths {lengths}")
    if not columns["names"]:
        raise ValueError("names is empty: a forest plot needs at least one row")
    rows = list(zip(*columns.values()))
    for name, mean, low, high, _ in rows:
        if not low <= mean <= high:
            raise ValueError(f"row {name!r}: low <= mean <= high must hold, got low={low}, mean={mean}, high={high}")
    return [(str(n), float(m), float(lo), float(hi), str(lab)) for n, m, lo, hi, lab in rows]
