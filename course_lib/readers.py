"""Read PDF, HTML, DOCX and plain-text files into one extracted text with exact offsets.

Every chunker stays a pure function of a string, so structure is written *as plain text*:

- page ends are marked with a form feed (U+000C, as `pdftotext` does): page `p` (1-based) is the
  text between form feeds `p - 1` and `p`, and `page_span` turns a chunk's offsets into pages;
- HTML `h1`-`h4` and DOCX "Heading 1-4" paragraphs become Markdown heading lines (`## Title`), and code
  listings become fenced blocks, so the Markdown chunker's heading logic works unchanged.

What the readers change is recorded, never silent: `Extracted.normalizations` names each change with
its count, and `Extracted.dropped` holds every line left out (running headers, page numbers,
navigation, scripts) with its page.

Choices, measured on the course's real files (`debian_docs`, 114-page pdfTeX PDF and 12 Publican HTML pages):

- PDF: pypdf (BSD-3-Clause, pure Python; AGPL readers such as PyMuPDF do not fit an MIT course). pdfTeX
  writes the gaps between words of a tightly justified line as TJ offsets of 0.16-0.3 em, while kerning
  stays under 0.06 em; pypdf puts a space only where the offset passes about 0.24 em for these fonts, which
  ran the words of 490 of 3,742 lines together ("Initially,theprocessdescribedin"). The reader adds a space
  at every TJ offset of at least `WORD_GAP_EM` (0.1 em), through pypdf's public `visitor_operand_before`
  hook, and counts those spaces in `normalizations`.
- Only the ligatures U+FB00-FB06 and the no-break spaces (U+00A0, U+202F) are folded, not full NFKC, which
  would turn Spanish "1.º" into "1.o"; `normalize_quote` applies the same folding to a quote.
- HTML: lxml's HTML parser (libxml2, BSD). python-docx needs lxml anyway, so it adds nothing to the install,
  and it recovers from broken markup as browsers do. Parsing the 12 handbook pages and taking their text
  took 26 ms with lxml, 6 ms with selectolax (lexbor; 7.7 MB more to install), 201 ms with the standard
  library's `html.parser` and 758 ms with beautifulsoup4 over it: lxml is fast enough and costs no install.
- DOCX: python-docx (MIT); headings from paragraph styles, tables as rows of ` | `-separated cells.
"""

from __future__ import annotations

import bisect
import re
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "FOLDING",
    "HTML_SUFFIXES",
    "WORD_GAP_EM",
    "DroppedLine",
    "Extracted",
    "Heading",
    "normalize_quote",
    "page_span",
    "read_document",
]

PAGE_BREAK = "\f"
HTML_SUFFIXES = (".html", ".htm", ".xhtml")
WORD_GAP_EM = 0.1  # a TJ offset of at least a tenth of an em is a word gap, not kerning
# The only characters the readers replace: ligatures U+FB00-FB06 and no-break spaces (not NFKC).
FOLDING = {
    "\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st",
    "\ufb06": "st", "\u00a0": " ", "\u202f": " ",
}
_FOLD_TABLE = str.maketrans(FOLDING)
_FOLD_CHARS = re.compile("[" + "".join(FOLDING) + "]")


@dataclass(frozen=True)
class DroppedLine:
    """A line left out of the extracted text: its page (1-based; 1 for files without pages) and why."""

    page: int
    text: str
    reason: str


@dataclass(frozen=True)
class Heading:
    """A heading written as a Markdown line: its level (1-4), title and the offset where its line starts."""

    level: int
    title: str
    start: int


@dataclass(frozen=True)
class Extracted:
    """One file as one text. `page_ends[i]` is the offset of the form feed that ends page i + 1."""

    path: str
    kind: str  # "pdf", "html", "docx" or "text"
    text: str
    page_ends: tuple[int, ...]
    dropped: tuple[DroppedLine, ...]
    normalizations: tuple[str, ...]
    headings: tuple[Heading, ...]

    @property
    def pages(self) -> int:
        """Number of pages: form-feed pages for a PDF, 1 otherwise."""
        return len(self.page_ends) or 1


