"""chunk-eval decides (issue 20): the verdict, intervals, returned tokens, the exact budget, answer recall,
causes, warnings, bm25:/hybrid:, per-question JSON and the --baseline gate, each against an independent
computation. The toy embedder and the small folder come from tests/test_chunk_eval.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.evaluation import METRIC_NAMES, exact_budget, token_prefix_end
from course_lib.retrieval import bm25_rankings, reciprocal_rank_fusion
from course_lib.stats import mean_interval, paired_interval, verdict
from course_lib.strategies import parse_strategy, result_stem
from course_lib.tokens import count_tokens, get_encoding
from rag_tools import chunk_eval
from rag_tools.chunk_eval import evaluate, main, render_html
from rag_tools.chunk_eval.cli import regressions
from rag_tools.chunk_eval.grades import CAUSES, REFERENCE_OPENERS, answer_held, miss_cause, orphan_opener
from rag_tools.chunk_eval.inputs import Document
from rag_tools.chunk_eval.results import _span_record
from rag_tools.readers import page_span
from tests.test_chunk_eval import DOCS, QUESTIONS, ToyEmbedder, without_plan, write

ROOT = Path(__file__).resolve().parent.parent
STRATEGIES = ["fixed:12", "recursive:16:4", "late:fixed:12"]


@pytest.fixture
def folder(tmp_path):
    return write(tmp_path)


@pytest.fixture
def toy_model(monkeypatch):
    from rag_tools import chunk_eval

    embedder = ToyEmbedder()
    monkeypatch.setattr(chunk_eval.run, "SentenceTransformerEmbedder", lambda model=None: embedder)
    return embedder


# ---------------------------------------------------------------------------
# The grammar
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("text, retrieval, variant, stem", [
    ("bm25:recursive:256", "bm25", None, "bm25_recursive_256"),
    ("hybrid:headers:markdown:256", "hybrid", "headers", "hybrid_headers_markdown_256"),
    ("hybrid:late:recursive:256:32?anchor=paragraph", "hybrid", "late",
     "hybrid_late_recursive_256_32__anchor-paragraph"),
    ("bm25:headers:fixed:64", "bm25", "headers", "bm25_headers_fixed_64"),
])
def test_retrieval_prefixes_parse_and_name_files(text, retrieval, variant, stem):
    spec = parse_strategy(text)
    assert (spec.retrieval, spec.variant, spec.id, result_stem(spec)) == (retrieval, variant, text, stem)
    assert spec.embeds == (retrieval != "bm25")


@pytest.mark.parametrize("text, message", [
    ("bm25:late:recursive:256", "bm25 embeds nothing, so late chunking does not apply"),
    ("rerank:recursive:256", "rerank: (re-scoring the top 50 of 'recursive:256') runs in chunk-eval"),
    ("rerank:hybrid:headers:recursive:256", "not in chunk_with; use 'hybrid:headers:recursive:256' here"),
    ("late:headers:recursive:256", "embedding variants (late, headers) go first, once"),
    ("headers:hybrid:recursive:256", "retrieval modes (bm25, hybrid) and rerank come before them"),
    ("bm25:hybrid:recursive:256", "misplaced or repeated"),
])
def test_bad_prefixes_are_explained(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_strategy(text)


def test_a_refused_strategy_is_one_line_with_status_2(folder, tmp_path, capsys, toy_model):
    docs, questions = folder
    assert main([str(docs), str(questions), "--strategy", "bm25:late:fixed:12", "--no-cache", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bm25 embeds nothing" in err


# ---------------------------------------------------------------------------
# The exact budget, answer recall, openers and causes in evaluation
# ---------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 50), max_size=12), st.integers(1, 300))
def test_exact_budget_fills_the_budget_or_runs_out(counts, budget):
    taken = exact_budget(counts, budget)
    assert sum(taken) == min(budget, sum(counts))
    assert all(t == c for t, c in zip(taken[:-1], counts)), "every chunk but the last is whole"
    if taken:
        assert 0 <= taken[-1] <= counts[len(taken) - 1]


def test_exact_budget_by_example():
    assert exact_budget([10, 20, 30], 25) == [10, 15]
    assert exact_budget([10, 15, 30], 25) == [10, 15]
    assert exact_budget([5], 25) == [5] and exact_budget([], 3) == []
    with pytest.raises(ValueError, match="budget >= 1"):
        exact_budget([3], 0)
    with pytest.raises(ValueError, match=r"token_counts\[1\]"):
        exact_budget([3, -1], 10)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab cdé,\n日本🙂")), max_size=40), st.integers(0, 45))
def test_token_prefix_end_keeps_whole_tokens_only(text, n):
    encoding = get_encoding("cl100k_base")
    ids = encoding.encode_ordinary(text)
    end = token_prefix_end(text, n)
    prefix_bytes = b"".join(encoding.decode_single_token_bytes(t) for t in ids[:n])
    expected = len(prefix_bytes.decode("utf-8", errors="ignore")) if n < len(ids) else len(text)
    assert end == expected
    assert text[:end].encode("utf-8") == prefix_bytes[:len(text[:end].encode("utf-8"))]


def test_answer_held_needs_every_quote_wholly_in_one_chunk():
    quotes = [[("a", 10, 20), ("b", 0, 10)], [("a", 30, 35)]]
    assert answer_held([("a", 0, 40)], quotes)
    assert answer_held([("b", 0, 10), ("a", 25, 40)], quotes)
    assert not answer_held([("a", 0, 15), ("a", 15, 40)], quotes), "split over two chunks is not held"
    assert not answer_held([("a", 0, 25)], quotes), "one quote of two"


def test_openers_are_notebook_06s_list():
    cell = next("".join(c["source"]) for c in json.loads(
        (ROOT / "notebooks" / "06_late_chunking_xr12.ipynb").read_text(encoding="utf-8"))["cells"]
        if c["cell_type"] == "code" and "".join(c["source"]).startswith("OPENERS = {"))
    namespace: dict = {}
    exec(cell[:cell.index("HEADINGS")], namespace)
    assert {k: tuple(v) for k, v in namespace["OPENERS"].items()} == REFERENCE_OPENERS
    assert orphan_opener("# XR-12\n\n## Seals\n\nIts seal wears first.") == "Its"
    assert orphan_opener("Esto obliga a cambiarlo.") == "Esto"
    assert orphan_opener("Itself, the seal wears.") is None and orphan_opener("The seal wears.") is None


def test_miss_cause_first_match_wins():
    docs = {"a": "The pump runs. Its seal wears first and must be checked.", "b": "Other text here."}
    quote = [[("a", 15, 56)]]
    assert miss_cause([("b", 0, 16)], [("a", 0, 57)], quote, docs) == "wrong_document"
    assert miss_cause([("a", 0, 20)], [("a", 0, 20), ("a", 20, 57)], quote, docs) == "split"
    assert miss_cause([("a", 0, 14)], [("a", 15, 57)], quote, docs) == "orphan"
    assert miss_cause([("a", 15, 20)], [("a", 0, 57)], quote, docs) == "self_contained"
    assert set(CAUSES) == {"wrong_document", "split", "orphan", "self_contained"}


# ---------------------------------------------------------------------------
# The verdict, intervals, per-question records
# ---------------------------------------------------------------------------


def test_verdict_and_intervals_are_the_statistics_of_the_per_question_values(folder):
    docs, questions = folder
    for metric in ("recall_at_k", "span_recall"):
        report = evaluate(docs, questions, STRATEGIES, k=2, metric=metric, embedder=ToyEmbedder(), cache=None)
        per_question = {r.strategy: r.per_question[metric] for r in report.results}
        costs = {r.strategy: (r.returned_tokens, r.index_bytes) for r in report.results}
        assert report.verdict == verdict(per_question, costs=costs, metric=metric)
        data = report.to_dict()
        assert data["verdict"] == report.verdict.as_dict() and data["verdict"]["metric"] == metric
        assert data["verdict_text"] == "verdict: " + report.verdict.text()
        for r, row in zip(report.results, data["results"]):
            for m in METRIC_NAMES:
                assert r.metrics[m] == pytest.approx(np.mean(r.per_question[m]))
                iv = mean_interval(r.per_question[m])
                assert row["intervals"][m] == [round(iv.low, 6), round(iv.high, 6)]
        keys = [-r.metrics[metric] for r in report.results]
        assert keys == sorted(keys), "rows come best first on the verdict's metric"


def test_the_verdict_is_printed_first_with_warnings_and_the_table(folder, capsys, toy_model):
    docs, questions = folder
    assert main([str(docs), str(questions), *(arg for s in STRATEGIES for arg in ("--strategy", s)), "--k", "2",
                 "--no-cache", "--quiet"]) == 0
    out = without_plan(capsys.readouterr().out).splitlines()
    assert out[0].startswith("verdict: ") and "as good as the leader" in out[0]
    table_head = next(line for line in out if line.startswith("strategy "))
    assert table_head.split() == ["strategy", "recall@2", "95%", "CI", "answer", "recall@2", "returned", "tokens",
                                  "vectors", "index", "s", "verdict"], "the decision columns"
    assert main([str(docs), str(questions), *(arg for s in STRATEGIES for arg in ("--strategy", s)), "--k", "2",
                 "--no-cache", "--quiet", "--all-columns"]) == 0
    out = capsys.readouterr().out.splitlines()
    heads = [line for line in out if line.startswith("strategy ")]
    assert "recall@2 95% CI" in heads[0] and "returned tokens" in heads[0] and "misses: split" in heads[0]
    assert "median tokens" in heads[1] and "mid-sentence ends" in heads[1], "the chunk health table"
    assert "query ms" in heads[2] and "index s" in heads[2], "the cost table"


def test_budget_cost_order_and_one_strategy(folder):
    docs, questions = folder
    report = evaluate(docs, questions, STRATEGIES, budget=30, embedder=ToyEmbedder(), cache=None)
    assert all(r.returned_tokens == 30 for r in report.results), "every question gets exactly 30 tokens"
    costs = {r.strategy: (r.index_bytes, r.embed_tokens) for r in report.results}  # not seconds: they vary
    assert report.verdict.cheapest_in_play == min(report.verdict.in_play, key=lambda s: costs[s])
    single = evaluate(docs, questions, ["fixed:12"], embedder=ToyEmbedder(), cache=None)
    assert single.verdict is None and single.to_dict()["verdict"] is None
    assert single.verdict_text().startswith("verdict: none (one strategy")


def test_per_question_records(folder):
    docs, questions = folder
    report = evaluate(docs, questions, ["fixed:12", "late:fixed:12"], k=2, embedder=ToyEmbedder(), cache=None)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["questions"] == len(QUESTIONS) and len(data["per_question"]) == len(QUESTIONS)
    assert [q["id"] for q in data["per_question"]] == [q["id"] for q in QUESTIONS]
    for i, record in enumerate(data["per_question"]):
        assert record["question"] == QUESTIONS[i]["question"]
        for r in report.results:
            got = record["results"][r.strategy]
            assert got["rank"] == (r.first_rank[i] or None)
            assert got["metrics"] == {m: round(r.per_question[m][i], 6) for m in METRIC_NAMES}
            assert got["cause"] == r.causes[i] and (got["cause"] is None) == (got["metrics"]["answer_recall_at_k"] == 1)
            assert len(got["retrieved"]) == 2
            for span in got["retrieved"]:
                assert set(span) == {"document", "start", "end"}
                assert DOCS[span["document"]][span["start"]:span["end"]]
    for r in report.results:
        returned = [sum(count_tokens(DOCS[s["document"]][s["start"]:s["end"]]) for s in q["results"][r.strategy]
                        ["retrieved"]) for q in data["per_question"]]
        assert r.returned_tokens == pytest.approx(np.mean(returned))
    assert data["versions"]["model"] == "toy" and data["versions"]["tokenizer"].startswith("cl100k_base")
    assert re.fullmatch(r"[0-9a-f]{64}", data["inputs_sha256"])


def test_pages_of_a_paged_document_are_readers_page_span():
    text = "page one text\fpage two is here\fthree"
    doc = Document("r.pdf", text, kind="pdf", page_ends=tuple(i for i, c in enumerate(text) if c == "\f"))
    for start, end in [(0, 5), (10, 20), (14, 30), (5, 36), (31, 36), (13, 14)]:
        record = _span_record(doc, start, end)
        assert (record["page_start"], record["page_end"]) == page_span(text, start, end)
    assert "page_start" not in _span_record(Document("a.txt", text), 0, 5), "only paged documents carry pages"


def test_inputs_sha256_changes_with_the_documents(folder, tmp_path):
    docs, questions = folder
    first = evaluate(docs, questions, ["fixed:12"], embedder=ToyEmbedder(), cache=None).inputs_sha256
    again = evaluate(docs, questions, ["fixed:20"], embedder=ToyEmbedder(), cache=None).inputs_sha256
    (docs / "rules.rst").write_text(DOCS["rules.rst"] + "\nOne more line.\n", encoding="utf-8")
    changed = evaluate(docs, questions, ["fixed:12"], embedder=ToyEmbedder(), cache=None).inputs_sha256
    assert first == again != changed


# ---------------------------------------------------------------------------
# Warnings
# ---------------------------------------------------------------------------


def test_warnings(folder):
    docs, questions = folder
    report = evaluate(docs, questions, ["fixed:100000", "recursive:100000"], embedder=ToyEmbedder(), cache=None)
    text = "\n".join(report.warnings)
    assert "fixed:100000: the median chunk holds 100% of its document; every document is one chunk" in text
    assert 'question b: the quote "Spare seals are kept in bin four" occurs in notes/faq.txt and pump.md' in text
    assert "question c:" not in text, "a question with its document is not ambiguous"
    assert "100% of the questions are hits in the top 5 for every strategy: the set cannot separate them" in text
    assert report.to_dict()["warnings"] == report.warnings
    small = evaluate(docs, questions, ["fixed:8", "fixed:12"], k=1, embedder=ToyEmbedder(), cache=None)
    assert not any("of its document" in w or "cannot separate" in w for w in small.warnings)
    assert "fixed:8: the median chunk holds 8 tokens, too few to hold most answers whole" in "\n".join(small.warnings)
    few = evaluate(docs, questions, ["recursive:64", "fixed:12"], k=10, embedder=ToyEmbedder(), cache=None)
    assert any(w.startswith("recursive:64: 4 chunks in all, no more than the 10 returned") for w in few.warnings)


def test_a_quote_in_two_documents_warns_once_however_many_questions_use_it(tmp_path):
    """C4 (review 2026-12-02): 200 questions quoting one sentence found in two files gave 200 warnings."""
    quote = "Spare seals are kept in bin four"
    many = [{"id": f"q{i}", "question": f"Where are spare seals kept? ({i})", "answer": quote} for i in range(200)]
    docs, questions = write(tmp_path, questions=many + QUESTIONS[3:4])
    report = evaluate(docs, questions, ["fixed:12", "recursive:16:4"], embedder=ToyEmbedder(), cache=None)
    about = [w for w in report.warnings if "occurs in" in w]
    assert about == [f'200 questions (q0, q1, q2 and 197 more): the quote "{quote}" occurs in notes/faq.txt and '
                     "pump.md; add a 'document' to each to say which one is meant"]


# ---------------------------------------------------------------------------
# BM25 and hybrid
# ---------------------------------------------------------------------------


def test_bm25_and_hybrid_rank_as_the_library_does(folder):
    from course_lib.strategies import chunk_with

    docs, questions = folder
    extra = [*QUESTIONS, {"id": "g", "question": "Zebra xylophone?", "answer": "Wear gloves near the press."}]
    (questions).write_text("".join(json.dumps(q) + "\n" for q in extra), encoding="utf-8")
    report = evaluate(docs, questions, ["fixed:12", "bm25:fixed:12", "hybrid:fixed:12"], k=2, embedder=ToyEmbedder(),
                      cache=None)
    by = {r.strategy: r for r in report.results}
    chunks = [(p, c.start, c.end) for p in sorted(DOCS) for c in chunk_with("fixed:12", DOCS[p])]
    texts = [DOCS[d][s:e] for d, s, e in chunks]
    lexical = bm25_rankings(texts, [q["question"] for q in extra])
    for i, q in enumerate(report.questions):
        rel = {j for j, (d, s, e) in enumerate(chunks)
               if any(d == rd and s < re_ and rs < e for rd, rs, re_ in q.spans)}
        rank = next((r for r, j in enumerate(lexical[i], 1) if j in rel), 0)
        assert by["bm25:fixed:12"].first_rank[i] == rank
        assert by["bm25:fixed:12"].retrieved[i] == [chunks[j] for j in lexical[i][:2]]
    g = len(extra) - 1
    assert lexical[g] == [] and by["bm25:fixed:12"].retrieved[g] == [], "no shared word: nothing retrieved"
    assert all(by["bm25:fixed:12"].per_question[m][g] == 0 for m in METRIC_NAMES)
    assert by["bm25:fixed:12"].causes[g] == "wrong_document"
    assert by["bm25:fixed:12"].index_bytes > 0 and by["hybrid:fixed:12"].index_bytes > by["fixed:12"].index_bytes


def test_fusion_equals_reciprocal_rank_fusion():
    from rag_tools.chunk_eval.score import _fuse

    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(1, 30))
        dense = rng.permutation(n)
        lexical = [int(i) for i in rng.permutation(n)[: int(rng.integers(0, n + 1))]]
        assert _fuse(dense, lexical).tolist() == reciprocal_rank_fusion([dense.tolist(), lexical])


# ---------------------------------------------------------------------------
# The gate and the HTML
# ---------------------------------------------------------------------------


def _run(args, capsys):
    status = main([*map(str, args), "--no-cache", "--quiet"])
    return status, capsys.readouterr()


def _set_everywhere(data, strategies, metric, value):
    """Edit a baseline as a consistent run would have written it: each question's value and the summary mean."""
    for record in data["per_question"]:
        for strategy in strategies:
            record["results"][strategy]["metrics"][metric] = value
    for row in data["results"]:
        if row["strategy"] in strategies:
            row[metric] = value


