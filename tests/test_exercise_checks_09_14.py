"""The self-checks of notebooks 09, 11 and 14 cannot be fooled (issue 33).

Each test runs an exercise's self-check cell as the notebook has it, with the learner's function replaced:
by a plausible wrong answer, which the check must reject (`SelfCheckError`), and by the notebook's reference
solution, which it must accept. Most cells are run on the results files the notebooks read, so no model is
loaded. Where a check needs more, the tests run only the cells it needs: 9.1 and 13.2 judge what the real
model does (its setup cell, loaded once for the module); 13.1 reads the capstone files; 13.3's runs are
made-up scores judged by `stats.verdict`; 14.1 and 14.3 use a LanceDB store filled by a small deterministic
stand-in encoder.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import zlib
from pathlib import Path
from types import SimpleNamespace

import nbformat
import numpy as np
import pytest

from course_lib import evaluation, exercises, stats
from course_lib.exercise_hints import EXPECTED
from course_lib.exercises import SelfCheckError
from course_lib.late_interaction import maxsim
from scripts import build_student_edition as edition

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


def _notebook(prefix: str) -> nbformat.NotebookNode:
    return nbformat.read(next(NOTEBOOKS.glob(f"{prefix}_*.ipynb")), as_version=4)


def _cells(prefix: str, name: str) -> tuple[str, str]:
    """The solution cell's and the self-check cell's source of one exercise."""
    notebook = _notebook(prefix)
    exercise = next(e for e in edition.find_exercises(notebook) if e.name == name)
    return notebook.cells[exercise.solution].source, notebook.cells[exercise.check].source


def _cell(prefix: str, marker: str) -> str:
    """The source of the one code cell of a notebook that contains `marker`."""
    found = [c.source for c in _notebook(prefix).cells if c.cell_type == "code" and marker in c.source]
    assert len(found) == 1, (prefix, marker, len(found))
    return found[0]


def _base() -> dict:
    return {"np": np, "json": json, "EXPECTED": EXPECTED, "check_function": exercises.check_function,
            "check_problems": exercises.check_problems, "check_true": exercises.check_true,
            "exact_budget": evaluation.exact_budget, "paired_interval": stats.paired_interval,
            "maxsim": maxsim}


def run_check(prefix: str, name: str, namespace: dict, **learner):
    """Run the exercise's check cell in `namespace` with the learner's function(s); a wrong answer raises."""
    _, check = _cells(prefix, name)
    exec(check, {**namespace, **learner})


def reference(prefix: str, name: str, function: str, namespace: dict):
    solution, _ = _cells(prefix, name)
    scope = dict(namespace)
    exec(solution, scope)
    return scope[function]


# --- notebook 09 -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def nb09() -> dict:
    """Section 6's sweep and its paired gaps, read from results/size_sweep as the notebook reads them."""
    namespace = {**_base(), "Path": Path, "RESULTS": ROOT / "results"}
    exec(_cell("09", "SIZE_RUNS = RESULTS"), namespace)
    exec(_cell("09", "gaps, tied = {}, {}"), namespace)
    return namespace


def test_9_2_rejects_a_passing_choice_that_indexes_more_vectors(nb09, capsys):
    gap = nb09["gaps"]["budget_1500", "recursive:64"]
    wrong = lambda: ("recursive:64", 1500, (round(100 * gap.low, 1), round(100 * gap.high, 1)))  # noqa: E731
    with pytest.raises(SelfCheckError):
        run_check("09", "Exercise 9.2", nb09, my_plan=wrong)


def test_9_2_rejects_a_choice_below_the_target_and_a_wrong_interval(nb09):
    gap = nb09["gaps"]["budget_1000", "recursive:256"]
    with pytest.raises(SelfCheckError):
        run_check("09", "Exercise 9.2", nb09, my_plan=lambda: ("recursive:256", 1000, (gap.low, gap.high)))
    with pytest.raises(SelfCheckError):  # the right choice, its interval as fractions instead of points
        gap = nb09["gaps"]["budget_2000", "recursive:256"]
        run_check("09", "Exercise 9.2", nb09, my_plan=lambda: ("recursive:256", 2000, (gap.low, gap.high)))


def test_9_2_accepts_the_reference(nb09, capsys):
    run_check("09", "Exercise 9.2", nb09, my_plan=reference("09", "Exercise 9.2", "my_plan", nb09))
    assert "✓ Exercise 9.2" in capsys.readouterr().out


