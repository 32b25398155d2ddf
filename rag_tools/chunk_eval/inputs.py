"""chunk-eval's inputs: the documents of DOCS and the questions, each with its reference text.

A question's reference is an exact quote from the documents (whitespace and line breaks may
differ), found by `read_questions`, or character spans; a quote that is not found is reported
with the closest passage, so a typo is quick to fix.

PDF, HTML and Word files (`READER_SUFFIXES`) are read by `rag_tools.readers` into one extracted
text (PDF pages end at form feeds, headings become Markdown lines). Quotes are matched against that
text after the readers' own folding (`normalize_quote`: ligatures, no-break spaces), and a word
broken by a hyphen at a line end in the quote ("reintroduc-\ning") matches the word joined.
"""

from __future__ import annotations

import csv
import difflib
import errno
import io
import json
import re
import stat
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["MARKDOWN_SUFFIXES", "MAX_QUOTE_CHARS", "READER_SUFFIXES", "TEXT_SUFFIXES", "ChunkEvalError", "Document",
           "Question", "capped", "read_documents", "read_questions"]

TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".text", ".rst", ".py", ".adoc", ".org", ".tex")
MARKDOWN_SUFFIXES = (".md", ".markdown")
READER_SUFFIXES = (".pdf", ".html", ".htm", ".docx")  # read by rag_tools.readers
DROPPED_SHARE = 0.1  # warn when a reader leaves out more than this share of a file's characters
# The longest quote accepted. Chroma's evaluation set (COURSE_DATA_DIR/chroma_chunking_eval) has no reference over
# 775 characters, and the default grid's largest chunk is 512 tokens (about 2,000 characters of English): a quote
# of 10,000 characters cannot lie whole in any of its chunks. A longer quote is a pasted document, and matching it
# costs seconds per megabyte of quote.
MAX_QUOTE_CHARS = 10_000
SHOWN = 10  # names listed in one warning before "and N more"


class ChunkEvalError(ValueError):
    """Bad input: the command prints the message on one line and exits with status 2."""


@dataclass(frozen=True)
class Document:
    """A file of DOCS: `path` relative to DOCS (with "/"), `text` decoded from UTF-8, newlines as stored,
    or extracted by `rag_tools.readers` (`kind` "pdf", "html", "docx"): then `page_ends` holds the
    offset of each page's form feed (a PDF) and `dropped` the lines the reader left out (running
    headers, page numbers, navigation), each with its page, and `headings` how many headings the reader
    found and wrote as Markdown lines."""

    path: str
    text: str
    kind: str = "text"
    page_ends: tuple[int, ...] = ()
    dropped: tuple[Any, ...] = ()  # rag_tools.readers.DroppedLine
    headings: int = 0


@dataclass(frozen=True)
class Question:
    """One question and its reference text as `(document path, start, end)` character spans."""

    id: str
    question: str
    spans: tuple[tuple[str, int, int], ...]
    document: str | None = None
    line: int = 0