def test_baseline_gate(folder, tmp_path, capsys, toy_model):
    docs, questions = folder
    base = tmp_path / "base.json"
    common = [docs, questions, "--strategy", "fixed:12", "--strategy", "late:fixed:12", "--k", "2"]
    assert _run([*common, "--json", base], capsys)[0] == 0
    status, out = _run([*common, "--baseline", base], capsys)
    assert status == 0 and "no strategy is worse" in out.out

    data = json.loads(base.read_text(encoding="utf-8"))
    _set_everywhere(data, ["fixed:12"], "recall_at_k", 1.0)
    better = tmp_path / "better.json"
    better.write_text(json.dumps(data), encoding="utf-8")
    report = evaluate(docs, questions, ["fixed:12"], k=2, embedder=ToyEmbedder(), cache=None)
    delta = paired_interval(report.results[0].per_question["recall_at_k"], [1.0] * len(QUESTIONS))
    status, out = _run([*common, "--baseline", better], capsys)
    lines = out.err.splitlines()
    assert (status == 1) == (delta.high < 0)
    if status == 1:
        assert lines == [f"chunk-eval: regression: fixed:12: recall_at_k {delta.mean:+.3f} [{delta.low:+.3f}, "
                         f"{delta.high:+.3f}] against {better} (95% paired interval below zero)"]

    for change, message in [
        (lambda d: d.update(inputs_sha256="0" * 64), "not comparable: the documents or questions differ"),
        (lambda d: d["per_question"][0].update(id="renamed"), "not comparable: the question ids differ"),
        (lambda d: d.update(k=5), "not comparable: k is 2 here and 5 in"),
        (lambda d: [r["results"].pop("late:fixed:12") for r in d["per_question"]],
         "not comparable: late:fixed:12 or its recall_at_k is not in"),
    ]:
        data = json.loads(base.read_text(encoding="utf-8"))
        change(data)
        other = tmp_path / "other.json"
        other.write_text(json.dumps(data), encoding="utf-8")
        status, out = _run([*common, "--baseline", other], capsys)
        assert status == 2 and out.err.count("\n") == 1 and message in out.err, out.err
    (tmp_path / "junk.json").write_text("[1]", encoding="utf-8")
    status, out = _run([*common, "--baseline", tmp_path / "junk.json"], capsys)
    assert status == 2 and "is not a chunk-eval JSON file" in out.err and out.out == ""


