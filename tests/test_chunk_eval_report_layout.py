"""chunk-eval's HTML report at a laptop's width (issue 45): every line of the size plot in its own colour (shown
beside it as a legend of swatches), and no two labels of the cost plot overlapping. The browser half (the table
fits a 1,280 px window) is tests/browser/test_report_width.py."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from rag_tools.chunk_eval import evaluate, render_html
from rag_tools.chunk_eval.report import cost_figure, series_colours
from tests.test_chunk_eval import ToyEmbedder

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def grid():
    """The default grid on the capstone (18 strategies, 12 families) with the toy embedder: no model."""
    capstone = ROOT / "data" / "capstone"
    return evaluate(capstone / "docs", capstone / "questions.jsonl", k=1, embedder=ToyEmbedder(), cache=None)


def test_each_family_has_its_own_colour_and_the_page_shows_them(grid):
    colours = series_colours(grid)
    assert set(colours) == {r.family for r in grid.results} and len(colours) >= 12
    assert len(set(colours.values())) == len(colours), colours
    page = render_html(grid)
    for family, colour in colours.items():
        assert f'background:{colour}"></span>{family}</li>' in page


def test_no_two_cost_plot_labels_overlap(grid):
    fig, unlabelled = cost_figure(grid)
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in ax.texts]
        assert len(boxes) + sum(1 for _ in unlabelled) >= 1
        for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
            assert not box_a.overlaps(box_b), f"{a} and {b} overlap"
        frame = ax.get_window_extent(renderer)
        assert all(frame.x0 <= box.x0 and box.x1 <= frame.x1 for _, box in boxes), "a label leaves its panel"
    labelled = {t.get_text() for ax in fig.axes for t in ax.texts}
    assert labelled | set(unlabelled) == {r.strategy for r in grid.results}
    if unlabelled:
        assert 'id="unlabelled"' in render_html(grid)
