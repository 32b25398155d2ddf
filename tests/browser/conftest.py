"""The real-browser tests run only when asked: `pytest tests/browser` (or a file in it).

`pytest tests` and `make test` list them as deselected instead of running them: they need Chromium
and the Playwright driver (requirements-browser.txt), which are not course requirements.
"""

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def _asked_for(config) -> bool:
    for arg in config.args:
        path = Path(arg.split("::")[0]).resolve()
        if path == HERE or HERE in path.parents:
            return True
    return False


def pytest_collection_modifyitems(config, items):
    if _asked_for(config):
        return
    mine = [item for item in items if HERE in Path(item.path).parents]
    if mine:
        config.hook.pytest_deselected(items=mine)
        items[:] = [item for item in items if item not in mine]


IMAGE_COUNTS: dict[str, dict[str, str]] = {}  # notebook -> {"lab", "markdown", "site"}: test_figures_in_browser.py


@pytest.fixture(scope="session")
def image_counts() -> dict[str, dict[str, str]]:
    """Where test_figures_in_browser.py notes the images each notebook showed (listed at the end of the run)."""
    return IMAGE_COUNTS


COPY_COUNTS: dict[str, str] = {}  # copy of the course -> the images loaded in it: test_figures_in_browser.py


@pytest.fixture(scope="session")
def copy_counts() -> dict[str, str]:
    """Where test_figures_in_browser.py notes the images loaded in each built copy (listed at the end of the run)."""
    return COPY_COUNTS


def pytest_terminal_summary(terminalreporter):
    """The images each notebook showed, in JupyterLab and in the site, and in each built copy
    (test_figures_in_browser.py)."""
    if COPY_COUNTS:
        terminalreporter.section("images loaded per copy")
        for name, seen in COPY_COUNTS.items():
            terminalreporter.write_line(f"{name}: {seen}")
    if IMAGE_COUNTS:
        terminalreporter.section("images shown per notebook")
        for name, seen in sorted(IMAGE_COUNTS.items()):
            terminalreporter.write_line(f"{name}: JupyterLab {seen.get('lab', 'not checked')}; "
                                        f"site {seen.get('site', 'not checked')}")
        plots_only = [name[:2] for name, seen in sorted(IMAGE_COUNTS.items()) if seen.get("markdown") == "0"]
        if plots_only:
            terminalreporter.write_line(f"no diagram in their Markdown (plots only): {', '.join(plots_only)}")
