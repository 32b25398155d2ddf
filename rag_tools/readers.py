"""Read PDF, HTML, DOCX and plain-text files into one extracted text with exact offsets.

Every chunker stays a pure function of a string, so structure is written *as plain text*:

- page ends are marked with a form feed (U+000C, as `pdftotext` does): page `p` (1-based) is the
  text between form feeds `p - 1` and `p`, and `page_span` turns a chunk's offsets into pages;
- HTML `h1`-`h4` and DOCX "Heading 1-4" paragraphs become Markdown heading lines (`## Title`), and code
  listings become fenced blocks, so the Markdown chunker's heading logic works unchanged.

What the readers change is recorded, never silent: `Extracted.normalizations` names each change with
its count (a form feed inside a page's text becomes a newline there, so only page ends are form feeds),
and `Extracted.dropped` holds every piece left out (running headers, page numbers, navigation, scripts)
with its page and reason; `Extracted.dropped_share` weighs it against the text kept. A file the
libraries cannot read, however it fails, is one `ValueError` line naming the file.

Choices, measured on the course's real files (`debian_docs`, 114-page pdfTeX PDF and 12 Publican HTML pages):

- PDF: pypdf (BSD-3-Clause, pure Python; AGPL readers such as PyMuPDF do not fit an MIT course). pdfTeX
  writes the gaps between words of a tightly justified line as TJ offsets of 0.16-0.3 em, while kerning
  stays under 0.06 em; pypdf puts a space only where the offset passes about 0.24 em for these fonts, which
  ran the words of 490 of 3,742 lines together ("Initially,theprocessdescribedin"). Through pypdf's public
  `visitor_operand_before` hook the reader makes every TJ offset of at least `WORD_GAP_EM` (0.1 em) a gap
  pypdf spaces, and it measures the gap at each move (`Td`) from the glyph widths, so a word in another
  font (a monospace "stable" after "the") keeps its space; both are counted in `normalizations`.
- PDF running headers and footers: a line at a page's edge repeated, apart from a page-number-like number
  at its start or end, on at least half the pages; never a page's only text.
- Only the ligatures U+FB00-FB06 and the no-break spaces (U+00A0, U+202F) are folded, not full NFKC, which
  would turn Spanish "1.º" into "1.o"; `normalize_quote` applies the same folding to a quote.
  On the course's PDF, words glued to a neighbour (compared with pypdf's plain `extract_text`) went from
  879 to none; a monospace word keeps its spaces ("the stable release", "the GNU Privacy Guard").
- HTML: lxml's HTML parser (libxml2, BSD), with `huge_tree` (deep nesting, text nodes over 10 MB) and a
  walk without recursion; the charset is sniffed as browsers do (byte-order mark, then a `<meta>` in the
  head or the XML declaration, else UTF-8). Table rows become ` | `-separated cells; navigation is dropped
  by role and landmark (`nav`, `role="navigation"`, the page's `header`/`footer`, "¶" heading anchors).
  Charset labels mean what the WHATWG Encoding Standard (every browser) says: `iso-8859-1`, `latin1`,
  `us-ascii` and their aliases are windows-1252 (curly quotes, the euro sign and dashes at 0x80-0x9F, not C1
  controls), `iso-8859-9` is windows-1254, `tis-620` windows-874; a byte a Windows code page leaves undefined
  in 0x80-0x9F is the C1 control of that number, as in the standard's indexes.
  python-docx needs lxml anyway, so it adds nothing to the install, and it recovers from broken markup
  as browsers do. Parsing the 12 handbook pages and taking their text
  took 26 ms with lxml, 6 ms with selectolax (lexbor; 7.7 MB more to install), 201 ms with the standard
  library's `html.parser` and 758 ms with beautifulsoup4 over it: lxml is fast enough and costs no install.
- DOCX: python-docx (MIT); headings from paragraph styles, tables as rows of ` | `-separated cells. python-docx
  reads every part whole, so the zip's declared sizes are checked first (`DOCX_MAX_BYTES`, `DOCX_MAX_RATIO`):
  a 1 MB file can hold a gigabyte of XML. A style is looked up once per style id: python-docx's `style`
  scans every style of the file for each paragraph, several milliseconds a paragraph here.
- Whatever the format, a NUL (U+0000) in the text is refused (e5-small's C engine would end a text there),
  and running out of memory is one `ValueError` line like any other failure.

Taught in notebooks/12_documents_with_pages.ipynb, sections 1-4 (`page_span` in section 6).
"""

