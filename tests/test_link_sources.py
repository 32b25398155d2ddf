"""scripts/link_sources.py: bare source keys in the prose link to their entries in docs/SOURCES.md."""

from __future__ import annotations

import nbformat

from scripts import link_sources
from scripts.claims import source_anchors, source_tags
from scripts.project import ROOT

ANCHORS = {"[Chunking I]": "chunking-i", "[Late glossary]": "late-glossary"}


def test_a_bare_key_becomes_a_link_that_still_reads_as_the_key():
    text, counts = link_sources.link_keys("As [Chunking I] says, and [Late glossary].", ANCHORS)
    assert text == ("As [[Chunking I]](../docs/SOURCES.md#chunking-i) says, and "
                    "[[Late glossary]](../docs/SOURCES.md#late-glossary).")
    assert counts == {"[Chunking I]": 1, "[Late glossary]": 1}


def test_linked_keys_code_and_unknown_keys_are_left_alone():
    text = ("Done: [[Chunking I]](../docs/SOURCES.md#chunking-i), [Chunking I](x.md), `[Chunking I]`,\n"
            "```\n[Chunking I]\n```\n[Chunking II] and [Chunking I][ref].")
    assert link_sources.link_keys(text, ANCHORS) == (text, {})


def test_running_it_twice_changes_nothing_more():
    once, _ = link_sources.link_keys("[Chunking I] twice: [Chunking I].", ANCHORS)
    assert link_sources.link_keys(once, ANCHORS) == (once, {})


def test_every_key_of_sources_md_has_an_anchor_that_exists():
    anchors = source_anchors()
    assert set(anchors) == {"[Chunking I]", "[Late article]", "[Late glossary]", "[Pattern]", "[Lesson]"}
    sources = (ROOT / "docs" / "SOURCES.md").read_text(encoding="utf-8")
    assert all(sources.count(f'<a id="{anchor}"></a>') == 1 for anchor in anchors.values())
    assert set(anchors) <= set(source_tags())  # the claims guard knows every key


def test_only_markdown_cells_change_and_the_cli_counts(tmp_path, capsys):
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("[Pattern] and [Lesson]."),
        nbformat.v4.new_code_cell("print('[Pattern]')")])
    path = tmp_path / "99_demo.ipynb"
    path.write_text(nbformat.writes(notebook) + "\n", encoding="utf-8")
    assert link_sources.main([str(path), "--dry-run"]) == 0
    assert "99_demo.ipynb: 2 keys linked ([Lesson] 1, [Pattern] 1)" in capsys.readouterr().out
    assert link_sources.main([str(path)]) == 0
    changed = nbformat.read(path, as_version=4)
    assert changed.cells[0].source == ("[[Pattern]](../docs/SOURCES.md#pattern) and "
                                       "[[Lesson]](../docs/SOURCES.md#lesson).")
    assert changed.cells[1].source == "print('[Pattern]')"
    link_sources.main([str(path)])
    assert nbformat.read(path, as_version=4) == changed
