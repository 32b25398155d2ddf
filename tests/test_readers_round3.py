"""Readers under the third fault round (reliability review 2026-12-06: H1-H3, M2): charset labels as browsers read
them, zip bombs refused before parsing, running out of memory and NUL characters as one `ValueError` line."""

import re
import zipfile

import pytest

from rag_tools import readers
from rag_tools.chunk_eval.inputs import ChunkEvalError, read_documents
from rag_tools.readers import DOCX_MAX_BYTES, DOCX_MAX_RATIO, read_document

docx = pytest.importorskip("docx")

# Every label the WHATWG Encoding Standard gives windows-1252.
WINDOWS_1252_LABELS = ["ansi_x3.4-1968", "ascii", "cp1252", "cp819", "csisolatin1", "ibm819", "iso-8859-1",
                       "iso-ir-100", "iso8859-1", "iso88591", "iso_8859-1", "iso_8859-1:1987", "l1", "latin1",
                       "us-ascii", "windows-1252", "x-cp1252"]
W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def _page(tmp_path, label: str, body: bytes):
    path = tmp_path / "page.html"
    head = b"<html><head><meta charset='" + label.encode() + b"'></head>"
    path.write_bytes(head + b"<body><p>" + body + b"</p></body></html>")
    return path


def _one_line_error(path, match: str) -> str:
    with pytest.raises(ValueError) as error:
        read_document(path)
    message = str(error.value)
    assert message.startswith(f"{path}: ") and "\n" not in message and re.search(match, message), message
    return message


# ---------------------------------------------------------------- H1, H2: charsets as the Encoding Standard says


@pytest.mark.parametrize("label", [*WINDOWS_1252_LABELS, " Latin1 ", "ISO-8859-1", "latin-1"])
def test_latin1_and_ascii_labels_read_as_windows_1252(tmp_path, label):
    """H1: a page declared iso-8859-1 with Windows quotes read as C1 control characters."""
    read = read_document(_page(tmp_path, label, b"\x93Quoted\x94 price \x80 5 \x96 caf\xe9"))
    assert read.text == "\u201cQuoted\u201d price \u20ac 5 \u2013 caf\u00e9"


@pytest.mark.parametrize(("label", "raw", "text"), [
    ("iso-8859-9", b"\x80 \x93\xfd\x94", "\u20ac \u201c\u0131\u201d"),  # windows-1254: Turkish dotless i
    ("latin5", b"\x85", "\u2026"),
    ("tis-620", b"\x80 \xa1", "\u20ac \u0e01"),  # windows-874: Thai
    ("x-cp1250", b"\x8a", "\u0160"),
])
def test_other_labels_the_standard_gives_a_windows_code_page(tmp_path, label, raw, text):
    assert read_document(_page(tmp_path, label, raw)).text == text


def test_windows_1252_undefined_bytes_read_as_browsers_show_them(tmp_path):
    """H2: any of the five bytes windows-1252 leaves undefined refused the whole page."""
    read = read_document(_page(tmp_path, "windows-1252", b"a\x81b\x8dc\x8fd\x90e\x9df \x80"))
    assert read.text == "a\x81b\x8dc\x8fd\x90e\x9df \u20ac"


def test_an_undefined_byte_outside_0x80_0x9f_is_still_refused(tmp_path):
    """windows-1253 leaves 0xAA undefined, and the standard's index too: no silent replacement."""
    path = _page(tmp_path, "windows-1253", b"\xe1\xaa")
    _one_line_error(path, r"not an HTML text file in cp1253 \(character maps to <undefined> at byte \d+\)")


# ---------------------------------------------------------------- H3: zip bombs, memory


