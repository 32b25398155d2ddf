"""Open a course notebook in JupyterLab in headless Chromium, run it cell by cell, check what renders.

Usage: python -m scripts.browser_check [notebooks/NN_name.ipynb ...]
Default: notebooks/00_start_here.ipynb and the first notebook with a widget (the chunk playground).

This is the learner's path: JupyterLab on localhost, the notebook opened from its URL, every cell
run with Shift+Enter. The check then asks the page, not the kernel: every code cell ran, no error or
stderr output is shown, each cell shows the kinds of output stored in the notebook (text, HTML, a
plot, a widget), and the printed text equals the stored text (after the masks of nbval_sanitize.cfg,
and except in `# NBVAL_IGNORE_OUTPUT` cells). If the notebook has a widget, choosing another option
in its first drop-down, then typing another number in its first number box, must each change the
chunks it shows. A screenshot goes to build/screenshots/.

`run_all_in_browser` is the student edition's path: clear every output, Run > Run All Cells, and
report which cells ran, which show an error and what each shows (tests/browser/test_student_edition_in_browser.py).

Needs Debian's Chromium (`apt-get install -y chromium`) and the Python driver
(`.venv/bin/python -m pip install -r requirements-browser.txt`); no `playwright install`.
The notebooks run on a copy (with data/ and results/ beside them): the repository never changes.
Chromium may reach only the local JupyterLab: any other request is blocked and reported.
"""

from __future__ import annotations

import configparser
import difflib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from scripts.project import COPY_IGNORE, ROOT, folders_beside, script_environment

FIRST_NOTEBOOK = ROOT / "notebooks" / "00_start_here.ipynb"
SCREENSHOTS = ROOT / "build" / "screenshots"
CHROMIUM_PATHS = ("/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMIUM_ARGS = [  # no traffic of its own: updates, sync, field trials, QUIC
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--no-first-run", "--disable-quic", "--disable-features=Translate,OptimizationHints,MediaRouter",
]
LAB_SETTINGS = {  # user settings of the temporary JupyterLab
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},  # every cell in the page
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
INSTALL_HELP = (
    "Install the real-browser check's requirements:\n"
    "  apt-get install -y chromium                                   # Debian's Chromium (as root)\n"
    "  .venv/bin/python -m pip install -r requirements-browser.txt   # the Playwright driver, no browser download"
)


class BrowserCheckError(AssertionError):
    """The notebook did not run or render in the browser as it should."""


@dataclass
class Report:
    """What the check saw and how long each step took."""

    notebook: str
    timings: dict[str, float] = field(default_factory=dict)
    code_cells: int = 0
    outputs_checked: int = 0
    texts_compared: int = 0
    widget_changed: str = ""  # the drop-down change whose effect the page showed, if the notebook has a widget
    widget_scrolls_under_controls: bool = False  # its chunk view scrolls on its own; its drop-down stays in sight
    blocked_requests: list[str] = field(default_factory=list)
    screenshot: Path | None = None


def find_chromium() -> str:
    """The path of Debian's Chromium binary, or a BrowserCheckError saying how to install it."""
    for path in CHROMIUM_PATHS:
        if os.access(path, os.X_OK):
            return path
    raise BrowserCheckError(f"Chromium not found (looked at {', '.join(CHROMIUM_PATHS)}).\n{INSTALL_HELP}")


