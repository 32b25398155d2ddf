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
import io
import sys
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from course_lib.late import macro_windows

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "notebooks" / "figures"

# Okabe-Ito colours: distinguishable with the common colour-vision deficiencies
BLUE, ORANGE, GREEN, PINK = "#0072B2", "#E69F00", "#009E73", "#CC79A7"
SKY, VERMILION, YELLOW, GREY, INK = "#56B4E9", "#D55E00", "#F0E442", "#BBBBBB", "#222222"
CHUNK_COLOURS = (SKY, ORANGE, GREEN, PINK, YELLOW)

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
          size: float = 9, alpha: float = 1.0) -> None:
    """A square-cornered cell, used for tokens and bars."""
    ax.add_patch(Rectangle((x, y), w, h, facecolor=colour, edgecolor=INK, linewidth=0.6, alpha=alpha))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size)


def _arrow(ax: plt.Axes, start: tuple[float, float], end: tuple[float, float], colour: str = INK) -> None:
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=14, color=colour, linewidth=1.3))


def _brace(ax: plt.Axes, x0: float, x1: float, y: float, text: str, colour: str = INK, below: bool = False,
           left: bool = False) -> None:
    """A bracket from x0 to x1 at height y with a label over (or under) it, centred or from its left end."""
    tick = -0.08 if not below else 0.08
    ax.plot([x0, x0, x1, x1], [y + tick, y, y, y + tick], color=colour, linewidth=1.3)
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
        ax.text(x + w / 2, y - 0.15, choice, ha="center", va="top", fontsize=9.5)
        label = "notebook" if len(where) == 2 else "notebooks"
        ax.text(x + w / 2, y - 1.05, f"{label} {where}", ha="center", va="top", fontsize=9, color=BLUE,
                style="italic")
        if i:
            _arrow(ax, (x - gap + 0.02, y + 0.375), (x - 0.02, y + 0.375))
    ax.text(0.3, 3.3, "A retrieval pipeline: the course measures the choice under each step",
            fontsize=12, weight="bold", va="center")
    return fig


def silent_cut() -> plt.Figure:
    """What an embedding model reads of a long text: the window, and everything after it dropped."""
    fig, ax = _canvas(10.0, 2.6)
    total, window, scale = 1000, 256, 9.0 / 1000
    x0, y = 0.5, 1.0
    _cell(ax, x0, y, window * scale, 0.5, SKY, "read: text tokens 1-254")
    _cell(ax, x0 + window * scale, y, (total - window) * scale, 0.5, GREY,
          "never read: text tokens 255-1,000, dropped without an error", alpha=0.6)
    _brace(ax, x0, x0 + window * scale, y + 0.65, "the window: 256 places, 2 of them for [CLS] and [SEP]",
           colour=BLUE, left=True)
    _brace(ax, x0, x0 + total * scale, y - 0.15, "the whole document: one vector is made from the blue part only",
           below=True)
    ax.text(0.5, 2.35, "One long text, one vector: the cut is silent", fontsize=12, weight="bold", va="center")
    return fig


