"""Check the course environment: `python -m course_lib.check` prints one [OK]/[FAIL] line per item.

The same checks run at the top of notebooks/00_start_here.ipynb.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from course_lib.datasets import REGISTRY, data_dir, fetch

__all__ = ["REQUIREMENTS", "all_checks", "main", "pinned_requirements", "run_checks"]

REQUIREMENTS = Path(__file__).resolve().parent.parent / "requirements.txt"


def pinned_requirements(path: Path = REQUIREMENTS) -> dict[str, str]:
    """`name -> version` for each `name==version` line of a requirements file.

    Not taught: `run_checks` compares the installed versions with these pins.
    """
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[name.strip().lower()] = version.strip()
    return pins


def _package_checks() -> list[tuple[str, Callable[[], str]]]:
    def check(name: str, wanted: str) -> Callable[[], str]:
        def run() -> str:
            installed = metadata.version(name)
            if installed.split("+")[0] != wanted:
                raise RuntimeError(f"{name} {installed} is installed, the course pins {wanted}: run `make setup`")
            return installed
        return run

    return [(f"package {name}", check(name, version)) for name, version in pinned_requirements().items()]


def _tokenizers() -> str:
    from course_lib.tokens import get_encoding

    ids = get_encoding("cl100k_base").encode("hello world"), get_encoding("o200k_base").encode("hello world")
    if ids != ([15339, 1917], [24912, 2375]):
        raise RuntimeError(f"unexpected token ids {ids}")
    return "cl100k_base and o200k_base load offline"


def _model() -> str:
    from course_lib.models import load_embedding_model

    model = load_embedding_model()
    query, chunk = model.encode(
        ["When should the XR-12 pump be replaced?", "It must be replaced after 10,000 operating hours."]
    )
    score = float(query @ chunk)
    if round(score, 3) != 0.382:
        raise RuntimeError(f"the XR-12 check gives {score:.4f}, the published figure is 0.382")
    return f"all-MiniLM-L6-v2 loads offline (XR-12 naive cosine {score:.3f})"


def _dataset(name: str) -> Callable[[], str]:
    def run() -> str:
        for file in REGISTRY[name].files:
            fetch(name, file)
        return f"{len(REGISTRY[name].files)} files verified in {data_dir() / name}"
    return run


def all_checks(*, with_model: bool = True) -> list[tuple[str, Callable[[], str]]]:
    """The checks, in order: packages, tokenizers, model, datasets.

    Not taught: the list `run_checks` runs.
    """
    checks = [*_package_checks(), ("tokenizers", _tokenizers)]
    if with_model:
        checks.append(("embedding model", _model))
    return checks + [(f"dataset {name}", _dataset(name)) for name in REGISTRY]


def run_checks(*, with_model: bool = True) -> list[tuple[bool, str]]:
    """Run every check; print and return `(ok, line)` pairs. Never raises.

    Taught in notebooks/00_start_here.ipynb, section 1.
    """
    results = []
    for label, check in all_checks(with_model=with_model):
        try:
            ok, detail = True, check()
        except Exception as exc:  # a check reports, it does not crash
            ok, detail = False, f"{type(exc).__name__}: {exc}"
        line = f"[{'OK' if ok else 'FAIL'}] {label}: {detail}"
        print(line, flush=True)
        results.append((ok, line))
    return results


def main() -> int:
    """`python -m course_lib.check`: print every check, exit 1 if one failed. Run by `make setup`."""
    from course_lib.datasets import REGISTRY as datasets

    print(f"environment check: {len(pinned_requirements())} pinned packages, the tokenizers, the embedding model "
          f"(loading it takes 10-30 seconds) and {len(datasets)} datasets (downloaded the first time if missing)",
          flush=True)
    results = run_checks()
    failed = sum(not ok for ok, _ in results)
    print(f"environment check: {len(results) - failed} OK, {failed} FAIL")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