def whole_chunks_only(token_counts, budget):
    """Wrong: the whole-chunk rule (no cut of the next chunk)."""
    return list(token_counts[:evaluation.budget_cutoff(token_counts, budget)]) if token_counts else []


def trailing_zero(token_counts, budget):
    """Wrong: keeps going once the budget is spent, so a filled budget ends in a 0."""
    taken, left = [], budget
    for n in token_counts:
        taken.append(min(n, left))
        left -= taken[-1]
    return taken


def skips_what_does_not_fit(token_counts, budget):
    """Wrong: skips a chunk that does not fit and takes later, smaller ones whole."""
    taken, left = [], budget
    for n in token_counts:
        if n <= left:
            taken.append(n)
            left -= n
    return taken


@pytest.mark.parametrize("wrong", [whole_chunks_only, trailing_zero, skips_what_does_not_fit])
def test_9_3_rejects_wrong_budgets(wrong):
    with pytest.raises(SelfCheckError):
        run_check("09", "Exercise 9.3", _base(), my_exact_budget=wrong)


def test_9_3_accepts_the_reference_and_the_library(capsys):
    run_check("09", "Exercise 9.3", _base(), my_exact_budget=reference("09", "Exercise 9.3", "my_exact_budget", {}))
    run_check("09", "Exercise 9.3", _base(), my_exact_budget=evaluation.exact_budget)
    assert capsys.readouterr().out.count("✓ Exercise 9.3") == 2


# --- notebook 11 -------------------------------------------------------------------------------------

def _maxsim_keeping_special_rows(q, c):
    q, c = np.asarray(q), np.asarray(c)
    q, c = q / np.linalg.norm(q, axis=1, keepdims=True), c / np.linalg.norm(c, axis=1, keepdims=True)
    return float((q @ c.T).max(axis=1).sum())


def _maxsim_unnormalized(q, c):
    q, c = np.asarray(q)[1:-1], np.asarray(c)[1:-1]
    return float((q @ c.T).max(axis=1).sum())


def _maxsim_wrong_axis(q, c):
    q, c = np.asarray(q)[1:-1], np.asarray(c)[1:-1]
    q, c = q / np.linalg.norm(q, axis=1, keepdims=True), c / np.linalg.norm(c, axis=1, keepdims=True)
    return float((q @ c.T).max(axis=0).sum())


@pytest.mark.parametrize("wrong", [_maxsim_keeping_special_rows, _maxsim_unnormalized, _maxsim_wrong_axis])
def test_11_1_rejects_wrong_maxsim(wrong):
    with pytest.raises(SelfCheckError):
        run_check("11", "Exercise 11.1", _base(), my_maxsim=wrong)


def test_11_1_accepts_the_reference(capsys):
    run_check("11", "Exercise 11.1", _base(), my_maxsim=reference("11", "Exercise 11.1", "my_maxsim", {"np": np}))
    assert "✓ Exercise 11.1" in capsys.readouterr().out


@pytest.fixture(scope="module")
def nb11() -> dict:
    results = ROOT / "results"
    li = {n: json.loads((results / f"late_interaction_{n}.json").read_text(encoding="utf-8"))
          for n in ("collection", "reports", "chroma_subset")}
    return {**_base(), "li": li, "c_li": {k: v["methods"] for k, v in li.items()}}


def ignores_the_interval(table, max_index_ratio):
    """Wrong: the largest gain within the budget, whether or not its interval clears zero."""
    ok = {m: r for m, r in table.items() if r["gain"] > 0 and r["index_ratio"] <= max_index_ratio}
    return max(ok, key=lambda m: ok[m]["gain"]) if ok else "naive"


def ignores_the_budget(table, max_index_ratio):
    """Wrong: the largest gain clear of zero, whatever its index costs."""
    ok = {m: r for m, r in table.items() if r["low"] > 0}
    return max(ok, key=lambda m: ok[m]["gain"]) if ok else "naive"


@pytest.mark.parametrize("wrong", [ignores_the_interval, ignores_the_budget])
def test_11_2_rejects_wrong_rules(nb11, wrong):
    with pytest.raises(SelfCheckError):
        run_check("11", "Exercise 11.2", nb11, choose=wrong)


def test_11_2_accepts_the_reference(nb11, capsys):
    run_check("11", "Exercise 11.2", nb11, choose=reference("11", "Exercise 11.2", "choose", {}))
    assert "✓ Exercise 11.2" in capsys.readouterr().out


