"""course_lib.display.forest_plot: one row per name, coloured by its label, on a white figure."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
from matplotlib.colors import to_hex

from course_lib.display import VERDICT_COLORS, forest_plot

NAMES = ["markdown:128", "recursive:64", "fixed:256"]  # small for testing efficiency
MEANS = [1.0, 0.926, 0.704]
LOWS = [1.0, 0.815, 0.519]
HIGHS = [1.0, 1.0, 0.852]
LABELS = ["leader", "in play", "ruled out"]


@pytest.fixture
def fig():
    figure = forest_plot(NAMES, MEANS, LOWS, HIGHS, LABELS, reference=1.0, reference_label="leader's mean",
                         title="A verdict", xlabel="recall@1")
    yield figure
    plt.close(figure)


def test_rows_top_to_bottom_with_title_axis_and_white_background(fig) -> None:
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == NAMES
    bottom, top = ax.get_ylim()
    assert top < bottom, "the first row must be drawn on top"
    assert ax.get_title() == "A verdict" and ax.get_xlabel() == "recall@1"
    assert to_hex(fig.get_facecolor()) == "#ffffff" and to_hex(ax.get_facecolor()) == "#ffffff"


def test_each_row_is_its_interval_in_its_label_colour(fig) -> None:
    ax = fig.axes[0]
    segments = [line for line in ax.get_lines() if len(line.get_xdata()) == 2 and line.get_linestyle() == "-"]
    assert [tuple(line.get_xdata()) for line in segments] == list(zip(LOWS, HIGHS))
    assert [to_hex(line.get_color()).lower() for line in segments] == [VERDICT_COLORS[k].lower() for k in LABELS]


def test_legend_names_each_label_once_and_the_reference(fig) -> None:
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert texts == ["leader", "in play", "ruled out", "leader's mean"]


def test_unknown_labels_get_colours_and_no_reference_line() -> None:
    figure = forest_plot(["a", "b"], [0.1, -0.2], [0.0, -0.3], [0.2, -0.1], ["x", "x"])
    try:
        ax = figure.axes[0]
        assert [t.get_text() for t in ax.get_legend().get_texts()] == ["x"]
        assert not [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    finally:
        plt.close(figure)


@pytest.mark.parametrize("kwargs, message", [
    ({"means": [1.0, 0.9]}, "one entry per row"),
    ({"lows": [1.0, 0.95, 0.5]}, "low <= mean <= high"),
])
def test_bad_rows_raise_value_errors(kwargs, message) -> None:
    args = {"names": NAMES, "means": MEANS, "lows": LOWS, "highs": HIGHS, "labels": LABELS} | kwargs
    with pytest.raises(ValueError, match=message):
        forest_plot(**args)


def test_no_rows_raise() -> None:
    with pytest.raises(ValueError, match="at least one row"):
        forest_plot([], [], [], [], [])
