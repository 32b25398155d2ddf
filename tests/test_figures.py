"""The course's diagrams: redrawn byte for byte from scripts/draw_figures.py, referenced with alt text, their
labels readable at a notebook's width, and what each says about numbers or an order equal to the library's output
(read from the committed SVG's text)."""

from __future__ import annotations

import ast
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from course_lib.chunking.markdown import markdown_chunks, markdown_sections
from course_lib.chunking.recursive import recursive_chunks
from course_lib.chunking.sentences import split_sentences
from course_lib.evaluation import exact_budget
from course_lib.late import macro_windows
from course_lib.retrieval import RRF_K, reciprocal_rank_fusion
from course_lib.stats import DEFAULT_MARGIN, EQUIVALENCE_LEVEL, LEVEL, THRESHOLD, paired_interval
from course_lib.tokens import count_tokens
from rag_tools.readers import page_span
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


# --- what the figures say is what the library returns --------------------------------------------------------

CELL_WIDTH = 975  # px: a JupyterLab notebook cell at a 1,440 px window with the file browser open
MIN_LABEL = 11  # px


def svg_texts(name: str) -> list[tuple[str, float]]:
    """(text, font size in SVG units) of every text line of a committed figure, in drawing order."""
    root = ET.fromstring((FIGURES / f"{name}.svg").read_bytes())
    found = []
    for element in root.iter("{http://www.w3.org/2000/svg}text"):
        size = re.search(r"font-size: ([\d.]+)px", element.get("style", ""))
        found.append(("".join(element.itertext()), float(size[1]) if size else float("nan")))
    return found


def svg_lines(name: str) -> list[str]:
    return [text for text, _ in svg_texts(name)]


def shown_px(name: str, size: float) -> float:
    """On-screen pixels of a font `size` in a figure shown in a 975 px cell: the SVG's units are points (4/3 px),
    and an image wider than the cell is scaled down to it (never up)."""
    root = ET.fromstring((FIGURES / f"{name}.svg").read_bytes())
    width = root.get("width")
    assert width.endswith("pt") and float(root.get("viewBox").split()[2]) == float(width[:-2]), "units are points"
    width_px = float(width[:-2]) * 4 / 3
    return size * 4 / 3 * min(1.0, CELL_WIDTH / width_px)


@pytest.mark.parametrize("name", sorted(draw_figures.FIGURES))
def test_labels_read_at_11_px_in_a_975_px_cell_and_stay_text(name: str) -> None:
    texts = svg_texts(name)
    assert texts, f"{name}.svg has no <text>: its words must stay text (svg.fonttype none), not paths"
    small = sorted({(round(shown_px(name, size), 1), text) for text, size in texts if shown_px(name, size) < MIN_LABEL})
    assert not small, f"{name}.svg: labels under {MIN_LABEL} px at a {CELL_WIDTH} px cell (px, text): {small[:5]}"


def test_context_methods_shows_the_fused_order_of_reciprocal_rank_fusion() -> None:
    lines = svg_lines("context_methods")
    vectors = next(line for line in lines if line.startswith("vectors:"))
    words = next(line for line in lines if line.startswith("BM25 words:"))
    rankings = [re.findall(r"\d\. (c\d+)", line) for line in (vectors, words)]
    fused = reciprocal_rank_fusion(rankings)
    shown = next(line for line in lines if re.fullmatch(r"(\d\. c\d+ ?)+", line))
    assert re.findall(r"\d\. (c\d+)", shown) == fused[:3], f"the figure's fused top 3 {shown!r}; the library: {fused}"
    assert f"1 / ({RRF_K} + rank)" in " ".join(lines)