# --- notebook 14 -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def nb14() -> dict:
    namespace = {**_base(), "RESULTS": ROOT / "results"}
    source = _cell("14", "def rate(stage, workers")
    exec(source[:source.index("print(")], namespace)  # the results file and `rate`, without the table
    return namespace


def _hours_per_minute(n_docs, chars_per_doc, chars_per_s, workers):
    return n_docs * chars_per_doc / (chars_per_s * workers) / 60


def _hours_without_workers(n_docs, chars_per_doc, chars_per_s, workers):
    return n_docs * chars_per_doc / chars_per_s / 3600


def _workers_at_one_worker_rate(namespace):
    def workers_for_a_day():
        per_worker, workers = namespace["rate"]("chunk+embed+store", 1), 1
        while 10_000_000 * 5_000 / (per_worker * workers) / 3600 > 24:
            workers += 1
        return workers
    return workers_for_a_day


@pytest.mark.parametrize("wrong", [_hours_per_minute, _hours_without_workers])
def test_14_2_rejects_wrong_hours(nb14, wrong):
    right_workers = lambda: EXPECTED["Exercise 14.2"]["workers"]  # noqa: E731
    with pytest.raises(SelfCheckError):
        run_check("14", "Exercise 14.2", nb14, embedding_hours=wrong, workers_for_a_day=right_workers)


def test_14_2_rejects_the_rate_of_a_worker_alone(nb14):
    hours = reference("14", "Exercise 14.2", "embedding_hours", nb14)
    with pytest.raises(SelfCheckError):
        run_check("14", "Exercise 14.2", nb14, embedding_hours=hours,
                  workers_for_a_day=_workers_at_one_worker_rate(nb14))


def test_14_2_accepts_the_reference(nb14, capsys):
    scope = dict(nb14)
    exec(_cells("14", "Exercise 14.2")[0], scope)
    run_check("14", "Exercise 14.2", nb14, embedding_hours=scope["embedding_hours"],
              workers_for_a_day=scope["workers_for_a_day"])
    assert capsys.readouterr().out.count("✓ Exercise 14.2") == 2


def quiet():
    return contextlib.redirect_stdout(io.StringIO())


# --- notebook 09, exercise 9.1: with the model -------------------------------------------------------

@pytest.fixture(scope="module")
def nb09_model() -> dict:
    """The setup cell (the model, `cached`), section 1's report and `mixes_topics`: what the 9.1 check uses."""
    namespace: dict = {"__name__": "__main__"}
    with quiet():
        exec(_cell("09", "cached = CachingEncoder(model)"), namespace)
        exec(_cell("09", "TOPIC_STARTS = ["), namespace)
        source = _cell("09", "def mixes_topics(chunk)")
        exec(source[:source.index("\nrecursive = ")], namespace)  # the function, not the section's three runs
    return namespace


@pytest.mark.parametrize("settings", [
    {},                                   # the defaults: one chunk holds two topics
    {"percentile": 85, "buffer": 2},      # section 1's breakpoint run: the second change blurred
    {"method": "cluster"},                # the right method with its default pieces: two chunks mix topics
    {"percentile": 50},                   # topics apart, but 7 chunks: a cut at every other sentence
])
def test_9_1_rejects_settings_that_mix_topics_or_cut_too_often(nb09_model, settings):
    with pytest.raises(SelfCheckError):
        run_check("09", "Exercise 9.1", nb09_model, my_settings=lambda: dict(settings))


def test_9_1_accepts_the_reference(nb09_model, capsys):
    run_check("09", "Exercise 9.1", nb09_model, my_settings=reference("09", "Exercise 9.1", "my_settings", {}))
    assert "✓ Exercise 9.1" in capsys.readouterr().out