def import_playwright():
    """`playwright.sync_api.sync_playwright`, or a BrowserCheckError saying how to install it."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as error:
        raise BrowserCheckError(f"The Python package playwright is missing ({error}).\n{INSTALL_HELP}") from None
    return sync_playwright


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Lab:
    """A running JupyterLab: where it serves the course copy."""

    url: str
    token: str
    root: Path


@contextmanager
def jupyterlab(notebook: Path | None, timeout: float = 60, *, settings: dict[str, dict] | None = None,
               extra_args: tuple[str, ...] = (), serve: Path | None = None) -> Iterator[Lab]:
    """Start JupyterLab on localhost over a copy of the notebook's folder and what it reads, with its own state.

    `serve` instead serves a copy the course's scripts built (learner_copy.py, build_student_edition.py: a
    folder holding notebooks/) as it is, links included, as `make lab` does (`notebook` is then None).
    `settings` adds to or replaces LAB_SETTINGS (file name -> the plugin's user settings), e.g. the theme;
    `extra_args` go to the server's command line (e.g. `--LabApp.expose_app_in_browser=True`)."""
    if (notebook is None) == (serve is None):
        raise ValueError("give either notebook= (served from a copy of its folder) or serve= (a built copy)")
    if serve is not None and not (serve / "notebooks").is_dir():
        raise ValueError(f"serve={serve}: not a copy of the course (no notebooks/ in it); build one with "
                         "scripts.learner_copy or scripts.build_student_edition")
    with tempfile.TemporaryDirectory(prefix="browser-check-") as tmp:
        tmp = Path(tmp)
        root = serve if serve is not None else tmp / "course"
        if serve is None:
            shutil.copytree(notebook.parent, root / "notebooks", ignore=COPY_IGNORE)  # its neighbours too
            for folder in folders_beside(sorted(notebook.parent.glob("*.ipynb"))):  # ../data, ../results
                shutil.copytree(ROOT / folder, root / folder, ignore=COPY_IGNORE)
        for name, value in {**LAB_SETTINGS, **(settings or {})}.items():
            path = tmp / "settings" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value), encoding="utf-8")
        env = dict(script_environment(), JUPYTER_CONFIG_DIR=str(tmp / "config"), JUPYTER_DATA_DIR=str(tmp / "data"),
                   JUPYTER_RUNTIME_DIR=str(tmp / "runtime"), JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"),
                   JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"))
        token, port = secrets.token_hex(16), _free_port()
        command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
                   f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
                   f"--ServerApp.root_dir={root}", "--LabApp.news_url=None", "--LabApp.check_for_updates_class="
                   "jupyterlab.NeverCheckForUpdate", *extra_args]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            command.append("--allow-root")
        log = (tmp / "lab.log").open("w")
        server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=root)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + timeout
            while True:
                if server.poll() is not None:
                    raise BrowserCheckError(f"JupyterLab exited with code {server.returncode}:\n"
                                            + (tmp / "lab.log").read_text()[-3000:])
                try:
                    with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as response:
                        if response.status == 200:
                            break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise BrowserCheckError(f"JupyterLab did not answer within {timeout:.0f} s:\n"
                                            + (tmp / "lab.log").read_text()[-3000:])
                time.sleep(0.2)
            yield Lab(url, token, root)
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            log.close()


def _sanitizers() -> list[tuple[re.Pattern, str]]:
    config = configparser.ConfigParser()
    config.read(ROOT / "nbval_sanitize.cfg", encoding="utf-8")
    return [(re.compile(config[s]["regex"]), config[s]["replace"]) for s in config.sections()]


def _normalize(text: str, sanitizers) -> str:
    for pattern, replacement in sanitizers:
        text = pattern.sub(replacement, text)
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def _expected(cell: nbformat.NotebookNode) -> tuple[set[str], str]:
    """The kinds of output a stored cell shows, and its stdout text."""
    kinds, stdout = set(), ""
    for output in cell.outputs:
        if output.output_type == "stream" and output.name == "stdout":
            kinds.add("text")
            stdout += output.text
        data = output.get("data", {})
        if WIDGET_VIEW in data:
            kinds.add("widget")
        elif "image/png" in data:
            kinds.add("image")
        elif "text/html" in data:
            kinds.add("html")
        elif "text/plain" in data:
            kinds.add("text")
    return kinds, stdout


RENDERED_KINDS = {  # what JupyterLab shows for each kind of output
    "text": '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stdout"], '
            '.jp-OutputArea-output[data-mime-type="text/plain"]',
    "html": '.jp-OutputArea-output[data-mime-type="text/html"]',
    "image": '.jp-OutputArea-output[data-mime-type="image/png"] img',
    "widget": ".jp-OutputArea-output .jupyter-widgets",  # the widget manager gives it no MIME attribute
}


