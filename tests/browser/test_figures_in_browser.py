"""Every course notebook shows its pictures, in JupyterLab and in the static site (issue 32).

One JupyterLab (over a copy of notebooks/ as they are: nothing is run and no kernel starts, the stored
outputs and the Markdown render on open, every cell in the page) and one headless Chromium serve all
the notebooks: each is opened in turn, and every `<img>` of the notebook (the SVG diagrams of its
Markdown and the PNG plots of its outputs alike) must load with a non-zero size; the page must show as
many images as the notebook stores, and each notebook at least one. Then the site (scripts/build_site.py,
built from the same copy into a temporary folder while JupyterLab is checked) is opened page by page
from `file://` with the same checks. A notebook without any picture fails, named in the test's id. The
image counts are listed at the end of the pytest run. Last, the copies a learner opens (the learner's copy,
the solutions copy, the student edition) are built into temporary folders by their scripts and served as built:
each notebook with a figure in its Markdown must load every image there too; the count of images loaded per
copy is listed at the end. About five minutes in all.

Run with `.venv/bin/python -m pytest tests/browser/test_figures_in_browser.py` (not part of `pytest tests`).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import nbformat
import pytest

from scripts import browser_check, build_site, build_student_edition, learner_copy
from scripts.project import course_notebooks

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = course_notebooks()
MARKDOWN_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]+\)|<img\b", re.IGNORECASE)
IMAGE_OUTPUTS = ("image/png", "image/jpeg", "image/svg+xml")
LOAD_TIMEOUT = 30  # seconds for a notebook's images to load

# The state of every <img> under `root`: loaded, and with which size.
IMAGES_JS = """root => [...root.querySelectorAll('img')].map(img => ({
    src: img.currentSrc || img.src, alt: img.alt, complete: img.complete,
    width: img.naturalWidth, height: img.naturalHeight}))"""


def stored_images(path: Path) -> tuple[int, int]:
    """(Markdown images, image outputs) that a notebook stores, guard cells included."""
    notebook = nbformat.read(path, as_version=4)
    markdown = sum(len(MARKDOWN_IMAGE.findall(c.source)) for c in notebook.cells if c.cell_type == "markdown")
    outputs = sum(any(kind in o.get("data", {}) for kind in IMAGE_OUTPUTS)
                  for c in notebook.cells if c.cell_type == "code" for o in c.outputs)
    return markdown, outputs


def _short(src: str) -> str:
    return src[:40] + "..." if src.startswith("data:") else src


def wait_for_images(page, root, expected: int, where: str, scroll: bool,
                    timeout: float = LOAD_TIMEOUT) -> list[dict]:
    """Wait until `root` shows `expected` images, all loaded with a non-zero size; raise AssertionError after
    `timeout` s naming the images that did not load (an image may be broken for a moment, while JupyterLab
    resolves its link). With `scroll`, images not yet loaded are scrolled into view (a lazy image loads only
    then)."""
    deadline = time.monotonic() + timeout
    while True:
        images = root.evaluate(IMAGES_JS)
        broken = [i for i in images if not (i["complete"] and i["width"] > 0)]
        if len(images) >= expected and not broken:
            return images
        if time.monotonic() > deadline:
            problems = [f"{len(broken)} of {len(images)} images did not load: "
                        + ", ".join(f"{_short(i['src'])} ({'broken' if i['complete'] else 'still loading'})"
                                    for i in broken)] if broken else []
            if len(images) < expected:
                problems.append(f"it shows {len(images)} images, the notebook stores {expected}")
            raise AssertionError(f"{where}: " + "; ".join(problems))
        if scroll and broken:
            root.evaluate("root => [...root.querySelectorAll('img')].filter(i => !i.complete || !i.naturalWidth)"
                          ".forEach(i => i.scrollIntoView({block: 'center'}))")
        page.wait_for_timeout(250)


@pytest.fixture(scope="module")
def chromium():
    """One headless Chromium for the module, that may reach only localhost and files."""
    sync_playwright = browser_check.import_playwright()
    executable = browser_check.find_chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=browser_check.CHROMIUM_ARGS)
        yield browser
        browser.close()


@contextmanager
def lab_in_chromium(chromium, **lab_args) -> Iterator[tuple]:
    """JupyterLab (`browser_check.jupyterlab(**lab_args)`, with `window.jupyterapp` to open and close notebooks
    without reloading the page) open in a page of `chromium` that may reach only the local server and `data:`.
    Yields (page, blocked requests, the folder of the notebooks JupyterLab serves)."""
    with browser_check.jupyterlab(extra_args=("--LabApp.expose_app_in_browser=True",), **lab_args) as lab:
        context = chromium.new_context(viewport={"width": 1280, "height": 900})
        blocked: list[str] = []

        def local_only(route):
            if route.request.url.startswith((lab.url + "/", "data:")):
                route.continue_()
            else:
                blocked.append(route.request.url)
                route.abort()

        context.route("**/*", local_only)
        page = context.new_page()
        page.goto(f"{lab.url}/lab?reset&token={lab.token}")
        page.wait_for_function("() => window.jupyterapp", timeout=90_000)
        page.evaluate("async () => { await window.jupyterapp.restored; }")  # its commands are registered
        try:
            yield page, blocked, lab.root / "notebooks"
        finally:
            context.close()


@pytest.fixture(scope="module")
def lab_page(chromium, tmp_path_factory):
    """JupyterLab over a copy of notebooks/ (browser_check.LAB_SETTINGS: no windowing), open in a page of
    `chromium`. Yields (page, blocked requests, the folder of the notebooks JupyterLab serves, (the site's
    build, its folder)).

    The site is built from the same copy, by scripts/build_site.py in a process of its own that runs
    while JupyterLab is checked; the `site` fixture waits for it."""
    with lab_in_chromium(chromium, notebook=NOTEBOOKS[0]) as (page, blocked, served):
        out = tmp_path_factory.mktemp("site")
        build = subprocess.Popen([sys.executable, "-m", "scripts.build_site", "--out", str(out),
                                  *(str(served / notebook.name) for notebook in NOTEBOOKS)],
                                 cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            yield page, blocked, served, (build, out)
        finally:
            if build.poll() is None:  # the site was not asked for
                build.kill()
            build.communicate()


def open_in_lab(page, notebook: Path):
    """Open `notebook` (in the folder JupyterLab serves) without a kernel, wait until all its cells are on the
    page and its Markdown is rendered; return the notebook's element (its cells, without the toolbar)."""
    page.evaluate("""path => { window.jupyterapp.commands.execute('docmanager:open',
                                 {path, kernelPreference: {shouldStart: false, canStart: false}}); }""",
                  f"notebooks/{notebook.name}")  # not awaited: the widget it returns is no value to send back
    stored = nbformat.read(notebook, as_version=4).cells
    page.wait_for_function(
        """([cells, markdown]) => { const panel = [...document.querySelectorAll('.jp-NotebookPanel')]
                                                .find(p => p.offsetParent !== null);
            return panel && panel.querySelectorAll('.jp-Notebook .jp-Cell').length === cells
                   && panel.querySelectorAll('.jp-MarkdownCell.jp-mod-rendered').length >= markdown; }""",
        arg=[len(stored), sum(c.cell_type == "markdown" for c in stored)], timeout=60_000)
    return page.locator(".jp-NotebookPanel:visible .jp-Notebook").last