# --- notebook 13 -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def nb13(tmp_path_factory) -> dict:
    """The setup cell (the embedder), the documents and questions, and `paired`, with WORK in a test folder."""
    import torch

    threads = torch.get_num_threads()  # the setup cell sets 1 thread: give the other tests theirs back
    namespace: dict = {"__name__": "__main__"}
    try:
        with quiet():
            exec(_cell("13", "embedder = SentenceTransformerEmbedder()"), namespace)
    finally:
        torch.set_num_threads(threads)
    shutil.rmtree(namespace["WORK"], ignore_errors=True)
    capstone = ROOT / "data" / "capstone"
    namespace.update(WORK=tmp_path_factory.mktemp("chunk_eval"), CAPSTONE=capstone, DOCS=capstone / "docs",
                     QUESTIONS=capstone / "questions.jsonl")
    with quiet():
        exec(_cell("13", "documents, skipped = read_documents(DOCS)"), namespace)
        exec(_cell("13", "text_of = {doc.path: doc.text"), namespace)
        exec(_cell("13", 'typed = {"question"'), namespace)
        source = _cell("13", "def paired(report, a, b)")
        exec(source[:source.index("\npairs = ")], namespace)  # the function, not section 5's table
    return namespace


@pytest.mark.parametrize("quote", [
    "the pressure sensor is guaranteed for two years",       # the quote as typed from memory: not in the documents
    "Pressure sensor guaranteed for two years",               # reworded, still not a quote
    "guaranteed for five years from the date of purchase",    # a real quote, next to it: the controller's warranty
])
def test_13_1_rejects_quotes_that_are_not_the_sensors_warranty(nb13, quote):
    with pytest.raises(SelfCheckError):
        run_check("13", "Exercise 13.1", nb13, fixed_quote=lambda: quote)


def test_13_1_accepts_the_reference(nb13, capsys):
    run_check("13", "Exercise 13.1", nb13, fixed_quote=reference("13", "Exercise 13.1", "fixed_quote", {}))
    assert "✓ Exercise 13.1" in capsys.readouterr().out


@pytest.fixture(scope="module")
def nb13_grid(nb13) -> dict:
    """`grid` with the one row the 13.2 reference reads (recursive:128 at k=1), on the real model."""
    grid = nb13["evaluate"](nb13["DOCS"], nb13["QUESTIONS"], ["recursive:128"], k=1, embedder=nb13["embedder"],
                            cache=nb13["WORK"] / "cache")
    return {**nb13, "grid": grid}


@pytest.mark.parametrize("answer", [
    ("split", "headers:recursive:128"),                   # the right fix, the wrong cause
    ("wrong_document", "late:recursive:128"),             # one change that does not fix a wrong document
    ("wrong_document", "hybrid:headers:recursive:128"),   # two changes at once
    ("wrong_document", "recursive 128 with headers"),     # not a strategy id
])
def test_13_2_rejects_wrong_causes_and_fixes(nb13_grid, answer):
    with pytest.raises(SelfCheckError):
        run_check("13", "Exercise 13.2", nb13_grid, my_diagnosis=lambda: answer)


def test_13_2_accepts_the_other_fix_for_a_wrong_document(nb13_grid, capsys):
    """hybrid: is the other fix chunk-eval names for a wrong document; with the shared BM25 tokenizer (options,
    one-letter words and stems kept, issue 45) it returns q19 whole at k=1 too, so the check accepts it."""
    run_check("13", "Exercise 13.2", nb13_grid, my_diagnosis=lambda: ("wrong_document", "hybrid:recursive:128"))
    assert "✓ Exercise 13.2" in capsys.readouterr().out


def test_13_2_accepts_the_reference(nb13_grid, capsys):
    my_diagnosis = reference("13", "Exercise 13.2", "my_diagnosis", nb13_grid)
    run_check("13", "Exercise 13.2", nb13_grid, my_diagnosis=my_diagnosis)
    out = capsys.readouterr().out
    assert "✓ Exercise 13.2" in out and "headers:recursive:128 against recursive:128" in out, out


def _made_up_report(hits: dict[str, int], tokens: dict[str, int], n: int = 27,
                    same: bool = False) -> SimpleNamespace:
    """A report as the 13.3 check reads it: per-question recall (the first `hits[s]` questions found, with
    a different, seeded order per strategy, or one shared order with `same`), its costs, and the verdict
    `stats.verdict` gives on them (costs: the tokens returned, as chunk-eval's `cost_key` without a budget)."""
    scores = {}
    for s, found in hits.items():
        order = np.random.default_rng(0 if same else zlib.crc32(s.encode())).permutation(n)
        row = np.zeros(n)
        row[order[:found]] = 1.0
        scores[s] = row.tolist()
    results = [SimpleNamespace(strategy=s, returned_tokens=tokens[s], index_bytes=1000 * tokens[s],
                               cost_key=lambda budget, t=tokens[s]: (t,), per_question={"recall_at_k": scores[s]})
               for s in hits]
    return SimpleNamespace(verdict=stats.verdict(scores, costs=tokens), results=results, budget=None)