@contextmanager
def _notebook_page(notebook: Path, report: Report, screenshot_dir: Path) -> Iterator:
    """JupyterLab over a copy of `notebook`'s folder, the notebook open in headless Chromium, its kernel idle.

    Yields `(page, status)`, `status` being the status bar's "<kernel> | Idle" text. Requests to
    anything but the local JupyterLab are blocked and listed in `report.blocked_requests`. On the
    way out a screenshot is taken (also when the check failed).
    """
    chromium = find_chromium()
    sync_playwright = import_playwright()
    stored = nbformat.read(notebook, as_version=4)
    kernel_name = stored.metadata.get("kernelspec", {}).get("name", "python3")
    began = time.perf_counter()
    with jupyterlab(notebook) as lab:
        report.timings["JupyterLab started"] = round(time.perf_counter() - began, 1)
        with urllib.request.urlopen(f"{lab.url}/api/kernelspecs?token={lab.token}", timeout=10) as response:
            specs = json.load(response)["kernelspecs"]
        if kernel_name not in specs:
            raise BrowserCheckError(f"JupyterLab has no kernel {kernel_name!r} (it has {sorted(specs)}): "
                                    "run `make setup`")
        display_name = specs[kernel_name]["spec"]["display_name"]  # what the status bar shows
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1280, "height": 900})

            def local_only(route):
                if route.request.url.startswith(lab.url + "/"):
                    route.continue_()
                else:
                    report.blocked_requests.append(route.request.url)
                    route.abort()

            context.route("**/*", local_only)
            page = context.new_page()
            try:
                mark = time.perf_counter()
                page.goto(f"{lab.url}/lab/tree/notebooks/{notebook.name}?token={lab.token}")
                status = page.get_by_text(f"{display_name} | Idle")
                status.wait_for(timeout=90_000)  # before this, a keypress would be lost
                report.timings["page and kernel ready"] = round(time.perf_counter() - mark, 1)
                cells = page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell")
                if cells.count() != len(stored.cells):
                    raise BrowserCheckError(f"the page shows {cells.count()} cells, "
                                            f"the notebook has {len(stored.cells)}")
                yield page, status
            except BaseException:
                with suppress(Exception):  # best effort: a picture of what went wrong; the error is what counts
                    _screenshot(page, notebook, screenshot_dir, report)
                raise
            _screenshot(page, notebook, screenshot_dir, report)
            browser.close()
    report.timings["total"] = round(time.perf_counter() - began, 1)


def _wait_until_idle(page, status, what: str, timeout: float) -> None:
    """Wait until no cell is queued or running (`[*]`) and the kernel is idle, twice in a row."""
    prompts = page.locator(".jp-Notebook .jp-CodeCell .jp-InputPrompt")
    deadline, quiet = time.monotonic() + timeout, 0
    while quiet < 2:
        busy = any("*" in text for text in prompts.all_inner_texts()) or not status.is_visible()
        quiet = 0 if busy else quiet + 1
        if time.monotonic() > deadline:
            raise BrowserCheckError(f"{what}: still running after {timeout:.0f} s")
        page.wait_for_timeout(250)


def run_notebook_in_browser(notebook: Path, *, screenshot_dir: Path = SCREENSHOTS,
                            run_timeout: float = 300) -> Report:
    """Run `notebook` in JupyterLab in headless Chromium and check what the page shows; raise BrowserCheckError."""
    notebook = notebook.resolve()
    stored = nbformat.read(notebook, as_version=4)
    code = [cell for cell in stored.cells if cell.cell_type == "code"]
    if not code:
        raise BrowserCheckError(f"{notebook.name} has no code cell to run")
    report = Report(notebook.name, code_cells=len(code))
    with _notebook_page(notebook, report, screenshot_dir) as (page, status):
        mark = time.perf_counter()
        cells = page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell")
        cells.first.locator(".jp-Cell-inputWrapper").click()
        page.keyboard.press("Escape")  # command mode: Shift+Enter runs the cell and selects the next
        for _ in range(len(stored.cells) - 1):
            page.keyboard.press("Shift+Enter")
        page.keyboard.press("Control+Enter")  # the last cell: run it without adding a new one
        _wait_until_idle(page, status, notebook.name, run_timeout)
        report.timings["all cells run"] = round(time.perf_counter() - mark, 1)
        _check_page(page, stored, report)
        mark = time.perf_counter()
        if _change_a_widget(page, report):
            report.timings["widget changed and view updated"] = round(time.perf_counter() - mark, 1)
    return report


@dataclass
class RunAllReport(Report):
    """What Run All left on the page: which code cells ran, which show an error, each cell's output text."""

    not_run: list[int] = field(default_factory=list)  # indices of code cells with no execution count
    errors: dict[int, str] = field(default_factory=dict)  # cell index -> error or stderr text shown
    outputs: dict[int, str] = field(default_factory=dict)  # cell index -> all output text shown


def _menu(page, menu: str, item: str) -> None:
    """Click `item` in the main menu `menu` (e.g. "Run", "Run All Cells")."""
    page.locator("#jp-MainMenu .lm-MenuBar-itemLabel", has_text=re.compile(f"^{re.escape(menu)}$")).click()
    page.locator(".lm-Menu-content .lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$")).first.click()