def test_recursion_tree_counts_are_the_librarys_with_the_blank_line_counted() -> None:
    manual = (ROOT / "data" / "xr12_manual.md").read_text(encoding="utf-8")
    section = manual[manual.index("## Starting up"):manual.index("## Routine checks")].strip()
    chunks = recursive_chunks(section, 40)
    text = "\n".join(svg_lines("recursion_tree"))
    assert f"section 'Starting up': {count_tokens(section)} tokens" in text
    assert [int(n) for n in re.findall(r"chunk \d: [^,\n]+, (\d+)", text)] == [c.n_tokens for c in chunks]
    paragraph = section[section.index("\n\n") + 2:]
    sentences = [count_tokens(paragraph[s:e].strip()) for s, e in split_sentences(paragraph)]
    assert [int(n) for n in re.findall(r"sentence \d: (\d+)", text)] == sentences
    joined = count_tokens(section[:chunks[1].end])  # the heading, the blank line and chunk 2 as one span
    assert joined > 40, "the heading cannot join chunk 2"
    stated = re.search(r"heading cannot join chunk 2: .*= (\d+) \+ (\d+) \+ (\d+) = (\d+) tokens, over 40", text)
    assert stated, "the figure says why the heading stays alone, with the blank line's token"
    assert [int(n) for n in stated.groups()] == [chunks[0].n_tokens, count_tokens("\n\n"), chunks[1].n_tokens, joined]


def _notebook_cell(notebook: str, start: str) -> str:
    cells = json.loads((ROOT / "notebooks" / notebook).read_text(encoding="utf-8"))["cells"]
    return next("".join(c["source"]) for c in cells if "".join(c["source"]).startswith(start))


def test_paired_bootstrap_draws_the_ten_questions_of_notebook_08_with_a_minus_b() -> None:
    cell = _notebook_cell("08_measuring_chunkers.ipynb", "few = {")
    few = {name: [int(v) for v in re.findall(r"\d", values)]
           for name, values in re.findall(r'"([AB])": np\.array\(\[([^\]]*)\]\)', cell)}
    lines = svg_lines("paired_bootstrap")
    rows = {line: lines[i + 1:i + 11] for i, line in enumerate(lines) if line in ("A", "B")}
    assert {name: [int(v) for v in values] for name, values in rows.items()} == few, "the figure's ten questions"
    mean, low, high = paired_interval(np.array(few["A"], float), np.array(few["B"], float))
    text = "\n".join(lines)
    assert f"[{low:+.2f}, {high:+.2f}]" in text and f"mean {mean:+.2f}" in text, "the library's interval of A - B"
    assert "B - A" not in text and "A - B" in text


def test_silent_cut_bracket_spans_the_256_places_it_names() -> None:
    svg = (FIGURES / "silent_cut.svg").read_text(encoding="utf-8")

    def x_range(gid: str) -> tuple[float, float]:
        group = re.search(rf'<g id="{gid}">(.*?)</g>', svg, re.S)
        assert group, f"silent_cut.svg has no element {gid!r}"
        xs = [float(x) for x in re.findall(r"[ML] (-?[\d.]+) -?[\d.]+", group[1])]
        return min(xs), max(xs)

    bracket, cls, sep = x_range("window-bracket"), x_range("cls"), x_range("sep")
    assert bracket == pytest.approx((cls[0], sep[1]), abs=0.01), "the bracket runs from [CLS] to [SEP]"
    label = next(line for line in svg_lines("silent_cut") if line.startswith("the window:"))
    places, read = map(int, re.search(r"(\d+) places = \[CLS\] \+ (\d+) text tokens \+ \[SEP\]", label).groups())
    assert places == read + 2


def test_token_budget_last_row_is_exact_budget() -> None:
    cut = [int(v) for v in re.findall(r"^(\d+)(?: \(cut\))?$", "\n".join(svg_lines("token_budget")), re.M)][-4:]
    assert cut == exact_budget([256] * 5, 1000)


def test_macro_windows_are_the_librarys() -> None:
    text = "\n".join(svg_lines("macro_windows"))
    for k, w in enumerate(macro_windows(1200, 510, 64)):
        assert f"window {k + 1}: reads {w.start}-{w.end - 1}, keeps {w.keep_start}-{w.keep_end - 1}" in text


def _section_of(notebook: str, needle: str) -> str:
    """The `## ` heading of the section whose Markdown first holds `needle`."""
    heading = ""
    for cell in json.loads((ROOT / "notebooks" / notebook).read_text(encoding="utf-8"))["cells"]:
        source = "".join(cell["source"])
        for line in source.splitlines() if cell["cell_type"] == "markdown" else []:
            if line.startswith("## "):
                heading = line
            if needle in line:
                return heading
    raise AssertionError(f"{notebook} never says {needle!r}")