from __future__ import annotations

import bisect
import re
import struct
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DOCX_MAX_BYTES",
    "DOCX_MAX_RATIO",
    "FOLDING",
    "HTML_SUFFIXES",
    "WORD_GAP_EM",
    "DroppedLine",
    "Extracted",
    "Heading",
    "dropped_share",
    "normalize_quote",
    "page_span",
    "read_document",
]

PAGE_BREAK = "\f"
HTML_SUFFIXES = (".html", ".htm", ".xhtml")
WORD_GAP_EM = 0.1  # a TJ offset of at least a tenth of an em is a word gap, not kerning
_LEAP = -100_000.0  # a TJ offset (100 em) past any font's space threshold in pypdf
# What pypdf, lxml, python-docx and zipfile raise on damaged or hostile files (beside their own errors).
_BUILTIN_ERRORS = (OSError, EOFError, RecursionError, zlib.error, struct.error, ValueError, KeyError, IndexError,
                   TypeError, AttributeError, ArithmeticError, NotImplementedError, AssertionError)
# Dropped markup that is not text a reader sees, left out of `Extracted.dropped_share`.
_NOT_TEXT = frozenset({"<script>", "<style>", "<head>", "<svg>", "<template>", "<iframe>"})
# The only characters the readers replace: ligatures U+FB00-FB06 and no-break spaces (not NFKC).
FOLDING = {
    "\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st",
    "\ufb06": "st", "\u00a0": " ", "\u202f": " ",
}
_FOLD_TABLE = str.maketrans(FOLDING)
_FOLD_CHARS = re.compile("[" + "".join(FOLDING) + "]")
# A .docx is refused before parsing when its parts hold more than this uncompressed in all (python-docx reads
# each whole, and reading one took about 11 bytes of memory per byte of document.xml here), or when a part over
# `_RATIO_FLOOR` expands more than `DOCX_MAX_RATIO` times: the document.xml of a Chroma corpus saved by
# python-docx compressed 3.8:1, 100,000 generated paragraphs 25:1, the review's bombs about 370:1 and 1,000:1.
DOCX_MAX_BYTES = 256 * 2**20
DOCX_MAX_RATIO = 100
_RATIO_FLOOR = 10 * 2**20  # a smaller part may compress as well as it likes: it costs little memory


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

    @property
    def dropped_share(self) -> float:
        """Share of the file's characters left out: see `dropped_share`."""
        return dropped_share(self.text, self.dropped)


def dropped_share(text: str, dropped: tuple[DroppedLine, ...]) -> float:
    """Characters of the dropped pieces over those plus the text's; scripts, styles and the head do not count."""
    lost = sum(len(d.text) for d in dropped if d.reason not in _NOT_TEXT)
    return lost / (lost + len(text)) if lost else 0.0


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
    text layer, HTML that is not text, a `.docx` that is not a Word file, text that is not UTF-8, text
    holding a NUL, a file too large for the memory available, and any damaged or hostile file the
    libraries fail on (malformed XML, a zip or Flate bomb, deep nesting).
    """
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or Path, not {type(path).__name__}")
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    suffix = path.suffix.lower()
    try:
        extracted = _read_by_suffix(path, suffix)
    except MemoryError:
        raise ValueError(f"{path}: too large to read in the memory available (MemoryError); split the file, or "
                         "read it where there is more memory") from None
    nul = extracted.text.find("\x00")
    if nul >= 0:
        raise ValueError(f"{path}: the text holds a NUL character (U+0000) at position {nul}, line "
                         f"{extracted.text.count(chr(10), 0, nul) + 1}, where an embedder written in C (e5-small) "
                         "would end it; remove the NUL characters")
    return extracted


def _read_by_suffix(path: Path, suffix: str) -> Extracted:
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


def _no_form_feeds(text: str, counts: Counter) -> str:
    """A form feed inside a page's (or an HTML or Word file's) text becomes a newline: only page ends are form feeds."""
    counts["form feeds inside the text -> newline"] += text.count(PAGE_BREAK)
    return text.replace(PAGE_BREAK, "\n")


def _notes(counts: Counter) -> tuple[str, ...]:
    return tuple(f"{name}: {count}" for name, count in sorted(counts.items()) if count)


def _failure(path: Path, what: str, exc: BaseException, fix: str) -> ValueError:
    """One line naming the file, what it is not, the library's reason and what to do."""
    reason = " ".join(str(exc).split())[:160]
    return ValueError(f"{path}: {what} ({type(exc).__name__}{': ' + reason if reason else ''}); {fix}")


