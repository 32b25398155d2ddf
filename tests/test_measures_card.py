"""Measures are taught before they are read (issue 47): a measures card in 05 before any retrieval measure is
printed, and 08's section 7 explaining the exact budget its size answer rests on."""

from __future__ import annotations

import json
import re

from scripts.project import NOTEBOOKS

MEASURE_CALL = re.compile(r"\b(span_scores|mrr|ndcg_at_k|recall_at_k|reciprocal_rank)\(")
MEASURE_OUTPUT = re.compile(r"recall@|\bMRR\b|nDCG|span recall|span_recall")


def _cells(name: str) -> list[dict]:
    path = next(NOTEBOOKS.glob(f"{name}_*.ipynb"))
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        cell["text"] = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
    return cells


def _output(cell: dict) -> str:
    return "".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
                   for o in cell.get("outputs", []))


def test_05_has_a_measures_card_with_a_worked_example_linked_to_08():
    cells = _cells("05")
    card = next(i for i, c in enumerate(cells) if c["cell_type"] == "markdown" and "**Measures card**" in c["text"])
    assert "(08_measuring_chunkers.ipynb)" in cells[card]["text"]
    for measure in ("recall@k", "MRR", "nDCG", "span recall"):
        assert measure in cells[card]["text"], measure
    example = cells[card + 1]
    assert example["cell_type"] == "code" and MEASURE_CALL.search(example["text"])
    assert re.search(r"recall@1 0 +recall@5 1 +MRR 0\.333 +nDCG@5 0\.500 +span recall 0\.667", _output(example)), \
        _output(example)


def test_no_measure_is_computed_or_printed_in_05_before_the_card():
    cells = _cells("05")
    card = next(i for i, c in enumerate(cells) if "**Measures card**" in c["text"])
    before = [i for i, c in enumerate(cells[:card]) if c["cell_type"] == "code"
              and (MEASURE_CALL.search(c["text"]) or MEASURE_OUTPUT.search(_output(c)))]
    assert not before, f"05 computes or prints a retrieval measure before its measures card, in cells {before}"


def test_08_section_7_explains_the_exact_budget_with_its_figure():
    cells = _cells("08")
    start = next(i for i, c in enumerate(cells) if c["cell_type"] == "markdown" and c["text"].startswith("## 7."))
    end = next(i for i, c in enumerate(cells) if i > start and c["cell_type"] == "markdown"
               and re.match(r"## (8\.|Summary)", c["text"]))
    section = "\n".join(c["text"] for c in cells[start:end] if c["cell_type"] == "markdown")
    assert "figures/token_budget.svg" in section
    assert "`exact_budget`" in section and "the last one cut to fit" in section
