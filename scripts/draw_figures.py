"""Draw the course's diagrams into notebooks/figures/ as SVG, byte for byte the same on every run.

Usage: python -m scripts.draw_figures [--out notebooks/figures] [NAME ...]

Each figure is a function below, drawn with matplotlib on a white background (so it reads in
JupyterLab's light and dark themes) with text kept as SVG text, no date and fixed ids. The numbers a
figure shows come from the course's own code where it has one (`course_lib.late.macro_windows`), from
the course's data (the XR-12 manual's token counts), or from the small example the figure states.
`tests/test_figures.py` redraws every figure and fails when a committed file differs.
"""

from __future__ import annotations

import argparse
import ast
import functools
import io
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from course_lib.chunking.markdown import markdown_chunks, markdown_sections
from course_lib.chunking.page import PAGE_BREAK, page_chunks
from course_lib.chunking.recursive import recursive_chunks
from course_lib.chunking.sentences import split_sentences
from course_lib.evaluation import exact_budget
from course_lib.late import macro_windows
from course_lib.retrieval import RRF_K, reciprocal_rank_fusion
from course_lib.stats import (
    DEFAULT_MARGIN,
    DEFAULT_RESAMPLES,
    EQUIVALENCE_LEVEL,
    LEVEL,
    THRESHOLD,
    paired_interval,
)
from course_lib.tokens import count_tokens
from rag_tools.readers import page_span

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "notebooks" / "figures"

# Okabe-Ito colours: distinguishable with the common colour-vision deficiencies
BLUE, ORANGE, GREEN, PINK = "#0072B2", "#E69F00", "#009E73", "#CC79A7"
SKY, VERMILION, YELLOW, GREY, INK = "#56B4E9", "#D55E00", "#F0E442", "#BBBBBB", "#222222"
CHUNK_COLOURS = (SKY, ORANGE, GREEN, PINK, YELLOW)
# The smallest label, in points: an 11-inch figure (about 1,085 px wide) shown in a 975 px JupyterLab cell
# reads it at 9.5 x 4/3 x 975 / 1,085 = 11.4 px; tests/test_figures.py holds every label to 11 px.
LABEL = 9.5

plt.rcParams.update({
    "svg.hashsalt": "chunking-course",  # fixed ids for clip paths and glyphs
    "svg.fonttype": "none",             # text stays text: small files, selectable words
    "font.family": "DejaVu Sans",
    "font.size": 11,
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "text.color": INK,
})


def _canvas(width: float, height: float) -> tuple[plt.Figure, plt.Axes]:
    """A blank figure whose data coordinates are inches, so shapes keep their proportions."""
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.axis("off")
    return fig, ax


def _box(ax: plt.Axes, x: float, y: float, w: float, h: float, text: str = "", *, colour: str = "white",
         size: float = 11, weight: str = "normal", edge: str = INK) -> None:
    """A rounded box with centred text; (x, y) is its lower-left corner."""
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.08",
                                facecolor=colour, edgecolor=edge, linewidth=1.2))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size, weight=weight)


def _cell(ax: plt.Axes, x: float, y: float, w: float, h: float, colour: str, text: str = "",
          size: float = LABEL, alpha: float = 1.0) -> None:
    """A square-cornered cell, used for tokens and bars."""
    ax.add_patch(Rectangle((x, y), w, h, facecolor=colour, edgecolor=INK, linewidth=0.6, alpha=alpha))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size)


def _arrow(ax: plt.Axes, start: tuple[float, float], end: tuple[float, float], colour: str = INK) -> None:
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=14, color=colour, linewidth=1.3))


def _brace(ax: plt.Axes, x0: float, x1: float, y: float, text: str, colour: str = INK, below: bool = False,
           left: bool = False, gid: str | None = None) -> None:
    """A bracket from x0 to x1 at height y with a label over (or under) it, centred or from its left end;
    `gid` names the bracket's line in the SVG (a test measures what it spans)."""
    tick = -0.08 if not below else 0.08
    ax.plot([x0, x0, x1, x1], [y + tick, y, y, y + tick], color=colour, linewidth=1.3, gid=gid)
    ax.text(x0 if left else (x0 + x1) / 2, y + (0.1 if not below else -0.1), text, ha="left" if left else "center",
            va="bottom" if not below else "top", fontsize=10, color=colour)


# --- the figures -----------------------------------------------------------------------------------------


def rag_pipeline() -> plt.Figure:
    """Where chunking sits in a retrieval pipeline, and which choices the course measures at each step."""
    fig, ax = _canvas(11.0, 3.6)
    steps = [("ingest", "read PDF, HTML, text\nwith page numbers", "12"),
             ("chunk", "strategy, size,\noverlap, boundaries", "03-05, 07, 09"),
             ("embed", "model and window;\nnaive or late", "06, 11"),
             ("store", "vectors and their cost;\nupdates", "05, 14"),
             ("retrieve", "k or a token budget;\nhybrid, reranking", "08, 10, 11"),
             ("generate", "tokens the model\nreads per answer", "05, 08")]
    w, gap, y = 1.5, 0.28, 2.05
    for i, (name, choice, where) in enumerate(steps):
        x = 0.3 + i * (w + gap)
        highlight = name == "chunk"
        _box(ax, x, y, w, 0.75, name, colour=ORANGE if highlight else SKY, size=13, weight="bold")
        ax.text(x + w / 2, y - 0.15, choice, ha="center", va="top", fontsize=LABEL)
        label = "notebook" if len(where) == 2 else "notebooks"
        ax.text(x + w / 2, y - 1.05, f"{label} {where}", ha="center", va="top", fontsize=LABEL, color=BLUE,
                style="italic")
        if i:
            _arrow(ax, (x - gap + 0.02, y + 0.375), (x - 0.02, y + 0.375))
    ax.text(0.3, 3.3, "A retrieval pipeline: the course measures the choice under each step",
            fontsize=12, weight="bold", va="center")
    return fig