def _one_line(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def capped(names: Sequence[str], shown: int = SHOWN) -> str:
    """The first `shown` names joined by commas, and how many more: "q0, q1, ..., q9 and 49,990 more"."""
    head = ", ".join(names[:shown])
    return head if len(names) <= shown else f"{head} and {len(names) - shown:,} more"


def _nul_at(text: str) -> str | None:
    """Where the first NUL (U+0000) of `text` is ("position 12, line 1"), or None when it holds none.

    The e5-small engine (C through ctypes) reads a text only up to a NUL, so what follows it would be left out
    of the vector without a word: a NUL is refused wherever a text enters chunk-eval."""
    at = text.find("\x00")
    return None if at < 0 else f"position {at}, line {text.count(chr(10), 0, at) + 1}"


def _kind(path: Path) -> str | None:
    """Why a folder entry is not a file to read, by `stat` (a FIFO is never opened: that would block), or None
    for a regular file (through a symbolic link too); "folder" for a folder, which `rglob` walks."""
    try:
        mode = path.stat().st_mode
    except OSError as error:
        if path.is_symlink() and error.errno in (errno.ENOENT, errno.ELOOP):
            return "a symbolic link that loops" if error.errno == errno.ELOOP else "a symbolic link to a missing file"
        raise
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISREG(mode):
        return None
    return ("a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISBLK(mode) or stat.S_ISCHR(mode) else "not a regular file")


def _cannot_read(error: OSError) -> str:
    return f"cannot be read ({error.strerror or type(error).__name__})"


def read_documents(folder: str | Path, *, skip_bad_files: bool = False,
                   on_warning: Callable[[str], Any] | None = None) -> tuple[list[Document], list[str]]:
    """Every text file under `folder` (recursively, sorted; hidden files and folders left out).

    Returns `(documents, skipped)`: `skipped` names the files that are neither text (by suffix,
    `TEXT_SUFFIXES`) nor PDF, HTML or Word (`READER_SUFFIXES`), what is no regular file (a FIFO, a
    socket, a symbolic link to nothing; found by `stat`, never opened), the empty files of every type,
    and (with `skip_bad_files`) the bad ones with the reason. Raises `ChunkEvalError` for a missing
    folder, a folder without any document, and a bad file: one that cannot be read (an I/O error), is
    not UTF-8, holds a NUL character, or is a PDF, HTML or Word file the reader refuses (encrypted, no
    text layer, not really that format, damaged, a zip bomb). Files whose reader left out
    more than `DROPPED_SHARE` of their characters (navigation, running headers) give one warning,
    sent to `on_warning` (default `warnings.warn`).
    """
    root = Path(folder)
    if not root.exists():
        raise ChunkEvalError(f"DOCS folder {str(root)!r} does not exist; pass the folder that holds your documents")
    if not root.is_dir():
        raise ChunkEvalError(f"DOCS {str(root)!r} is a file, not a folder; pass the folder that holds it")
    documents, skipped, shares = [], [], {}

    def bad(name: str, what: str, fix: str, short: str) -> None:
        """A file that cannot be used: the run stops on one line ("<name><what>; <fix>, or pass
        --skip-bad-files ..."), or (`skip_bad_files`) it is listed as "<name> (<short>)" and left out."""
        if not skip_bad_files:
            raise ChunkEvalError(f"{name}{what}; {fix}, or pass --skip-bad-files to leave it out")
        skipped.append(f"{name} ({short})")

    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if any(part.startswith(".") for part in relative.parts):
            continue
        name = relative.as_posix()
        suffix = path.suffix.lower()
        try:
            kind = _kind(path)
            if kind is None and suffix in TEXT_SUFFIXES + READER_SUFFIXES:
                with path.open("rb") as handle:  # a failing disk or share fails here, on the first byte
                    data = handle.read() if suffix in TEXT_SUFFIXES else handle.read(1)
        except OSError as error:
            bad(name, f": {_cannot_read(error)}", "check the disk or share, or remove it", _cannot_read(error))
            continue
        except MemoryError:
            bad(name, " is too large for the memory available", "split it", "too large for the memory available")
            continue
        if kind == "folder":
            continue
        if kind is not None:
            skipped.append(f"{name} ({kind})")
            continue
        if suffix not in TEXT_SUFFIXES + READER_SUFFIXES:
            skipped.append(name)
            continue
        if not data:  # 0 bytes, whatever the type; a text file of only whitespace is empty too (below)
            skipped.append(f"{name} (empty)")
            continue
        if suffix in READER_SUFFIXES:
            document = _read_with_reader(path, name)
            if isinstance(document, str):
                bad(name, f": {document}", "fix or remove it", document)
                continue
            document, share = document
        else:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as error:
                bad(name, f" is not valid UTF-8 (byte 0x{data[error.start]:02x} at byte offset {error.start})",
                    "convert it to UTF-8", "not UTF-8")
                continue
            if not text.strip():
                skipped.append(f"{name} (empty)")
                continue
            document, share = Document(name, text), 0.0
        nul = _nul_at(document.text)
        if nul:
            bad(name, f" holds a NUL character (U+0000) at {nul}{'' if document.kind == 'text' else ' of its text'}, "
                "where an embedder written in C (e5-small) would end the text", "remove the NUL characters "
                "(tr -d '\\000' < old > new)", "holds NUL characters")
            continue
        documents.append(document)
        shares[name] = share
    if not documents:
        raise ChunkEvalError(
            f"DOCS folder {str(root)!r} holds no document ({', '.join(TEXT_SUFFIXES + READER_SUFFIXES)}); "
            + (f"skipped: {', '.join(skipped[:5])}" if skipped else "it is empty"))
    message = _dropped_warning(shares, documents)
    if message:
        (on_warning or warnings.warn)(message)
    return documents, skipped


def _dropped_warning(shares: dict[str, float], documents: Sequence[Document]) -> str | None:
    """One warning for every file whose reader left out more than `DROPPED_SHARE` of its characters."""
    heavy = {name: share for name, share in shares.items() if share > DROPPED_SHARE}
    if not heavy:
        return None
    reasons = Counter(d.reason for doc in documents if doc.path in heavy for d in doc.dropped)
    shown = ", ".join(f"{name} {share:.0%}" for name, share in list(heavy.items())[:8])
    more = f" and {len(heavy) - 8} more" if len(heavy) > 8 else ""
    mostly = ", ".join(reason for reason, _ in reasons.most_common(3))
    return (f"the reader left out more than {DROPPED_SHARE:.0%} of the characters of {len(heavy)} "
            f"file{'s' if len(heavy) > 1 else ''} ({shown}{more}; mostly {mostly}): "
            "quotes from those parts are not found; each Document's `dropped` lists them")


def _read_with_reader(path: Path, name: str) -> tuple[Document, float] | str:
    """The file as `rag_tools.readers` extracts it with the share of its characters left out, or the
    one-line reason it cannot be read."""
    from rag_tools.readers import read_document

    try:
        extracted = read_document(path)
    except ValueError as error:
        return _one_line(str(error).removeprefix(f"{path}: ").replace(str(path), name), 200)
    except OSError as error:  # the file failed while the reader read it (a failing disk or share)
        return _cannot_read(error)
    except ImportError as error:
        raise ChunkEvalError(f"{name}: reading {path.suffix} files needs {error.name}; install the course's "
                             "'readers' extra (pip install -e '.[readers]')") from None
    document = Document(name, extracted.text, extracted.kind, extracted.page_ends, extracted.dropped,
                        len(extracted.headings))
    return document, extracted.dropped_share


_LINE_END_HYPHEN = re.compile(r"(?<=\w)-[ \t]*\r?\n\s*(?=[^\W\d_])")


def _quote_pattern(quote: str) -> re.Pattern:
    """The quote, folded as the readers fold text (`normalize_quote`), with any run of whitespace matching
    any run of whitespace (line breaks included) and a hyphen at a line end matching the word joined,
    with or without the hyphen (the readers keep it only in words the document writes hyphenated)."""
    from rag_tools.readers import normalize_quote

    parts = _LINE_END_HYPHEN.split(normalize_quote(quote))
    return re.compile("-?".join(r"\s+".join(re.escape(word) for word in part.split()) for part in parts))


def _closest_passage(quote: str, documents: Sequence[Document]) -> str:
    """Where the quote's words come closest: '<path>: "<passage>"'.

    Every window of as many words as the quote is scored by the words it shares with the quote
    (case and punctuation ignored); ties go to a window that starts with the quote's first word,
    then to the one that reads most alike (difflib's ratio over the words). The window slides one word at a time and
    its score is updated by the word that enters and the one that leaves, so the cost grows with the
    documents' words, not with their product by the quote's.
    """
    wanted = quote.split()
    target = Counter(_bare(w) for w in wanted)
    top, ties = 0, []  # the best score, and its first 200 windows as (path, words, start)
    for doc in documents:
        words = doc.text.split()
        bare = [_bare(w) for w in words]
        window: Counter = Counter()
        score = 0
        for i, word in enumerate(bare):
            window[word] += 1
            score += window[word] <= target[word]
            if i >= len(wanted):
                leaving = bare[i - len(wanted)]
                score -= window[leaving] <= target[leaving]
                window[leaving] -= 1
            if i >= len(wanted) - 1 or i == len(bare) - 1:  # a full window, or the whole of a shorter document
                if score > top:
                    top, ties = score, []
                if score == top and len(ties) < 200:
                    ties.append((doc.path, words, max(0, i + 1 - len(wanted))))
    if top == 0:
        return "none (no passage shares a word with it)"
    ties = [(path, words[start:start + len(wanted)]) for path, words, start in ties]
    matcher = difflib.SequenceMatcher(None, [], wanted, autojunk=False)  # by words: by characters, the cost of
    # a comparison grows with the square of a long quote's characters

    def likeness(candidate: tuple[str, list[str]]) -> tuple[bool, float]:
        matcher.set_seq1(candidate[1])
        return _bare(candidate[1][0]) == _bare(wanted[0]), matcher.ratio()

    path, window = max(ties, key=likeness)
    return f'{path}: "{_one_line(" ".join(window), 80)}"'


def _bare(word: str) -> str:
    return word.strip(".,;:!?\"'()[]{}*_`").lower()


def _spans_of_quote(quote: str, documents: Sequence[Document]) -> list[tuple[str, int, int]]:
    pattern = _quote_pattern(quote)
    return [(doc.path, m.start(), m.end()) for doc in documents for m in pattern.finditer(doc.text)]


def _field(record: dict, name: str, where: str, kind: type | tuple[type, ...], required: bool = True) -> Any:
    value = record.get(name)
    if value is None or value == "":
        if required:
            raise ChunkEvalError(f"{where}: the field {name!r} is missing or empty; every question needs it")
        return None
    if not isinstance(value, kind):
        raise ChunkEvalError(f"{where}: {name!r} must be {getattr(kind, '__name__', 'a list')}, "
                             f"not {type(value).__name__}")
    return value


def _resolve(record: dict, number: int, line: int, where: str, by_path: dict[str, Document]) -> Question:
    """One record (from a JSONL line or a CSV row) as a `Question` with its reference spans."""
    text = _field(record, "question", where, str)
    if not text.strip():
        raise ChunkEvalError(f"{where}: the field 'question' is empty")
    nul = _nul_at(text)
    if nul:
        raise ChunkEvalError(f"{where} (question {record.get('id') or number!s}): the question holds a NUL "
                             f"character (U+0000) at {nul}, where an embedder written in C (e5-small) would end "
                             "it; remove it")
    document = _field(record, "document", where, str, required=False)
    if document is not None:
        document = Path(document).as_posix()
        if document not in by_path:
            close = difflib.get_close_matches(document, list(by_path), n=1)
            raise ChunkEvalError(f"{where}: document {document!r} is not a document of DOCS"
                                 + (f"; did you mean {close[0]!r}?" if close else
                                    f"; give a path relative to DOCS, e.g. {next(iter(by_path))!r}"))
    qid = str(record.get("id") or number)
    label = f'{where} (question {qid}: "{_one_line(text, 50)}")'
    if record.get("spans") not in (None, ""):
        spans = record["spans"]
        if document is None:
            raise ChunkEvalError(f"{label}: 'spans' are character offsets in one document; add its 'document'")
        length = len(by_path[document].text)
        if not isinstance(spans, list) or not spans:
            raise ChunkEvalError(f"{label}: 'spans' must be a non-empty list of [start, end] pairs")
        out = []
        for span in spans:
            ok = isinstance(span, list) and len(span) == 2 and all(
                isinstance(v, int) and not isinstance(v, bool) for v in span)
            if not ok or not 0 <= span[0] < span[1] <= length:
                raise ChunkEvalError(f"{label}: span {span!r} is not a [start, end] pair with "
                                     f"0 <= start < end <= {length} (the length of {document})")
            out.append((document, span[0], span[1]))
        return Question(qid, text, tuple(out), document, line)
    answer = _field(record, "answer", where, (str, list))
    quotes = [answer] if isinstance(answer, str) else answer
    if not quotes or not all(isinstance(q, str) and q.strip() for q in quotes):
        raise ChunkEvalError(f"{label}: 'answer' must be a quote, or a non-empty list of quotes, with some text")
    for quote in quotes:
        nul = _nul_at(quote)
        if nul:
            raise ChunkEvalError(f"{label}: the answer holds a NUL character (U+0000) at {nul}; no document "
                                 "chunk-eval reads holds one: remove it")
        if len(quote) > MAX_QUOTE_CHARS:
            raise ChunkEvalError(f'{label}: the answer "{_one_line(quote, 40)}" is {len(quote):,} characters long, '
                                 f"over the {MAX_QUOTE_CHARS:,} a quote may have: a quote is a passage, not a "
                                 "document; quote the sentences that answer the question")
    scope = [by_path[document]] if document else list(by_path.values())
    spans = []
    for quote in quotes:
        found = _spans_of_quote(quote, scope)
        if not found:
            where_in = f"in {document}" if document else "in any document"
            dropped = _in_dropped_text(quote, scope)
            if dropped:
                raise ChunkEvalError(f'{label}: the answer "{_one_line(quote, 60)}" is not {where_in}: it lies in '
                                     f"text the reader left out ({dropped}); quote the document's body text, or "
                                     "drop the question")
            raise ChunkEvalError(f'{label}: the answer "{_one_line(quote, 60)}" is not {where_in}; '
                                 f"closest passage {_closest_passage(quote, scope)}")
        spans += found
    return Question(qid, text, tuple(spans), document, line)


def _in_dropped_text(quote: str, documents: Sequence[Document]) -> str | None:
    """Where a quote lies in what a reader left out ("developers-reference.pdf p. 12, running header"), or None."""
    pattern = _quote_pattern(quote)
    for doc in documents:
        for line in doc.dropped:
            if pattern.search(line.text):
                page = f" p. {line.page}" if doc.page_ends else ""
                return f"{doc.path}{page}, {line.reason}"
    for doc in documents:  # a quote running over several dropped lines
        if doc.dropped and pattern.search(" ".join(line.text for line in doc.dropped)):
            return f"{doc.path}, over several of its {len(doc.dropped)} dropped lines"
    return None


def read_questions(path: str | Path, documents: Sequence[Document],
                   problems: list[str] | None = None) -> list[Question]:
    """Questions from a JSONL file (one object a line) or a CSV file (a header row), by suffix.

    Fields: `question`; `answer`, an exact quote from the documents (JSONL: or a list of quotes;
    whitespace and line breaks may differ); optional `document` (path relative to DOCS); optional
    `id`. In JSONL, `spans` (`[[start, end], ...]`, character offsets in `document`) may replace
    `answer`. The reference text is every occurrence of each quote (in `document`, if given).
    Raises `ChunkEvalError` at the first bad question; with a `problems` list, a bad question's
    message is appended to it and the question left out instead (`chunk-eval check`), so every
    problem is found in one pass (a file that cannot be read at all still raises).
    """
    path = Path(path)
    if not path.exists():
        raise ChunkEvalError(f"QUESTIONS file {str(path)!r} does not exist; pass a .jsonl or .csv file of questions")
    by_path = {doc.path: doc for doc in documents}
    try:
        kind = _kind(path)
        if kind is not None:
            raise ChunkEvalError(f"QUESTIONS {str(path)!r} is {'a folder' if kind == 'folder' else kind}, not a "
                                 "file; pass a .jsonl or .csv file of questions")
        raw = path.read_text(encoding="utf-8-sig")  # Excel's "CSV UTF-8" starts with a byte-order mark
    except UnicodeDecodeError as error:
        raise ChunkEvalError(f"QUESTIONS file {path.name} is not valid UTF-8 (byte offset {error.start})") from None
    except OSError as error:
        raise ChunkEvalError(f"QUESTIONS file {str(path)!r} {_cannot_read(error)}; check the disk or share") from None
    questions = []
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(raw, newline=""))
        missing = [c for c in ("question", "answer") if c not in (reader.fieldnames or [])]
        if missing:
            raise ChunkEvalError(f"{path.name} line 1: the header has no column {' or '.join(map(repr, missing))}; "
                                 f"it needs question,answer (and optionally document); found {reader.fieldnames}")
        for row in reader:
            where = f"{path.name} line {reader.line_num}"
            if None in row:
                raise ChunkEvalError(f"{where}: more fields than the header has columns; quote fields with commas")
            _add(questions, problems, _resolve, row, len(questions) + 1, reader.line_num, where, by_path)
    elif path.suffix.lower() in (".jsonl", ".ndjson"):
        # Split at "\n" only: str.splitlines also breaks at U+2028, U+2029 and U+0085, which JSON strings may
        # hold raw (json.dumps(..., ensure_ascii=False) writes them so), and line numbers would then not be an
        # editor's.
        for number, line in enumerate(raw.split("\n"), start=1):
            line = line.removesuffix("\r")
            if not line.strip():
                continue
            where = f"{path.name} line {number}"
            _add(questions, problems, _record, line, len(questions) + 1, number, where, by_path)
    else:
        raise ChunkEvalError(f"QUESTIONS file {path.name} must end in .jsonl or .csv")
    if not questions and not problems:
        raise ChunkEvalError(f"QUESTIONS file {path.name} holds no question")
    return questions


def _record(line: str, number: int, line_number: int, where: str, by_path: dict[str, Document]) -> Question:
    """One JSONL line as a `Question`."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise ChunkEvalError(f"{where}: not valid JSON ({error.msg} at column {error.colno}); "
                             "write one JSON object per line") from None
    if not isinstance(record, dict):
        raise ChunkEvalError(f"{where}: a JSON object is needed, not {type(record).__name__}")
    return _resolve(record, number, line_number, where, by_path)


def _add(questions: list[Question], problems: list[str] | None, make: Callable[..., Question], *args: Any) -> None:
    """Append `make(*args)`; its `ChunkEvalError` is raised, or appended to `problems` when given."""
    try:
        questions.append(make(*args))
    except ChunkEvalError as error:
        if problems is None:
            raise
        problems.append(str(error))