def run_all_in_browser(notebook: Path, *, screenshot_dir: Path = SCREENSHOTS, run_timeout: float = 300) -> RunAllReport:
    """Open `notebook` in JupyterLab, clear every output, choose Run > Run All Cells, report what the page shows.

    This is what a learner does with a fresh copy of the student edition. Run All stops at the
    first cell that raises; the cells after it keep an empty prompt, listed in `not_run`.
    """
    notebook = notebook.resolve()
    stored = nbformat.read(notebook, as_version=4)
    code = [index for index, cell in enumerate(stored.cells) if cell.cell_type == "code"]
    report = RunAllReport(notebook.name, code_cells=len(code))
    with _notebook_page(notebook, report, screenshot_dir) as (page, status):
        mark = time.perf_counter()
        _menu(page, "Edit", "Clear Outputs of All Cells")  # the stored run's prompts and outputs go
        cells = page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell")
        stale = [i for i in code if re.search(r"\d", cells.nth(i).locator(".jp-InputPrompt").inner_text())]
        if stale:
            raise BrowserCheckError(f"{notebook.name}: clearing all outputs left the prompts of cells {stale}")
        _menu(page, "Run", "Run All Cells")
        page.wait_for_timeout(500)  # the cells are queued
        _wait_until_idle(page, status, notebook.name, run_timeout)
        report.timings["Run All"] = round(time.perf_counter() - mark, 1)
        for index in code:
            cell = cells.nth(index)
            if not re.fullmatch(r"\[\d+\]:", cell.locator(".jp-InputPrompt").inner_text().strip()):
                report.not_run.append(index)
            bad = cell.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"], '
                               '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]')
            if bad.count():
                report.errors[index] = "\n".join(bad.all_inner_texts())
            report.outputs[index] = "\n".join(cell.locator(".jp-OutputArea-output").all_inner_texts())
    return report


def _check_page(page, stored: nbformat.NotebookNode, report: Report) -> None:
    """Compare what each code cell shows with what the notebook stores."""
    problems = []
    sanitizers = _sanitizers()
    cells = page.locator(".jp-Notebook .jp-Cell")
    for index, cell in enumerate(stored.cells):
        if cell.cell_type != "code":
            continue
        shown = cells.nth(index)
        where = f"cell {index} ({cell.source.splitlines()[0][:50]!r})" if cell.source else f"cell {index}"
        prompt = shown.locator(".jp-InputPrompt").inner_text()
        collapsed = shown.locator(".jp-InputPlaceholder").count() > 0  # a hidden solution: no prompt to read
        if not collapsed and not re.fullmatch(r"\[\d+\]:", prompt.strip()):
            problems.append(f"{where} did not run (prompt {prompt.strip()!r})")
            continue
        for kind in ("application/vnd.jupyter.stderr", "application/vnd.jupyter.error"):
            bad = shown.locator(f'.jp-OutputArea-output[data-mime-type="{kind}"]')
            if bad.count():
                problems.append(f"{where} shows {kind.rsplit('.', 1)[1]}: {bad.first.inner_text()[:500]}")
        kinds, stdout = _expected(cell)
        for kind in sorted(kinds):
            if shown.locator(RENDERED_KINDS[kind]).count() == 0:
                problems.append(f"{where}: its stored {kind} output is not shown")
            else:
                report.outputs_checked += 1
        if stdout and not cell.source.lstrip().startswith("# NBVAL_IGNORE_OUTPUT"):
            text = "".join(shown.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stdout"]')
                           .all_inner_texts())
            got, want = _normalize(text, sanitizers), _normalize(stdout, sanitizers)
            if got != want:
                diff = difflib.unified_diff(want.splitlines(), got.splitlines(), "stored", "shown", lineterm="", n=0)
                problems.append(f"{where} printed other text:\n" + "\n".join(list(diff)[:12]))
            report.texts_compared += 1
    if report.outputs_checked == 0:
        problems.append("the notebook stores no outputs to compare with: execute it first "
                        "(scripts/execute_notebooks.py)")
    if problems:
        raise BrowserCheckError(f"{report.notebook} in the browser:\n- " + "\n- ".join(problems))


