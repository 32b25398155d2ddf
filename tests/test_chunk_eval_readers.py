"""chunk-eval reads PDF, HTML and Word files through rag_tools.readers; quotes match the extracted text."""

import json
import re
import zipfile
from pathlib import Path

import pytest

from course_lib import datasets
from rag_tools.chunk_eval.inputs import ChunkEvalError, read_documents, read_questions
from rag_tools.readers import page_span

docx = pytest.importorskip("docx")
pytest.importorskip("pypdf")
QUESTIONS = Path(__file__).parent.parent / "data" / "developers_reference_questions.jsonl"


def _pdf() -> Path:
    try:
        return datasets.fetch("debian_docs", "developers-reference.pdf", download=False)
    except datasets.DataNotFoundError:
        pytest.skip("debian_docs is not in the data cache (set COURSE_DATA_DIR to a folder holding it)")


def _questions(tmp_path, records) -> Path:
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_the_pdf_and_its_46_questions(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "developers-reference.pdf").symlink_to(_pdf())
    documents, skipped = read_documents(tmp_path / "docs")
    (manual,) = documents
    assert skipped == [] and manual.kind == "pdf" and len(manual.page_ends) == 114
    assert sum(d.reason == "running header" for d in manual.dropped) >= 90
    questions = read_questions(QUESTIONS, documents)
    assert len(questions) == 46
    pages = {page_span(manual.text, s, e)[0] for q in questions for _, s, e in q.spans}
    assert min(pages) == 11 and max(pages) == 113 and len(pages) >= 35, "questions spread over the manual"


def test_html_and_docx_are_read_and_quotes_fold_ligatures_and_line_end_hyphens(tmp_path):
    (tmp_path / "page.html").write_text(
        "<html><body><nav>Home | Next</nav><h2>Returns</h2><p>The re\ufb01nd is made within ten days.</p>"
        "<p>Items are reintroducing stock.</p></body></html>", encoding="utf-8")
    document = docx.Document()
    document.add_heading("Warranty", level=1)
    document.add_paragraph("Repairs are free for two years.")
    document.save(tmp_path / "policy.docx")
    warnings: list[str] = []
    documents, _ = read_documents(tmp_path, on_warning=warnings.append)
    assert len(warnings) == 1 and "page.html 12%" in warnings[0]  # "Home | Next" is 12% of this small page
    by_path = {d.path: d for d in documents}
    assert by_path["page.html"].kind == "html" and "## Returns" in by_path["page.html"].text
    assert any("Home" in d.text for d in by_path["page.html"].dropped)
    assert by_path["policy.docx"].text.startswith("# Warranty")
    questions = read_questions(_questions(tmp_path, [
        {"question": "refund?", "answer": "The re\ufb01nd is made\nwithin ten days."},  # a ligature in the quote
        {"question": "stock?", "answer": "Items are reintroduc-\ning stock."},  # hyphenated as a PDF viewer copies it
        {"question": "repairs?", "answer": "Repairs\u00a0are free", "document": "policy.docx"},
    ]), documents)
    texts = [by_path[doc].text[s:e] for q in questions for doc, s, e in q.spans]
    assert texts == ["The refind is made within ten days.", "Items are reintroducing stock.", "Repairs are free"]


@pytest.mark.parametrize(("name", "content", "reason"), [
    ("scan.pdf", None, "no text on pages 1-1; OCR is outside this course"),
    ("broken.pdf", b"%PDF-1.4 this is not a PDF", "not a readable PDF"),
    ("letter.docx", b"plain text, not a Word file", "not a Word"),
])
def test_bad_files_stop_the_run_or_are_skipped_with_the_reason(tmp_path, name, content, reason):
    pypdf = pytest.importorskip("pypdf")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "notes.md").write_text("Some text.", encoding="utf-8")
    if content is None:
        writer = pypdf.PdfWriter()
        writer.add_blank_page(width=200, height=200)
        with open(folder / name, "wb") as handle:
            writer.write(handle)
    else:
        (folder / name).write_bytes(content)
    with pytest.raises(ChunkEvalError, match=rf"^{name}: .*{reason}.*--skip-bad-files") as error:
        read_documents(folder)
    assert "\n" not in str(error.value) and str(folder) not in str(error.value)
    documents, skipped = read_documents(folder, skip_bad_files=True)
    assert [d.path for d in documents] == ["notes.md"]
    assert len(skipped) == 1 and skipped[0].startswith(f"{name} (") and reason in skipped[0]


def _hostile(folder: Path, kind: str) -> str:
    """A file the libraries fail on (review R5/C3): malformed DOCX XML, or a PDF with 5,000 nested arrays."""
    if kind == "docx":
        with zipfile.ZipFile(folder / "x.docx", "w") as archive:
            archive.writestr("[Content_Types].xml", "<Types oops")
        return "x.docx"
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    page = writer.add_blank_page(200, 200)
    stream = DecodedStreamObject()
    stream.set_data(b"BT /F1 12 Tf 20 100 Td (Hi) Tj ET " + b"[" * 5000 + b"]" * 5000)
    page[NameObject("/Contents")] = writer._add_object(stream)
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica")})
    page[NameObject("/Resources")] = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})})
    with open(folder / "nested.pdf", "wb") as handle:
        writer.write(handle)
    return "nested.pdf"


@pytest.mark.parametrize("kind", ["docx", "pdf"])
def test_hostile_files_stop_the_run_in_one_line_or_are_skipped(tmp_path, kind):
    (tmp_path / "notes.md").write_text("Some text.", encoding="utf-8")
    name = _hostile(tmp_path, kind)
    with pytest.raises(ChunkEvalError, match=rf"^{name}: not a .*--skip-bad-files") as error:
        read_documents(tmp_path)
    assert "\n" not in str(error.value)
    documents, skipped = read_documents(tmp_path, skip_bad_files=True)
    assert [d.path for d in documents] == ["notes.md"] and len(skipped) == 1 and skipped[0].startswith(f"{name} (")


def test_one_warning_for_files_that_lose_more_than_a_tenth_to_dropping(tmp_path):
    nav = "".join(f'<li><a href="p{i}.html">Chapter {i} of the guide</a></li>' for i in range(20))
    for name in ("a.html", "b.html"):
        (tmp_path / name).write_text(f'<div role="navigation"><ul>{nav}</ul></div><p>The body says little.</p>',
                                     encoding="utf-8")
    (tmp_path / "c.html").write_text("<nav>Home</nav><p>" + "A long body. " * 50 + "</p>", encoding="utf-8")
    warnings: list[str] = []
    documents, _ = read_documents(tmp_path, on_warning=warnings.append)
    assert len(documents) == 3 and len(warnings) == 1
    assert re.fullmatch(r"the reader left out more than 10% of the characters of 2 files \(a\.html 9\d%, "
                        r"b\.html 9\d%; mostly role=\"navigation\"\): .*", warnings[0]), warnings[0]
    with pytest.warns(UserWarning, match="left out more than 10%"):
        read_documents(tmp_path)
