"""The packages' shape: course_lib (what the notebooks teach) never imports rag_tools (the practitioner's tools);
no import cycle in either; no import from chunking/ upwards; every "Taught in" reference resolves.

Static checks (the standard library's `ast`, no import of course_lib): imports made inside functions
count as much as those at the top of a file, so a cycle cannot hide behind a deferred import.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "course_lib"
TOOLS = ROOT / "rag_tools"
TOOL_NOTEBOOKS = {"12_documents_with_pages.ipynb", "13_your_documents.ipynb", "14_from_notebook_to_production.ipynb"}
MAX_COURSE_LIB_LINES = 6_200  # the bound on `wc -l course_lib/*.py course_lib/*/*.py`
# what chunking/ may import from course_lib: the layer below it, and itself
CHUNKING_MAY_IMPORT = ("course_lib.spans", "course_lib.tokens", "course_lib.models", "course_lib.embed",
                       "course_lib.chunking")
TAUGHT_IN = re.compile(r"(notebooks/\d\d_\w+\.ipynb),\s*sections?\s+(\d+)(?:\s*(?:-|and)\s*(\d+))?")


def _modules() -> dict[str, Path]:
    return {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
            for package in (PACKAGE, TOOLS) for p in package.rglob("*.py")}


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of both packages a file imports anywhere in it (top level or inside functions)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        found |= {t for t in targets if t in modules}
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {m: _imports(p, modules) - {m} for m, p in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_counts_imports_inside_functions(tmp_path):
    file = tmp_path / "m.py"
    file.write_text("def f():\n    from course_lib.late import pool_chunks\n    import course_lib.embed\n")
    assert _imports(file, {"course_lib.late": file, "course_lib.embed": file}) == {"course_lib.late",
                                                                                  "course_lib.embed"}


def test_no_import_cycle_in_either_package():
    assert cycles(import_graph()) == []


def test_course_lib_never_imports_the_tools():
    graph = import_graph()
    upward = {m: sorted(t for t in targets if t.startswith("rag_tools"))
              for m, targets in graph.items() if m.startswith("course_lib")}
    assert {m: t for m, t in upward.items() if t} == {}
    assert any(t.startswith("course_lib") for m, ts in graph.items() if m.startswith("rag_tools") for t in ts)


def _notebook_code(path: Path) -> str:
    return "\n".join("".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
                     if c["cell_type"] == "code")


def test_only_the_tool_notebooks_import_the_tools():
    notebooks = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert {p.name for p in notebooks} >= TOOL_NOTEBOOKS
    assert [p.name for p in notebooks if p.name not in TOOL_NOTEBOOKS and "rag_tools" in _notebook_code(p)] == []


def test_course_lib_stays_small():
    lines = sum(len(p.read_text(encoding="utf-8").splitlines())
                for p in [*PACKAGE.glob("*.py"), *PACKAGE.glob("*/*.py")])
    assert lines <= MAX_COURSE_LIB_LINES, f"course_lib has {lines:,} lines (at most {MAX_COURSE_LIB_LINES:,})"


def test_every_course_lib_module_is_used_by_a_notebook_or_another_module():
    """Used: imported by a notebook or another course_lib module, or run by `make setup` (the kernel's settings)."""
    graph = import_graph()
    code = "\n".join(_notebook_code(p) for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")))
    code += (ROOT / "Makefile").read_text(encoding="utf-8")
    used = {t for m, ts in graph.items() if m.startswith("course_lib") for t in ts}
    unused = [m for m in graph if m.startswith("course_lib.") and not m.endswith("__main__")
              and m not in used and not re.search(rf"\b{re.escape(m)}\b", code)]
    assert unused == []


def test_chunking_imports_nothing_above_it():
    upward = {m: sorted(t for t in targets if not t.startswith(CHUNKING_MAY_IMPORT))
              for m, targets in import_graph().items() if m.startswith("course_lib.chunking")}
    assert {m: t for m, t in upward.items() if t} == {}, "chunking/ may import only " + ", ".join(CHUNKING_MAY_IMPORT)


def test_the_registry_and_the_dispatch_load_nothing_lazily():
    for path in (PACKAGE / "chunking" / "__init__.py", PACKAGE / "chunking" / "registry.py",
                 PACKAGE / "strategies.py"):
        text = path.read_text(encoding="utf-8")
        assert "importlib" not in text and "__getattr__" not in text, path


def _section_numbers() -> dict[str, set[int]]:
    numbers = {}
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        numbers[f"notebooks/{path.name}"] = {int(m.group(1)) for c in cells if c["cell_type"] == "markdown"
                                             for m in re.finditer(r"^##\s+(\d+)\.", "".join(c["source"]), re.M)}
    return numbers


def test_every_taught_in_reference_resolves_to_a_section():
    sections = _section_numbers()
    checked, bad = 0, []
    for path in sorted([*PACKAGE.rglob("*.py"), *TOOLS.rglob("*.py")]):
        for m in TAUGHT_IN.finditer(path.read_text(encoding="utf-8")):
            first, last = int(m.group(2)), int(m.group(3) or m.group(2))
            wanted = range(first, last + 1) if "-" in m.group(0) else {first, last}
            checked += 1
            if m.group(1) not in sections or not all(k in sections[m.group(1)] for k in wanted):
                bad.append(f"{path.relative_to(ROOT)}: {m.group(0)}")
    assert checked > 50, "the reference pattern no longer matches the docstrings"
    assert bad == []


@pytest.mark.parametrize("text", ["Taught in notebooks/99_none.ipynb, section 1",
                                  "Taught in notebooks/04_recursive_splitting.ipynb, section 99"])
def test_a_broken_reference_is_caught(text):
    sections = _section_numbers()
    m = TAUGHT_IN.search(text)
    assert m.group(1) not in sections or int(m.group(2)) not in sections[m.group(1)]


def test_one_format_for_where_a_function_is_taught():
    """"Taught in notebooks/NN_x.ipynb, section K" everywhere: no "(notebook N, section K)" variant."""
    variant = re.compile(r"\bnotebook \d+, sections? \d")
    found = [f"{path}:{n}" for path in sorted([*PACKAGE.rglob("*.py"), *TOOLS.rglob("*.py")])
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1) if variant.search(line)]
    assert not found, f"write 'Taught in notebooks/NN_x.ipynb, section K' instead: {found}"
