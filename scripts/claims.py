"""Numbers in a notebook's prose, checked against what the notebook computes.

Each number in a Markdown cell must equal, at the prose's precision, a number in a stored output
of the same notebook or a literal in one of its code cells, unless it is exempt by pattern: code
spans and link targets, references to notebooks, sections and exercises, years, list and heading
numbers, the header's Time and Runs-in sentences and the maps' time columns (checked by
`scripts/notebook_times.py`), Python versions, and every number of a sentence that cites a
source (a key of `docs/SOURCES.md` such as ``[Chunking I]``, or a paper: "Günther et al.").
`unbacked(path)` lists the rest; `tests/test_notebook_claims.py` runs it over every notebook.

For a sentence that states a measured result, `sentence()` renders it from the computed values,
so the number in the prose is the number in the output: ``show("Recall rose to {r:.1%}.", r=0.955)``.
"""

from __future__ import annotations

import io
import json
import math
import re
import tokenize
from bisect import bisect_left
from dataclasses import dataclass
from pathlib import Path
from string import Formatter

__all__ = ["Claim", "number_values", "output_numbers", "prose_numbers", "sentence", "show", "source_anchors",
           "source_tags", "todo", "unbacked"]

# 22,994 · 0.955 · 95.5 · 7.5e-02 · 3 (signs are ignored: "+2.0 points" is backed by 2.0 or -2.0)
_NUMBER = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?:[eE][-+]?\d+)?(?![\w]|[.,]\d)")
_IDENTIFIER_PART = re.compile(r"[A-Za-z_][-\w]*$")  # "XR-", "MiniLM-L", "cl": the number is part of a name
_REFERENCES = [
    r"```.*?```", r"`[^`\n]*`",  # code
    r"\]\([^)]*\)", r"<[^>\n]*>", r"https?://\S+",  # link targets, HTML tags, addresses
    r"\b[Nn]otebooks?\s+\d+(?:\s*(?:,|and|or|to|-|–)\s*\d+)*",  # notebook 06, notebooks 05, 09 and 11
    r"(?:\b[Ss]ections?|§)\s*\d+(?:\.\d+)?(?:\s*(?:,|and|or|to|-|–)\s*\d+(?:\.\d+)?)*",
    r"\b[Ee]xercises?\s+\d+\.\d+(?:\s*(?:,|and|or|to|-|–)\s*\d+\.\d+)*",
    r"(?<![\w.,])0\d(?![\d.,]\d)", r"\b1\d(?='s\b)", r"\b\d\d(?=\s*§)",  # 05, 11's, 09 §5
    r"(?<![\w.,])(?:19|20)\d\d(?![\w]|[.,]\d)",  # years
    r"^\s*#+\s*\d+(?:\.\d+)*\.?", r"^\s*\d+\.(?=\s)",  # "## 3. Title", "1. first item"
    r"@\d+|\bk\s*=\s*\d+|\btop-\d+",  # recall@5, k=5, top-5: metric names
    r"\bPython\s+\d+(?:\.\d+)*",  # Python 3.11
    r"(?<=\|)\s*\d+\s*(?:min|h)\b[^|]*(?=\|)",  # a time column (tests/test_notebook_times.py checks those)
]
_EXEMPT = re.compile("|".join(f"(?:{p})" for p in _REFERENCES), re.DOTALL | re.MULTILINE)
_HEADER_LINES = re.compile(r"\*\*(?:Time|Runs in):?\*\*.*?(?=\*\*Runs in|\n\n|\Z)", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z*(\[\"“])|\n(?=\s*(?:[-*+]\s|\d+\.\s|\||#))|\n\n")
_PAPER = re.compile(r"\b[A-Z][\w'’-]+\s+(?:et al\.|&\s+[A-Z][\w'’-]+)")
_SOURCES = Path(__file__).resolve().parent.parent / "docs" / "SOURCES.md"


@dataclass(frozen=True)
class Claim:
    """A number in a Markdown cell that no output or code literal of its notebook backs."""

    notebook: str
    cell: int  # index of the cell in the .ipynb
    cell_id: str
    number: str
    context: str  # the sentence around it, shortened

    def __str__(self) -> str:
        return f"{self.notebook} cell {self.cell} ({self.cell_id}): {self.number} in “{self.context}”"


def source_tags(sources: Path = _SOURCES) -> list[str]:
    """The citation keys `docs/SOURCES.md` defines (``[Chunking I]``, ...) and its papers' authors."""
    text = Path(sources).read_text(encoding="utf-8")
    keys = re.findall(r"^\|\s*(\[[^\]]+\])\s*\|", text, re.MULTILINE) + list(source_anchors(sources))
    authors = re.findall(r"^- ([A-Z][\w'’ &-]+?(?: et al\.)?),", text, re.MULTILINE)
    return sorted(set(keys) | set(authors))


def source_anchors(sources: Path = _SOURCES) -> dict[str, str]:
    """Each source key `docs/SOURCES.md` explains, with its anchor: ``{"[Chunking I]": "chunking-i"}``
    (from its lines ``<a id="chunking-i"></a>**[Chunking I]**: ...``)."""
    text = Path(sources).read_text(encoding="utf-8")
    return {key: anchor for anchor, key in
            re.findall(r'^<a id="([\w-]+)"></a>\*\*(\[[^\]]+\])\*\*', text, re.MULTILINE)}


def number_values(token: str) -> float:
    """The value of a number as written: '22,994' -> 22994.0, '7.5e-02' -> 0.075."""
    return float(token.replace(",", ""))


def _tolerance(token: str) -> float:
    """Half a unit of the last written digit; '1,800' is read to the hundred, '1,500.0' to the tenth."""
    mantissa = re.split(r"[eE]", token)[0].replace(",", "")
    if "." in mantissa:
        unit = 10.0 ** -len(mantissa.split(".")[1])
    else:
        unit = 10.0 ** (len(mantissa) - len(mantissa.rstrip("0"))) if mantissa.strip("0") else 1.0
    exponent = int(re.split(r"[eE]", token)[1]) if re.search(r"[eE]", token) else 0
    return 0.5 * unit * 10.0 ** exponent * (1 + 1e-9)


def _mask(text: str, pattern: re.Pattern[str]) -> str:
    return pattern.sub(lambda m: " " * len(m.group(0)), text)


def _sentences(text: str) -> list[tuple[int, int]]:
    bounds, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        bounds.append((start, m.start()))
        start = m.end()
    return [*bounds, (start, len(text))]


def prose_numbers(markdown: str, *, header: bool = False, tags: list[str] | None = None) -> list[tuple[str, str]]:
    """(number, sentence) for each number of a Markdown cell that no pattern exempts.
    `header=True` also exempts the Time and Runs-in sentences; `tags` are the source tags."""
    tags = source_tags() if tags is None else tags
    text = _mask(markdown, _EXEMPT)
    if header:
        text = _mask(text, _HEADER_LINES)
    found = []
    for start, end in _sentences(markdown):
        sentence_text = re.sub(r"\s+", " ", markdown[start:end])
        if any(tag in sentence_text for tag in tags) or _PAPER.search(sentence_text):
            continue
        for m in _NUMBER.finditer(text, start, end):
            if _IDENTIFIER_PART.search(text[max(0, m.start() - 12):m.start()]):
                continue
            found.append((m.group(0), sentence_text.strip()[:160]))
    return found


def _numbers_in(text: str) -> list[float]:
    return [number_values(m.group(0)) for m in _NUMBER.finditer(text)]


def _code_literals(source: str) -> list[float]:
    """Numbers in a code cell's literals (numbers and strings, not comments)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return _numbers_in("\n".join(line.split("#")[0] for line in source.splitlines()))
    values = []
    for token in tokens:
        if token.type == tokenize.NUMBER:
            try:
                values.append(float(token.string.replace("_", "").rstrip("jJ")))
            except ValueError:
                continue
        elif token.type == tokenize.STRING or token.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
            values.extend(_numbers_in(token.string))
    return values


def _output_text(output: dict) -> str:
    if output.get("output_type") == "stream":
        text = output.get("text", "")
        return text if isinstance(text, str) else "".join(text)
    data = output.get("data", {})
    parts = []
    for kind in ("text/plain", "text/markdown", "text/html"):
        if kind in data:
            value = data[kind]
            parts.append(value if isinstance(value, str) else "".join(value))
    return re.sub(r"<[^>]*>", " ", "\n".join(parts))


def output_numbers(notebook: dict) -> list[float]:
    """Every number printed in a stored output (NBVAL_IGNORE_OUTPUT cells too) or written as a
    literal in a code cell, sorted."""
    values: list[float] = []
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        values.extend(_code_literals(source))
        for output in cell.get("outputs", []):
            values.extend(_numbers_in(_output_text(output)))
    return sorted(v for v in values if math.isfinite(v))


def _backed(value: float, tolerance: float, stored: list[float]) -> bool:
    # the same number, or a fraction printed as a percent (or percentage points), or the reverse
    for scale in (1.0, 100.0, 0.01):
        target = value / scale
        i = bisect_left(stored, target - tolerance / scale)
        if i < len(stored) and stored[i] <= target + tolerance / scale:
            return True
    return False


def unbacked(path: Path, tags: list[str] | None = None) -> list[Claim]:
    """The numbers in `path`'s Markdown cells that no output or code literal of the notebook backs."""
    notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    stored = output_numbers(notebook)
    tags = source_tags() if tags is None else tags
    claims = []
    first_markdown = next((i for i, c in enumerate(notebook["cells"]) if c["cell_type"] == "markdown"), None)
    for i, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        for token, context in prose_numbers(source, header=i == first_markdown, tags=tags):
            if not _backed(number_values(token), _tolerance(token), stored):
                claims.append(Claim(Path(path).name, i, cell.get("id", ""), token, context))
    return claims


def sentence(template: str, **values: float) -> str:
    """A Markdown sentence with measured numbers put in: ``sentence("{n:,} vectors", n=22076)``.
    Every placeholder needs a value, and every value must be used and be a finite number."""
    if not isinstance(template, str) or not template.strip():
        raise TypeError(f"template={template!r}: give the sentence as a str with {{name}} placeholders")
    names = {field for _, field, _, _ in Formatter().parse(template) if field is not None}
    if missing := sorted(names - values.keys()):
        raise ValueError(f"no value for {missing} in template {template!r}: pass them as keyword arguments")
    if unused := sorted(values.keys() - names):
        raise ValueError(f"values {unused} are not in template {template!r}: remove them or add placeholders")
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise TypeError(f"{name}={value!r}: give a finite int or float (a measured value)")
    return template.format(**values)


def show(template: str, **values: float):
    """Display `sentence(template, **values)` as Markdown in a notebook (and return the object)."""
    from IPython.display import Markdown, display

    shown = Markdown(sentence(template, **values))
    display(shown)
    return shown


def todo(paths: list[Path]) -> str:
    """A Markdown list of every unbacked number, by notebook and cell (for `docs/claims_todo.md`)."""
    lines = ["# Numbers in the prose that no output backs", "",
             "Written by `python -m scripts.claims --todo docs/claims_todo.md`; each line is a notebook cell",
             "(0-based index, and its id), the number, and its sentence. Fix the prose, print the number in an",
             "output, or cite the source; then run the command again.", ""]
    for path in paths:
        claims = unbacked(path)
        lines.append(f"## {Path(path).name}: {len(claims)}")
        lines.append("")
        lines.extend(f"- cell {c.cell} (`{c.cell_id}`): **{c.number}** in “{c.context}”" for c in claims)
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    import argparse

    from scripts.project import course_notebooks

    parser = argparse.ArgumentParser(description="List the numbers in the notebooks' prose that no output backs.")
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every course notebook")
    parser.add_argument("--todo", type=Path, help="write the list as Markdown to this file")
    args = parser.parse_args()
    paths = args.notebooks or course_notebooks()
    if args.todo:
        args.todo.write_text(todo(paths), encoding="utf-8")
    for path in paths:
        for claim in unbacked(path):
            print(claim)
