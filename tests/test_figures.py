"""The course's diagrams: redrawn byte for byte from scripts/draw_figures.py, referenced with alt text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from scripts import draw_figures

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "notebooks" / "figures"

IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\((?P<path>[^)\s]+)\)")


def _markdown_images() -> list[tuple[str, str, str]]:
    """(notebook, alt text, path) for every Markdown image in the course's notebooks."""
    found = []
    for notebook in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        for cell in cells:
            if cell["cell_type"] == "markdown":
                found += [(notebook.name, m["alt"], m["path"]) for m in IMAGE.finditer("".join(cell["source"]))]
    return found


@pytest.mark.parametrize("name", sorted(draw_figures.FIGURES))
def test_committed_figure_is_what_the_script_draws(name: str) -> None:
    committed = FIGURES / f"{name}.svg"
    assert committed.exists(), f"{committed} is missing: run `make figures` and commit it"
    assert draw_figures.render(name) == committed.read_bytes(), (
        f"{committed.name} differs from what scripts/draw_figures.py draws: run `make figures` and commit the result")


def test_every_image_exists_and_has_alt_text() -> None:
    images = _markdown_images()
    problems = [f"{nb}: image {path} has no alt text" for nb, alt, path in images if len(alt.split()) < 3]
    problems += [f"{nb}: image {path} does not exist" for nb, _, path in images
                 if not (ROOT / "notebooks" / path).is_file()]
    assert not problems, "\n".join(problems)


def test_every_drawn_figure_is_used() -> None:
    used = {Path(path).stem for _, _, path in _markdown_images()}
    unused = sorted(set(draw_figures.FIGURES) - used)
    assert not unused, f"figures drawn but shown in no notebook: {unused}; place them or remove them"