def overlap_windows() -> plt.Figure:
    """Windows of N tokens with overlap M on a row of tokens; a passage of M + 1 tokens always fits one window."""
    n, size, overlap = 22, 8, 3
    stride = size - overlap
    fig, ax = _canvas(11.0, 4.2)
    cw, x0, y = 0.45, 0.6, 1.4
    for t in range(n):
        _cell(ax, x0 + t * cw, y, cw, 0.45, "white", str(t), size=8)
    starts = list(range(0, n - overlap, stride))
    for k, s in enumerate(starts):
        e = min(s + size, n)
        level = y + 0.65 + 0.42 * k
        ax.add_patch(Rectangle((x0 + s * cw, level), (e - s) * cw, 0.3, facecolor=CHUNK_COLOURS[k % 5],
                               edgecolor=INK, linewidth=0.8, alpha=0.85))
        ax.text(x0 + s * cw + 0.06, level + 0.15, f"window {k + 1}: tokens {s}-{e - 1}", va="center", fontsize=9)
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
    """The recursive splitter on the XR-12 manual's 'Starting up' section: split by separators, then merge."""
    fig, ax = _canvas(11.0, 5.6)
    ax.text(0.3, 5.35, "Recursive splitting, then the merge step, at 40 tokens", fontsize=12, weight="bold",
            va="center")
    _box(ax, 3.4, 4.45, 4.2, 0.55, "section 'Starting up': 71 tokens, too big", colour=GREY)
    ax.text(7.8, 4.72, 'split on "\\n\\n"', fontsize=9.5, color=BLUE, va="center")
    _box(ax, 0.8, 3.35, 2.2, 0.55, "'## Starting up': 3", colour="white", size=9.5)
    _box(ax, 4.6, 3.35, 4.2, 0.55, "paragraph: 67 tokens, too big", colour=GREY, size=9.5)
    _arrow(ax, (5.5, 4.43), (1.9, 3.92))
    _arrow(ax, (5.5, 4.43), (6.7, 3.92))
    ax.text(9.0, 3.62, "split after each sentence", fontsize=9.5, color=BLUE, va="center")
    sentences = [("Fill its casing ...\n... never run dry.", 17), ("Open the suction valve ...\n... green button.", 20),
                 ("It reaches full pressure\n... ten seconds.", 9), ("If the gauge stays below\n... sump level.", 21)]
    w, y, x_first = 1.95, 2.1, 2.6
    xs = [x_first + i * (w + 0.1) for i in range(4)]
    for x, (text, tokens) in zip(xs, sentences):
        _box(ax, x, y, w, 0.75, f"{text}\n{tokens} tokens", size=8.5)
        _arrow(ax, (6.7, 3.33), (x + w / 2, y + 0.77))
    ax.text(0.3, 0.55, "merge: add pieces in order while the chunk stays within 40 tokens", fontsize=9.5,
            color=BLUE)
    chunks = [(0.8, 2.2, "chunk 1: 3", SKY, [(1.9, 3.33)]),
              (xs[0], xs[1] + w, "chunk 2: 17 + 20 = 37; adding 9 would pass 40", ORANGE,
               [(xs[0] + w / 2, y - 0.02), (xs[1] + w / 2, y - 0.02)]),
              (xs[2], xs[3] + w, "chunk 3: 9 + 21 = 30", GREEN, [(xs[2] + w / 2, y - 0.02), (xs[3] + w / 2, y - 0.02)])]
    for x0, x1, label, colour, sources in chunks:
        _box(ax, x0, 0.95, x1 - x0, 0.55, label, colour=colour, size=9)
        for source in sources:
            _arrow(ax, source, ((x0 + x1) / 2, 1.52))
    ax.text(0.3, 0.2, "Counts are cl100k_base tokens; the three chunks are what recursive_chunks(section, size=40) "
            "returns. Notebook 04 builds both steps.", fontsize=9, style="italic")
    return fig


def overlap_repeats() -> plt.Figure:
    """With 50% overlap each sentence is stored twice, and the top results fill with copies of one passage."""
    fig, ax = _canvas(11.0, 4.4)
    ax.text(0.3, 4.15, "What overlap repeats", fontsize=12, weight="bold", va="center")
    sw, x0, y = 1.0, 0.5, 3.2
    for s in range(8):
        colour = VERMILION if s == 3 else "white"
        _cell(ax, x0 + s * sw, y, sw, 0.45, colour, f"sentence {s + 1}", size=9, alpha=0.9 if s == 3 else 1)
    for k in range(7):  # chunks of 2 sentences, stride 1 sentence (50% overlap)
        yk = y - 0.45 - 0.33 * k
        ax.add_patch(Rectangle((x0 + k * sw, yk), 2 * sw, 0.25, facecolor=CHUNK_COLOURS[k % 5], edgecolor=INK,
                               linewidth=0.6))
        ax.text(x0 + k * sw + 0.05, yk + 0.125, f"chunk {k + 1}", va="center", fontsize=8.5)
    ax.text(x0, 0.55, "Chunks of two sentences with one sentence of overlap (50%):\n"
            "sentence 4 sits in chunks 3 and 4.", fontsize=10)
    results = ["1. chunk 4 (holds sentence 4)", "2. chunk 3 (holds sentence 4)", "3. chunk 5",
               "4. chunk 2", "5. chunk 6"]
    ax.text(9.85, 2.75, "top 5 for a question\nabout sentence 4", fontsize=10, ha="center", weight="bold")
    for i, line in enumerate(results):
        _box(ax, 8.75, 2.2 - i * 0.42, 2.2, 0.34, line, colour=VERMILION if i < 2 else "white", size=8.5)
    ax.text(9.85, 0.12, "two of the five slots hold\nthe same sentence", fontsize=8.5, ha="center")
    return fig