@pytest.fixture(scope="module")
def nb13_runs() -> dict:
    """Four made-up runs: no winner with the cheapest row ruled out and none shown as good, a clear winner,
    everyone in play, and a close run where a cheaper strategy is shown as good as the leader."""
    runs = {
        "no winner": _made_up_report({"a:256": 20, "b:128": 19, "c:512": 18, "d:64": 6},
                                     {"a:256": 250, "b:128": 120, "c:512": 480, "d:64": 60}),
        "a winner": _made_up_report({"a:256": 27, "b:128": 6, "c:512": 5},
                                    {"a:256": 250, "b:128": 120, "c:512": 480}),
        "all close": _made_up_report({"a:256": 15, "b:128": 14, "c:512": 15},
                                     {"a:256": 250, "b:128": 120, "c:512": 480}),
        "shown as good": _made_up_report({"a:256": 200, "b:128": 196, "c:512": 198, "d:64": 150},
                                         {"a:256": 250, "b:128": 120, "c:512": 480, "d:64": 60}, n=200, same=True),
    }
    v = runs["no winner"].verdict
    assert v.winner is None and len(v.in_play) > 1 and "d:64" in v.ruled_out and v.as_good == ()
    assert runs["a winner"].verdict.winner == "a:256" and runs["all close"].verdict.ruled_out == ()
    good = runs["shown as good"].verdict
    assert good.cheapest_as_good == "b:128" and "c:512" in good.as_good and "d:64" in good.in_play + good.ruled_out
    return {**_base(), "runs": runs, "within_margin": stats.within_margin}


def _rows(report):
    return {r.strategy: r for r in report.results}


def _recall(report, s):
    return _rows(report)[s].per_question["recall_at_k"]


def _interval(report, s, level=0.90):
    iv = stats.paired_interval(_recall(report, s), _recall(report, report.verdict.leader), level=level)
    return iv.low, iv.high


def cheapest_in_play(report):
    """Wrong: the old exercise's rule, the cheapest strategy still in play (not the leader without a winner), with
    the 95% interval it asked for."""
    v = report.verdict
    s = min((s for s in v.in_play if s != v.leader or s == v.winner), key=lambda s: _rows(report)[s].returned_tokens,
            default=v.leader)
    return s, (0.0, 0.0) if s == v.leader else _interval(report, s, 0.95)


def always_the_leader(report):
    """Wrong: the leader, although no strategy is shown as good as it."""
    return report.verdict.leader, (0.0, 0.0)


def cheapest_of_all(report):
    """Wrong: the fewest tokens whatever the verdict, a ruled-out row included."""
    s = min(report.results, key=lambda r: r.returned_tokens).strategy
    return s, _interval(report, s)


def _right_choice(report):
    return report.verdict.cheapest_as_good


def ninety_five(report):
    """Wrong: the 95% interval where equivalence uses the 90% one."""
    s = _right_choice(report)
    return (None, None) if s is None else (s, (0.0, 0.0) if s == report.verdict.leader else _interval(report, s, 0.95))


def leader_minus_mine(report):
    """Wrong: the interval the other way round (the leader minus the choice)."""
    s = _right_choice(report)
    if s is None or s == report.verdict.leader:
        return (None, None) if s is None else (s, (0.0, 0.0))
    iv = stats.paired_interval(_recall(report, report.verdict.leader), _recall(report, s), level=0.90)
    return s, (iv.low, iv.high)


@pytest.mark.parametrize("wrong", [cheapest_in_play, always_the_leader, cheapest_of_all, ninety_five,
                                   leader_minus_mine])
def test_13_3_rejects_wrong_rules(nb13_runs, wrong):
    with pytest.raises(SelfCheckError):
        run_check("13", "Exercise 13.3", nb13_runs, my_rule=wrong)


def test_13_3_accepts_the_reference(nb13_runs, capsys):
    my_rule = reference("13", "Exercise 13.3", "my_rule",
                        {"paired_interval": stats.paired_interval, "within_margin": stats.within_margin})
    run_check("13", "Exercise 13.3", nb13_runs, my_rule=my_rule)
    out = capsys.readouterr().out
    assert "✓ Exercise 13.3" in out and "shown as good your rule ships b:128" in out, out


# --- notebook 14, exercises 14.1 and 14.3: a store filled by a stand-in encoder -----------------------