def silent_cut() -> plt.Figure:
    """What an embedding model reads of a long text: its window ([CLS], the first text tokens, [SEP]); the rest
    of the document is dropped without a word. MiniLM's default window of 256 places, a 1,000-token document."""
    total, window, markers = 1000, 256, 2  # markers: [CLS] and [SEP] take two of the window's places
    read = window - markers
    fig, ax = _canvas(10.0, 2.9)
    x0, scale, marker_w = 0.9, 8.6 / total, 0.55  # the two markers drawn wider than one place, to be readable
    y_doc, y_win = 0.75, 1.65
    _cell(ax, x0, y_doc, read * scale, 0.45, SKY, f"read: text tokens 1-{read}", size=LABEL)
    _cell(ax, x0 + read * scale, y_doc, (total - read) * scale, 0.45, GREY,
          f"never read: text tokens {read + 1}-{total:,}, dropped without an error", size=LABEL, alpha=0.6)
    ax.text(x0 - 0.1, y_doc + 0.22, "document", ha="right", va="center", fontsize=LABEL)
    cls = Rectangle((x0 - marker_w, y_win), marker_w, 0.45, facecolor=YELLOW, edgecolor=INK, linewidth=0.6,
                    gid="cls")
    sep = Rectangle((x0 + read * scale, y_win), marker_w, 0.45, facecolor=YELLOW, edgecolor=INK, linewidth=0.6,
                    gid="sep")
    for patch, label in ((cls, "[CLS]"), (sep, "[SEP]")):
        ax.add_patch(patch)
        ax.text(patch.get_x() + marker_w / 2, y_win + 0.22, label, ha="center", va="center", fontsize=LABEL)
    _cell(ax, x0, y_win, read * scale, 0.45, SKY, f"text tokens 1-{read}", size=LABEL)
    ax.text(x0 + read * scale + marker_w + 0.1, y_win + 0.22, "what the model reads: one input of\n"
            f"{window} places, its vector made from it", va="center", fontsize=LABEL)
    _brace(ax, x0 - marker_w, x0 + read * scale + marker_w, y_win + 0.6,
           f"the window: {window} places = [CLS] + {read} text tokens + [SEP]", colour=BLUE, left=True,
           gid="window-bracket")
    _brace(ax, x0, x0 + total * scale, y_doc - 0.15, f"the whole document: {total:,} text tokens", below=True)
    ax.text(0.3, 2.7, "One long text, one vector: the cut is silent", fontsize=12, weight="bold", va="center")
    return fig


def overlap_windows() -> plt.Figure:
    """Windows of N tokens with overlap M on a row of tokens; a passage of M + 1 tokens always fits one window."""
    n, size, overlap = 22, 8, 3
    stride = size - overlap
    fig, ax = _canvas(11.0, 4.2)
    cw, x0, y = 0.45, 0.6, 1.4
    for t in range(n):
        _cell(ax, x0 + t * cw, y, cw, 0.45, "white", str(t), size=LABEL)
    starts = list(range(0, n - overlap, stride))
    for k, s in enumerate(starts):
        e = min(s + size, n)
        level = y + 0.65 + 0.42 * k
        ax.add_patch(Rectangle((x0 + s * cw, level), (e - s) * cw, 0.3, facecolor=CHUNK_COLOURS[k % 5],
                               edgecolor=INK, linewidth=0.8, alpha=0.85))
        ax.text(x0 + s * cw + 0.06, level + 0.15, f"window {k + 1}: tokens {s}-{e - 1}", va="center",
                fontsize=LABEL)
    for s in starts[1:]:  # shade the overlaps on the token row
        ax.add_patch(Rectangle((x0 + s * cw, y), overlap * cw, 0.45, facecolor=GREY, alpha=0.5, linewidth=0))
    passage = (starts[1] + stride - 1, starts[1] + stride - 1 + overlap + 1)  # the worst place: just before a start
    ax.add_patch(Rectangle((x0 + passage[0] * cw, y - 0.05), (passage[1] - passage[0]) * cw, 0.55, fill=False,
                           edgecolor=VERMILION, linewidth=2.5))
    _brace(ax, x0 + passage[0] * cw, x0 + passage[1] * cw, y - 0.2,
           f"a passage of M + 1 = {overlap + 1} tokens at the worst place:\nstill whole in window 2", below=True,
           colour=VERMILION)
    ax.text(x0, 0.35, f"N = {size} tokens a window, overlap M = {overlap}, stride N - M = {stride}. "
            "Grey cells are read twice.", fontsize=10)
    ax.text(x0, 4.0, "Windows, stride and overlap", fontsize=12, weight="bold", va="center")
    return fig


