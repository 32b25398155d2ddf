"""chunk-eval's inputs under the third fault round (reliability review 2026-12-06: M2, I1-I4).

A NUL never reaches an embedder, valid JSONL is read whatever its strings hold, a quote is bounded, warnings stay
short, and every file that is no document or cannot be read is named once and treated alike.
"""

import json
import os
import re
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_tools.chunk_eval import main
from rag_tools.chunk_eval.check import _duplicate_quotes
from rag_tools.chunk_eval.inputs import (
    MAX_QUOTE_CHARS,
    ChunkEvalError,
    Document,
    Question,
    _bare,
    _closest_passage,
    read_documents,
    read_questions,
)
from tests.test_chunk_eval import DOCS, QUESTIONS, write

EIO_SOURCE = "/proc/self/mem"  # reading its first byte fails with EIO: a stand-in for a failing disk or share


def _questions(tmp_path, records, name="q.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


# ---------------------------------------------------------------- M2: NUL


def test_a_nul_in_a_text_document_is_refused_in_one_line_naming_file_and_position(tmp_path):
    docs, _ = write(tmp_path)
    (docs / "log.txt").write_bytes(b"Header line\nThe valve\x00 opens at two bar.\n")
    with pytest.raises(ChunkEvalError) as error:
        read_documents(docs)
    message = str(error.value)
    assert "\n" not in message and message.startswith("log.txt holds a NUL character (U+0000) at position 21, line 2")
    assert "--skip-bad-files" in message
    documents, skipped = read_documents(docs, skip_bad_files=True)
    assert "log.txt (holds NUL characters)" in skipped and "log.txt" not in [d.path for d in documents]


def test_a_nul_in_a_question_or_a_quote_is_refused_naming_line_and_question(tmp_path):
    documents, _ = read_documents(write(tmp_path)[0])
    path = _questions(tmp_path, [QUESTIONS[0], {**QUESTIONS[1], "question": "\x00Where do we keep spare seals?"}])
    with pytest.raises(ChunkEvalError, match=r"^q\.jsonl line 2 \(question b\): the question holds a NUL "
                                             r"character \(U\+0000\) at position 0, line 1"):
        read_questions(path, documents)
    path = _questions(tmp_path, [{**QUESTIONS[1], "answer": "Spare seals are kept\x00 in bin four"}])
    with pytest.raises(ChunkEvalError, match=r"^q\.jsonl line 1 \(question b: .*\): the answer holds a NUL "
                                             r"character \(U\+0000\) at position 20"):
        read_questions(path, documents)


def test_a_nul_document_stops_the_cli_in_one_line(tmp_path, capsys):
    docs, questions = write(tmp_path)
    (docs / "log.md").write_bytes(b"Some\x00 text.")
    assert main(["check", str(docs), str(questions), "--strategy", "fixed:12", "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "log.md holds a NUL character (U+0000) at position 4, line 1" in err


# ---------------------------------------------------------------- I1: line separators inside JSON strings


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085"])
def test_jsonl_strings_may_hold_unicode_line_separators(tmp_path, separator):
    documents, _ = read_documents(write(tmp_path)[0])
    records = [QUESTIONS[0], {**QUESTIONS[1], "question": f"Where do we keep{separator}spare seals?"}, QUESTIONS[4]]
    path = _questions(tmp_path, records)
    assert separator in path.read_text(encoding="utf-8")  # written raw, as ensure_ascii=False writes it
    questions = read_questions(path, documents)
    assert [(q.id, q.line) for q in questions] == [("a", 1), ("b", 2), ("e", 3)]
    assert questions[1].question == f"Where do we keep{separator}spare seals?"


def test_jsonl_line_numbers_are_an_editors_with_crlf_and_separators(tmp_path):
    documents, _ = read_documents(write(tmp_path)[0])
    lines = [json.dumps({**QUESTIONS[1], "question": "Where\u2028do we keep spare seals?"}, ensure_ascii=False),
             "", json.dumps(QUESTIONS[0]), "{not json"]
    path = tmp_path / "q.jsonl"
    path.write_bytes("\r\n".join(lines).encode("utf-8") + b"\r\n")
    problems: list[str] = []
    questions = read_questions(path, documents, problems)
    assert [(q.id, q.line) for q in questions] == [("b", 1), ("a", 3)]
    assert len(problems) == 1 and problems[0].startswith("q.jsonl line 4: not valid JSON"), problems


# ---------------------------------------------------------------- I2: a quote is a passage


def test_a_quote_over_the_bound_is_refused_at_once(tmp_path):
    documents, _ = read_documents(write(tmp_path)[0])
    quote = "Spare seals are kept in bin four. " * (MAX_QUOTE_CHARS // 34 + 1)
    path = _questions(tmp_path, [{"id": "long", "question": "Where?", "answer": quote}])
    with pytest.raises(ChunkEvalError, match=rf"^q\.jsonl line 1 \(question long: .*\): the answer .* is "
                                             rf"{len(quote):,} characters long, over the {MAX_QUOTE_CHARS:,} a quote "
                                             "may have: a quote is a passage, not a document"):
        read_questions(path, documents)


def test_a_10_mb_quote_is_refused_before_the_documents_are_searched(tmp_path, monkeypatch):
    """I2: a 10 MB quote took 195 s before `check` answered (absent) and more than 300 s (present), all of it in
    searching the documents for the quote; the length bound refuses it before any search (each search helper
    raises here), whatever the machine's speed."""
    from rag_tools.chunk_eval import inputs

    docs, _ = write(tmp_path, docs={**DOCS, "big.txt": "The pump runs. " * 700_000})
    documents, _ = read_documents(docs)
    path = _questions(tmp_path, [{"id": "huge", "question": "What runs?", "answer": "The pump runs. " * 700_000}])

    def searched(*_: object) -> None:
        raise AssertionError("the documents were searched for a quote over the bound")

    for helper in ("_quote_pattern", "_spans_of_quote", "_closest_passage", "_in_dropped_text"):
        monkeypatch.setattr(inputs, helper, searched)
    problems: list[str] = []
    assert read_questions(path, documents, problems) == []
    assert "a quote is a passage, not a document" in problems[0]


def _best_score(quote: str, documents: list[Document]) -> int:
    """The most words any window of the quote's length shares with it, by brute force."""
    wanted = quote.split()
    target = Counter(_bare(w) for w in wanted)
    best = 0
    for doc in documents:
        bare = [_bare(w) for w in doc.text.split()]
        for i in range(max(1, len(bare) - len(wanted) + 1)):
            best = max(best, sum((Counter(bare[i:i + len(wanted)]) & target).values()))
    return best


WORDS = st.sampled_from(["seal", "Seal.", "pump", "bin", "four", "the", "lead", "x"])


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(st.lists(WORDS, max_size=30), min_size=1, max_size=3),
       quote=st.lists(WORDS, min_size=1, max_size=8))
def test_the_sliding_closest_passage_finds_a_best_window(texts, quote):
    """The window slides with a running score; the passage it names shares as many words as the best window."""
    documents = [Document(f"d{i}.txt", " ".join(words)) for i, words in enumerate(texts)]
    found = _closest_passage(" ".join(quote), documents)
    best = _best_score(" ".join(quote), documents)
    if best == 0:
        assert found == "none (no passage shares a word with it)"
        return
    path, passage = re.fullmatch(r'(d\d\.txt): "(.*)"', found).groups()
    window = passage.split()
    assert len(window) == min(len(quote), len(next(d for d in documents if d.path == path).text.split()))
    assert sum((Counter(_bare(w) for w in window) & Counter(_bare(w) for w in quote)).values()) == best


# ---------------------------------------------------------------- I3: warnings stay short


def test_a_quote_shared_by_50_000_questions_gives_a_short_warning(tmp_path):
    """I3: 100,000 questions sharing two quotes gave two warning lines of 395 kB each."""
    documents, _ = read_documents(write(tmp_path)[0])
    start = DOCS["pump.md"].index("Spare seals are kept in bin four")
    questions = [Question(f"q{2 * i}", "Where?", (("pump.md", start, start + 32),)) for i in range(50_000)]
    (warning,) = _duplicate_quotes(questions, documents)
    assert warning.startswith("questions q0, q2, q4, q6, q8, q10, q12, q14, q16, q18 and 49,990 more share the quote")
    assert len(warning) < 400


def test_many_repeated_ids_give_one_warning_line(tmp_path):
    """50,000 ids used twice gave 50,000 warning lines; up to 10 keep a line each."""
    documents, _ = read_documents(write(tmp_path)[0])
    start = DOCS["pump.md"].index("Spare seals are kept in bin four")
    twice = [Question(f"q{i % 50_000}", "Where?", (("pump.md", start, start + 11 + i),)) for i in range(100_000)]
    warnings = [w for w in _duplicate_quotes(twice, documents) if "id" in w.split(":")[0]]
    assert warnings == ["50,000 ids are each given to two or more questions ('q0', 'q1', 'q2', 'q3', 'q4', 'q5', "
                        "'q6', 'q7', 'q8', 'q9' and 49,990 more): give each question its own id (the JSON and "
                        "--baseline match questions by id)"]
    few = _duplicate_quotes(twice[:3] + twice[50_000:50_003], documents)
    assert [w for w in few if "have the id" in w] == [
        f"2 questions have the id 'q{i}': give each question its own id (the JSON and --baseline match questions "
        "by id)" for i in range(3)]


# ---------------------------------------------------------------- I3/I4: every file named once, treated alike


def test_what_is_no_document_is_named_once_and_never_stops_the_run(tmp_path):
    """I3: FIFOs and dangling links were left out without a word; an empty .docx stopped the run where an empty
    .txt was skipped. A FIFO is never opened (the run would block)."""
    docs, _ = write(tmp_path)
    os.mkfifo(docs / "pipe.txt")
    (docs / "gone.md").symlink_to(docs / "nowhere.md")
    (docs / "loop.txt").symlink_to(docs / "loop.txt")
    for suffix in (".txt", ".md", ".docx", ".pdf", ".html"):
        (docs / f"empty{suffix}").write_bytes(b"")
    (docs / "blank.txt").write_text(" \n\t\n", encoding="utf-8")
    (docs / "sub").mkdir()
    (docs / "sub" / "up").symlink_to("..")  # a folder link: walked or not, never doubled and never listed
    documents, skipped = read_documents(docs)
    assert sorted(d.path for d in documents) == sorted(DOCS)
    assert sorted(skipped) == ["blank.txt (empty)", "empty.docx (empty)", "empty.html (empty)", "empty.md (empty)",
                               "empty.pdf (empty)", "empty.txt (empty)", "gone.md (a symbolic link to a missing file)",
                               "loop.txt (a symbolic link that loops)", "pipe.txt (a named pipe (FIFO))"]


@pytest.mark.skipif(not os.path.exists(EIO_SOURCE), reason="needs /proc/self/mem")
@pytest.mark.parametrize("name", ["mem.txt", "mem.html"])
def test_a_file_whose_read_fails_is_named_and_skipped_with_skip_bad_files(tmp_path, name):
    """I4: a failing read printed "Input/output error: " without the file's name, and --skip-bad-files did not
    skip it."""
    docs, _ = write(tmp_path)
    (docs / name).symlink_to(EIO_SOURCE)
    with pytest.raises(ChunkEvalError) as error:
        read_documents(docs)
    assert str(error.value) == (f"{name}: cannot be read (Input/output error); check the disk or share, or remove "
                                "it, or pass --skip-bad-files to leave it out")
    documents, skipped = read_documents(docs, skip_bad_files=True)
    assert skipped == [f"{name} (cannot be read (Input/output error))"] and len(documents) == len(DOCS)


@pytest.mark.skipif(not os.path.exists(EIO_SOURCE), reason="needs /proc/self/mem")
def test_the_cli_names_an_unreadable_file_and_skips_it(tmp_path, capsys):
    docs, questions = write(tmp_path)
    (docs / "mem.txt").symlink_to(EIO_SOURCE)
    args = ["check", str(docs), str(questions), "--strategy", "fixed:12", "--no-cache"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "mem.txt: cannot be read (Input/output error)" in err
    assert main([*args, "--skip-bad-files"]) == 0
    assert "warning: skipped 1 file: mem.txt (cannot be read (Input/output error))" in capsys.readouterr().err


@pytest.mark.skipif(not os.path.exists(EIO_SOURCE), reason="needs /proc/self/mem")
def test_a_questions_file_that_cannot_be_read_is_named(tmp_path):
    """I4: the questions file's read error named no file either; a FIFO was said not to exist."""
    documents, _ = read_documents(write(tmp_path)[0])
    (tmp_path / "mem.jsonl").symlink_to(EIO_SOURCE)
    with pytest.raises(ChunkEvalError, match=rf"^QUESTIONS file '{tmp_path}/mem\.jsonl' cannot be read "
                                             r"\(Input/output error\); check the disk or share$"):
        read_questions(tmp_path / "mem.jsonl", documents)
    os.mkfifo(tmp_path / "pipe.jsonl")
    with pytest.raises(ChunkEvalError, match=r"is a named pipe \(FIFO\), not a file; pass a \.jsonl or \.csv"):
        read_questions(tmp_path / "pipe.jsonl", documents)