def close_all(page) -> None:
    """Close every document without saving (nothing was changed), which also stops their kernels."""
    page.evaluate("""async () => { const app = window.jupyterapp;
        for (const widget of [...app.shell.widgets('main')]) {
            if (widget.context && widget.context.model) widget.context.model.dirty = false;
            widget.close(); } }""")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem[:2])
def test_every_image_loads_in_jupyterlab(lab_page, notebook, image_counts):
    page, blocked, served, _ = lab_page
    notebook = served / notebook.name  # the copy JupyterLab shows (others may be changing notebooks/)
    markdown, outputs = stored_images(notebook)
    mark = time.perf_counter()
    try:
        panel = open_in_lab(page, notebook)
        images = wait_for_images(page, panel, markdown + outputs, f"{notebook.name} in JupyterLab", scroll=True)
    finally:
        close_all(page)
    image_counts.setdefault(notebook.name, {}).update(
        lab=f"{len(images)} images ({markdown} in Markdown, {outputs} outputs), {time.perf_counter() - mark:.1f} s",
        markdown=str(markdown))
    assert not blocked, f"the page tried to reach outside localhost: {sorted(set(blocked))}"
    assert images, f"{notebook.name} shows no figure in JupyterLab: every notebook needs at least one"


def test_a_missing_figure_fails_the_check(lab_page):
    """The check itself: a notebook whose Markdown links a figure that does not exist fails, naming it."""
    page, _, served, _ = lab_page
    notebook = served / "99_missing_figure.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# 99 · Demo\n\n![A figure that is not there](figures/not_there.svg)")]),
        notebook)
    try:
        panel = open_in_lab(page, notebook)
        with pytest.raises(AssertionError, match=r"1 of 1 images did not load: .*figures/not_there\.svg.* \(broken\)"):
            wait_for_images(page, panel, 1, notebook.name, scroll=True, timeout=5)
    finally:
        close_all(page)
        notebook.unlink()