def normalize_quote(text: str) -> str:
    """Apply the readers' character folding (`FOLDING`) to a quote, so it matches the extracted text."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    return text.translate(_FOLD_TABLE)


def page_span(text: str | Extracted, start: int, end: int) -> tuple[int, int]:
    """1-based first and last page of the chunk `text[start:end]`, counted from form feeds.

    A form feed belongs to the page it ends. Text without form feeds is one page.
    """
    document = text.text if isinstance(text, Extracted) else text
    if not isinstance(document, str):
        raise TypeError(f"text must be a str or an Extracted, not {type(document).__name__}")
    if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(document)):
        raise ValueError(f"need 0 <= start < end <= len(text) = {len(document)}; got start={start}, end={end}")
    if isinstance(text, Extracted) and text.page_ends:
        ends = text.page_ends
    else:
        ends = [m.start() for m in re.finditer(PAGE_BREAK, document)]
    return bisect.bisect_left(ends, start) + 1, bisect.bisect_left(ends, end - 1) + 1


def read_document(path: str | Path) -> Extracted:
    """Read a `.pdf`, `.html`/`.htm`, `.docx` or UTF-8 text file into an `Extracted`.

    Raises `ValueError` naming the file for input it cannot read: an encrypted PDF, a PDF without a
    text layer, HTML that is not text, a `.docx` that is not a Word file, text that is not UTF-8.
    """
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or Path, not {type(path).__name__}")
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        return _read_pdf(path)
    if suffix in HTML_SUFFIXES:
        return _read_html(path)
    if suffix == ".docx":
        return _read_docx(path)
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            text = handle.read()
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
                         f"supported formats are .pdf, .html, .htm, .docx and UTF-8 text") from None
    return Extracted(str(path), "text", text, (), (), (), ())


# ---------------------------------------------------------------- shared helpers


def _fold(text: str, counts: Counter) -> str:
    for char in _FOLD_CHARS.findall(text):
        counts[f"U+{ord(char):04X} -> {FOLDING[char]!r}"] += 1
    return text.translate(_FOLD_TABLE)


def _notes(counts: Counter) -> tuple[str, ...]:
    return tuple(f"{name}: {count}" for name, count in sorted(counts.items()) if count)


def _assemble(path: Path, kind: str, blocks: list[tuple[int, str]], dropped: list[DroppedLine],
              counts: Counter) -> Extracted:
    """Join (heading level or 0, text) blocks with blank lines; headings become `#` lines."""
    parts: list[str] = []
    headings: list[Heading] = []
    offset = 0
    for level, block in blocks:
        block = _fold(block, counts)
        if level:
            headings.append(Heading(level, block, offset))
            block = "#" * level + " " + block
        parts.append(block)
        offset += len(block) + 2
    if not parts:
        raise ValueError(f"{path}: no text found in this {kind.upper()} file")
    return Extracted(str(path), kind, "\n\n".join(parts), (), tuple(dropped), _notes(counts), tuple(headings))


# ---------------------------------------------------------------- PDF


def _read_pdf(path: Path) -> Extracted:
    import pypdf
    from pypdf.errors import DependencyError, PdfReadError

    try:
        reader = pypdf.PdfReader(path)
        if reader.is_encrypted and not reader.decrypt(""):
            raise ValueError(f"{path}: the PDF is encrypted with a password; save a decrypted copy first")
        counts: Counter = Counter()
        pages = [page.extract_text(visitor_operand_before=_word_gap_visitor(counts)) for page in reader.pages]
    except (PdfReadError, DependencyError, OSError) as exc:
        raise ValueError(f"{path}: not a readable PDF ({exc})") from None
    if not pages or not any(page.strip() for page in pages):
        raise ValueError(f"{path}: no text on pages 1-{len(pages)}; OCR is outside this course")
    lines = [_fold(page, counts).split("\n") for page in pages]
    dropped = _running_lines(lines)
    drop = {(d.page - 1, index) for d, index in dropped}
    kept = ["\n".join(line for i, line in enumerate(page) if (p, i) not in drop).strip("\n")
            for p, page in enumerate(lines)]
    kept = _join_hyphenation(kept, counts)
    text, ends, offset = [], [], 0
    for page in kept:
        text.append(page + PAGE_BREAK)
        offset += len(page)
        ends.append(offset)
        offset += 1
    return Extracted(str(path), "pdf", "".join(text), tuple(ends), tuple(d for d, _ in dropped),
                     _notes(counts), ())


def _word_gap_visitor(counts: Counter):
    """A pypdf visitor that puts a space before each TJ offset of at least `WORD_GAP_EM`.

    pypdf adds the same Python string " " itself when it judges an offset a gap, and skips its own
    space when the text already ends in one, so no gap gets two spaces.
    """
    limit = -1000 * WORD_GAP_EM  # TJ offsets are in thousandths of an em; negative ones move right

    def visit(operator, operands, cm, tm) -> None:
        if operator != b"TJ" or not operands or not isinstance(operands[0], list):
            return
        items = operands[0]
        i = 1
        while i < len(items):
            item = items[i]
            if (isinstance(item, (int, float)) and item <= limit and items[i - 1] != " "
                    and isinstance(items[i - 1], (str, bytes))):
                items.insert(i, " ")
                counts["spaces added at TJ word gaps"] += 1
                i += 1
            i += 1

    return visit


_NUMBER = re.compile(r"\d+")
_ROMAN = re.compile(r"[ivxlcdm]+|[IVXLCDM]+")
_EDGE_NUMBER = re.compile(r"^(\d+)\s|\s(\d+)$|^(\d+)$")


def _running_lines(pages: list[list[str]]) -> list[tuple[DroppedLine, int]]:
    """Running headers/footers and page numbers: (dropped line, its line index on the page).

    Looked for in the first and last two non-empty lines of each page. A line is running when, with
    its digits masked, it stands at the same edge on at least half the pages with text; a page number
    when it is a bare numeral, or starts or ends with the number that counts the pages (page index minus
    the offset most pages share, e.g. "5.6. Uploading a package 33" on PDF page 41).
    """
    edges: list[list[tuple[str, int]]] = []
    for page in pages:
        filled = [i for i, line in enumerate(page) if line.strip()]
        edges.append([("top", i) for i in filled[:2]] + [("bottom", i) for i in filled[-2:] if i not in filled[:2]])
    with_text = sum(1 for e in edges if e)
    seen = Counter()
    for p, page_edges in enumerate(edges):
        seen.update({(edge, _NUMBER.sub("#", pages[p][i].strip())) for edge, i in page_edges})
    numbering = Counter()
    for p, page_edges in enumerate(edges):
        for _edge, i in page_edges:
            match = _EDGE_NUMBER.search(pages[p][i].strip())
            if match:
                numbering[p + 1 - int(next(g for g in match.groups() if g))] += 1
    shift = numbering.most_common(1)[0][0] if numbering and numbering.most_common(1)[0][1] >= 3 else None
    found = []
    for p, page_edges in enumerate(edges):
        for edge, i in sorted(page_edges, key=lambda e: e[1]):
            line = pages[p][i].strip()
            match = _EDGE_NUMBER.search(line)
            if 2 * seen[(edge, _NUMBER.sub("#", line))] >= with_text and with_text >= 3:
                reason = f"running {'header' if edge == 'top' else 'footer'}"
            elif _ROMAN.fullmatch(line) or line.isdigit():
                reason = "page number"
            elif match and shift is not None and p + 1 - int(next(g for g in match.groups() if g)) == shift:
                reason = "page number line"
            else:
                continue
            found.append((DroppedLine(p + 1, pages[p][i], reason), i))
    return found


_HYPHEN_END = re.compile(r"(\w+)-\n(\w+)")


def _join_hyphenation(pages: list[str], counts: Counter) -> list[str]:
    """Join words broken at a line end: "reintroduc-\\ning" -> "reintroducing".

    The hyphen stays when the document writes the hyphenated word whole elsewhere ("build-dependencies").
    """
    hyphenated = {word.lower() for word in re.findall(r"\w+-\w+", "\n".join(pages))}

    def join(match: re.Match) -> str:
        left, right = match.group(1), match.group(2)
        if not right[0].islower():
            return match.group(0)
        counts["words joined at line-end hyphens"] += 1
        return f"{left}-{right}" if f"{left}-{right}".lower() in hyphenated else left + right

    return [_HYPHEN_END.sub(join, page) for page in pages]


# ---------------------------------------------------------------- HTML

_DROP_TAGS = {"script", "style", "noscript", "template", "nav", "head", "iframe", "svg", "button", "form"}
_DROP_MARKS = {"nav", "navbar", "navigation", "docnav", "breadcrumb", "breadcrumbs", "banner", "menu", "skip"}
_BLOCK_TAGS = {"p", "div", "section", "article", "main", "header", "footer", "aside", "blockquote", "ul",
               "ol", "li", "dl", "dt", "dd", "table", "thead", "tbody", "tr", "figure", "figcaption",
               "address", "h5", "h6", "hr", "body", "html", "caption"}
_CHARSET = re.compile(rb"""(?:charset|encoding)\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