def recursion_tree() -> plt.Figure:
    """The recursive splitter on the XR-12 manual's 'Starting up' section at 40 tokens: split by separators,
    then merge. Every count is the library's (`count_tokens`, `split_sentences`, `recursive_chunks`), joined
    spans counted whole: a blank line between two pieces is a token of its own."""
    size = 40
    manual = (ROOT / "data" / "xr12_manual.md").read_text(encoding="utf-8")
    section = manual[manual.index("## Starting up"):manual.index("## Routine checks")].strip()
    head_end = section.index("\n\n")
    body = section.index("\n\n") + 2  # where the paragraph starts
    sentences = [(body + s, body + e) for s, e in split_sentences(section[body:])]
    chunks = recursive_chunks(section, size)
    n = {"section": count_tokens(section), "heading": count_tokens(section[:head_end]),
         "paragraph": count_tokens(section[body:]), "blank": count_tokens(section[head_end:body])}
    counts = [count_tokens(section[s:e].strip()) for s, e in sentences]
    if len(sentences) != 4 or len(chunks) != 3 or chunks[0].text != section[:head_end]:
        raise ValueError("the figure draws a heading, four sentences and three chunks: the manual changed")
    three_sentences = count_tokens(section[sentences[0][0]:sentences[2][1]].strip())
    joined = count_tokens(section[:chunks[1].end])  # the heading, the blank line and chunk 2, as the merge counts
    if n["heading"] + n["blank"] + chunks[1].n_tokens != joined:
        raise ValueError("the figure's sum heading + blank line + chunk 2 would not equal the joined span's count")

    fig, ax = _canvas(11.0, 6.4)
    ax.text(0.3, 6.15, f"Recursive splitting, then the merge step, at {size} tokens", fontsize=12, weight="bold",
            va="center")
    _box(ax, 3.2, 5.25, 4.6, 0.55, f"section 'Starting up': {n['section']} tokens, too big", colour=GREY)
    ax.text(8.0, 5.52, 'split on "\\n\\n"', fontsize=LABEL, color=BLUE, va="center")
    _box(ax, 0.3, 4.15, 1.95, 0.55, f"'{section[:head_end]}': {n['heading']}", colour="white", size=LABEL)
    ax.text(2.4, 4.42, f'"\\n\\n": {n["blank"]}', fontsize=LABEL, va="center", color=BLUE)
    _box(ax, 4.6, 4.15, 4.2, 0.55, f"paragraph: {n['paragraph']} tokens, too big", colour=GREY, size=LABEL)
    _arrow(ax, (5.5, 5.23), (1.28, 4.72))
    _arrow(ax, (5.5, 5.23), (6.7, 4.72))
    ax.text(9.0, 4.42, "split after each\nsentence", fontsize=LABEL, color=BLUE, va="center")
    w, y, x_first = 1.95, 2.75, 2.45
    xs = [x_first + i * (w + 0.12) for i in range(4)]
    for k, (x, (s, e), tokens) in enumerate(zip(xs, sentences, counts)):
        words = section[s:e].split()
        _box(ax, x, y, w, 0.9, f"{' '.join(words[:3])} ...\n... {' '.join(words[-2:])}\n"
             f"sentence {k + 1}: {tokens}", size=LABEL)
        _arrow(ax, (6.7, 4.13), (x + w / 2, y + 0.92))
    spans = [(0.3, 2.25, f"chunk 1: heading, {chunks[0].n_tokens}", SKY, [(1.28, 4.13)]),
             (xs[0], xs[1] + w, f"chunk 2: sentences 1-2, {chunks[1].n_tokens}", ORANGE,
              [(xs[0] + w / 2, y - 0.02), (xs[1] + w / 2, y - 0.02)]),
             (xs[2], xs[3] + w, f"chunk 3: sentences 3-4, {chunks[2].n_tokens}", GREEN,
              [(xs[2] + w / 2, y - 0.02), (xs[3] + w / 2, y - 0.02)])]
    for x0, x1, label, colour, sources in spans:
        _box(ax, x0, 1.65, x1 - x0, 0.5, label, colour=colour, size=LABEL)
        for source in sources:
            _arrow(ax, source, ((x0 + x1) / 2, 2.17))
    ax.text(0.3, 1.25, f"merge, bottom-up: pieces join while the joined span stays within {size} tokens; "
            f"sentences 1-3 would hold {three_sentences}", fontsize=LABEL, color=BLUE)
    ax.text(0.3, 0.85, f"one level up, the heading cannot join chunk 2: heading + \"\\n\\n\" + chunk 2 = "
            f"{n['heading']} + {n['blank']} + {chunks[1].n_tokens} = {joined} tokens, over {size}",
            fontsize=LABEL, color=VERMILION)
    ax.text(0.3, 0.35, f"Counts are cl100k_base tokens of each span as written; the three chunks are what "
            f"recursive_chunks(section, size={size}) returns.", fontsize=LABEL, style="italic")
    return fig


def overlap_repeats() -> plt.Figure:
    """With 50% overlap each sentence is stored twice, and the top results fill with copies of one passage."""
    fig, ax = _canvas(11.0, 4.4)
    ax.text(0.3, 4.15, "What overlap repeats", fontsize=12, weight="bold", va="center")
    sw, x0, y = 1.0, 0.5, 3.2
    for s in range(8):
        colour = VERMILION if s == 3 else "white"
        _cell(ax, x0 + s * sw, y, sw, 0.45, colour, f"sentence {s + 1}", size=LABEL, alpha=0.9 if s == 3 else 1)
    for k in range(7):  # chunks of 2 sentences, stride 1 sentence (50% overlap)
        yk = y - 0.45 - 0.33 * k
        ax.add_patch(Rectangle((x0 + k * sw, yk), 2 * sw, 0.25, facecolor=CHUNK_COLOURS[k % 5], edgecolor=INK,
                               linewidth=0.6))
        ax.text(x0 + k * sw + 0.05, yk + 0.125, f"chunk {k + 1}", va="center", fontsize=LABEL)
    ax.text(x0, 0.55, "Chunks of two sentences with one sentence of overlap (50%):\n"
            "sentence 4 sits in chunks 3 and 4.", fontsize=10)
    results = ["1. chunk 4 (holds sentence 4)", "2. chunk 3 (holds sentence 4)", "3. chunk 5",
               "4. chunk 2", "5. chunk 6"]
    ax.text(9.775, 2.75, "top 5 for a question\nabout sentence 4", fontsize=10, ha="center", weight="bold")
    for i, line in enumerate(results):
        _box(ax, 8.6, 2.2 - i * 0.42, 2.35, 0.34, line, colour=VERMILION if i < 2 else "white", size=LABEL)
    ax.text(9.775, 0.12, "two of the five slots hold\nthe same sentence", fontsize=LABEL, ha="center")
    return fig