def naive_vs_late() -> plt.Figure:
    """The order of operations: naive chunking embeds each chunk alone; late chunking embeds first, then pools."""
    fig, ax = _canvas(11.0, 4.6)
    ax.text(0.3, 4.35, "Naive and late chunking: the same chunks, a different order", fontsize=12, weight="bold",
            va="center")
    rows = [(3.1, "naive", [("document", GREY), ("cut into\nchunks", ORANGE), ("encode each\nchunk alone", SKY),
                            ("mean-pool\neach chunk", GREEN), ("one vector\na chunk", "white")]),
            (1.3, "late", [("document", GREY), ("encode the whole\ndocument once", SKY),
                           ("one vector\nper token", SKY), ("pool the tokens\nof each chunk", GREEN),
                           ("one vector\na chunk", "white")])]
    for y, label, steps in rows:
        ax.text(0.3, y + 0.35, label, fontsize=12, weight="bold", va="center")
        for i, (text, colour) in enumerate(steps):
            x = 1.35 + i * 1.95
            _box(ax, x, y, 1.6, 0.7, text, colour=colour, size=9.5)
            if i:
                _arrow(ax, (x - 0.33, y + 0.35), (x - 0.02, y + 0.35))
    ax.text(1.35, 2.55, "each chunk's tokens see only their own chunk: 'It' cannot know it is the XR-12",
            fontsize=9.5, color=VERMILION)
    ax.text(1.35, 0.75, "every token has seen the whole document before the chunk boundaries are applied",
            fontsize=9.5, color=BLUE)
    ax.text(1.35, 0.3, "The boundaries are the same in both rows; only when they are applied differs.",
            fontsize=9.5, style="italic")
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
        ax.text(x0 + wdw.keep_start * scale + 0.08, y + 0.2,
                f"window {k + 1}: reads {wdw.start}-{wdw.end - 1}, keeps {wdw.keep_start}-{wdw.keep_end - 1}",
                va="center", fontsize=9)
    ax.text(x0, 0.15, "Coloured: the token vectors a window contributes. Hatched: read for context, then dropped.",
            fontsize=9.5, style="italic")
    return fig


def token_budget() -> plt.Figure:
    """Whole chunks against an exact budget: the tokens each way returns for one question."""
    fig, ax = _canvas(11.0, 3.6)
    ax.text(0.3, 3.35, "Top 5 whole chunks against an exact budget of 1,000 tokens", fontsize=12,
            weight="bold", va="center")
    scale, x0 = 8.0 / 1400, 2.4
    rows = [("256-token chunks,\ntop 5 whole", [256] * 5, 2.25), ("64-token chunks,\ntop 5 whole", [64] * 5, 1.55),
            ("any size, exact budget:\nwhole chunks, then the\nnext one cut to fit", [256, 256, 256, 232], 0.6)]
    for label, sizes, y in rows:
        ax.text(0.3, y + 0.2, label, fontsize=9.5, va="center")
        x = x0
        for k, size in enumerate(sizes):
            cut = label.startswith("any") and k == len(sizes) - 1
            _cell(ax, x, y, size * scale, 0.4, CHUNK_COLOURS[k % 5], f"{size}{' (cut)' if cut else ''}", size=8.5)
            x += size * scale
        ax.text(x + 0.1, y + 0.2, f"{sum(sizes):,} tokens", va="center", fontsize=9.5, weight="bold")
    ax.plot([x0 + 1000 * scale] * 2, [0.45, 2.8], color=VERMILION, linestyle="--", linewidth=1.5)
    ax.text(x0 + 1000 * scale, 2.85, "budget: 1,000", color=VERMILION, ha="center", fontsize=9.5)
    return fig


