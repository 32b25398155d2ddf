"""Every copy of the course shows every picture (issue 43): the learner's copy (`make lab`), the solved copy
(`make lab-solutions`), the student edition (`make student`) and the site (`make site`).

Each copy is built by its script's command line into a temporary `--out` (never a learner's real my-course/),
then every image of every Markdown cell must resolve to an image file from the copy's notebooks/ folder, as
JupyterLab resolves it, and every `<img>` of every site page to a file of the site. The counts must equal the
course's own, so a copy cannot show fewer pictures than notebooks/ does. tests/browser/test_figures_in_browser.py
opens copies built the same way in Chromium and checks that each image loads with a non-zero size.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest

from scripts import build_site, build_student_edition, learner_copy
from scripts.project import course_notebooks

NOTEBOOKS = course_notebooks()
# `![alt](path "title")` and `<img ... src="path" ...>` in Markdown
MARKDOWN_IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\(\s*<?(?P<path>[^)\s>]+)|<img\b(?P<attrs>[^>]*)>", re.IGNORECASE)
IMAGE_MAGIC = (b"<svg", b"<?xml", b"\x89PNG", b"\xff\xd8")


def markdown_images(notebook: Path) -> list[tuple[str, str]]:
    """(alt text, path) of every image in the notebook's Markdown cells, in order."""
    found = []
    for cell in nbformat.read(notebook, as_version=4).cells:
        if cell.cell_type != "markdown":
            continue
        for match in MARKDOWN_IMAGE.finditer(cell.source):
            if match["attrs"] is not None:
                attrs = dict(re.findall(r"""(\w+)\s*=\s*["']([^"']*)""", match["attrs"]))
                found.append((html.unescape(attrs.get("alt", "")), attrs.get("src", "")))
            else:
                found.append((match["alt"], match["path"]))
    return found


def unresolved(folder: Path) -> tuple[list[str], int]:
    """The Markdown images of the notebooks in `folder` that do not open as an image file there, and how many
    images were checked."""
    problems, checked = [], 0
    for notebook in sorted(folder.glob("[0-9][0-9]_*.ipynb")):
        for alt, src in markdown_images(notebook):
            checked += 1
            where = f"{notebook.name}: {src}"
            if not alt.strip():
                problems.append(f"{where} has no alt text")
            if re.match(r"[a-z]+:|/", src):
                problems.append(f"{where} is not a path relative to the notebook")
                continue
            image = folder / src.split("#")[0]
            if not image.is_file():
                problems.append(f"{where} does not exist in {folder}")
            elif not image.read_bytes()[:200].lstrip().startswith(IMAGE_MAGIC):
                problems.append(f"{where} is not an SVG, PNG or JPEG file")
    return problems, checked


COURSE_IMAGES = sum(len(markdown_images(path)) for path in NOTEBOOKS)

COPIES: dict[str, Callable[[Path], int]] = {  # how each copy is made, as its make target makes it
    "learner copy (make lab)": lambda out: learner_copy.main(["--out", str(out)]),
    "solutions copy (make lab-solutions)": lambda out: learner_copy.main(["--solutions", "--out", str(out)]),
    "student edition (make student)": lambda out: build_student_edition.main(["--out", str(out)]),
}


def test_the_course_shows_pictures_in_its_markdown():
    problems, checked = unresolved(NOTEBOOKS[0].parent)
    assert checked == COURSE_IMAGES and checked > 0, "the course's notebooks show no picture to check"
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("copy", COPIES, ids=lambda name: name.split(" (")[0].replace(" ", "-"))
def test_every_picture_resolves_in_a_copy(copy, tmp_path, capsys):
    out = tmp_path / "copy"
    assert COPIES[copy](out) == 0, f"building the {copy} failed: {capsys.readouterr().err}"
    written = sorted(p.name for p in (out / "notebooks").glob("*.ipynb"))
    assert written == [p.name for p in NOTEBOOKS], f"the {copy} lacks notebooks"
    problems, checked = unresolved(out / "notebooks")
    assert not problems, f"in the {copy}:\n" + "\n".join(problems)
    assert checked == COURSE_IMAGES, f"the {copy} shows {checked} pictures, the course {COURSE_IMAGES}"


def test_a_later_figure_reaches_the_copies(tmp_path):
    """A figure in a new folder, shown by a notebook, comes along without changing the scripts; one that does
    not exist stops the build, naming the notebook."""
    course = tmp_path / "course"
    (course / "pictures").mkdir(parents=True)
    (course / "pictures" / "dot.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"/>', encoding="utf-8")
    (course / "legend.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"/>', encoding="utf-8")
    (course / "run_times.json").write_text("{}", encoding="utf-8")  # not shown by any notebook: not copied
    notebook = course / "99_demo.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        '# 99 · Demo\n\n![A small dot](pictures/dot.svg)\n\n<img src="legend.svg" alt="The legend">\n\n'
        "[the next notebook](00_start_here.ipynb)")]), notebook)
    assert build_student_edition.files_inside([notebook]) == [course / "legend.svg", course / "pictures"]
    for out in (tmp_path / "learner", tmp_path / "solutions"):
        if out.name == "learner":
            report = learner_copy.update(out, [notebook])
            assert sorted(report.figures) == ["legend.svg", "pictures/dot.svg"]
        else:
            learner_copy.solutions(out, [notebook])
        assert unresolved(out / "notebooks") == ([], 2)
        assert not (out / "notebooks" / "run_times.json").exists()
    build_student_edition.build(tmp_path / "student", [notebook])
    assert unresolved(tmp_path / "student" / "notebooks") == ([], 2)
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "![A figure not drawn yet](pictures/gone.svg)")]), notebook)
    with pytest.raises(build_student_edition.FormatError, match=r"99_demo\.ipynb: .*pictures/gone\.svg"):
        learner_copy.update(tmp_path / "again", [notebook])
    assert not (tmp_path / "again").exists(), "nothing is written before every notebook is checked"


def test_every_picture_resolves_in_the_site(tmp_path, capsys):
    out = tmp_path / "site"
    assert build_site.main(["--out", str(out)]) == 0, capsys.readouterr().err
    problems, linked = [], 0
    for path in NOTEBOOKS:
        page = out / (path.stem + ".html")
        for image in build_site.page_images(page.read_text(encoding="utf-8")):
            src = image.get("src", "")
            if src.startswith("data:"):
                continue  # a plot, embedded in the page
            linked += 1
            if not image.get("alt", "").strip():
                problems.append(f"{page.name}: {src} has no alt text")
            target = out / src
            if not target.is_file() or not target.read_bytes()[:200].lstrip().startswith(IMAGE_MAGIC):
                problems.append(f"{page.name}: {src} is not an image file of the site")
    assert not problems, "\n".join(problems)
    assert linked == COURSE_IMAGES, f"the site links {linked} pictures, the notebooks' Markdown shows {COURSE_IMAGES}"