@pytest.mark.parametrize(("notebook", "idea", "figure"), [
    ("03_fixed_size_and_overlap.ipynb", "**stride**", "figures/overlap_windows.svg"),
    ("08_measuring_chunkers.ipynb", "## 7. What size to start with", "figures/token_budget.svg"),
])
def test_a_figure_sits_where_its_idea_first_appears(notebook: str, idea: str, figure: str) -> None:
    assert _section_of(notebook, figure) == _section_of(notebook, idea)


def test_token_budget_comes_before_the_table_it_explains() -> None:
    cells = json.loads((ROOT / "notebooks" / "08_measuring_chunkers.ipynb").read_text(encoding="utf-8"))["cells"]
    sources = ["".join(c["source"]) for c in cells]
    figure = next(i for i, s in enumerate(sources) if "figures/token_budget.svg" in s)
    table = next(i for i, s in enumerate(sources) if 'SIZE_RUNS = RESULTS / "size_sweep"' in s)
    assert figure < table


def test_heading_outline_spans_and_path_are_the_librarys() -> None:
    report = (ROOT / "data" / "annual_report.md").read_text(encoding="utf-8")
    lines = svg_lines("heading_outline")
    spans = [line for line in lines if re.fullmatch(r"[\d,]+-[\d,]+", line)]
    assert spans == [f"{a:,}-{b:,}" for a, b, _ in markdown_sections(report)]
    chunk = next(c for c in markdown_chunks(report, 100) if c.metadata["headings"][-1] == "### Reliability")
    assert f"characters {chunk.start:,}-{chunk.end:,}, {chunk.n_tokens} tokens" in lines
    assert [line.strip().removeprefix("> ") for line in lines[-4:-1]] == chunk.metadata["headings"]


def test_class_by_ast_lines_and_tokens_are_what_ast_and_count_tokens_give() -> None:
    source = (ROOT / "data" / "booking.py").read_text(encoding="utf-8")
    rows = [tuple(m.groups()) for line in svg_lines("class_by_ast")
            if (m := re.fullmatch(r"(?:class |def |class header|method )(\S*?):? ?lines (\d+)-(\d+), (\d+) tokens",
                                  line.replace(": lines", " lines")))]
    assert len(rows) >= 10, rows
    lines = source.splitlines(keepends=True)
    for _, first, last, tokens in rows:
        assert count_tokens("".join(lines[int(first) - 1:int(last)]).strip()) == int(tokens), (first, last)
    names = {node.name for node in ast.parse(source).body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    assert names <= {name for name, *_ in rows}


def test_pdf_page_chunk_carries_the_pages_page_span_gives() -> None:
    text = draw_figures.PAGE_BREAK.join(draw_figures.PDF_PAGES)
    crossing = [c for c in recursive_chunks(text, 40) if "\f" in c.text]
    assert len(crossing) == 1
    first, last = page_span(text, crossing[0].start, crossing[0].end)
    joined = " ".join(svg_lines("pdf_page"))
    assert f"{crossing[0].n_tokens} tokens across the break: pages {first}-{last} (page_span)" in joined
    assert (first, last) == (1, 2)


def test_verdict_flow_states_the_librarys_levels_and_margin() -> None:
    joined = " ".join(svg_lines("verdict_flow"))
    assert f"paired {LEVEL:.0%}" in joined and f"{THRESHOLD:.0%} of resamples" in joined
    assert f"{EQUIVALENCE_LEVEL:.0%} interval within +/- {DEFAULT_MARGIN:.2f}" in joined


def test_every_notebook_opens_with_its_roadmap_highlighted() -> None:
    """The first Markdown cell of notebook NN shows roadmap_NN.svg, in which NN, and only NN, is highlighted."""
    notebooks = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    staged = sorted(n for _, members in draw_figures.STAGES for n in members)
    assert staged == [int(p.name[:2]) for p in notebooks], "every notebook sits in one stage of the roadmap"
    for notebook in notebooks:
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        first = "".join(next(c for c in cells if c["cell_type"] == "markdown")["source"])
        assert f"](figures/roadmap_{notebook.name[:2]}.svg)" in first, f"{notebook.name}: no roadmap in its first cell"
        svg = (FIGURES / f"roadmap_{notebook.name[:2]}.svg").read_text(encoding="utf-8")
        highlighted = svg.lower().count(draw_figures.ORANGE.lower())
        assert highlighted == 1, f"roadmap_{notebook.name[:2]}.svg highlights {highlighted} notebooks"