def paired_bootstrap() -> plt.Figure:
    """The paired bootstrap: resample questions, take one difference of means a resample, read the interval."""
    rng = np.random.default_rng(7)
    a = (rng.random(20) < 0.75).astype(float)
    b = np.where(rng.random(20) < 0.8, a, 1 - a)
    fig = plt.figure(figsize=(11.0, 4.2))
    left = fig.add_axes((0.03, 0.08, 0.42, 0.8))
    left.axis("off")
    left.set_xlim(0, 10)
    left.set_ylim(0, 10)
    left.text(0, 9.6, "20 questions, each scored 1 (found) or 0: A's score, then B's", fontsize=10, weight="bold")
    for i in range(20):
        x = 0.4 + (i % 10) * 0.95
        y = 8.2 if i < 10 else 6.6
        left.text(x, y, f"q{i + 1}\n{a[i]:.0f} {b[i]:.0f}", ha="center", fontsize=8.5, family="monospace")
    picks = [rng.integers(0, 20, 20) for _ in range(3)]
    left.text(0, 5.5, "resample the questions with replacement (3 of 2,000 shown):", fontsize=9.5)
    for k, pick in enumerate(picks):
        diff = b[pick].mean() - a[pick].mean()
        shown = " ".join(f"q{j + 1}" for j in pick[:9])
        left.text(0.2, 4.6 - 1.2 * k, f"{shown} ...\nB - A = {diff:+.2f}", fontsize=8.5, family="monospace")
    left.text(0, 0.6, "Each resample keeps the pairs: a question's A and B travel together.", fontsize=9,
              style="italic")
    right = fig.add_axes((0.55, 0.16, 0.42, 0.68))
    counts = rng.integers(0, 20, size=(2000, 20))
    diffs = b[counts].mean(axis=1) - a[counts].mean(axis=1)
    low, high = np.percentile(diffs, [2.5, 97.5])
    right.hist(diffs, bins=np.arange(-0.5, 0.55, 0.05), color=SKY, edgecolor=INK, linewidth=0.5)
    for bound in (low, high):
        right.axvline(bound, color=VERMILION, linestyle="--")
    right.axvline(0, color=INK, linewidth=1)
    right.set_title(f"2,000 differences B - A: 95% of them lie in [{low:+.2f}, {high:+.2f}]",
                    fontsize=10)
    right.set_xlabel("difference of mean scores, B - A")
    right.set_ylabel("resamples")
    right.text(0.02, 0.92, "the interval holds 0:\nno decision yet", transform=right.transAxes, fontsize=9,
               color=VERMILION, va="top")
    return fig


def context_methods() -> plt.Figure:
    """What gets embedded and what is returned, for contextual headers, parent-child and hybrid fusion."""
    fig, ax = _canvas(11.0, 4.4)
    ax.text(0.3, 4.15, "Three ways to give a chunk its context back", fontsize=12, weight="bold", va="center")
    panels = [(0.3, "contextual header", [("embedded", "XR-12 manual > Starting up\n+ the chunk's text", SKY),
                                          ("returned", "the chunk's text", "white")]),
              (3.95, "parent-child", [("embedded", "small child chunks\n(one sentence each)", SKY),
                                      ("returned", "the parent section\nof the best child", "white")]),
              (7.6, "hybrid fusion", [("ranked by", "vectors: 1. c3 2. c7 3. c1\nBM25 words: 1. c7 2. c9 3. c3", SKY),
                                      ("returned", "fused: sum of 1 / (60 + rank)\n1. c7 2. c3 3. c1", "white")])]
    for x, title, parts in panels:
        ax.text(x + 1.6, 3.65, title, fontsize=11, weight="bold", ha="center")
        for k, (label, text, colour) in enumerate(parts):
            y = 2.4 - 1.45 * k
            ax.text(x, y + 0.95, label, fontsize=9, color=BLUE, style="italic")
            _box(ax, x, y, 3.2, 0.85, text, colour=colour, size=9)
        _arrow(ax, (x + 1.6, 2.38), (x + 1.6, 1.82))
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
            ax.text(jj, i, f"{value:.2f}", ha="center", va="center", fontsize=9,
                    color="white" if value > 0.6 else INK)
    best = sims.max(axis=1)
    ax.set_title("MaxSim (illustrative numbers): the best match of each query token, summed: "
                 + " + ".join(f"{v:.2f}" for v in best) + f" = {best.sum():.2f}", fontsize=10)
    fig.colorbar(image, ax=ax, label="cosine similarity", shrink=0.8)
    fig.tight_layout()
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