def _assemble(path: Path, kind: str, blocks: list[tuple[int, str]], dropped: list[DroppedLine],
              counts: Counter) -> Extracted:
    """Join (heading level or 0, text) blocks with blank lines; headings become `#` lines."""
    parts: list[str] = []
    headings: list[Heading] = []
    offset = 0
    for level, block in blocks:
        block = _no_form_feeds(_fold(block, counts), counts)
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
    from pypdf.errors import PyPdfError

    counts: Counter = Counter()
    try:
        reader = pypdf.PdfReader(path)
        locked = reader.is_encrypted and not reader.decrypt("")
        pages = [] if locked else [_page_text(page, counts) for page in reader.pages]
    except (PyPdfError, *_BUILTIN_ERRORS) as exc:
        raise _failure(path, "not a readable PDF", exc, "re-save or re-export it as PDF") from None
    if locked:
        raise ValueError(f"{path}: the PDF is encrypted with a password; save a decrypted copy first")
    if not pages:
        raise ValueError(f"{path}: the PDF has no pages")
    lines = [_fold(page, counts).split("\n") for page in pages]
    dropped = _running_lines(lines)
    drop = {(d.page - 1, index) for d, index in dropped}
    kept = ["\n".join(line for i, line in enumerate(page) if (p, i) not in drop).strip("\n")
            for p, page in enumerate(lines)]
    if not any(page.strip() for page in kept):
        raise ValueError(f"{path}: no text on pages 1-{len(pages)}; OCR is outside this course")
    kept = _join_hyphenation(kept, counts)
    text, ends, offset = [], [], 0
    for page in kept:
        text.append(page + PAGE_BREAK)
        offset += len(page)
        ends.append(offset)
        offset += 1
    return Extracted(str(path), "pdf", "".join(text), tuple(ends), tuple(d for d, _ in dropped),
                     _notes(counts), ())


def _page_text(page, counts: Counter) -> str:
    """One page's text with its word gaps restored (`_WordGaps`) and no form feed inside."""
    return _no_form_feeds(page.extract_text(visitor_operand_before=_WordGaps(page, counts)), counts)