def test_the_gate_fails_a_strategy_that_got_worse(folder, tmp_path, capsys, toy_model):
    """A baseline whose per-question recall is 1 everywhere, against a run that misses most at k=1."""
    docs, questions = folder
    base = tmp_path / "base.json"
    common = [docs, questions, "--strategy", "fixed:8", "--strategy", "fixed:16", "--k", "1"]
    assert _run([*common, "--json", base], capsys)[0] == 0
    data = json.loads(base.read_text(encoding="utf-8"))
    _set_everywhere(data, ["fixed:8", "fixed:16"], "recall_at_k", 1.0)
    base.write_text(json.dumps(data), encoding="utf-8")
    report = evaluate(docs, questions, ["fixed:8", "fixed:16"], k=1, embedder=ToyEmbedder(), cache=None)
    failing = [r.strategy for r in report.results
               if paired_interval(r.per_question["recall_at_k"], [1.0] * len(QUESTIONS)).high < 0]
    assert failing, "this set-up should make at least one strategy fail"
    status, out = _run([*common, "--baseline", base], capsys)
    assert status == 1 and [line.split(": ")[2] for line in out.err.splitlines()] == failing


def _one_question(data, value):
    data["per_question"][1]["results"]["fixed:12"]["metrics"]["recall_at_k"] = value