def naive_vs_late() -> plt.Figure:
    """Which token vectors are averaged into which chunk, in both orders: naive chunking encodes each chunk alone
    and pools its tokens; late chunking encodes the document once and pools the same tokens' vectors."""
    tokens = ["The", "XR-12", "pump", "cools", "the", "press", ".", "It", "must", "never", "run", "dry", "."]
    chunks = [(0, 7), (7, 13)]  # token spans of the two chunks
    fig, ax = _canvas(11.0, 6.3)
    ax.text(0.3, 6.05, "Naive and late chunking: the same chunks, the same tokens averaged, a different order",
            fontsize=12, weight="bold", va="center")
    cw, x0 = 0.58, 1.55

    def row(y: float, gap: float, top_label: str | None) -> list[float]:
        """Draw the token row at height y, `gap` inches between the chunks; return each token's centre."""
        centres = []
        for k, (a, b) in enumerate(chunks):
            for t in range(a, b):
                x = x0 + t * cw + k * gap
                _cell(ax, x, y, cw, 0.38, "white", tokens[t])
                centres.append(x + cw / 2)
        if top_label:
            ax.add_patch(Rectangle((x0, y + 0.48), len(tokens) * cw + gap, 0.3, facecolor=SKY, edgecolor=INK,
                                   linewidth=0.8))
            ax.text(x0 + (len(tokens) * cw + gap) / 2, y + 0.63, top_label, ha="center", va="center",
                    fontsize=LABEL)
        return centres

    def vectors_and_pools(centres: list[float], y: float, colours: list[str]) -> None:
        """Token vectors under the tokens, and each chunk's mean of its own tokens' vectors."""
        for t, centre in enumerate(centres):
            _cell(ax, centre - cw / 2 + 0.06, y, cw - 0.12, 0.3, colours[t])
            _arrow(ax, (centre, y + 0.68), (centre, y + 0.32))
        for k, (a, b) in enumerate(chunks):
            middle = (centres[a] + centres[b - 1]) / 2
            for t in range(a, b):
                ax.plot([centres[t], middle], [y - 0.02, y - 0.42], color=CHUNK_COLOURS[k + 1], linewidth=1.2)
            _box(ax, middle - 1.0, y - 0.85, 2.0, 0.4, f"chunk {k + 1}: mean of {b - a} vectors",
                 colour=CHUNK_COLOURS[k + 1], size=LABEL)

    ax.text(0.3, 5.1, "naive", fontsize=12, weight="bold", va="center")
    naive = row(4.9, 0.5, None)
    for k, (a, b) in enumerate(chunks):
        ax.text((naive[a] + naive[b - 1]) / 2, 5.45, f"encode chunk {k + 1} alone", ha="center", fontsize=LABEL)
    vectors_and_pools(naive, 4.2, [CHUNK_COLOURS[k + 1] for k, (a, b) in enumerate(chunks) for _ in range(a, b)])
    ax.text(x0 + len(tokens) * cw + 0.75, 4.5, "'It' never saw\n'XR-12'", fontsize=LABEL, color=VERMILION,
            va="center")

    ax.text(0.3, 2.4, "late", fontsize=12, weight="bold", va="center")
    late = row(2.2, 0.0, "encode the whole document once: every token sees every other")
    boundary = x0 + chunks[1][0] * cw
    ax.plot([boundary, boundary], [1.45, 2.65], color=INK, linestyle="--", linewidth=1.2)
    ax.text(boundary, 1.2, "boundary,\napplied after", ha="center", va="top", fontsize=LABEL)
    vectors_and_pools(late, 1.5, [SKY] * len(tokens))
    ax.text(x0 + len(tokens) * cw + 0.75, 1.8, "'It' has seen\n'XR-12'", fontsize=LABEL, color=BLUE,
            va="center")
    ax.text(0.3, 0.2, "The boundaries and the tokens averaged are the same in both rows; only when the boundaries "
            "are applied differs.", fontsize=LABEL, style="italic")
    return fig


def macro_window_plan() -> plt.Figure:
    """Macro windows on a 1,200-token document: which tokens each window contributes, which overlaps are dropped."""
    n_tokens, capacity, overlap = 1200, 510, 64
    windows = macro_windows(n_tokens, capacity, overlap)
    fig, ax = _canvas(11.0, 3.8)
    ax.text(0.3, 3.55, f"Macro windows: a {n_tokens:,}-token document, windows of {capacity} tokens,\n"
            f"{overlap} tokens of context at each inner edge, read and then dropped", fontsize=11.5, weight="bold",
            va="center")
    scale, x0 = 10.0 / n_tokens, 0.5
    _cell(ax, x0, 2.7, n_tokens * scale, 0.35, GREY, f"document: tokens 0-{n_tokens - 1}", alpha=0.5)
    for k, wdw in enumerate(windows):
        y = 2.0 - 0.6 * k
        ax.add_patch(Rectangle((x0 + wdw.start * scale, y), (wdw.end - wdw.start) * scale, 0.4, facecolor="white",
                               edgecolor=INK, hatch="///", linewidth=0.8))
        ax.add_patch(Rectangle((x0 + wdw.keep_start * scale, y), (wdw.keep_end - wdw.keep_start) * scale, 0.4,
                               facecolor=CHUNK_COLOURS[k], edgecolor=INK, linewidth=0.8))
        label = f"window {k + 1}: reads {wdw.start}-{wdw.end - 1}, keeps {wdw.keep_start}-{wdw.keep_end - 1}"
        if wdw.end == n_tokens and k:  # the last window sits at the right edge: its label goes to its left
            ax.text(x0 + wdw.start * scale - 0.08, y + 0.2, label, va="center", ha="right", fontsize=LABEL)
        else:
            ax.text(x0 + wdw.keep_start * scale + 0.08, y + 0.2, label, va="center", fontsize=LABEL)
    ax.text(x0, 0.15, "Coloured: the token vectors a window contributes. Hatched: read for context, then dropped.",
            fontsize=LABEL, style="italic")
    return fig


def token_budget() -> plt.Figure:
    """Whole chunks against an exact budget: the tokens each way returns for one question
    (`course_lib.evaluation.exact_budget` for the last row)."""
    budget, k = 1000, 5
    fig, ax = _canvas(11.0, 3.7)
    ax.text(0.3, 3.45, f"Top {k} whole chunks against an exact budget of {budget:,} tokens", fontsize=12,
            weight="bold", va="center")
    scale, x0 = 7.4 / 1400, 2.75
    rows = [("256-token chunks,\ntop 5 whole", [256] * k, 2.3), ("64-token chunks,\ntop 5 whole", [64] * k, 1.6),
            ("any size, exact budget:\nwhole chunks, then the\nnext one cut to fit", exact_budget([256] * k, budget),
             0.6)]
    for label, sizes, y in rows:
        ax.text(0.3, y + 0.2, label, fontsize=LABEL, va="center")
        x = x0
        for i, size in enumerate(sizes):
            cut = label.startswith("any") and i == len(sizes) - 1
            _cell(ax, x, y, size * scale, 0.4, CHUNK_COLOURS[i % 5], f"{size}{' (cut)' if cut else ''}", size=LABEL)
            x += size * scale
        ax.text(x + 0.1, y + 0.2, f"{sum(sizes):,} tokens", va="center", fontsize=LABEL, weight="bold")
    ax.plot([x0 + budget * scale] * 2, [0.45, 2.85], color=VERMILION, linestyle="--", linewidth=1.5)
    ax.text(x0 + budget * scale, 2.9, f"budget: {budget:,}", color=VERMILION, ha="center", fontsize=LABEL)
    return fig