class _WordGaps:
    """A pypdf visitor that makes each word gap on a line one that pypdf spaces.

    - In a TJ array, an offset of at least `WORD_GAP_EM` is split in two that move the pen as far: a
      leap (`_LEAP`, past pypdf's own gap threshold, so pypdf writes its space) and the move back.
      pypdf's own space does not count in its estimate of where the text ends, so its positions stay right.
    - At a move along the line (`Td`), the gap is the move less the widths of the glyphs shown since the
      last move (from the font's `/Widths`); pypdf compares it with half a space of the new font (0.26
      em for a monospace font), more than pdfTeX leaves on a tight line, so a gap of at least
      `WORD_GAP_EM` is marked by a leap at the head of the next TJ array.
    Fonts without `/Widths` (Type0, the standard 14) get no gap measured at moves: pypdf's own rule applies.
    """

    def __init__(self, page, counts: Counter) -> None:
        self.counts = counts
        self.fonts = _simple_font_widths(page)
        self.state = (None, 0.0, 0.0, 0.0, 1.0)  # font widths, size, char spacing, word spacing, horizontal scale
        self.saved: list[tuple] = []
        self.shown: float | None = None  # text-space width shown since the last move; None: unknown
        self.gap = False

    def __call__(self, operator: bytes, operands: list, cm, tm) -> None:
        widths, size, char_space, word_space, scale = self.state
        if operator == b"TJ" and operands and isinstance(operands[0], list):
            self._tj(operands[0])
        elif operator == b"Tj" and operands:
            self._advance(operands[0])
        elif operator in (b"Td", b"TD") and len(operands) == 2 and all(isinstance(v, (int, float)) for v in operands):
            gap = float(operands[0]) - self.shown if self.shown is not None and operands[1] == 0 else None
            self.gap = gap is not None and gap >= WORD_GAP_EM * size * scale
            self.shown = 0.0 if widths is not None else None
        elif operator == b"Tf" and len(operands) == 2 and isinstance(operands[1], (int, float)):
            self.state = (self.fonts.get(operands[0]), float(operands[1]), char_space, word_space, scale)
        elif operator in (b"Tc", b"Tw", b"Tz") and operands and isinstance(operands[0], (int, float)):
            value = float(operands[0])
            self.state = (widths, size, value if operator == b"Tc" else char_space,
                          value if operator == b"Tw" else word_space, value / 100 if operator == b"Tz" else scale)
        elif operator == b"q":
            self.saved.append(self.state)
        elif operator == b"Q" and self.saved:
            self.state = self.saved.pop()
        elif operator in (b"BT", b"ET", b"Tm", b"T*", b"'", b'"'):
            self.shown, self.gap = None, False

    def _tj(self, items: list) -> None:
        size, scale = self.state[1], self.state[4]
        out = [_LEAP, -_LEAP] if self.gap else []
        self.counts["spaces added at word gaps between moves"] += bool(out)
        limit = -1000 * WORD_GAP_EM  # TJ offsets are in thousandths of an em; negative ones move right
        for item in items:
            if not isinstance(item, (int, float)):
                self._advance(item)
            elif self.shown is not None:
                self.shown -= float(item) / 1000 * size * scale
            if isinstance(item, (int, float)) and limit >= item > _LEAP:
                out += [_LEAP, item - _LEAP]
                self.counts["spaces added at TJ word gaps"] += 1
            else:
                out.append(item)
        items[:] = out

    def _advance(self, string) -> None:
        """Add a shown string's width (text space) to `shown`."""
        widths, size, char_space, word_space, scale = self.state
        self.gap = False
        if self.shown is None or widths is None:
            self.shown = None
            return
        codes = string.original_bytes if hasattr(string, "original_bytes") else bytes(string)
        self.shown += sum((widths.get(code, 0.0) * size + char_space + (word_space if code == 32 else 0.0)) * scale
                          for code in codes)


def _simple_font_widths(page) -> dict:
    """Each simple font of the page (by resource name) as {code: width in ems}, from its `/Widths`."""
    fonts = {}
    resources = page.get("/Resources")
    resources = resources.get_object() if resources is not None else {}
    for name, ref in (resources.get("/Font") or {}).items():
        font = ref.get_object()
        widths, first = font.get("/Widths"), font.get("/FirstChar")
        if font.get("/Subtype") != "/Type0" and widths is not None and isinstance(first, int):
            fonts[name] = {first + i: float(w) / 1000 for i, w in enumerate(widths.get_object())}
    return fonts


_ROMAN = re.compile(r"(?=[mdclxvi])m{0,3}(c[md]|d?c{0,3})(x[cl]|l?x{0,3})(i[xv]|v?i{0,3})", re.IGNORECASE)
_EDGE_NUMBER = re.compile(r"^(\d+)\s|\s(\d+)$|^(\d+)$")
_EDGE_PAGE_NUMBER = re.compile(r"^([ivxlcdm]+|\d+)(?=\s|$)|(?<=\s)([ivxlcdm]+|\d+)$", re.IGNORECASE)


def _masked(line: str) -> str:
    """The line with a page-number-like number (Arabic or Roman, at its start or end) replaced by "#"."""
    return _EDGE_PAGE_NUMBER.sub(lambda m: "#" if _ROMAN.fullmatch(m.group()) or m.group().isdigit() else m.group(),
                                 line)