class ToyModel:
    """Stands in for MiniLM: a text is the normalized sum of seeded vectors of its words (deterministic)."""

    dim = 48

    def _vector(self, text: str) -> np.ndarray:
        v = sum((np.random.default_rng(zlib.crc32(w.lower().encode())).standard_normal(self.dim)
                 for w in re.findall(r"\w+", text)), np.full(self.dim, 1e-3))
        return v / np.linalg.norm(v)

    def encode(self, texts, normalize_embeddings=True, **_):
        if isinstance(texts, str):
            return self._vector(texts).astype(np.float32)
        return np.stack([self._vector(t) for t in texts]).astype(np.float32)


@pytest.fixture
def nb14_store(tmp_path) -> dict:
    """Section 1's store (the three documents, markdown:128) with the stand-in's vectors, as the checks use it."""
    if os.environ.get("COURSE_REQUIRE_STORE") != "1":
        pytest.importorskip("lancedb", reason="the vector-store extra is not installed")
    from course_lib.chunking import markdown_chunks
    from rag_tools.store import ChunkStore, chunk_rows

    model = ToyModel()
    store = ChunkStore(tmp_path / "store", dim=model.dim)
    for doc_id in ("xr12_manual", "city_report", "annual_report"):
        text = (ROOT / "data" / f"{doc_id}.md").read_text(encoding="utf-8")
        chunks = markdown_chunks(text, 128)
        store.reindex(doc_id, chunk_rows(doc_id, text, chunks, model.encode([c.text for c in chunks]),
                                         strategy="markdown:128", model="toy"))
    return {**_base(), "store": store, "model": model, "check_true": exercises.check_true}


def _city_wrong(kind):
    def city_citations(question, k, *, ns):
        store, query = ns["store"], ns["model"].encode(question, normalize_embeddings=True)
        if kind == "filter after the search":
            return [h.citation for h in store.search(query, k=k) if h.doc_id == "city_report"]
        if kind == "no filter":
            return [h.citation for h in store.search(query, k=k)]
        hits = store.search(query, k=k, where={"doc_id": "city_report"})
        if kind == "worst first":
            return [h.citation for h in reversed(hits)]
        if kind == "texts":
            return [h.text for h in hits]
        raise AssertionError(kind)
    return city_citations


@pytest.mark.parametrize("kind", ["filter after the search", "no filter", "worst first", "texts"])
def test_14_1_rejects_wrong_searches(nb14_store, kind):
    wrong = _city_wrong(kind)
    with pytest.raises(SelfCheckError) as caught:
        run_check("14", "Exercise 14.1", nb14_store, city_citations=lambda q, k: wrong(q, k, ns=nb14_store))
    assert "raised" not in str(caught.value).splitlines()[0], "the check should judge the answer, not crash on it"


def test_14_1_accepts_the_reference(nb14_store, capsys):
    run_check("14", "Exercise 14.1", nb14_store,
              city_citations=reference("14", "Exercise 14.1", "city_citations", nb14_store))
    assert "✓ Exercise 14.1" in capsys.readouterr().out


def returns_rows_written(store, doc_id):
    """Wrong: one commit, but returns what `reindex` returns (the rows written: 0), not the rows removed."""
    return store.reindex(doc_id, [])


def returns_rows_left(store, doc_id):
    """Wrong: returns the chunks left in the store."""
    store.reindex(doc_id, [])
    return len(store)


def one_commit_per_chunk(store, doc_id):
    """Wrong: deletes chunk by chunk, one commit each (a crash leaves the document half there)."""
    import lancedb

    table = lancedb.connect(str(store.path)).open_table("chunks")
    rows = store.chunks_of(doc_id)
    for row in rows:
        table.delete(f"chunk_id = '{row['chunk_id']}'")
    return len(rows)


@pytest.mark.parametrize("wrong", [returns_rows_written, returns_rows_left, one_commit_per_chunk])
def test_14_3_rejects_wrong_retires(nb14_store, wrong):
    with pytest.raises(SelfCheckError):
        run_check("14", "Exercise 14.3", nb14_store, retire=wrong)


def test_14_3_accepts_the_reference(nb14_store, capsys):
    run_check("14", "Exercise 14.3", nb14_store, retire=reference("14", "Exercise 14.3", "retire", {}))
    assert "✓ Exercise 14.3" in capsys.readouterr().out