class _Blocks:
    """Collects (heading level or 0, text) blocks while walking an HTML or DOCX document."""

    def __init__(self) -> None:
        self.counts: Counter = Counter()  # folded characters, counted before whitespace is collapsed
        self.blocks: list[tuple[int, str]] = []
        self.inline: list[str] = []
        self.prefix = ""

    def flush(self) -> None:
        text = self.words("".join(self.inline))
        if text:
            self.blocks.append((0, self.prefix + text))
            self.prefix = ""
        self.inline = []

    def words(self, text: str) -> str:
        """Fold characters, then collapse whitespace runs to one space (as a browser shows them)."""
        return " ".join(_fold(text, self.counts).split())

    def add(self, level: int, text: str) -> None:
        self.flush()
        if text.strip():
            self.blocks.append((level, text))


def _read_html(path: Path) -> Extracted:
    import lxml.html
    from lxml import etree

    raw = path.read_bytes()
    declared = _CHARSET.search(raw[:4096])
    encoding = declared.group(1).decode("ascii") if declared else "utf-8"
    try:
        if b"\x00" in raw:
            raise UnicodeError("NUL bytes")
        markup = raw.decode(encoding)
    except (UnicodeError, LookupError) as exc:
        raise ValueError(f"{path}: not an HTML text file in {encoding} ({exc}); re-save it as UTF-8 HTML") from None
    markup = re.sub(r"^\s*<\?xml[^>]*\?>", "", markup)
    try:
        root = lxml.html.document_fromstring(markup)
    except (etree.ParserError, ValueError) as exc:
        raise ValueError(f"{path}: malformed HTML that the parser cannot read ({exc})") from None
    out, dropped = _Blocks(), []
    _walk_html(root, out, dropped)
    out.flush()
    return _assemble(path, "html", out.blocks, dropped, out.counts)