# The ten questions of notebook 08, section 3 (its cell `few = {...}`): recall@1 of chunkers A and B.
# tests/test_figures.py checks that they are still the notebook's.
TEN_QUESTIONS = {"A": (1, 1, 0, 1, 1, 0, 1, 0, 1, 0), "B": (1, 0, 0, 1, 0, 0, 0, 1, 1, 0)}


def paired_bootstrap() -> plt.Figure:
    """The paired bootstrap on notebook 08's ten questions: resample them, one difference of means A - B a
    resample, the interval read off the resampled differences (`course_lib.stats.paired_interval`, the same
    draws: seed 0, `rng.integers(0, n, size=(resamples, n))`)."""
    a, b = (np.array(TEN_QUESTIONS[name], dtype=float) for name in "AB")
    diff, n, resamples = a - b, len(a), DEFAULT_RESAMPLES
    mean, low, high = paired_interval(a, b, resamples=resamples, seed=0)
    draws = np.random.default_rng(0).integers(0, n, size=(resamples, n))
    means = diff[draws].mean(axis=1)
    fig = plt.figure(figsize=(11.0, 4.4))
    left = fig.add_axes((0.02, 0.06, 0.46, 0.86))
    left.axis("off")
    left.set_xlim(0, 10)
    left.set_ylim(0, 10)
    left.text(0, 9.6, f"{n} questions, each scored 1 (found) or 0", fontsize=LABEL + 0.5, weight="bold")
    cells = [("", [f"q{i + 1}" for i in range(n)]), ("A", [f"{v:.0f}" for v in a]), ("B", [f"{v:.0f}" for v in b]),
             ("A - B", [f"{v:+.0f}" if v else "0" for v in diff])]
    for row, (name, values) in enumerate(cells):
        y = 8.55 - 0.75 * row
        left.text(0, y, name, fontsize=LABEL, weight="bold")
        for i, value in enumerate(values):
            left.text(1.45 + i * 0.86, y, value, ha="center", fontsize=LABEL, family="monospace")
    left.text(0, 5.2, f"mean A - B = {mean:+.2f}. Resample the questions with replacement\n"
              f"(3 of {resamples:,} shown):", fontsize=LABEL)
    for k in range(3):
        shown = " ".join(f"q{j + 1}" for j in draws[k])
        left.text(0.2, 3.75 - 1.05 * k, f"{shown}\nA - B = {means[k]:+.2f}", fontsize=LABEL, family="monospace")
    left.text(0, 0.35, "A resample keeps the pairs: a question's A and B travel together.", fontsize=LABEL,
              style="italic")
    right = fig.add_axes((0.56, 0.16, 0.42, 0.68))
    values, counts = np.unique(np.round(means, 10), return_counts=True)
    right.bar(values, counts, width=0.08, color=SKY, edgecolor=INK, linewidth=0.5)
    for bound in (low, high):
        right.axvline(bound, color=VERMILION, linestyle="--")
    right.axvline(0, color=INK, linewidth=1)
    right.annotate(f"mean {mean:+.2f}", xy=(mean, counts.max()), xytext=(mean + 0.3, counts.max() * 0.95),
                   fontsize=LABEL, color=BLUE, va="center", arrowprops={"arrowstyle": "-|>", "color": BLUE})
    right.set_title(f"{resamples:,} differences A - B: 95% of them in [{low:+.2f}, {high:+.2f}]",
                    fontsize=LABEL + 0.5)
    right.set_xlabel("difference of mean scores, A - B", fontsize=LABEL + 0.5)
    right.set_ylabel("resamples", fontsize=LABEL + 0.5)
    right.tick_params(labelsize=LABEL)
    right.text(0.98, 0.75, "the interval\nholds 0:\nno decision yet", transform=right.transAxes, fontsize=LABEL,
               color=VERMILION, va="top", ha="right")
    return fig


def context_methods() -> plt.Figure:
    """What gets embedded and what is returned, for contextual headers, parent-child and hybrid fusion; the
    fused order is `course_lib.retrieval.reciprocal_rank_fusion`'s."""
    vectors, words = ["c3", "c7", "c1"], ["c7", "c9", "c3"]
    fused = reciprocal_rank_fusion([vectors, words])
    score = {c: sum(1 / (RRF_K + r.index(c) + 1) for r in (vectors, words) if c in r) for c in fused}
    third, fourth = fused[2], fused[3]
    fig, ax = _canvas(11.0, 4.2)
    ax.text(0.3, 3.95, "Three ways to give a chunk its context back", fontsize=12, weight="bold", va="center")
    ranked = ("vectors: " + " ".join(f"{i}. {c}" for i, c in enumerate(vectors, 1))
              + "\nBM25 words: " + " ".join(f"{i}. {c}" for i, c in enumerate(words, 1)))
    returned = (f"fused: sum of 1 / ({RRF_K} + rank)\n" + " ".join(f"{i}. {c}" for i, c in enumerate(fused[:3], 1))
                + f"\n{third} {score[third]:.4f} > {fourth} {score[fourth]:.4f}")
    panels = [(0.3, "contextual header", [("embedded", "XR-12 manual > Starting up\n+ the chunk's text", SKY),
                                          ("returned", "the chunk's text", "white")]),
              (3.95, "parent-child", [("embedded", "small child chunks\n(one sentence each)", SKY),
                                      ("returned", "the parent section\nof the best child", "white")]),
              (7.6, "hybrid fusion", [("ranked by", ranked, SKY), ("returned", returned, "white")])]
    for x, title, parts in panels:
        ax.text(x + 1.6, 3.45, title, fontsize=11, weight="bold", ha="center")
        for k, (label, text, colour) in enumerate(parts):
            y = 2.05 - 1.6 * k
            ax.text(x, y + 1.1, label, fontsize=LABEL, color=BLUE, style="italic")
            _box(ax, x, y, 3.2, 1.0, text, colour=colour, size=LABEL)
        _arrow(ax, (x + 1.6, 2.03), (x + 1.6, 1.57))
    return fig


