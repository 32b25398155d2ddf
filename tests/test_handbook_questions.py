"""The Spanish handbook question set and its English twin (data/handbook_questions_{es,en}.jsonl).

Each question quotes its answer from one page of the Debian Administrator's Handbook in debian_docs
(handbook/es-ES/<page> for Spanish, the same page in handbook/en-US for English), as the course's
reader extracts it; chunk-eval runs on them with DOCS set to the language's folder.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from course_lib import datasets

try:  # the readers move to rag_tools; course_lib keeps them until then
    from rag_tools.readers import read_document
except ImportError:
    from course_lib.readers import read_document

DATA = Path(__file__).resolve().parent.parent / "data"
FILES = {"es": DATA / "handbook_questions_es.jsonl", "en": DATA / "handbook_questions_en.jsonl"}
FOLDERS = {"es": "es-ES", "en": "en-US"}
PAGES = ("apt.html", "basic-configuration.html", "sect.apt-get.html", "sect.http-web-server.html",
         "sect.manipulating-packages-with-dpkg.html", "sect.network-config.html")
MINIMUM = 40


def _records(language: str) -> list[dict]:
    lines = FILES[language].read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@cache
def _page_text(language: str, page: str) -> str:
    """The page as the course's reader extracts it (what chunk-eval chunks and matches quotes in)."""
    try:
        path = datasets.fetch("debian_docs", f"handbook/{FOLDERS[language]}/{page}", download=False)
    except datasets.DataNotFoundError:
        pytest.skip("debian_docs is not in the data cache (set COURSE_DATA_DIR to a folder holding it)")
    return read_document(path).text


def test_both_files_have_the_reference_format_and_the_same_ids_in_the_same_order():
    reference = json.loads((DATA / "developers_reference_questions.jsonl").read_text(encoding="utf-8").splitlines()[0])
    spanish, english = _records("es"), _records("en")
    for language, records in (("es", spanish), ("en", english)):
        assert len(records) >= MINIMUM, f"{language}: {len(records)} questions, fewer than {MINIMUM}"
        assert all(set(r) == set(reference) for r in records), f"{language}: fields other than {sorted(reference)}"
        assert all(isinstance(r[k], str) and r[k].strip() for r in records for k in r), f"{language}: an empty field"
        assert all(r["document"] in PAGES for r in records), f"{language}: a document outside {PAGES}"
        ids = [r["id"] for r in records]
        assert len(set(ids)) == len(ids), f"{language}: duplicate ids"
        quotes = [r["answer"] for r in records]
        assert len(set(quotes)) == len(quotes), f"{language}: duplicate quotes"
    assert [r["id"] for r in spanish] == [r["id"] for r in english], "the twins need the same ids in the same order"
    assert [r["document"] for r in spanish] == [r["document"] for r in english], "a twin quotes the same page"
    assert not {r["question"] for r in spanish} & {r["question"] for r in english}, "a question left untranslated"
    assert len({r["document"] for r in spanish}) == len(PAGES), "every page has questions"


@pytest.mark.parametrize("language", ["es", "en"])
def test_each_quote_occurs_exactly_once_in_its_page_as_the_reader_gives_it(language):
    problems = [f"{r['id']}: {_page_text(language, r['document']).count(r['answer'])} times in {r['document']}: "
                f"{r['answer'][:60]!r}"
                for r in _records(language) if _page_text(language, r["document"]).count(r["answer"]) != 1]
    assert not problems, "\n".join(problems)


def test_spanish_quotes_come_from_translated_passages():
    """A Spanish quote found on the English page would be a passage the translation left in English."""
    untranslated = [r["id"] for r in _records("es") if r["answer"] in _page_text("en", r["document"])]
    assert not untranslated, f"quotes from untranslated passages: {untranslated}"


@pytest.mark.parametrize("language", ["es", "en"])
def test_chunk_eval_reads_the_file_as_it_is(language):
    try:
        from rag_tools.chunk_eval.inputs import read_documents, read_questions
    except ImportError:
        from course_lib.chunk_eval.inputs import read_documents, read_questions
    _page_text(language, PAGES[0])  # skips when the dataset is missing
    folder = datasets.fetch("debian_docs", f"handbook/{FOLDERS[language]}/{PAGES[0]}", download=False).parent
    documents, skipped = read_documents(folder)
    assert sorted(d.path for d in documents) == sorted(PAGES) and skipped == []
    questions = read_questions(FILES[language], documents)
    assert [q.id for q in questions] == [r["id"] for r in _records(language)]
    assert all(len(q.spans) == 1 for q in questions), "each quote marks one passage"