@pytest.mark.parametrize("edit, message", [
    (lambda d: _one_question(d, float("nan")), "per_question[1] fixed:12 recall_at_k is nan; every per-question "
                                                "value must be a number from 0 to 1"),
    (lambda d: _one_question(d, float("inf")), "recall_at_k is inf; every per-question value must be a number"),
    (lambda d: _set_everywhere(d, ["fixed:12"], "recall_at_k", 5.0), "recall_at_k is 5.0; every per-question"),
    (lambda d: _set_everywhere(d, ["fixed:12"], "mrr", -1), "mrr is -1; every per-question value"),
    (lambda d: _one_question(d, "1.0"), "recall_at_k is '1.0'; every per-question value must be a number"),
    (lambda d: _one_question(d, None), "recall_at_k is None; every per-question value must be a number"),
    (lambda d: d["results"][0].update(iou=d["results"][0]["iou"] + 0.01), "is not the mean of its"),
    (lambda d: _one_question(d, 1.0 - d["per_question"][1]["results"]["fixed:12"]["metrics"]["recall_at_k"]),
     "its fixed:12 recall_at_k ("),
    (lambda d: d["per_question"].pop(), f"counts {len(QUESTIONS)} questions but holds {len(QUESTIONS) - 1}"),
], ids=["nan", "infinity", "above-1", "negative", "string", "null", "summary-edited", "value-edited", "cut"])
def test_the_gate_refuses_a_baseline_it_cannot_trust(folder, tmp_path, capsys, toy_model, edit, message):
    """C1 (review 2026-12-02): NaN gave exit 1 and a traceback, 5.0 a 'regression', a hand edit was trusted."""
    docs, questions = folder
    base = tmp_path / "base.json"
    common = [docs, questions, "--strategy", "fixed:12", "--strategy", "recursive:16:4", "--k", "2"]
    assert _run([*common, "--json", base], capsys)[0] == 0
    data = json.loads(base.read_text(encoding="utf-8"))
    edit(data)
    base.write_text(json.dumps(data), encoding="utf-8")
    status, out = _run([*common, "--baseline", base], capsys)
    assert status == 2 and out.out == "", "refused before any work"
    assert out.err.count("\n") == 1 and message in out.err and "write it again with --json" in out.err, out.err


