"""Each Summary bullet links to the section (or notebook) whose output backs it, and every link resolves.

Issue 21: a summary line the learner cannot trace to a measurement is a claim without its evidence. For
every course notebook, each bullet of its `## Summary` section (up to the next `## ` heading) carries a
link to a section of the notebook (`[section 3](#3.-Heading-text)`) or to another notebook
(`[notebook 13](13_your_documents.ipynb)`). Every `](#anchor)` link in any Markdown cell names a heading
of the same notebook, and every `](NN_name.ipynb...)` link an existing notebook (and its anchor, if any,
a heading of that notebook). A heading's anchor is its text as JupyterLab renders it (code-span
backticks and link markup dropped), with each space replaced by `-`.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path

import pytest

from scripts.project import NOTEBOOKS, course_notebooks

# Summary bullets that may stay without a link, each with its reason:
# {(notebook, the bullet's first words): reason}. Keep it empty; an entry whose bullet has a link
# (or no longer exists) fails the test, so the list cannot go stale.
ALLOWED_UNLINKED: dict[tuple[str, str], str] = {}

HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
# a Markdown link target: no spaces, parentheses allowed one level deep (`#Old-versions:-compact()`)
LINK = re.compile(r"\]\(((?:[^()\s]|\([^()\s]*\))+)\)")
NOTEBOOK_LINK = re.compile(r"^(\d\d_[^/#?]+\.ipynb)(?:#(.*))?$")
BACKING_LINK = re.compile(r"\]\((?:#|\d\d_[^)\s]*\.ipynb)")
FIX = ("add a link at the end of the bullet to the section whose output backs it, e.g. "
       "([section 3](#3.-Heading-text)), or to the notebook that shows it, e.g. "
       "([notebook 13](13_your_documents.ipynb))")


def markdown_cells(notebook: dict) -> list[tuple[int, list[str]]]:
    """(cell index, lines outside fenced code blocks) of every Markdown cell."""
    cells = []
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        lines, fenced = [], False
        for line in source.splitlines():
            if FENCE.match(line):
                fenced = not fenced
            elif not fenced:
                lines.append(line)
        cells.append((index, lines))
    return cells


def anchor(heading_text: str) -> str:
    """The anchor JupyterLab gives a heading: its rendered text, spaces replaced by '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading_text)  # [text](target) renders as text
    text = text.replace("`", "")  # code spans render without their backticks
    return text.strip().replace(" ", "-")


def anchors(notebook: dict) -> set[str]:
    return {anchor(m.group(2)) for _, lines in markdown_cells(notebook) for line in lines
            if (m := HEADING.match(line))}


def summary_bullets(notebook: dict) -> list[str] | None:
    """The bullets of the `## Summary` section, each joined into one line; None without a Summary."""
    bullets, inside, found = [], False, False
    for _, lines in markdown_cells(notebook):
        for line in lines:
            if line.startswith("## "):
                inside = line.strip() == "## Summary"
                found = found or inside
                continue
            if not inside:
                continue
            if line.startswith(("- ", "* ")):
                bullets.append(line[2:].strip())
            elif line.startswith((" ", "\t")) and line.strip() and bullets and bullets[-1] is not None:
                bullets[-1] += " " + line.strip()
            elif line.strip():  # a paragraph inside the Summary ends the bullet before it
                bullets.append(None)
    if not found:
        return None
    return [b for b in bullets if b is not None]


def first_words(bullet: str, n: int = 6) -> str:
    return " ".join(bullet.split()[:n])


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def unlinked_bullets(notebook: dict) -> list[str] | None:
    bullets = summary_bullets(notebook)
    return None if bullets is None else [b for b in bullets if not BACKING_LINK.search(b)]


def is_allowed(name: str, bullet: str) -> bool:
    return any(nb == name and bullet.startswith(words) for nb, words in ALLOWED_UNLINKED)


def link_problems(path: Path, notebook: dict, folder: Path) -> list[str]:
    """Why some link of the notebook's Markdown does not resolve, one sentence each."""
    own, others, problems = anchors(notebook), {}, []
    for index, lines in markdown_cells(notebook):
        for target in (m.group(1) for line in lines for m in LINK.finditer(line)):
            if target.startswith("#"):
                if target[1:] not in own:
                    close = difflib.get_close_matches(target[1:], sorted(own), n=1)
                    hint = f"; did you mean '#{close[0]}'?" if close else ""
                    problems.append(f"{path.name}, cell {index}: the link '{target}' names no heading of this "
                                    f"notebook (an anchor is the heading text with spaces as '-'){hint}")
            elif m := NOTEBOOK_LINK.match(target):
                other = folder / m.group(1)
                if not other.is_file():
                    problems.append(f"{path.name}, cell {index}: the link '{target}' names no notebook in "
                                    f"{folder.name}/; link an existing NN_name.ipynb")
                elif m.group(2) is not None:
                    if other not in others:
                        others[other] = anchors(load(other))
                    if m.group(2) not in others[other]:
                        problems.append(f"{path.name}, cell {index}: the link '{target}' names no heading of "
                                        f"{other.name}")
    return problems