def _running_lines(pages: list[list[str]]) -> list[tuple[DroppedLine, int]]:
    """Running headers/footers and page numbers: (dropped line, its line index on the page).

    Looked for in the first and last two non-empty lines of each page. A line is running when, but for
    a page-number-like number at its start or end, it stands verbatim at the same edge on at least half
    the pages with text (and on 3 or more); a page number when it is a bare numeral, or starts or ends
    with the number that counts the pages (page index minus the offset most pages share, e.g.
    "5.6. Uploading a package 33" on PDF page 41). A page keeps all its lines when dropping would leave
    it no text, unless pages that keep text show each of them is running: the same line (masked) or the
    page numbering is dropped there too (a blank page with only its running header and number). So
    one-line pages that differ only in a number are read, not dropped.
    """
    edges: list[list[tuple[str, int]]] = []
    for page in pages:
        filled = [i for i, line in enumerate(page) if line.strip()]
        edges.append([("top", i) for i in filled[:2]] + [("bottom", i) for i in filled[-2:] if i not in filled[:2]])
    with_text = sum(1 for e in edges if e)
    seen = Counter()
    for p, page_edges in enumerate(edges):
        seen.update({(edge, _masked(pages[p][i].strip())) for edge, i in page_edges})
    numbering = Counter()
    for p, page_edges in enumerate(edges):
        for _edge, i in page_edges:
            match = _EDGE_NUMBER.search(pages[p][i].strip())
            if match:
                numbering[p + 1 - int(next(g for g in match.groups() if g))] += 1
    shift = numbering.most_common(1)[0][0] if numbering and numbering.most_common(1)[0][1] >= 3 else None
    candidates: list[list[tuple[DroppedLine, int]]] = []
    for p, page_edges in enumerate(edges):
        on_page = []
        for edge, i in sorted(page_edges, key=lambda e: e[1]):
            line = pages[p][i].strip()
            match = _EDGE_NUMBER.search(line)
            if 2 * seen[(edge, _masked(line))] >= with_text and with_text >= 3:
                reason = f"running {'header' if edge == 'top' else 'footer'}"
            elif _ROMAN.fullmatch(line) or line.isdigit():
                reason = "page number"
            elif match and shift is not None and p + 1 - int(next(g for g in match.groups() if g)) == shift:
                reason = "page number line"
            else:
                continue
            on_page.append((DroppedLine(p + 1, pages[p][i], reason), i))
        candidates.append(on_page)
    emptied = [not ({i for i, line in enumerate(page) if line.strip()} - {i for _, i in on_page})
               for page, on_page in zip(pages, candidates)]
    shown = [d for on_page, empty in zip(candidates, emptied) if not empty for d, _ in on_page]
    proven = {_masked(d.text.strip()) for d in shown}
    numbered = any(d.reason.startswith("page number") for d in shown)

    def is_proven(dropped: DroppedLine) -> bool:
        return _masked(dropped.text.strip()) in proven or (numbered and dropped.reason.startswith("page number"))

    return [found for on_page, empty in zip(candidates, emptied)
            if not empty or all(is_proven(d) for d, _ in on_page) for found in on_page]


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
_DROP_MARKS = {"nav", "navbar", "navigation", "docnav", "breadcrumb", "breadcrumbs", "banner", "menu", "skip",
               "navheader", "navfooter", "sphinxsidebar"}
_DROP_ROLES = {"navigation", "search", "banner", "contentinfo"}  # ARIA landmarks that are not content
_SECTIONING = {"article", "aside", "main", "nav", "section"}  # a header/footer inside one belongs to it
_ANCHOR_MARKS = {"¶", "#", "§", "🔗"}  # the text of a heading's permalink ("headerlink")
_BLOCK_TAGS = {"p", "div", "section", "article", "main", "header", "footer", "aside", "blockquote", "ul",
               "ol", "li", "dl", "dt", "dd", "table", "thead", "tbody", "tfoot", "tr", "figure", "figcaption",
               "address", "h5", "h6", "hr", "body", "html", "caption"}
