"""Move the asserts that keep the prose true out of the lesson's code, into hidden `guard` cells.

A notebook checks the numbers its prose states with asserts, so prose and output cannot drift apart.
A learner, though, reads every assert as part of the lesson. This script takes those asserts out of each
code cell and puts them, unchanged and in their order, in a code cell right after it, tagged `guard`
with its input collapsed in JupyterLab (`"jupyter": {"source_hidden": true}`) and no outputs. nbval still
runs guard cells; the site and the student edition leave them out; `scripts.claims` still reads their
literals. The rest of the original cell is left as it was, line for line.

The rule: a top-level `assert` statement of a code cell is a prose guard when
  (a) its message says that it keeps the notebook's text true: it contains "the text says", "the text:",
      "the text's", "the prose", "the summary", or "<the table | the header | the map | the paragraph |
      section N> says" (`PROSE_MESSAGE`), or
  (b) it is marked by hand: a `# guard` comment on its first line.
Every other assert teaches (it states what the lesson wants seen: a published figure reproduced, an
invariant of a chunker) and stays. Asserts with a prose message that cannot be moved safely stay too, and
are listed: one inside a loop, a function, a class or another block; one sharing a line with another
statement; one whose names a later statement of the same cell re-binds or changes (moved after the cell,
it would check another value); one that was the cell's last statement after an expression other than
print()/display() (removing it would make Jupyter display that expression's value). A cell left with only
comments becomes the guard cell itself; a guard cell already right after a cell receives its new asserts.
Running the script twice changes nothing the second time.

Usage:
  python -m scripts.move_guards [NB ...] --dry-run   report what would move, per notebook
  python -m scripts.move_guards [NB ...]             move them, in place (default: every course notebook)
  python -m scripts.move_guards [NB ...] --out DIR   write the changed notebooks to DIR instead
In place, a notebook's stored run time (notebooks/run_times.json) keeps its value and gets the new code
fingerprint when it was measured on the code before the move: the same statements run, in another cell.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from scripts import notebook_times
from scripts.project import NOTEBOOKS, course_notebooks

GUARD_TAG = "guard"
PROSE_MESSAGE = re.compile(
    r"\bthe\s+(?:text|prose|summary)\s+(?:above\s+|below\s+)?(?:says|said|states|claims)\b"
    r"|\b(?:the\s+(?:table|header|map|paragraph|sentence)|section\s+\d+|§\s*\d+)\s+(?:says|said|states|claims)\b"
    r"|\bthe\s+(?:prose|summary)\b|\bthe\s+text\s*:|\bthe\s+text['’]s\b",
    re.IGNORECASE)
MARK = re.compile(r"#\s*guard\b", re.IGNORECASE)
QUIET_CALLS = {"print", "display"}  # calls that return None: safe as a cell's last statement
# methods that change nothing: a later `x.get(...)` does not stop an assert on x from moving
READ_ONLY_METHODS = {"keys", "values", "items", "get", "count", "index", "mean", "sum", "min", "max", "std",
                     "round", "format", "startswith", "endswith", "split", "splitlines", "join", "strip", "lower",
                     "upper", "copy", "tolist", "argmax", "argmin", "any", "all", "find", "replace", "most_common"}


@dataclass
class Report:
    """What happened (or would happen) to one notebook."""

    name: str
    moved: int = 0  # asserts moved out of their cell
    cells: int = 0  # guard cells made or tagged
    left: list[str] = field(default_factory=list)  # prose asserts that stay, each with its reason

    def line(self) -> str:
        return f"{self.name}: {self.moved} asserts into {self.cells} guard cells, {len(self.left)} left"


def is_guard(cell) -> bool:
    return cell.get("cell_type") == "code" and GUARD_TAG in cell.get("metadata", {}).get("tags", [])


def _message(node: ast.Assert, source: str) -> str:
    return ast.get_source_segment(source, node.msg) or "" if node.msg is not None else ""


def is_prose_guard(node: ast.Assert, source: str) -> bool:
    """The rule: a message that says it keeps the text true, or a `# guard` mark on the assert's first line."""
    first_line = source.splitlines()[node.lineno - 1]
    return bool(PROSE_MESSAGE.search(_message(node, source)) or MARK.search(first_line[node.col_offset:]))


def _read_names(node: ast.AST) -> set[str]:
    """Names an assert reads from the cell, not counting its own comprehension and lambda variables."""
    own = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    own |= {a.arg for n in ast.walk(node) if isinstance(n, ast.Lambda) for a in n.args.args}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - own


def _changed_names(node: ast.AST) -> set[str]:
    """Names a statement re-binds or deletes, or changes in place (`x.append(...)`, `x[k] = v`, `x.a = v`);
    a comprehension's own variables do not leak out of it."""
    names = set()
    inner = {id(n) for c in ast.walk(node) if isinstance(c, ast.comprehension) for n in ast.walk(c.target)}
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)) and id(n) not in inner:
            names.add(n.id)
        elif isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, (ast.Store, ast.Del)):
            base = n.value
            while isinstance(base, (ast.Subscript, ast.Attribute)):
                base = base.value
            if isinstance(base, ast.Name):
                names.add(base.id)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) \
                and n.func.attr not in READ_ONLY_METHODS:
            names.add(n.func.value.id)  # a method call may change its object
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in n.names)
    return names


def _quiet(node: ast.stmt) -> bool:
    """A statement that displays nothing when it is the last of a cell."""
    if not isinstance(node, ast.Expr):
        return True
    call = node.value
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in QUIET_CALLS


def _short(node: ast.Assert, source: str) -> str:
    text = " ".join((ast.get_source_segment(source, node.test) or "").split())
    return text[:70] + ("..." if len(text) > 70 else "")