def maxsim_grid() -> plt.Figure:
    """MaxSim: each query token takes its best match among the passage's tokens; the score is their sum."""
    query = ["when", "replace", "seal"]
    passage = ["the", "mechanical", "seal", "wears", "first", "swap", "it"]
    sims = np.array([[0.21, 0.10, 0.12, 0.30, 0.35, 0.28, 0.18],
                     [0.15, 0.32, 0.40, 0.44, 0.22, 0.71, 0.25],
                     [0.12, 0.55, 0.93, 0.48, 0.20, 0.33, 0.27]])
    fig, ax = plt.subplots(figsize=(9.0, 3.6))
    image = ax.imshow(sims, cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(len(passage)), passage)
    ax.set_yticks(range(len(query)), query)
    ax.set_xlabel("passage tokens")
    ax.set_ylabel("query tokens")
    for i, row in enumerate(sims):
        j = int(row.argmax())
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor=VERMILION, linewidth=2.5))
        for jj, value in enumerate(row):
            ax.text(jj, i, f"{value:.2f}", ha="center", va="center", fontsize=LABEL,
                    color="white" if value > 0.6 else INK)
    best = sims.max(axis=1)
    ax.set_title("MaxSim (illustrative numbers): the best match of each query token, summed: "
                 + " + ".join(f"{v:.2f}" for v in best) + f" = {best.sum():.2f}", fontsize=10)
    fig.colorbar(image, ax=ax, label="cosine similarity", shrink=0.8)
    fig.tight_layout()
    return fig


def heading_outline() -> plt.Figure:
    """The annual report's outline as a tree, each section with its character span and tokens
    (`markdown_sections`), and one chunk of 'Reliability' carrying its heading path (`markdown_chunks`)."""
    report = (ROOT / "data" / "annual_report.md").read_text(encoding="utf-8")
    sections = markdown_sections(report)
    size = 100
    chunk = next(c for c in markdown_chunks(report, size) if c.metadata["headings"][-1] == "### Reliability")
    fig, ax = _canvas(11.0, 5.7)
    ax.text(0.3, 5.45, "The outline of a Markdown document, and the heading path a chunk carries", fontsize=12,
            weight="bold", va="center")
    row, top = 0.36, 4.6
    target = None
    for k, (start, end, path) in enumerate(sections):
        y, depth = top - k * row, len(path) - 1
        x = 0.45 + 0.35 * depth
        if depth:
            ax.plot([x - 0.25, x - 0.25, x - 0.05], [y + row * 0.75, y, y], color=GREY, linewidth=1)
        name = path[-1]
        chosen = path == chunk.metadata["headings"]
        ax.text(x, y, name, va="center", fontsize=LABEL, weight="bold" if chosen else "normal",
                color=VERMILION if chosen else INK,
                bbox={"facecolor": ORANGE, "alpha": 0.35, "edgecolor": "none"} if chosen else None)
        ax.text(6.0, y, f"{start:,}-{end:,}", va="center", ha="right", fontsize=LABEL, color=BLUE)
        if chosen:
            target = y
    ax.text(6.0, top + 0.38, "characters", ha="right", fontsize=LABEL, color=BLUE, style="italic")
    words = chunk.text.split()
    card = [f"a chunk of markdown_chunks(report, {size}):", f"characters {chunk.start:,}-{chunk.end:,}, "
            f"{chunk.n_tokens} tokens", f"\"{' '.join(words[:5])} ...\"", "", "metadata['headings']:"]
    card += [("  " * i) + ("> " if i else "") + h for i, h in enumerate(chunk.metadata["headings"])]
    _box(ax, 6.6, 1.35, 4.3, 2.9, colour="white")
    for i, line in enumerate(card):
        ax.text(6.75, 4.0 - i * 0.3, line, fontsize=LABEL, va="center", weight="bold" if i == 0 else "normal",
                color=VERMILION if i >= 5 and i == len(card) - 1 else INK)
    _arrow(ax, (6.1, target), (6.55, 2.4), colour=VERMILION)
    ax.text(0.3, 0.15, "Each section runs from its heading line to the next heading; no chunk crosses one, and the "
            "path goes with every chunk of the section.", fontsize=LABEL, style="italic")
    return fig


def class_by_ast() -> plt.Figure:
    """booking.py's top-level definitions as `ast.parse` gives them (lines, tokens), and its largest class split
    into header and methods, as notebook 07's python_chunks does for a class over the size."""
    source = (ROOT / "data" / "booking.py").read_text(encoding="utf-8")
    lines = source.splitlines(keepends=True)
    size = 200

    def span(node: ast.AST) -> tuple[int, int]:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        return first, node.end_lineno

    def tokens(first: int, last: int) -> int:
        return count_tokens("".join(lines[first - 1:last]).strip())

    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    definitions = [node for node in ast.parse(source).body if isinstance(node, kinds)]
    big = max((n for n in definitions if isinstance(n, ast.ClassDef)), key=lambda n: tokens(*span(n)))
    methods = [n for n in big.body if isinstance(n, kinds)]
    if tokens(*span(big)) <= size or not methods:
        raise ValueError(f"the figure splits a class over {size} tokens with methods: booking.py changed")
    fig, ax = _canvas(11.0, 5.2)
    ax.text(0.3, 4.95, f"ast.parse(booking.py): one chunk per definition; a class over {size} tokens goes by method",
            fontsize=12, weight="bold", va="center")
    ax.text(0.3, 4.45, "top-level definitions", fontsize=LABEL, color=BLUE, style="italic")
    row = 0.36
    for k, node in enumerate(definitions):
        y = 4.05 - k * row
        first, last = span(node)
        kind = "class" if isinstance(node, ast.ClassDef) else "def"
        chosen = node is big
        _box(ax, 0.3, y - 0.15, 4.6, 0.3, f"{kind} {node.name}: lines {first}-{last}, {tokens(first, last)} tokens",
             colour=ORANGE if chosen else "white", size=LABEL)
        if chosen:
            source_y = y
    ax.text(5.9, 4.45, f"{big.name}: over {size} tokens, so split", fontsize=LABEL, color=BLUE, style="italic")
    parts = [("class header", span(big)[0], span(methods[0])[0] - 1)]
    parts += [(f"method {big.name}.{m.name}", *span(m)) for m in methods]
    for k, (label, first, last) in enumerate(parts):
        y = 4.05 - k * 0.5
        colour = CHUNK_COLOURS[k % len(CHUNK_COLOURS)]
        _box(ax, 5.9, y - 0.2, 4.9, 0.4, f"{label}: lines {first}-{last}, {tokens(first, last)} tokens",
             colour=colour, size=LABEL)
    _arrow(ax, (4.95, source_y), (5.85, 4.05 - 0.5 * (len(parts) - 1) / 2))
    ax.text(0.3, 0.75, "Spans come from each node's lineno and end_lineno (decorators included), turned into "
            "character offsets; counts are cl100k_base tokens.", fontsize=LABEL, style="italic")
    return fig