_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))
# The WHATWG Encoding Standard's labels of windows-1252, windows-1254 and windows-874 (ASCII-lowercased), which
# Python reads as other codecs (latin-1's and ascii's C1 controls or errors at 0x80-0x9F) or not at all
# (x-cp1252), and the x-cp labels of the other Windows code pages.
_WHATWG_LABELS = {
    **dict.fromkeys(("ansi_x3.4-1968", "ascii", "cp1252", "cp819", "csisolatin1", "ibm819", "iso-8859-1",
                     "iso-ir-100", "iso8859-1", "iso88591", "iso_8859-1", "iso_8859-1:1987", "l1", "latin1",
                     "us-ascii", "windows-1252", "x-cp1252"), "cp1252"),
    **dict.fromkeys(("cp1254", "csisolatin5", "iso-8859-9", "iso-ir-148", "iso8859-9", "iso88599", "iso_8859-9",
                     "iso_8859-9:1989", "l5", "latin5", "windows-1254", "x-cp1254"), "cp1254"),
    **dict.fromkeys(("dos-874", "iso-8859-11", "iso8859-11", "iso885911", "tis-620", "windows-874"), "cp874"),
    **{f"{prefix}{page}": f"cp{page}" for page in (1250, 1251, 1253, 1255, 1256, 1257, 1258)
       for prefix in ("cp", "windows-", "x-cp")},
}
# Python's codecs whose character set a Windows code page extends, for labels only Python knows ("latin-1").
_SUPERSEDED = {"ascii": "cp1252", "iso8859-1": "cp1252", "iso8859-9": "cp1254", "iso8859-11": "cp874",
               "tis-620": "cp874"}
