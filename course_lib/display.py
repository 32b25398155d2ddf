"""Show chunks as coloured spans over their source text, with overlaps highlighted."""

from __future__ import annotations

import html
import itertools
from collections.abc import Sequence

from course_lib.chunking import Span, as_spans

__all__ = ["OVERLAP_STYLE", "PALETTE", "UNCOVERED_STYLE", "chunks_to_html", "show_chunks"]

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
