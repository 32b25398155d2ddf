"""Turn each bare source key in the notebooks' prose into a link to its entry in docs/SOURCES.md.

`[Chunking I]` in a Markdown cell becomes `[[Chunking I]](../docs/SOURCES.md#chunking-i)`: it still reads
"[Chunking I]", and a click shows what the source is. The keys and their anchors come from
docs/SOURCES.md (`scripts.claims.source_anchors`). A key already linked, one inside a code span or a
code block, and one that is the text of another link are left alone, so running the script twice changes
nothing the second time. `scripts.claims` still sees the key in the sentence.

Usage:
  python -m scripts.link_sources [NB ...] --dry-run   count the keys that would become links, per notebook
  python -m scripts.link_sources [NB ...]             link them, in place (default: every course notebook)
  python -m scripts.link_sources [NB ...] --out DIR   write the changed notebooks to DIR instead
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

import nbformat

from scripts.claims import source_anchors
from scripts.project import course_notebooks

SOURCES_LINK = "../docs/SOURCES.md"
_CODE = re.compile(r"```.*?```|~~~.*?~~~|`[^`\n]*`", re.DOTALL)


def _key_pattern(keys: list[str]) -> re.Pattern[str]:
    names = "|".join(re.escape(k[1:-1]) for k in sorted(keys, key=len, reverse=True))
    # not already a link's text ("[[Key]](...)" or "[Key](...)"), nor a reference ("[Key][x]")
    return re.compile(rf"(?<!\[)\[({names})\](?![(\[])")


def link_keys(markdown: str, anchors: dict[str, str], target: str = SOURCES_LINK) -> tuple[str, Counter]:
    """`markdown` with each bare key linked; and how many of each key were linked."""
    pattern = _key_pattern(list(anchors))
    counts: Counter = Counter()
    pieces, last = [], 0
    for code in [*_CODE.finditer(markdown), None]:
        end = code.start() if code else len(markdown)

        def link(m: re.Match) -> str:
            key = f"[{m.group(1)}]"
            counts[key] += 1
            return f"[{key}]({target}#{anchors[key]})"

        pieces.append(pattern.sub(link, markdown[last:end]))
        if code:
            pieces.append(code.group(0))
            last = code.end()
    return "".join(pieces), counts


def link_notebook(notebook: nbformat.NotebookNode, anchors: dict[str, str]) -> Counter:
    """Link every bare key in the notebook's Markdown cells (changed in place); return the counts."""
    total: Counter = Counter()
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source, counts = link_keys(cell.source, anchors)
            total += counts
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every course notebook")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--dry-run", action="store_true", help="count what would be linked; change no file")
    what.add_argument("--out", type=Path, help="write the changed notebooks to this folder, not in place")
    args = parser.parse_args(argv)
    anchors = source_anchors()
    if not anchors:
        print("error: docs/SOURCES.md defines no key with an anchor", file=sys.stderr)
        return 1
    grand = 0
    for path in args.notebooks or course_notebooks():
        notebook = nbformat.reads(path.read_text(encoding="utf-8"), as_version=nbformat.NO_CONVERT)
        counts = link_notebook(notebook, anchors)
        grand += sum(counts.values())
        detail = ", ".join(f"{key} {n}" for key, n in sorted(counts.items()))
        print(f"{path.name}: {sum(counts.values())} keys linked" + (f" ({detail})" if detail else ""))
        if args.dry_run or not counts:
            continue
        target = args.out / path.name if args.out else path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(nbformat.writes(notebook) + "\n", encoding="utf-8")
    print(f"{'would link' if args.dry_run else 'linked'} {grand} source keys")
    return 0


if __name__ == "__main__":
    sys.exit(main())