@pytest.fixture(scope="module")
def site(lab_page):
    """The static site of every course notebook, built from the copy JupyterLab shows into a temporary
    folder. Returns (the site's folder, the notebooks' folder)."""
    _, _, served, (build, out) = lab_page
    output, _ = build.communicate(timeout=600)
    assert build.returncode == 0, f"scripts/build_site.py failed:\n{output}"
    return out, served


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem[:2])
def test_every_image_loads_in_the_site(chromium, site, notebook, image_counts):
    out, served = site
    notebook = served / notebook.name
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    outside: list[str] = []
    page.on("request", lambda r: None if r.url.startswith(("file:", "data:")) else outside.append(r.url))
    try:
        page.goto((out / (notebook.stem + ".html")).as_uri(), wait_until="load")
        guards = sum(build_site.is_guard(c) and any(any(k in o.get("data", {}) for k in IMAGE_OUTPUTS)
                                                    for o in c.outputs)
                     for c in nbformat.read(notebook, as_version=4).cells)
        expected = sum(stored_images(notebook)) - guards  # guard cells are left out of the site
        images = wait_for_images(page, page.locator("body"), expected, f"{notebook.stem}.html in the site",
                                 scroll=True)
    finally:
        page.close()
    image_counts.setdefault(notebook.name, {})["site"] = f"{len(images)} images"
    assert not outside, f"the page tried to load {outside}"
    assert all(i["alt"].strip() for i in images), f"{notebook.stem}.html: an image has no alt text"
    assert images, f"{notebook.stem}.html shows no figure in the site: every notebook needs at least one"


# The copies a learner opens, built as their make targets build them (into a temporary folder, never the real
# my-course/) and served as they are, links included: every picture must load there too.
COPIES: dict[str, Callable[[Path], int]] = {
    "learner copy": lambda out: learner_copy.main(["--out", str(out)]),  # make lab
    "solutions copy": lambda out: learner_copy.main(["--solutions", "--out", str(out)]),  # make lab-solutions
    "student edition": lambda out: build_student_edition.main(["--out", str(out)]),  # make student
}


@pytest.mark.parametrize("copy", COPIES, ids=lambda name: name.replace(" ", "-"))
def test_every_image_loads_in_each_copy(chromium, tmp_path, copy, copy_counts):
    """Each notebook whose Markdown shows a figure, opened in JupyterLab over the built copy: every `<img>` (its
    figures and its stored plots) loads with a non-zero size."""
    out = tmp_path / "copy"
    assert COPIES[copy](out) == 0, f"building the {copy} failed"
    shown = [p for p in sorted((out / "notebooks").glob("[0-9][0-9]_*.ipynb")) if stored_images(p)[0]]
    assert shown, f"no notebook of the {copy} shows a figure in its Markdown"
    loaded = figures = 0
    mark = time.perf_counter()
    with lab_in_chromium(chromium, notebook=None, serve=out) as (page, blocked, served):
        for notebook in shown:
            markdown, outputs = stored_images(notebook)
            try:
                panel = open_in_lab(page, served / notebook.name)
                images = wait_for_images(page, panel, markdown + outputs, f"{notebook.name} in the {copy}",
                                         scroll=True)
            finally:
                close_all(page)
            loaded += len(images)
            figures += markdown
    copy_counts[copy] = (f"{loaded} images loaded ({figures} figures of the Markdown) in {len(shown)} notebooks, "
                         f"{time.perf_counter() - mark:.0f} s")
    assert not blocked, f"the page tried to reach outside localhost: {sorted(set(blocked))}"
