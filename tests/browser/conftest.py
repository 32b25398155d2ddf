"""The real-browser tests run only when asked: `pytest tests/browser` (or a file in it).

`pytest tests` and `make test` list them as deselected instead of running them: they need Chromium
and the Playwright driver (requirements-browser.txt), which are not course requirements.
"""

from pathlib import Path

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
