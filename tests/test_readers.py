"""Readers: real PDF and HTML files into one text with exact offsets, pages and recorded drops."""

import re
import zipfile

import pytest
from hypothesis import given
from hypothesis import strategies as st

from course_lib import datasets
from rag_tools.readers import Extracted, normalize_quote, page_span, read_document

pypdf = pytest.importorskip("pypdf")
docx = pytest.importorskip("docx")


def _real(file: str):
    try:
        return datasets.fetch("debian_docs", file, download=False)
    except datasets.DataNotFoundError:
        pytest.skip("debian_docs is not in the data cache (set COURSE_DATA_DIR to a folder holding it)")


@pytest.fixture(scope="module")
def manual() -> Extracted:
    return read_document(_real("developers-reference.pdf"))


def test_pdf_pages_are_form_feed_separated(manual):
    assert manual.kind == "pdf" and manual.pages == 114
    assert [m.start() for m in re.finditer("\f", manual.text)] == list(manual.page_ends)
    assert manual.text.endswith("\f")
    page_41 = manual.text[manual.page_ends[39] + 1:manual.page_ends[40]]
    assert page_41.startswith("5.5.2 Special case:")
    start = manual.text.index("Initially, the process described in")
    assert page_span(manual, start, start + 30) == (41, 41)
    assert page_span(manual, manual.page_ends[39] - 5, manual.page_ends[39] + 5) == (40, 41)


def test_pdf_running_headers_and_page_numbers_are_dropped_and_recorded(manual):
    header = "Debian Developer’s Reference, Release 12.18"
    dropped = {(d.page, d.text) for d in manual.dropped}
    assert (41, "5.6. Uploading a package 33") in dropped and (6, "iv") in dropped
    assert sum(d.text == header for d in manual.dropped) >= 90
    body = manual.text[manual.page_ends[0]:]  # the title page keeps its own title lines
    assert header not in body and "5.6. Uploading a package 33" not in body
    assert all(d.reason for d in manual.dropped)


def test_pdf_word_gaps_ligatures_and_hyphenation(manual):
    assert not re.search("[\ufb00-\ufb06\u00a0]", manual.text)
    assert "Initially, the process described in" in manual.text
    assert "reintroducing" in manual.text and "reintroduc-\n" not in manual.text
    notes = dict(n.rsplit(": ", 1) for n in manual.normalizations)
    assert int(notes["spaces added at TJ word gaps"]) > 1000
    assert int(notes["words joined at line-end hyphens"]) > 0


def test_normalize_quote_folds_ligatures_and_spaces_but_not_ordinals():
    assert normalize_quote("the \ufb01le\u00a0is e\ufb03cient") == "the file is efficient"
    assert normalize_quote("el artículo 1.º y la 2.ª") == "el artículo 1.º y la 2.ª"
    with pytest.raises(TypeError, match="text must be a str"):
        normalize_quote(b"x")


@pytest.mark.parametrize("lang", ["en-US", "es-ES"])
def test_html_headings_kept_navigation_dropped(lang):
    page = read_document(_real(f"handbook/{lang}/sect.apt-get.html"))
    assert page.kind == "html" and page.pages == 1
    first = page.headings[0]
    assert first.level == 2 and first.title.startswith("6.2.")
    assert page.text.startswith("## 6.2.")
    for heading in page.headings:
        assert page.text[heading.start:].startswith("#" * heading.level + " " + heading.title + "\n")
    assert "Download the ebook" not in page.text
    assert any(d.text == "Download the ebook" for d in page.dropped)
    assert "```\n$ sudo apt" in page.text or "```\n#" in page.text  # listings fenced, not headings


def test_html_malformed_and_binary_input(tmp_path):
    broken = tmp_path / "broken.html"
    broken.write_text("<html><body><h2>Title<p>one <b>two</p><script>x()</script></html>", encoding="utf-8")
    page = read_document(broken)
    assert page.text.startswith("## Title") and "x()" not in page.text
    garbage = tmp_path / "garbage.html"
    garbage.write_bytes(b"\x00\xff\xfe binary")
    with pytest.raises(ValueError, match=r"garbage.html: not an HTML text file"):
        read_document(garbage)
    empty = tmp_path / "empty.htm"
    empty.write_text("<html><script>only()</script></html>")
    with pytest.raises(ValueError, match=r"empty.htm: no text found"):
        read_document(empty)