_WINDOWS_PAGES = frozenset({"cp874", *(f"cp{page}" for page in range(1250, 1259))})
_C1_FOR_UNDEFINED = {0xDC80 + byte: 0x80 + byte for byte in range(32)}  # surrogateescape'd 0x80-0x9F -> U+0080-009F
_ESCAPED = re.compile("[\udc80-\udcff]")
_XML_DECLARATION = re.compile(rb"""^\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._:-]+)""")
_META = re.compile(rb"<meta\b[^>]*>", re.IGNORECASE)
_META_CHARSET = re.compile(rb"""charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.IGNORECASE)


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

    markup = _decode_html(path, path.read_bytes())
    markup = re.sub(r"^\s*<\?xml[^>]*\?>", "", markup)  # lxml refuses a str that declares an encoding
    parser = lxml.html.HTMLParser(huge_tree=True)  # no 256-level depth or 10 MB text-node limit
    try:
        root = lxml.html.document_fromstring(markup, parser=parser)
    except (etree.LxmlError, *_BUILTIN_ERRORS) as exc:
        raise _failure(path, "malformed HTML that the parser cannot read", exc, "re-save it as HTML") from None
    fatal = [e for e in parser.error_log if e.level == etree.ErrorLevels.FATAL]
    if fatal:
        reason = re.sub(r",\s*use XML_PARSE_HUGE option", "", fatal[0].message.strip())
        raise ValueError(f"{path}: the HTML parser stopped at line {fatal[0].line} ({reason}), "
                         "so the rest of the page would be lost; simplify or re-save the page")
    out, dropped = _Blocks(), []
    _drop_boilerplate(root, dropped)
    _walk_html(root, out)
    out.flush()
    return _assemble(path, "html", out.blocks, dropped, out.counts)


def _decode_html(path: Path, raw: bytes) -> str:
    """The page's text, decoded as a browser sniffs it: a byte-order mark, then a charset declared in
    a `<meta>` of the head or in the XML declaration (text codecs only), else UTF-8."""
    encoding = next((codec for bom, codec in _BOMS if raw.startswith(bom)), None)
    if encoding:
        raw = raw[len(next(bom for bom, codec in _BOMS if codec == encoding)):]
    else:
        encoding = _declared_charset(raw) or "utf-8"
    try:
        markup = _decode(raw, encoding)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not an HTML text file in {encoding} ({exc.reason} at byte {exc.start}); "
                         "re-save it as UTF-8 HTML") from None
    if "\x00" in markup:
        raise ValueError(f"{path}: not an HTML text file (it holds NUL characters); re-save it as UTF-8 HTML")
    return markup


def _decode(raw: bytes, encoding: str) -> str:
    """`raw` decoded; in a Windows code page, a byte 0x80-0x9F it leaves undefined becomes the C1 control of that
    number, as the WHATWG indexes say (windows-1252's 0x81, 0x8D, 0x8F, 0x90, 0x9D); any other undefined byte
    raises `UnicodeDecodeError` (a single-byte code page: the character's position is the byte's)."""
    if encoding not in _WINDOWS_PAGES:
        return raw.decode(encoding)
    text = raw.decode(encoding, errors="surrogateescape").translate(_C1_FOR_UNDEFINED)
    left = _ESCAPED.search(text)
    if left:
        raise UnicodeDecodeError(encoding, raw, left.start(), left.start() + 1, "character maps to <undefined>")
    return text


def _declared_charset(raw: bytes) -> str | None:
    """The first text codec named by a `<meta>` before `<body>` (comments skipped) or the XML declaration."""
    start = raw[:4096]
    head = re.sub(rb"<!--.*?-->", b"", re.split(rb"<body\b", start, maxsplit=1, flags=re.IGNORECASE)[0], flags=re.S)
    names = [m.group(1) for meta in _META.finditer(head) for m in [_META_CHARSET.search(meta.group())] if m]
    declaration = _XML_DECLARATION.match(start)
    for name in names + ([declaration.group(1)] if declaration else []):
        codec = _text_codec(name.decode("ascii"))
        if codec:
            return codec
    return None


def _text_codec(label: str) -> str | None:
    """Python's codec for a declared charset as the WHATWG Encoding Standard maps its label (`_WHATWG_LABELS`),
    or None for an unknown label or one that is not text (base64)."""
    import codecs

    label = label.strip().lower()
    if label in _WHATWG_LABELS:
        return _WHATWG_LABELS[label]
    try:
        codec = codecs.lookup(label).name
        b"".decode(codec)  # a bytes-to-bytes codec such as base64 is refused here
    except LookupError:
        return None
    if codec.startswith(("utf-16", "utf-32")):
        return "utf-8"  # as browsers: the meta was read as ASCII
    return _SUPERSEDED.get(codec, codec)


def _drop_reason(element) -> str | None:
    """Why an element is left out (not content), or None to keep it."""
    tag = element.tag.lower()
    marks = set(f"{element.get('class', '')} {element.get('id', '')}".lower().split())
    role = (element.get("role") or "").strip().lower()
    if tag in _DROP_TAGS:
        return f"<{tag}>"
    if role in _DROP_ROLES:
        return f'role="{role}"'
    if tag in {"header", "footer"} and not any(a.tag in _SECTIONING for a in element.iterancestors()):
        return f"page <{tag}>"
    if tag == "a" and (element.get("href") or "").startswith("#") and element.text_content().strip() in _ANCHOR_MARKS:
        return "heading anchor"
    if "headerlink" in marks:
        return "heading anchor"
    if _DROP_MARKS & marks:
        return "navigation"
    return None


def _drop_boilerplate(root, dropped: list[DroppedLine]) -> None:
    """Remove navigation, scripts and heading anchors from the tree (tails kept), recording each in `dropped`."""
    from lxml import etree

    doomed = []
    walker = etree.iterwalk(root, events=("start",))
    for _event, element in walker:
        if element is not root and isinstance(element.tag, str) and (reason := _drop_reason(element)):
            doomed.append((element, reason))
            walker.skip_subtree()
    for element, reason in doomed:
        pieces = element.xpath(".//text()[not(ancestor::script or ancestor::style)]") if reason not in _NOT_TEXT else []
        text = " ".join(" ".join(pieces or [element.text_content()]).split())
        if text:
            dropped.append(DroppedLine(1, text, reason))
        element.drop_tree()


def _walk_html(root, out: _Blocks) -> None:
    """Blocks of text in document order, without recursion (the tree may be thousands of levels deep).

    Headings become heading blocks and `<pre>` a fenced block; every other block element ends a block,
    except inside a table cell: a table row is one block, its cells separated by " | ", each with all
    its own text (paragraphs in a cell joined by a space).
    """
    stack = [(child, False) for child in reversed(root)]
    cells = [False]  # for each open table and cell: are we in a cell (not in a table nested in it)?
    while stack:
        node, leaving = stack.pop()
        tag = node.tag.lower() if isinstance(node.tag, str) else None  # None: a comment, only its tail is text
        if leaving:
            if tag in {"td", "th", "table"}:
                cells.pop()
            if tag in {"td", "th"} or (cells[-1] and tag in _BLOCK_TAGS):
                out.inline.append(" ")
            elif tag in _BLOCK_TAGS:
                out.flush()
        elif tag in {"h1", "h2", "h3", "h4"}:
            out.add(int(tag[1]), out.words(node.text_content()))
        elif tag == "pre":
            out.add(0, "```\n" + node.text_content().strip("\n") + "\n```")
        elif tag == "br":
            out.inline.append(" ")
        elif tag is not None:
            if tag in {"td", "th"}:
                if "".join(out.inline).strip():
                    out.inline.append(" | ")
                cells.append(True)
            elif cells[-1] and tag in _BLOCK_TAGS and tag != "table":
                out.inline.append(" ")
            elif tag in _BLOCK_TAGS:
                out.flush()
                if tag == "li":
                    out.prefix = "- "
            if tag == "table":
                cells.append(False)
            if node.text:
                out.inline.append(node.text)
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node))
            continue
        if node.tail:
            out.inline.append(node.tail)


# ---------------------------------------------------------------- DOCX

_HEADING_STYLE = re.compile(r"Heading ([1-4])")


def _read_docx(path: Path) -> Extracted:
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table
    from lxml import etree

    _check_docx_sizes(path)
    try:
        document = docx.Document(str(path))
        out = _Blocks()
        styles: dict[str | None, str] = {}  # style id -> name: python-docx's `style` scans every style each time
        for item in document.iter_inner_content():
            if isinstance(item, Table):
                for row in item.rows:
                    out.add(0, " | ".join(out.words(cell.text) for cell in row.cells))
                continue
            style_id = item._p.style
            if style_id not in styles:
                styles[style_id] = item.style.name if item.style is not None else ""
            style = styles[style_id]
            heading = _HEADING_STYLE.fullmatch(style)
            text = out.words(item.text)
            if heading:
                out.add(int(heading.group(1)), text)
            elif text:
                out.add(0, ("- " if style.startswith("List") else "") + text)
    except (PackageNotFoundError, zipfile.BadZipFile, etree.LxmlError, *_BUILTIN_ERRORS) as exc:
        raise _failure(path, "not a Word .docx file", exc, "save it from Word as .docx") from None
    return _assemble(path, "docx", out.blocks, [], out.counts)


def _check_docx_sizes(path: Path) -> None:
    """Refuse a zip bomb before python-docx inflates it: parts over `DOCX_MAX_BYTES` uncompressed in all, or a
    part over `_RATIO_FLOOR` expanding more than `DOCX_MAX_RATIO` times. The declared sizes bound what zipfile
    inflates (it stops there and checks the CRC). A file that is no zip is left to python-docx's message."""
    try:
        with zipfile.ZipFile(path) as archive:
            parts = archive.infolist()
    except (zipfile.BadZipFile, *_BUILTIN_ERRORS):
        return
    total = sum(part.file_size for part in parts)
    if total > DOCX_MAX_BYTES:
        raise ValueError(f"{path}: its parts hold {total / 2**20:,.0f} MB uncompressed, over the "
                         f"{DOCX_MAX_BYTES / 2**20:,.0f} MB a Word file may hold here (a zip bomb, or a document to "
                         "split); split it, or save it with smaller pictures")
    for part in parts:
        ratio = part.file_size / max(part.compress_size, 1)
        if part.file_size > _RATIO_FLOOR and ratio > DOCX_MAX_RATIO:
            raise ValueError(f"{path}: its part {part.filename} expands {ratio:,.0f} times ("
                             f"{part.file_size / 2**20:,.0f} MB from {part.compress_size / 2**10:,.0f} kB), past the "
                             f"{DOCX_MAX_RATIO}:1 a Word file may reach here: a zip bomb; save it from Word again if "
                             "it is a real document")