def _change_a_widget(page, report: Report, timeout: float = 30) -> bool:
    """Pick another option in the first widget drop-down, then type a new number into its first number box.

    After each change the widget's view must change within `timeout` seconds. Returns False when
    the page shows no widget with a drop-down.
    """
    area = page.locator(".jp-OutputArea-output", has=page.locator(".jupyter-widgets select")).first
    if not area.count():
        return False
    changes = []

    def shown() -> tuple[str, list[str]]:
        """The widget's text, and its coloured spans (a chunk view) with their titles: cuts show here."""
        spans = area.locator(".widget-html-content span[title]").evaluate_all(
            "spans => spans.map(s => s.title + '|' + s.textContent)")
        return area.inner_text(), spans

    def wait_for_change(before: tuple[str, list[str]], what: str) -> None:
        deadline = time.monotonic() + timeout
        def unchanged() -> bool:  # with a chunk view, the chunks themselves must change
            now = shown()
            return now[1] == before[1] if before[1] else now == before

        while unchanged():
            if time.monotonic() > deadline:
                raise BrowserCheckError(f"{report.notebook}: {what} in a widget did not change its view "
                                        f"within {timeout:.0f} s")
            page.wait_for_timeout(200)

    select = area.locator(".jupyter-widgets select").first
    before, current = shown(), select.input_value()
    values = select.locator("option").evaluate_all("options => options.map(o => o.value)")
    other = next((v for v in values if v != current), None)
    if other is None:
        return False
    select.select_option(other)
    wait_for_change(before, f"choosing {other!r} instead of {current!r}")
    changes.append(f"{current} -> {other}")
    number = area.locator('.jupyter-widgets input[type="number"]').first
    if number.count():
        before, current = shown(), number.input_value()
        new = str(int(current) + 7 if int(current) + 7 <= int(number.get_attribute("max") or 10**9)
                  else int(current) - 7)
        number.fill(new)
        number.press("Enter")
        wait_for_change(before, f"typing {new} instead of {current} in a number box")
        changes.append(f"number {current} -> {new}")
    scroller = area.locator('.widget-html-content div[style*="overflow:auto"]').first
    if scroller.count():  # scroll the chunks to their end: the controls must not move out of sight
        scrolled = scroller.evaluate("e => { e.scrollTop = e.scrollHeight; return e.scrollTop > 0; }")
        box, height = select.bounding_box(), page.viewport_size["height"]
        report.widget_scrolls_under_controls = bool(scrolled and box and 0 <= box["y"] <= height - box["height"])
    report.widget_changed = "; ".join(changes)
    return True


def _screenshot(page, notebook: Path, folder: Path, report: Report) -> None:
    """Scroll the first cell with a widget, HTML or image output to the top and take a screenshot."""
    for selector in (RENDERED_KINDS["widget"], RENDERED_KINDS["html"], RENDERED_KINDS["image"],
                     ".jp-OutputArea-output"):
        target = page.locator(selector)
        if target.count():
            target.first.evaluate("e => e.closest('.jp-Cell').scrollIntoView({block: 'start'})")
            break
    folder.mkdir(parents=True, exist_ok=True)
    report.screenshot = folder / f"{notebook.stem}.png"
    page.screenshot(path=str(report.screenshot))


def default_notebooks() -> list[Path]:
    """The learner's first notebook, and the first notebook with a widget (the chunk playground)."""
    with_widget = next((p for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
                        if WIDGET_VIEW in p.read_text(encoding="utf-8")), None)
    return [FIRST_NOTEBOOK] + ([with_widget] if with_widget and with_widget != FIRST_NOTEBOOK else [])


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    failed = 0
    for notebook in [Path(a) for a in args] or default_notebooks():
        try:
            report = run_notebook_in_browser(notebook)
        except BrowserCheckError as error:
            print(f"FAIL: {error}", file=sys.stderr)
            failed += 1
            continue
        print(f"OK: {report.notebook}: {report.code_cells} code cells ran in JupyterLab; {report.outputs_checked} "
              f"outputs rendered as stored, {report.texts_compared} printed texts equal to the stored ones"
              + (f"; widget {report.widget_changed} updated its view" if report.widget_changed else ""))
        print("  timings (s): " + ", ".join(f"{k} {v}" for k, v in report.timings.items()))
        if report.blocked_requests:
            blocked = sorted(set(report.blocked_requests))
            print(f"  blocked {len(report.blocked_requests)} request(s) to outside: {blocked}")
        print(f"  screenshot: {report.screenshot}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