def test_the_gate_needs_two_questions(tmp_path, capsys, toy_model):
    """C2 (review 2026-12-02): with one question the gate passed against a baseline better everywhere."""
    docs, questions = write(tmp_path, questions=QUESTIONS[:1])
    base = tmp_path / "base.json"
    common = [docs, questions, "--strategy", "fixed:12", "--strategy", "recursive:16:4"]
    assert _run([*common, "--json", base], capsys)[0] == 0
    data = json.loads(base.read_text(encoding="utf-8"))
    _set_everywhere(data, ["fixed:12", "recursive:16:4"], "recall_at_k", 1.0)
    base.write_text(json.dumps(data), encoding="utf-8")
    status, out = _run([*common, "--baseline", base], capsys)
    assert status == 2 and out.out == "" and out.err.count("\n") == 1
    assert "holds 1 question(s); a gate needs at least 2" in out.err
    report = evaluate(docs, questions, ["fixed:12"], embedder=ToyEmbedder(), cache=None)
    with pytest.raises(chunk_eval.ChunkEvalError, match="this run has 1 question"):
        regressions(report, data)


def test_html_puts_the_verdict_and_warnings_first_and_opens_every_question(folder):
    docs, questions = folder
    report = evaluate(docs, questions, STRATEGIES, k=1, embedder=ToyEmbedder(), cache=None)
    page = render_html(report)
    where = [page.index(f'id="{name}"') for name in ("verdict", "forest", "warnings", "results")]
    assert where == sorted(where)
    assert page.count("data:image/png;base64,") == 3, "the forest plot, the size plots and the cost plot, inline"
    assert page.count('<details class="question"') == len(QUESTIONS)
    assert "<mark>" in page and "missed: " in page
    for r in report.results:
        for cause in set(filter(None, r.causes)):
            assert cause in page


def test_malformed_jsonl_names_the_column_once(tmp_path, capsys, toy_model):
    docs, questions = write(tmp_path)
    questions.write_text(json.dumps(QUESTIONS[0]) + "\n{'question': 1}\n", encoding="utf-8")
    status, out = _run([docs, questions, "--strategy", "fixed:12"], capsys)
    assert status == 2 and "at column 2" in out.err and "at at" not in out.err