# A two-page document as a PDF reader sees it: a running header and footer on each page, a form feed between.
PDF_HEADER = "XR-12 service manual"
PDF_PAGES = ["Starting up. Fill the casing with coolant before the first start, because the pump must never run "
             "dry. Open the suction valve fully, then open the delivery valve a quarter turn and press the green "
             "button.",
             "It reaches full pressure in about ten seconds. If the gauge stays below 2 bar after a minute, stop "
             "it and check the sump level. Listen to it once a shift."]


def pdf_page() -> plt.Figure:
    """Two pages as a reader extracts them: the running header and footer dropped, a form feed ending each page;
    a chunk that crosses the break carries both page numbers (`recursive_chunks`, `page_span`), and
    `page_chunks` keeps each page apart."""
    text = PAGE_BREAK.join(PDF_PAGES)
    size = 40
    crossing = next(c for c in recursive_chunks(text, size) if PAGE_BREAK in c.text)
    first, last = page_span(text, crossing.start, crossing.end)
    kept = page_chunks(text, 64)
    fig, ax = _canvas(11.0, 5.0)
    ax.text(0.3, 4.75, "Pages: running header and footer, the form feed, and a chunk across the break", fontsize=12,
            weight="bold", va="center")
    base = 0
    for p, body in enumerate(PDF_PAGES):
        x = 0.3 + p * 4.3
        ax.add_patch(Rectangle((x, 0.95), 3.9, 3.35, facecolor="white", edgecolor=INK, linewidth=1))
        ax.text(x + 1.95, 4.08, PDF_HEADER, ha="center", fontsize=LABEL, color="#777777", style="italic")
        ax.text(x + 1.95, 1.12, f"page {p + 1}", ha="center", fontsize=LABEL, color="#777777", style="italic")
        position = 0
        for i, line in enumerate(textwrap.wrap(body, 46)):
            at = body.index(line, position)
            position = at + len(line)
            y = 3.6 - i * 0.3
            inside = crossing.start < base + position and base + at < crossing.end
            ax.text(x + 0.2, y, line, fontsize=LABEL, va="center", color=VERMILION if inside else INK)
            if inside:
                ax.plot([x + 0.09] * 2, [y - 0.14, y + 0.14], color=VERMILION, linewidth=3)
        base += len(body) + len(PAGE_BREAK)
    ax.text(4.4, 2.6, "\\f", fontsize=14, weight="bold", color=VERMILION, ha="center", va="center")
    ax.text(4.4, 2.3, "form\nfeed", fontsize=LABEL, color=VERMILION, ha="center", va="top")
    ax.text(8.75, 4.1, "running header and footer:\nrepeated on every page,\ndropped by the reader",
            fontsize=LABEL, color="#777777", va="top")
    ax.text(8.75, 3.0, f"red: one chunk of\nrecursive_chunks(text, {size}),\n{crossing.n_tokens} tokens across the "
            f"break:\npages {first}-{last} (page_span)", fontsize=LABEL, color=VERMILION, va="top")
    pages = ", ".join(str(c.metadata["page_start"]) for c in kept)
    ax.text(8.75, 1.6, f"page_chunks(text, 64):\n{len(kept)} chunks, pages {pages}:\nnone crosses the break",
            fontsize=LABEL, color=BLUE, va="top")
    return fig


def verdict_flow() -> plt.Figure:
    """The verdict's rule as a flow, with the levels, threshold and margin of `course_lib.stats`."""
    fig, ax = _canvas(11.0, 4.6)
    ax.text(0.3, 4.35, "From your documents to a verdict", fontsize=12, weight="bold", va="center")
    steps = [("your documents\nand questions", GREY), ("strategy grid:\nchunker x size", SKY),
             ("per-question\nscores", SKY), (f"paired {LEVEL:.0%}\nintervals:\nother - leader", SKY)]
    w, gap, y = 1.45, 0.28, 1.85
    for i, (text, colour) in enumerate(steps):
        x = 0.3 + i * (w + gap)
        _box(ax, x, y, w, 1.1, text, colour=colour, size=LABEL)
        if i:
            _arrow(ax, (x - gap + 0.02, y + 0.55), (x - 0.02, y + 0.55))
    outcomes = [(f"leader: the highest mean; the winner only if all others are ruled out and it is best alone "
                 f"in {THRESHOLD:.0%} of resamples", "white"),
                ("ruled out: the interval lies below 0", GREY),
                ("in play: the interval holds 0, no decision yet", YELLOW),
                (f"as good as the leader: its {EQUIVALENCE_LEVEL:.0%} interval within +/- {DEFAULT_MARGIN:.2f}",
                 GREEN),
                ("cheapest as good: the one to ship", ORANGE)]
    x = 0.3 + 4 * (w + gap)
    _arrow(ax, (x - gap + 0.02, y + 0.55), (x - 0.02, y + 0.55))
    for k, (text, colour) in enumerate(outcomes):
        height = 0.75 if k == 0 else 0.5
        top = 3.95 - (0 if k == 0 else 0.85 + (k - 1) * 0.62)
        _box(ax, x, top - height, 3.3, height, textwrap.fill(text, 40), colour=colour, size=LABEL)
    ax.text(0.3, 0.3, "Every strategy is scored on the same resampled questions (paired); more questions "
            "narrow the intervals.", fontsize=LABEL, style="italic")
    return fig


