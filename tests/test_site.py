"""The static HTML site: an index that links every page, plots embedded, nothing loaded from the network."""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

import nbformat
import pytest

from scripts import build_site

ROOT = Path(__file__).resolve().parent.parent


def _png_outputs(path: Path) -> int:
    notebook = nbformat.read(path, as_version=4)
    return sum("image/png" in o.get("data", {}) for c in notebook.cells if c.cell_type == "code" for o in c.outputs)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site of two course notebooks, the first of them with a plot."""
    notebooks = build_site.course_notebooks()
    with_plot = next((p for p in notebooks if _png_outputs(p)), None)
    assert with_plot is not None, "no course notebook has a plot to check"
    other = next(p for p in notebooks if p != with_plot)
    out = tmp_path_factory.mktemp("site")
    build_site.build(out, sorted([with_plot, other]))
    return out, with_plot, other


def test_the_index_links_every_page_with_its_title_and_goals(site):
    out, *notebooks = site
    index = (out / "index.html").read_text(encoding="utf-8")
    links = re.findall(r'<a href="([^"]+)">([^<]+)</a>', index)
    assert [href for href, _ in links] == sorted(p.stem + ".html" for p in notebooks)
    for path in notebooks:
        contents = build_site.contents_of(nbformat.read(path, as_version=4), path.name)
        assert (path.stem + ".html", contents.title) in links
        assert (out / (path.stem + ".html")).is_file()
        assert contents.title[:2] == path.name[:2], "the title starts with the notebook's number"
        first_words = re.sub(r"[`*_\[\]]", "", contents.goals[0]).split()[:4]
        assert " ".join(first_words) in re.sub(r"<[^>]+>", "", index), "the first learning goal is listed"


def test_plots_are_embedded_in_the_page(site):
    out, with_plot, _ = site
    page = (out / (with_plot.stem + ".html")).read_text(encoding="utf-8")
    images = re.findall(r'<img[^>]+src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == _png_outputs(with_plot)
    assert all(base64.b64decode(image).startswith(b"\x89PNG\r\n\x1a\n") for image in images)


def test_pages_load_nothing_from_the_network(site):
    out, *_ = site
    for page in out.glob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert "<script src=" not in text.replace("'", '"'), f"{page.name} loads a script"
        assert not re.search(r'(src|href)="(https?:)?//[^"]*\.(js|mjs|css)', text), f"{page.name} loads from a CDN"
        assert not re.search(r"@import|url\((['\"])?(https?:)?//", text), f"{page.name} loads CSS from the network"


def test_each_page_links_back_to_the_contents_and_folds_its_solutions(site):
    out, *notebooks = site
    for path in notebooks:
        page = (out / (path.stem + ".html")).read_text(encoding="utf-8")
        assert '<a href="index.html">Contents</a>' in page
        solutions = sum("solution" in c.metadata.get("tags", []) for c in nbformat.read(path, as_version=4).cells)
        assert page.count('<details class="course-solution">') == solutions


def test_goals_are_read_from_the_first_markdown_cell():
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "# 09 · A title\n\nOverview.\n\n**Learning goals**\n- First goal,\n  continued.\n- Second `goal`.\n\n"
        "**Time** about 5 minutes.\n**Runs in** 3 seconds.\n")])
    contents = build_site.contents_of(notebook, "09_x.ipynb")
    assert contents.title == "09 · A title"
    assert contents.goals == ["First goal, continued.", "Second `goal`."]
    assert contents.time == "**Time** about 5 minutes. **Runs in** 3 seconds."


def test_a_notebook_without_learning_goals_is_an_error():
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 09 · A title\n\nNo goals here.")])
    with pytest.raises(ValueError, match=r"09_x\.ipynb: .*Learning goals"):
        build_site.contents_of(notebook, "09_x.ipynb")


def test_plots_carry_their_titles_as_alt_text(site):
    out, with_plot, _ = site
    page = (out / (with_plot.stem + ".html")).read_text(encoding="utf-8")
    alts = re.findall(r'<img alt="([^"]*)"[^>]+src="data:image/png', page)
    assert len(alts) == _png_outputs(with_plot) and all(alt.startswith("Plot") for alt in alts)


def test_widgets_become_a_note():
    cell = nbformat.v4.new_code_cell("playground()")
    cell.outputs = [nbformat.v4.new_output("display_data", data={
        "text/plain": "interactive(children=...)",
        build_site.WIDGET_VIEW: {"model_id": "abc", "version_major": 2, "version_minor": 0}})]
    notebook = nbformat.v4.new_notebook(cells=[cell], metadata={"widgets": {"state": {}}})
    cleaned = build_site._prepared(notebook)
    assert "widgets" not in cleaned.metadata
    assert cleaned.cells[0].outputs[0].data == {"text/plain": "interactive(children=...)",
                                                "text/html": build_site.WIDGET_NOTE}


def test_a_widget_with_a_stored_picture_keeps_it():
    cell = nbformat.v4.new_code_cell("playground(text)")
    cell.outputs = [nbformat.v4.new_output("display_data", data={
        "text/plain": "Chunk playground", "text/html": "<p>the starting view</p>",
        build_site.WIDGET_VIEW: {"model_id": "abc", "version_major": 2, "version_minor": 0}})]
    cleaned = build_site._prepared(nbformat.v4.new_notebook(cells=[cell]))
    assert cleaned.cells[0].outputs[0].data == {"text/plain": "Chunk playground",
                                                "text/html": "<p>the starting view</p>"}


def test_the_site_has_the_course_title_of_the_readme(site):
    out, *_ = site
    heading = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()[0]
    assert heading.startswith("# ") and heading[2:] == build_site.COURSE_TITLE
    index = (out / "index.html").read_text(encoding="utf-8")
    assert f"<title>{build_site.COURSE_TITLE}</title>" in index and f"<h1>{build_site.COURSE_TITLE}</h1>" in index


def test_links_between_notebooks_point_at_their_pages():
    page = '<a href="03_fixed.ipynb#Overlap">03</a> <a href="99_gone.ipynb">99</a> <a href="x/03_fixed.ipynb">x</a>'
    assert build_site._link_notebooks(page, {"03_fixed.ipynb"}) == (
        '<a href="03_fixed.html#Overlap">03</a> <a href="99_gone.ipynb">99</a> <a href="x/03_fixed.ipynb">x</a>')


def test_guard_cells_are_left_out(tmp_path):
    header = nbformat.v4.new_markdown_cell("# 99 · Demo\n\n**Learning goals**\n- See a guard go.\n")
    lesson = nbformat.v4.new_code_cell("recall = 0.95\nprint(recall)", execution_count=1)
    lesson.outputs = [nbformat.v4.new_output("stream", name="stdout", text="0.95\n")]
    guard = nbformat.v4.new_code_cell("assert recall > 0.9, 'the text says above 0.9'", execution_count=1)
    guard.metadata = {"tags": ["guard"], "jupyter": {"source_hidden": True}}
    path = tmp_path / "99_demo.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[header, lesson, guard]), path)
    build_site.build(tmp_path / "site", [path])
    page = (tmp_path / "site" / "99_demo.html").read_text(encoding="utf-8")
    assert "print" in page and "0.95" in page
    assert "the text says" not in page and "assert" not in page


def test_no_course_page_shows_a_guard_cell(site):
    out, *notebooks = site
    for path in notebooks:
        guards = [c for c in nbformat.read(path, as_version=4).cells if build_site.is_guard(c)]
        page = (out / (path.stem + ".html")).read_text(encoding="utf-8")
        for cell in guards:
            first = cell.source.strip().splitlines()[0]
            assert html.escape(first) not in page and first not in page, f"{path.name}: a guard cell is shown"


def test_source_keys_link_to_the_sites_sources_page(tmp_path):
    header = nbformat.v4.new_markdown_cell("# 99 · Demo\n\n**Learning goals**\n- Follow a source.\n\n"
                                           "As [[Chunking I]](../docs/SOURCES.md#chunking-i) says.")
    path = tmp_path / "99_demo.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[header]), path)
    written = build_site.build(tmp_path / "site", [path])
    page = (tmp_path / "site" / "99_demo.html").read_text(encoding="utf-8")
    assert 'href="sources.html#chunking-i"' in page and "../docs/SOURCES.md" not in page
    assert written[-1].name == "sources.html"
    sources = written[-1].read_text(encoding="utf-8")
    assert '<a id="chunking-i"></a>' in sources and '<a href="index.html">Contents</a>' in sources


# Diagrams: Markdown images keep their relative links and the files are copied into the site.

MARKDOWN_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)")
HEADER = "# 99 · Demo\n\n**Learning goals**\n- See a figure.\n\n"


def _markdown_images(path: Path) -> list[tuple[str, str]]:
    notebook = nbformat.read(path, as_version=4)
    return [m.groups() for c in notebook.cells if c.cell_type == "markdown" for m in MARKDOWN_IMAGE.finditer(c.source)]


@pytest.fixture(scope="module")
def figure_site(tmp_path_factory):
    """The site of the first course notebook whose Markdown shows a figure."""
    with_figure = next((p for p in build_site.course_notebooks() if _markdown_images(p)), None)
    assert with_figure is not None, "no course notebook shows a figure in its Markdown"
    out = tmp_path_factory.mktemp("figure-site")
    build_site.build(out, [with_figure])
    return out, with_figure


def test_a_pages_figures_point_at_files_in_the_site_with_alt_text(figure_site):
    out, notebook = figure_site
    images = build_site.page_images((out / (notebook.stem + ".html")).read_text(encoding="utf-8"))
    linked = [image for image in images if not image["src"].startswith("data:")]
    assert [(image["alt"], image["src"]) for image in linked] == [
        (html.unescape(alt), src) for alt, src in _markdown_images(notebook)], "each figure, in order, alt kept"
    for image in linked:
        assert not re.match(r"[a-z]+:|/", image["src"]), f"{image['src']} is not a relative link"
        copied = out / image["src"]
        assert copied.is_file(), f"{image['src']} is not in the site"
        assert copied.read_bytes() == (notebook.parent / image["src"]).read_bytes()
    assert all(image.get("alt", "").strip() for image in images), "every image of the page has alt text"


def test_the_figure_files_are_svg(figure_site):
    out, _ = figure_site
    figures = sorted((out / "figures").glob("*"))
    assert figures and all(f.suffix == ".svg" and b"<svg" in f.read_bytes()[:500] for f in figures)


def _demo(tmp_path: Path, markdown: str) -> Path:
    path = tmp_path / "99_demo.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(HEADER + markdown)]), path)
    return path


def test_markdown_and_html_images_are_copied_beside_the_page(tmp_path):
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "box.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"/>', encoding="utf-8")
    (tmp_path / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    path = _demo(tmp_path, 'A box:\n\n![A "box"](figures/box.svg)\n\n<img src="photo.png" alt="A photo">\n')
    build_site.build(tmp_path / "site", [path])
    page = (tmp_path / "site" / "99_demo.html").read_text(encoding="utf-8")
    assert [(i["src"], i["alt"]) for i in build_site.page_images(page)] == [
        ("figures/box.svg", 'A "box"'), ("photo.png", "A photo")]
    assert (tmp_path / "site" / "figures" / "box.svg").read_bytes() == (tmp_path / "figures" / "box.svg").read_bytes()
    assert (tmp_path / "site" / "photo.png").is_file()


@pytest.mark.parametrize("markdown, message", [
    ("![A box](figures/gone.svg)", r"99_demo\.ipynb: the image figures/gone\.svg does not exist"),
    ("![](figures/box.svg)", r"99_demo\.ipynb: an image has no alt text"),
    ("![A box](../box.svg)", r"99_demo\.ipynb: the image \.\./box\.svg lies outside"),
    ("```mermaid\ngraph LR; A-->B\n```", r"99_demo\.ipynb: uses Mermaid"),
])
def test_a_figure_the_site_cannot_show_stops_the_build(tmp_path, markdown, message):
    (tmp_path / "nb" / "figures").mkdir(parents=True)
    (tmp_path / "nb" / "figures" / "box.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"/>')
    (tmp_path / "box.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"/>')
    with pytest.raises(ValueError, match=message):
        build_site.build(tmp_path / "site", [_demo(tmp_path / "nb", markdown)])


def test_no_course_notebook_uses_mermaid():
    """The site has no Mermaid script (it would come from a CDN): the course's diagrams are SVG files."""
    users = [p.name for p in build_site.course_notebooks() if build_site._uses_mermaid(nbformat.read(p, as_version=4))]
    assert not users, f"{users} use Mermaid: draw the picture in scripts/draw_figures.py instead"