def _docx(path, document_xml: bytes | None = None, *, filler: int = 0, compression=zipfile.ZIP_DEFLATED):
    """A real .docx whose document.xml is `document_xml`, or a paragraph followed by `filler` bytes of spaces
    (valid XML, streamed: never held in memory)."""
    source = path.parent / "source.docx"
    docx.Document().save(source)
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(path, "w", compression) as new:
        for item in old.infolist():
            if item.filename != "word/document.xml":
                new.writestr(item.filename, old.read(item.filename))
                continue
            with new.open("word/document.xml", "w", force_zip64=True) as part:
                if document_xml is not None:
                    part.write(document_xml)
                    continue
                part.write(f"<w:document {W}><w:body><w:p><w:r><w:t>Hello.</w:t></w:r></w:p>".encode())
                block = b" " * 2**20
                for _ in range(filler // len(block)):
                    part.write(block)
                part.write(b"</w:body></w:document>")
    return path


def test_a_docx_whose_parts_pass_the_bound_is_refused_before_parsing(tmp_path):
    """H3: a 2.7 MB file of 1 GB of XML reached a 6 GB cap; python-docx reads every part whole."""
    path = _docx(tmp_path / "bomb.docx", filler=DOCX_MAX_BYTES + 2**20)
    assert path.stat().st_size < 2 * 2**20
    _one_line_error(path, r"its parts hold 25[78] MB uncompressed, over the 256 MB a Word file may hold here "
                          r"\(a zip bomb, or a document to split\)")


def test_a_docx_part_expanding_past_the_ratio_is_refused(tmp_path):
    path = _docx(tmp_path / "bomb.docx", filler=40 * 2**20)
    message = _one_line_error(path, rf"its part word/document\.xml expands [\d,]+ times \(40 MB from \d+ kB\), past "
                                    rf"the {DOCX_MAX_RATIO}:1 a Word file may reach here: a zip bomb")
    assert int(re.search(r"expands ([\d,]+) times", message).group(1).replace(",", "")) > DOCX_MAX_RATIO


def test_a_small_repetitive_docx_is_not_a_bomb(tmp_path):
    """20,000 identical paragraphs compress about 260:1, but 1.5 MB of XML costs little: read."""
    paragraph = b"<w:p><w:r><w:t>The pump XR-11 delivers 41 l/min at two bar.</w:t></w:r></w:p>"
    path = _docx(tmp_path / "rep.docx", f"<w:document {W}><w:body>".encode() + paragraph * 20_000
                 + b"</w:body></w:document>")
    with zipfile.ZipFile(path) as archive:
        part = archive.getinfo("word/document.xml")
    assert part.file_size / part.compress_size > DOCX_MAX_RATIO
    assert read_document(path).text.count("The pump XR-11") == 20_000


def test_a_styles_name_is_looked_up_once_per_style_not_per_paragraph(tmp_path, monkeypatch):
    """python-docx's `Paragraph.style` scans every style of the file: 5,000 paragraphs took 18.6 s, not 0.9 s."""
    from docx.text.paragraph import Paragraph

    document = docx.Document()
    for i in range(300):
        document.add_paragraph(f"Paragraph {i}.", style="Heading 2" if i % 50 == 0 else None)
    document.save(tmp_path / "styles.docx")
    calls = []
    real = Paragraph.style
    monkeypatch.setattr(Paragraph, "style", property(lambda self: calls.append(1) or real.fget(self)))
    read = read_document(tmp_path / "styles.docx")
    assert len(read.headings) == 6 and read.text.count("Paragraph") == 300
    assert len(calls) <= 4, len(calls)  # two distinct styles (none and Heading 2), at most twice each


def test_running_out_of_memory_is_one_line_and_skipped_with_skip_bad_files(tmp_path, monkeypatch):
    """H3: a MemoryError from python-docx was a traceback, even with --skip-bad-files."""
    def exhausted(*args, **kwargs):
        raise MemoryError

    path = _docx(tmp_path / "big.docx", f"<w:document {W}><w:body/></w:document>".encode())
    monkeypatch.setattr(docx, "Document", exhausted)
    _one_line_error(path, r"too large to read in the memory available \(MemoryError\); split the file")
    (tmp_path / "notes.md").write_text("Some text.", encoding="utf-8")
    with pytest.raises(ChunkEvalError, match=r"^big\.docx: too large to read .*--skip-bad-files"):
        read_documents(tmp_path)
    documents, skipped = read_documents(tmp_path, skip_bad_files=True)
    assert [d.path for d in documents] == ["notes.md"] and skipped[0].startswith("big.docx (too large to read")


# ---------------------------------------------------------------- M2: NUL


def test_a_nul_in_a_text_file_is_refused_naming_its_position(tmp_path):
    path = tmp_path / "log.txt"
    path.write_bytes(b"Header line\nThe valve\x00 opens at two bar.\n")
    _one_line_error(path, r"the text holds a NUL character \(U\+0000\) at position 21, line 2, where an embedder "
                          r"written in C \(e5-small\) would end it")


def test_the_module_maps_only_whatwg_labels_it_states(tmp_path):
    """The table holds the standard's 17 windows-1252 labels, each to cp1252."""
    assert [label for label, codec in readers._WHATWG_LABELS.items() if codec == "cp1252"] == WINDOWS_1252_LABELS