NOTEBOOK_PATHS = course_notebooks()


def test_allow_list_is_small_reasoned_and_current():
    print(f"\nsummary bullets allowed without a link: {len(ALLOWED_UNLINKED)}")
    for (name, words), reason in ALLOWED_UNLINKED.items():
        assert reason.strip(), f"the allow-list entry {name}: {words!r} needs a reason"
        path = NOTEBOOKS / name
        assert path.is_file(), f"the allow-list names {name}, which does not exist: remove the entry"
        still = [b for b in unlinked_bullets(load(path)) or [] if b.startswith(words)]
        assert still, (f"{name}: the bullet '{words} ...' now has a link (or is gone): remove its entry "
                       "from ALLOWED_UNLINKED in tests/test_summary_links.py")


@pytest.mark.parametrize("path", NOTEBOOK_PATHS, ids=[p.name for p in NOTEBOOK_PATHS])
def test_every_summary_bullet_links_to_its_evidence(path):
    notebook = load(path)
    bullets = summary_bullets(notebook)
    assert bullets, f"{path.name} has no bullets under a '## Summary' heading: close the notebook with one"
    missing = [b for b in unlinked_bullets(notebook) if not is_allowed(path.name, b)]
    assert not missing, "\n".join(f"{path.name}: the Summary bullet '{first_words(b)} ...' has no link: {FIX}"
                                  for b in missing)


@pytest.mark.parametrize("path", NOTEBOOK_PATHS, ids=[p.name for p in NOTEBOOK_PATHS])
def test_every_link_resolves(path):
    problems = link_problems(path, load(path), path.parent)
    assert not problems, "\n".join(problems)


# The checks themselves, on small notebooks written here: each must be able to fail.

def _notebook(*sources: str) -> dict:
    return {"cells": [{"cell_type": "markdown", "metadata": {}, "source": s} for s in sources]}


def test_anchor_follows_the_rendered_heading():
    assert anchor("4. Hybrid search: BM25 and reciprocal rank fusion") == \
        "4.-Hybrid-search:-BM25-and-reciprocal-rank-fusion"
    assert anchor("3. `fixed_size_chunks`: the same idea, made exact") == \
        "3.-fixed_size_chunks:-the-same-idea,-made-exact"
    assert anchor('7. "Estimating by characters needs a 20% margin"') == \
        '7.-"Estimating-by-characters-needs-a-20%-margin"'


def test_a_bad_anchor_and_a_missing_notebook_are_found(tmp_path):
    (tmp_path / "01_other.ipynb").write_text(json.dumps(_notebook("## 2. Elsewhere")), encoding="utf-8")
    notebook = _notebook("## 1. The `size` cut\n```\n## not a heading\n```",
                         "See [section 1](#1.-The-size-cut), [there](01_other.ipynb#2.-Elsewhere) and "
                         "[back](#1.-The-size-cut).",
                         "Bad: [section 1](#1.-The-size-cut!), [gone](02_gone.ipynb), [x](01_other.ipynb#3.-No), "
                         "[fenced](#not-a-heading).")
    problems = link_problems(tmp_path / "00_demo.ipynb", notebook, tmp_path)
    assert len(problems) == 4, problems
    assert "did you mean '#1.-The-size-cut'" in problems[0]
    assert "02_gone.ipynb" in problems[1] and "01_other.ipynb" in problems[2] and "#not-a-heading" in problems[3]


def test_unlinked_bullets_are_found_and_only_in_the_summary():
    notebook = _notebook("## 1. Intro\n- not a summary bullet",
                         "## Summary\n- linked, over two lines\n  ([section 1](#1.-Intro)).\n"
                         "- a claim without evidence\n  on two lines.\n"
                         "- a bullet that backs on [notebook 01](01_x.ipynb).\n"
                         "- a web link is no evidence ([site](https://example.org)).\n\n## Exercises\n- not either")
    unlinked = unlinked_bullets(notebook)
    assert [first_words(b, 4) for b in unlinked] == ["a claim without evidence", "a web link is"]
    assert unlinked_bullets(_notebook("## 1. No summary\n- a bullet")) is None