def split_cell(source: str, where: str) -> tuple[str, str, list[str]] | None:
    """(what stays, the guard statements, what was left and why) for one cell's source; None when the
    cell is not Python this script can read (a magic, a syntax error)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    lines = source.splitlines(keepends=True)
    body = tree.body
    left: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert) and node not in body and is_prose_guard(node, source):
            left.append(f"{where} line {node.lineno}: inside a block ({_short(node, source)})")
    chosen: list[int] = []
    for i, node in enumerate(body):
        if not (isinstance(node, ast.Assert) and is_prose_guard(node, source)):
            continue
        shares = any(other is not node and other.lineno <= node.end_lineno and other.end_lineno >= node.lineno
                     for other in body)
        if shares:
            left.append(f"{where} line {node.lineno}: shares a line with another statement ({_short(node, source)})")
            continue
        later = set().union(*(_changed_names(n) for n in body[i + 1:])) if body[i + 1:] else set()
        if changed := sorted(_read_names(node) & later):
            left.append(f"{where} line {node.lineno}: a later statement changes {', '.join(changed)} "
                        f"({_short(node, source)})")
            continue
        chosen.append(i)
    # an assert that ends the cell stays when moving it would leave a value-displaying expression last
    if chosen and chosen[-1] == len(body) - 1:
        remaining = [n for i, n in enumerate(body) if i not in chosen]
        if remaining and not _quiet(remaining[-1]):
            node = body[chosen.pop()]
            left.append(f"{where} line {node.lineno}: the cell would end on an expression, which Jupyter would "
                        f"display ({_short(node, source)})")
    if not chosen:
        return source, "", left
    taken = set()
    for i in chosen:
        taken.update(range(body[i].lineno - 1, body[i].end_lineno))
    guard = "".join(lines[k] if lines[k].endswith("\n") else lines[k] + "\n" for k in sorted(taken)).rstrip("\n")
    kept = [line for k, line in enumerate(lines) if k not in taken]
    # a blank line that only separated a moved assert from its neighbours goes with it
    tidy: list[str] = []
    for line in kept:
        if not line.strip() and (not tidy or not tidy[-1].strip()):
            continue
        tidy.append(line)
    stays = "".join(tidy).rstrip()
    return stays, guard, left


def _guard_cell(source: str, like) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata = nbformat.NotebookNode({"tags": [GUARD_TAG], "jupyter": {"source_hidden": True}})
    cell.execution_count = like.get("execution_count")
    cell.outputs = []
    return cell


def _only_comments(source: str) -> bool:
    return all(not line.strip() or line.lstrip().startswith("#") for line in source.splitlines())


def move_guards(notebook: nbformat.NotebookNode, name: str = "") -> Report:
    """Move the prose guards of every code cell of `notebook` (changed in place); report what was done."""
    report = Report(name)
    cells = notebook.cells
    ids = {c.get("id") for c in cells}
    i = 0
    while i < len(cells):
        cell = cells[i]
        if cell.cell_type != "code" or is_guard(cell):
            i += 1
            continue
        where = f"cell {i} ({cell.get('id', '')})"
        split = split_cell(cell.source, where)
        if split is None:
            i += 1
            continue
        stays, guard, left = split
        report.left += left
        if not guard:
            i += 1
            continue
        report.moved += sum(1 for node in ast.parse(guard).body if isinstance(node, ast.Assert))
        if _only_comments(stays):  # the whole cell guards the prose: it becomes the guard cell
            cell.metadata.setdefault("tags", [])
            if GUARD_TAG not in cell.metadata["tags"]:
                cell.metadata["tags"].append(GUARD_TAG)
            cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
            report.cells += 1
            i += 1
            continue
        cell.source = stays
        following = cells[i + 1] if i + 1 < len(cells) else None
        if following is not None and is_guard(following):
            following.source = guard + "\n" + following.source
        else:
            new = _guard_cell(guard, cell)
            base = f"{cell.get('id') or 'cell'}"[:58] + "-guard"
            new.id, n = base, 2
            while new.id in ids:
                new.id, n = f"{base}{n}", n + 1
            ids.add(new.id)
            cells.insert(i + 1, new)
            report.cells += 1
        i += 2
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every course notebook")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--dry-run", action="store_true", help="report what would move; change no file")
    what.add_argument("--out", type=Path, help="write the changed notebooks to this folder, not in place")
    parser.add_argument("--verbose", action="store_true", help="list every assert left in place, with its reason")
    args = parser.parse_args(argv)
    paths = args.notebooks or course_notebooks()
    times = notebook_times if not (args.dry_run or args.out) else None
    run_times = times.load_run_times() if times else {}
    total = 0
    for path in paths:
        text = path.read_text(encoding="utf-8")
        notebook = nbformat.reads(text, as_version=nbformat.NO_CONVERT)
        before = times.code_fingerprint(path) if times else None
        report = move_guards(notebook, path.name)
        total += report.moved
        print(report.line())
        for line in report.left if args.verbose else []:
            print("  left: " + line)
        if args.dry_run or not report.moved:
            continue
        target = args.out / path.name if args.out else path
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
        target.write_text(nbformat.writes(notebook) + "\n", encoding="utf-8")
        stored = run_times.get(path.name)
        if times and stored and stored.get("code_sha256") == before and path.resolve().parent == NOTEBOOKS:
            stored["code_sha256"] = times.code_fingerprint(path)  # the same statements run: the time holds
            times.RUN_TIMES.write_text(json.dumps(dict(sorted(run_times.items())), indent=1) + "\n",
                                       encoding="utf-8")
    print(f"{'would move' if args.dry_run else 'moved'} {total} asserts in {len(paths)} notebooks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