def atomic_update() -> plt.Figure:
    """Re-indexing one edited document atomically: old rows, new rows, one version switch."""
    fig, ax = _canvas(7.0, 3.2)
    ax.text(0.3, 2.95, "Re-indexing one edited document: old rows, new rows, one switch", fontsize=12,
            weight="bold", va="center")
    rows = [("guide.md", "chunks 0-3", "v1", GREY), ("report.md", "chunks 0-4 (old)", "v1", GREY),
            ("report.md", "chunks 0-5 (new)", "v2", GREEN)]
    for k, (doc, chunks, version, colour) in enumerate(rows):
        y = 2.2 - k * 0.5
        _cell(ax, 0.3, y, 1.3, 0.4, colour, doc)
        _cell(ax, 1.6, y, 1.7, 0.4, colour, chunks)
        _cell(ax, 3.3, y, 0.7, 0.4, colour, version)
    _arrow(ax, (4.15, 1.9), (4.15, 1.4), colour=VERMILION)
    ax.text(4.3, 1.65, "one commit switches\nthe store from v1 to v2", fontsize=LABEL, color=VERMILION,
            va="center")
    ax.text(0.3, 0.45, "The new rows are written first and stay unseen until the switch: a reader sees v1 or "
            "v2,\nnever half of each; guide.md's rows are not touched.", fontsize=LABEL, va="center")
    return fig


def exact_vs_index() -> plt.Figure:
    """Exact search compares the query with every vector; an index of cells visits only the nearest few
    (illustrative: 48 vectors in 6 cells, 2 visited)."""
    fig, ax = _canvas(7.0, 3.8)
    ax.text(0.3, 3.55, "Exact search against an index of cells", fontsize=12, weight="bold", va="center")
    rng = np.random.default_rng(3)
    centres = rng.uniform(0.6, 2.6, size=(6, 2))
    points = np.concatenate([c + rng.normal(0, 0.18, size=(8, 2)) for c in centres])
    cell = np.argmin(((points[:, None, :] - centres[None]) ** 2).sum(-1), axis=1)
    query = np.array([1.6, 1.6])
    probe = np.argsort(((centres - query) ** 2).sum(-1))[:2]
    for p, (x0, title) in enumerate(((0.3, "exact: one pass over every vector"),
                                     (3.7, f"index: visit the {len(probe)} nearest cells"))):
        ax.text(x0 + 1.45, 3.05, title, fontsize=LABEL, weight="bold", ha="center")
        visited = np.ones(len(points), bool) if p == 0 else np.isin(cell, probe)
        shift = np.array([x0, 0.1])
        ax.scatter(*(points[~visited] + shift).T, s=14, color=GREY, zorder=3)
        ax.scatter(*(points[visited] + shift).T, s=14, color=BLUE, zorder=3)
        ax.scatter(*(query + shift), s=90, marker="*", color=VERMILION, zorder=4)
        if p == 1:
            for k, centre in enumerate(centres):
                ax.add_patch(plt.Circle(centre + shift, 0.5, fill=False, linestyle="-" if k in probe else "--",
                                        edgecolor=BLUE if k in probe else GREY, linewidth=1.2))
        ax.text(x0 + 1.45, 0.2, f"compares {visited.sum()} of {len(points)} vectors", fontsize=LABEL,
                ha="center", color=BLUE)
    ax.text(0.3, -0.2, "Illustrative sizes; section 3 measures both on a real store.", fontsize=LABEL,
            style="italic")
    return fig


# The course's stages, in order, and the notebooks of each: the roadmap strip at the top of every notebook.
STAGES = [("start", (0,)), ("why chunk; tokens", (1, 2)), ("size and overlap", (3, 4, 5)),
          ("late chunking; structure", (6, 7)), ("measure", (8,)), ("semantic, context, reranking", (9, 10, 11)),
          ("your documents to production", (12, 13, 14))]


def roadmap(number: int) -> plt.Figure:
    """The course's path as a strip of its notebooks grouped by stage, notebook `number` highlighted."""
    if not any(number in members for _, members in STAGES):
        raise ValueError(f"number={number}: no notebook of the roadmap; choose one of 0-14")
    cw, gap, x = 0.6, 0.28, 0.3
    fig, ax = _canvas(11.0, 1.35)
    for name, members in STAGES:
        here = number in members
        for k, member in enumerate(members):
            colour = ORANGE if member == number else (SKY if here else "white")
            _cell(ax, x + k * cw, 0.72, cw, 0.45, colour, f"{member:02d}", size=LABEL + 1)
        width = len(members) * cw
        ax.text(x + width / 2, 0.6, textwrap.fill(name, max(8, int(width / 0.075))), ha="center", va="top",
                fontsize=LABEL, weight="bold" if here else "normal", color=VERMILION if here else INK)
        x += width + gap
    return fig


FIGURES: dict[str, Callable[[], plt.Figure]] = {
    "rag_pipeline": rag_pipeline,
    "silent_cut": silent_cut,
    "overlap_windows": overlap_windows,
    "recursion_tree": recursion_tree,
    "overlap_repeats": overlap_repeats,
    "naive_vs_late": naive_vs_late,
    "macro_windows": macro_window_plan,
    "token_budget": token_budget,
    "paired_bootstrap": paired_bootstrap,
    "context_methods": context_methods,
    "maxsim_grid": maxsim_grid,
    "heading_outline": heading_outline,
    "class_by_ast": class_by_ast,
    "pdf_page": pdf_page,
    "verdict_flow": verdict_flow,
    "atomic_update": atomic_update,
    "exact_vs_index": exact_vs_index,
    **{f"roadmap_{number:02d}": functools.partial(roadmap, number) for _, members in STAGES for number in members},
}


def render(name: str) -> bytes:
    """One figure as SVG bytes, without a date or a creator version, so a redraw is byte for byte equal."""
    fig = FIGURES[name]()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight", pad_inches=0.15)
    plt.close(fig)
    return buffer.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the SVG files")
    parser.add_argument("names", nargs="*", help=f"figures to draw (default: all): {', '.join(FIGURES)}")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(FIGURES))
    if unknown:
        parser.error(f"unknown figure {', '.join(unknown)}; choose from {', '.join(FIGURES)}")
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.names or FIGURES:
        (args.out / f"{name}.svg").write_bytes(render(name))
        print(f"wrote {args.out / f'{name}.svg'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