def test_docx_headings_by_style_and_a_table(tmp_path):
    document = docx.Document()
    document.add_heading("Returns policy", level=1)
    document.add_paragraph("Items can be returned within 30 days.")
    document.add_heading("Refunds", level=2)
    table = document.add_table(rows=2, cols=2)
    for r, row in enumerate([("Item", "Days"), ("Book", "14")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    document.add_paragraph("Refunds go to the card\u00a0used.")
    path = tmp_path / "policy.docx"
    document.save(path)
    read = read_document(path)
    assert read.text == ("# Returns policy\n\nItems can be returned within 30 days.\n\n## Refunds\n\n"
                         "Item | Days\n\nBook | 14\n\nRefunds go to the card used.")
    refunds = read.text.index("## Refunds")
    assert [(h.level, h.title, h.start) for h in read.headings] == [(1, "Returns policy", 0), (2, "Refunds", refunds)]
    assert read.normalizations == ("U+00A0 -> ' ': 1",)


def test_docx_that_is_not_a_word_file(tmp_path):
    fake = tmp_path / "report.docx"
    fake.write_text("plain text, not a zip")
    with pytest.raises(ValueError, match=r"report.docx: not a Word .docx file"):
        read_document(fake)
    other_zip = tmp_path / "archive.docx"
    with zipfile.ZipFile(other_zip, "w") as z:
        z.writestr("hello.txt", "hi")
    with pytest.raises(ValueError, match=r"archive.docx: not a Word .docx file"):
        read_document(other_zip)


def _pdf_with_text(path, pages: list[str], password: str | None = None):
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = pypdf.PdfWriter()
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica")})
    for text in pages:
        page = writer.add_blank_page(612, 792)
        if text:
            stream = DecodedStreamObject()
            stream.set_data(f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode("latin-1"))
            page[NameObject("/Contents")] = writer._add_object(stream)
            page[NameObject("/Resources")] = DictionaryObject(
                {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})})
    if password:
        writer.encrypt(user_password=password, algorithm="RC4-128")
    writer.write(path)


def test_pdf_written_by_the_test_reads_back(tmp_path):
    path = tmp_path / "two.pdf"
    _pdf_with_text(path, ["First page text", "Second page text"])
    read = read_document(path)
    assert read.text == "First page text\fSecond page text\f" and read.page_ends == (15, 32)


def test_encrypted_and_textless_pdfs_are_refused(tmp_path):
    locked = tmp_path / "locked.pdf"
    _pdf_with_text(locked, ["Secret"], password="s3cret")
    with pytest.raises(ValueError, match=r"locked.pdf: the PDF is encrypted"):
        read_document(locked)
    scanned = tmp_path / "scanned.pdf"
    _pdf_with_text(scanned, [""] * 12)
    with pytest.raises(ValueError, match=r"scanned.pdf: no text on pages 1-12; OCR is outside this course"):
        read_document(scanned)
    not_pdf = tmp_path / "fake.pdf"
    not_pdf.write_text("hello")
    with pytest.raises(ValueError, match=r"fake.pdf: not a readable PDF"):
        read_document(not_pdf)


def test_plain_text_is_read_exactly(tmp_path):
    path = tmp_path / "notes.md"
    path.write_bytes("# Notes\r\nline two\u00a0kept\n".encode())
    assert read_document(path).text == "# Notes\r\nline two\u00a0kept\n"
    bad = tmp_path / "latin.txt"
    bad.write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin.txt: not UTF-8 text"):
        read_document(bad)
    with pytest.raises(ValueError, match="no such file"):
        read_document(tmp_path / "missing.pdf")


@given(st.text(alphabet="ab\f", min_size=1, max_size=60), st.data())
def test_page_span_counts_form_feeds(text, data):
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    assert page_span(text, start, end) == (text.count("\f", 0, start) + 1, text.count("\f", 0, end - 1) + 1)


def test_page_span_refuses_bad_ranges():
    with pytest.raises(ValueError, match="need 0 <= start < end"):
        page_span("abc", 2, 2)
    with pytest.raises(TypeError, match="text must be a str"):
        page_span(["abc"], 0, 1)