def _walk_html(element, out: _Blocks, dropped: list[DroppedLine]) -> None:
    for child in element:
        tag = child.tag.lower() if isinstance(child.tag, str) else None
        if tag is None:  # comment or processing instruction: only its tail is text
            pass
        elif tag in _DROP_TAGS or _DROP_MARKS & set(f"{child.get('class', '')} {child.get('id', '')}".lower().split()):
            text = " ".join(child.text_content().split())
            if text:
                dropped.append(DroppedLine(1, text, f"<{tag}>" if tag in _DROP_TAGS else "navigation"))
        elif tag in {"h1", "h2", "h3", "h4"}:
            out.add(int(tag[1]), out.words(child.text_content()))
        elif tag == "pre":
            out.add(0, "```\n" + child.text_content().strip("\n") + "\n```")
        elif tag == "br":
            out.inline.append(" ")
        elif tag in {"td", "th"}:
            if "".join(out.inline).strip():
                out.inline.append(" | ")
            _walk_html(child, out, dropped)
            out.inline.append(" ")
        elif tag in _BLOCK_TAGS:
            out.flush()
            if tag == "li":
                out.prefix = "- "
            if child.text:
                out.inline.append(child.text)
            _walk_html(child, out, dropped)
            out.flush()
        else:
            if child.text:
                out.inline.append(child.text)
            _walk_html(child, out, dropped)
        if child.tail:
            out.inline.append(child.tail)


# ---------------------------------------------------------------- DOCX

_HEADING_STYLE = re.compile(r"Heading ([1-4])")


def _read_docx(path: Path) -> Extracted:
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table

    try:
        document = docx.Document(str(path))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise ValueError(f"{path}: not a Word .docx file ({exc}); save it from Word as .docx") from None
    out = _Blocks()
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            for row in item.rows:
                out.add(0, " | ".join(out.words(cell.text) for cell in row.cells))
            continue
        style = item.style.name if item.style is not None else ""
        heading = _HEADING_STYLE.fullmatch(style)
        text = out.words(item.text)
        if heading:
            out.add(int(heading.group(1)), text)
        elif text:
            out.add(0, ("- " if style.startswith("List") else "") + text)
    return _assemble(path, "docx", out.blocks, [], out.counts)
