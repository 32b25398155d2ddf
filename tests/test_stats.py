"""Tests for course_lib.stats: brute-force references, the stored intervals it must reproduce, invariants."""

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib import stats
from course_lib.stats import (
    Interval,
    mean_interval,
    paired_interval,
    probability_best,
    questions_needed,
    verdict,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"

# ---------------------------------------------------------------------------
# Brute-force references: one resample at a time, plain Python sums
# ---------------------------------------------------------------------------


def _draws(n, resamples, seed):
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def brute_interval(values, resamples, seed, level=0.95):
    n = len(values)
    means = [sum(float(values[i]) for i in row) / n for row in _draws(n, resamples, seed)]
    tail = (100 - 100 * level) / 2
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(np.mean(values)), float(low), float(high)


def brute_verdict(per_question, resamples, seed, level=0.95, threshold=0.9, margin=1.0):
    """The issue's rules, written out loop by loop (exact ties: use integer-valued inputs)."""
    names = list(per_question)
    n = len(per_question[names[0]])
    rows = _draws(n, resamples, seed)
    shared, alone = dict.fromkeys(names, 0.0), dict.fromkeys(names, 0.0)
    for row in rows:
        means = {s: sum(float(per_question[s][i]) for i in row) / n for s in names}
        top = max(means.values())
        tied = [s for s in names if means[s] == top]
        for s in tied:
            shared[s] += 1 / len(tied) / resamples
        if len(tied) == 1:
            alone[tied[0]] += 1 / resamples
    full = {s: sum(float(x) for x in per_question[s]) / n for s in names}
    ordered = sorted(names, key=lambda s: (-full[s], s))  # the tie rule with equal costs: the name
    lead = ordered[0]
    gaps = {s: np.asarray(per_question[s], float) - np.asarray(per_question[lead], float) for s in names if s != lead}
    diffs = {s: brute_interval(gap, resamples, seed, level) for s, gap in gaps.items()}
    close = {s: brute_interval(gap, resamples, seed, 0.9) for s, gap in gaps.items()}
    ruled_out = [s for s in ordered[1:] if diffs[s][2] < 0]
    in_play = [s for s in ordered if s not in ruled_out]
    winner = lead if alone[lead] >= threshold and all(d[2] < 0 for d in diffs.values()) else None
    as_good = [s for s in ordered[1:] if -margin <= close[s][1] and close[s][2] <= margin]
    return {"winner": winner, "leader": lead, "in_play": in_play, "ruled_out": ruled_out, "shared": shared,
            "alone": alone, "diffs": diffs, "close": close, "as_good": as_good}


small_scores = st.lists(st.integers(0, 3), min_size=2, max_size=12)


@st.composite
def strategy_sets(draw, min_strategies=2, max_strategies=4):
    n = draw(st.integers(2, 12))
    k = draw(st.integers(min_strategies, max_strategies))
    column = st.lists(st.integers(0, 3), min_size=n, max_size=n)
    return {f"s{i}": draw(column) for i in range(k)}


@settings(max_examples=60, deadline=None)
@given(a=small_scores, data=st.data(), seed=st.integers(0, 2**32))
def test_paired_interval_matches_brute_force(a, data, seed):
    b = data.draw(st.lists(st.integers(0, 3), min_size=len(a), max_size=len(a)))
    expected = brute_interval(np.array(a, float) - np.array(b, float), 64, seed)
    assert tuple(paired_interval(a, b, resamples=64, seed=seed)) == pytest.approx(expected, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.floats(-5, 5, allow_nan=False), min_size=2, max_size=15), seed=st.integers(0, 99),
       level=st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_mean_interval_matches_brute_force_on_floats(values, seed, level):
    got = mean_interval(values, resamples=50, seed=seed, level=level)
    assert tuple(got) == pytest.approx(brute_interval(values, 50, seed, level), abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(per_question=strategy_sets(), seed=st.integers(0, 999))
def test_verdict_matches_brute_force(per_question, seed):
    expected = brute_verdict(per_question, 80, seed)  # values 0-3: a margin of 1 is sometimes met, sometimes not
    got = verdict(per_question, costs=dict.fromkeys(per_question, 1), resamples=80, seed=seed, margin=1.0)
    assert got.winner == expected["winner"]
    assert list(got.as_good) == expected["as_good"]
    for s, interval in expected["close"].items():
        assert tuple(got.equivalence[s]) == pytest.approx(interval, abs=1e-12)
    assert got.leader == expected["leader"]
    assert list(got.in_play) == expected["in_play"]
    assert list(got.ruled_out) == expected["ruled_out"]
    assert dict(got.p_best) == pytest.approx(expected["shared"], abs=1e-12)
    assert dict(got.p_best_alone) == pytest.approx(expected["alone"], abs=1e-12)
    for s, interval in expected["diffs"].items():
        assert tuple(got.differences[s]) == pytest.approx(interval, abs=1e-12)
    assert probability_best(per_question, resamples=80, seed=seed) == pytest.approx(expected["shared"], abs=1e-12)


# ---------------------------------------------------------------------------
# The intervals the course already stores, recomputed
# ---------------------------------------------------------------------------


def test_the_notebook_06_loop_draws_the_same_resamples():
    # notebook 06 draws one resample at a time; the matrix draw gives the same questions in the same order
    rng = np.random.default_rng(5)
    before, after = rng.random(44), rng.random(44)
    diff = after - before
    loop_rng = np.random.default_rng(0)
    means = [diff[loop_rng.integers(0, len(diff), len(diff))].mean() for _ in range(5000)]
    copy = (diff.mean(), np.percentile(means, 2.5), np.percentile(means, 97.5))
    assert tuple(paired_interval(after, before, resamples=5000, seed=0)) == pytest.approx(copy, abs=1e-15)


CONTEXT_KEYS = {"mrr": "rr", "mrr_within_document": "rr_within", "span_recall": "span_recall", "iou": "iou"}


@pytest.mark.parametrize("name", ["chroma", "collection", "reports"])
def test_reproduces_the_intervals_of_context_methods(name):
    """benchmarks/context_methods.py's `paired_interval` (5,000 resamples, seed 0) on the committed
    per-question scores. Those scores are stored rounded to 4 decimals, so the stored intervals (computed
    before rounding) can differ in the 4th decimal; the script's own code on the same rounded scores
    is the exact reference."""
    result = json.loads((RESULTS / f"context_{name}.json").read_text(encoding="utf-8"))
    assert result["setup"]["bootstrap_resamples"] == 5000
    per_question = result["per_question"]
    exact = 0
    for method, summary in result["methods"].items():
        for metric, key in CONTEXT_KEYS.items():
            a, b = np.array(per_question[method][key]), np.array(per_question["naive"][key])
            diff = a - b
            index = np.random.default_rng(0).integers(0, len(diff), size=(5000, len(diff)))
            means = diff[index].mean(axis=1)
            script = [round(float(x), 4) for x in (diff.mean(), np.percentile(means, 2.5), np.percentile(means, 97.5))]
            got = [round(x, 4) for x in paired_interval(a, b, resamples=5000, seed=0)]
            assert got == script, (method, metric)
            assert got == pytest.approx(summary["vs_naive"][metric], abs=1e-4 + 1e-12), (method, metric)
            exact += got == summary["vs_naive"][metric]
    assert exact >= 30  # most are equal to the last digit; the rest differ by 1e-4 from the rounding


def test_reproduces_a_stored_interval_exactly():
    result = json.loads((RESULTS / "context_chroma.json").read_text(encoding="utf-8"))
    bm25, naive = result["per_question"]["bm25"], result["per_question"]["naive"]
    got = paired_interval(bm25["span_recall"], naive["span_recall"], resamples=5000, seed=0)
    stored = result["methods"]["bm25"]["vs_naive"]["span_recall"]
    assert [round(x, 4) for x in got] == stored == [0.1037, 0.0669, 0.1405]


def _notebook_output(path, marker):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    [cell] = [c for c in cells if c["cell_type"] == "code" and marker in "".join(c["source"])]
    return "".join("".join(o.get("text", "")) for o in cell["outputs"] if o.get("name") == "stdout")


def _three_corpora_runs():
    runs = {}
    for path in sorted((RESULTS / "three_corpora").glob("*.json")):
        run = json.loads(path.read_text(encoding="utf-8"))
        runs[run["config"]["strategy"]] = run
    return runs


def _points(a, b):
    mean, low, high = paired_interval(a, b, resamples=2_000, seed=0)
    return f"{100 * mean:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]"


def test_reproduces_the_intervals_printed_in_notebook_09():
    runs = _three_corpora_runs()
    notebook = ROOT / "notebooks" / "09_semantic_chunking.ipynb"
    table = _notebook_output(notebook, "def paired_bootstrap")
    cell = r"\s+(\S+)\s+\[\s*(\S+),\s*(\S+)\]"
    line = re.compile(r"^(semantic:\S+)\s+(\S+)\s+(k5|budget)" + cell + cell + "$")
    rows = [line.match(text) for text in table.splitlines()[1:]]
    assert len(rows) == 16 and all(rows)
    for row in rows:
        strategy, other, view = row.group(1, 2, 3)
        for metric, groups in (("span_recall", (4, 5, 6)), ("iou", (7, 8, 9))):
            mean, low, high = row.group(*groups)
            printed = f"{float(mean):+.1f} [{float(low):+.1f}, {float(high):+.1f}]"
            assert _points(runs[strategy]["per_question"][view][metric],
                           runs[other]["per_question"][view][metric]) == printed, (strategy, other, view, metric)
    # overlap at an exact budget (section 6), from results/size_sweep, at paired_interval's default resamples
    overlap = _notebook_output(notebook, "for with_overlap in (s for s in sweep_order")
    sweep = {}
    for path in sorted((RESULTS / "size_sweep").glob("*.json")):
        run = json.loads(path.read_text(encoding="utf-8"))
        if "strategy" in run.get("config", {}):
            sweep[run["config"]["strategy"]] = run
    titles = {"k5": "5 chunks", "budget_1000": "1,000 tok", "budget_1500": "1,500 tok", "budget_2000": "2,000 tok"}
    recomputed = [overlap.splitlines()[0]]
    for name in sorted((s for s in sweep if s.count(":") == 2), key=lambda s: (s.split(":")[0], int(s.split(":")[1]))):
        base = name.rsplit(":", 1)[0]
        cells = []
        for view, title in titles.items():
            mean, low, high = paired_interval(sweep[name]["per_question"][view]["span_recall"],
                                              sweep[base]["per_question"][view]["span_recall"])
            cells.append(f"{title}: {100 * mean:+5.1f} [{100 * low:+5.1f}, {100 * high:+5.1f}]")
        recomputed.append(f"{name:17} - {base:13} " + " ".join(cells))
    assert overlap.splitlines() == recomputed


# ---------------------------------------------------------------------------
# Invariants
# ---------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(per_question=strategy_sets(), seed=st.integers(0, 99))
def test_swapping_two_strategies_negates_and_swaps_the_interval(per_question, seed):
    a, b = per_question["s0"], per_question["s1"]
    forward = paired_interval(a, b, resamples=200, seed=seed)
    backward = paired_interval(b, a, resamples=200, seed=seed)
    assert backward.mean == pytest.approx(-forward.mean, abs=1e-12)
    assert backward.low == pytest.approx(-forward.high, abs=1e-12)
    assert backward.high == pytest.approx(-forward.low, abs=1e-12)


@settings(max_examples=50, deadline=None)
@given(values=st.lists(st.integers(0, 5), min_size=2, max_size=20), copies=st.integers(2, 5),
       seed=st.integers(0, 99))
def test_identical_strategies_give_no_winner_and_share_every_win(values, copies, seed):
    per_question = {f"s{i}": values for i in range(copies)}
    result = verdict(per_question, costs={f"s{i}": copies - i for i in range(copies)}, resamples=200, seed=seed)
    assert result.winner is None
    assert result.ruled_out == ()
    assert set(result.in_play) == set(per_question)
    assert all(p == pytest.approx(1 / copies) for p in result.p_best.values())
    assert all(p == 0 for p in result.p_best_alone.values())
    assert result.cheapest_in_play == f"s{copies - 1}"
    assert result.questions_needed is None
    assert all(d == (0.0, 0.0, 0.0) for d in result.differences.values())


@settings(max_examples=50, deadline=None)
@given(per_question=strategy_sets(), seed=st.integers(0, 99), shift=st.integers(-3, 3))
def test_probabilities_sum_to_one_and_a_common_shift_changes_nothing(per_question, seed, shift):
    p = probability_best(per_question, resamples=100, seed=seed)
    assert sum(p.values()) == pytest.approx(1.0)
    shifted = {s: [x + shift for x in v] for s, v in per_question.items()}
    assert probability_best(shifted, resamples=100, seed=seed) == pytest.approx(p)
    a, b = per_question["s0"], per_question["s1"]
    plain = paired_interval(a, b, resamples=100, seed=seed)
    assert tuple(paired_interval([x + shift for x in a], [x + shift for x in b], resamples=100, seed=seed)) == \
        pytest.approx(tuple(plain), abs=1e-12)


@settings(max_examples=50, deadline=None)
@given(b=st.lists(st.floats(0, 1), min_size=2, max_size=30), gain=st.floats(0.01, 1), seed=st.integers(0, 99))
def test_a_strategy_better_on_every_question_wins(b, gain, seed):
    a = [x + gain for x in b]
    assert paired_interval(a, b, resamples=100, seed=seed).low > 0
    result = verdict({"b": b, "a": a}, costs={"a": 2, "b": 1}, resamples=100, seed=seed)
    assert result.winner == "a" and result.ruled_out == ("b",) and result.cheapest_in_play == "a"
    assert result.p_best_alone["a"] == 1.0


# ---------------------------------------------------------------------------
# The verdict's rules, case by case
# ---------------------------------------------------------------------------


def test_a_clear_winner_and_its_text():
    rng = np.random.default_rng(1)
    per_question = {"fixed:256": rng.random(200) < 0.4, "recursive:256": rng.random(200) < 0.9,
                    "recursive:512": rng.random(200) < 0.45}
    result = verdict(per_question, costs={"fixed:256": 1000, "recursive:256": 1200, "recursive:512": 900})
    assert result.winner == "recursive:256" == result.leader == result.cheapest_in_play
    assert result.in_play == ("recursive:256",)
    assert result.ruled_out == ("recursive:512", "fixed:256")
    assert result.as_dict() == {"metric": "recall_at_k", "winner": "recursive:256", "leader": "recursive:256",
                                "in_play": ["recursive:256"], "ruled_out": ["recursive:512", "fixed:256"],
                                "questions_needed": result.questions_needed, "margin": 0.05, "as_good": [],
                                "equivalence": {s: [round(x, 6) for x in result.equivalence[s]]
                                                for s in ("recursive:512", "fixed:256")},
                                "cheapest_as_good": None, "margin_candidate": None, "margin_questions": None,
                                "cheapest_in_play": "recursive:256"}
    assert "no number of questions would show one" in result.text()
    text = result.text()
    assert text.startswith("recursive:256 wins on recall_at_k over 200 questions")
    assert "no decision" not in text
    low, high = result.intervals["recursive:256"][1:]
    assert low < result.intervals["recursive:256"].mean < high


def test_best_in_90_percent_of_resamples_is_not_enough_when_the_interval_touches_zero():
    # a beats b on 3 of 30 questions and ties elsewhere: the 3 are all missed in about 4% of resamples,
    # so a is best alone in about 96% of them but its interval starts at zero: no winner.
    b = np.zeros(30)
    a = b.copy()
    a[:3] = 1
    result = verdict({"a": a, "b": b}, costs={"a": 1, "b": 2})
    assert result.p_best_alone["a"] >= 0.9
    assert result.differences["b"].high == 0.0
    assert result.winner is None and result.in_play == ("a", "b") and result.ruled_out == ()
    text = result.text()
    assert text.startswith("no decision yet on recall_at_k over 30 questions: a leads")
    assert "b -0.100 [-0.200, +0.000]" in text  # 6 of 30 is the 97.5th percentile of Binomial(30, 0.1)
    assert f"About {result.questions_needed} questions would separate a from b" in text


def test_a_strategy_tied_for_best_is_not_best_for_the_threshold():
    # a and b are tied for best in every resample: each is best in half the wins (shared), alone in none
    a = np.array([1, 0, 1, 1, 0, 1, 1, 1] * 4, float)
    result = verdict({"a": a, "b": a.copy(), "c": a * 0}, costs={"a": 3, "b": 2, "c": 1}, resamples=2_000)
    assert result.p_best == {"a": 0.5, "b": 0.5, "c": 0.0}
    assert result.p_best_alone == {"a": 0.0, "b": 0.0, "c": 0.0}
    assert result.winner is None
    assert result.in_play == ("b", "a") and result.ruled_out == ("c",)  # equal means: the cheaper first
    assert result.cheapest_in_play == "b"  # c is cheaper, but ruled out
    assert result.leader == "b" and result.as_good == ("a",) and result.cheapest_as_good == "b"
    assert "No realistic number of questions" in result.text()


def test_threshold_and_level_are_the_rule():
    b = np.zeros(30)
    a = b.copy()
    a[:5] = 1  # all five missed in about 0.4% of resamples
    costs = {"a": 1, "b": 1}
    assert verdict({"a": a, "b": b}, costs=costs).winner == "a"
    assert verdict({"a": a, "b": b}, costs=costs, level=0.999).winner is None
    assert verdict({"a": a, "b": b}, costs=costs, threshold=1.0).winner is None


def test_costs_compare_tuples_in_order_and_ties_keep_the_input_order():
    same = [1, 0, 1, 0]
    costs = {"x": (10, 5.0), "y": (10, 2.0), "z": (10, 2.0)}
    assert verdict({"x": same, "y": same, "z": same}, costs=costs).cheapest_in_play == "y"


def test_questions_needed_by_hand():
    # one question of 30 in favour of a: d = 1/30, s = sqrt(1/30) (sample std): n = ceil(1.96^2 * 30) = 116
    a, b = np.zeros(30), np.zeros(30)
    a[0] = 1
    d, s = 1 / 30, np.std(a - b, ddof=1)
    assert questions_needed(a, b) == math.ceil((1.96 * s / d) ** 2) == 116
    assert questions_needed(b, a) == 116
    assert questions_needed(a, a) is None  # d == 0
    big = np.zeros(1000)
    big[:2], big[2:3] = 1, -1  # d = 1/1000, s about 0.055: n about 11,600
    assert questions_needed(big, np.zeros(1000)) is None
    assert questions_needed([2, 2], [1, 1]) == 1  # s == 0: any question separates them


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: paired_interval([1, 2], [1, 2, 3]), ValueError, "same questions"),
    (lambda: paired_interval([1], [1]), ValueError, "at least 2"),
    (lambda: paired_interval([[1, 2]], [[1, 2]]), ValueError, "1-D"),
    (lambda: paired_interval("ab", "cd"), TypeError, "sequence or array"),
    (lambda: paired_interval([1, float("nan")], [1, 2]), ValueError, "finite"),
    (lambda: paired_interval([1, "x"], [1, 2]), TypeError, "numbers only"),
    (lambda: paired_interval([1, 2], [1, 2], resamples=0), ValueError, "resamples=0"),
    (lambda: paired_interval([1, 2], [1, 2], resamples=10.0), TypeError, "resamples must be an int"),
    (lambda: paired_interval([1, 2], [1, 2], seed=-1), ValueError, "seed=-1"),
    (lambda: paired_interval([1, 2], [1, 2], seed=None), TypeError, "seed must be an int"),
    (lambda: mean_interval([1, 2], level=1.0), ValueError, "level=1.0"),
    (lambda: mean_interval([1, 2], level="95%"), TypeError, "level must be a number"),
    (lambda: probability_best({"a": [1, 2]}), ValueError, "at least 2"),
    (lambda: probability_best([[1, 2], [3, 4]]), TypeError, "mapping"),
    (lambda: probability_best({"a": [1, 2], "b": [1, 2, 3]}), ValueError, "different numbers of questions"),
    (lambda: probability_best({1: [1, 2], "b": [1, 2]}), TypeError, "strategy ids"),
    (lambda: verdict({"a": [1, 2], "b": [1, 2]}, costs={"a": 1}), ValueError, "missing ['b']"),
    (lambda: verdict({"a": [1, 2], "b": [1, 2]}, costs={"a": 1, "b": 1, "c": 1}), ValueError, "unknown ['c']"),
    (lambda: verdict({"a": [1, 2], "b": [1, 2]}, costs={"a": 1, "b": "cheap"}), TypeError, "costs['b']"),
    (lambda: verdict({"a": [1, 2], "b": [1, 2]}, costs=[1, 2]), TypeError, "costs must be a mapping"),
    (lambda: verdict({"a": [1, 2], "b": [1, 2]}, costs={"a": 1, "b": 1}, threshold=0), ValueError, "threshold=0"),
    (lambda: verdict({"a": [1, 2], "b": [1, 2]}, costs={"a": 1, "b": 1}, metric=""), TypeError, "metric"),
    (lambda: questions_needed([1, 2], [1, 2, 3]), ValueError, "same questions"),
])
def test_bad_input_is_refused_with_a_message(call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call()


def test_intervals_are_named_tuples():
    result = mean_interval([0, 1, 1, 0], resamples=10)
    assert isinstance(result, Interval) and result.mean == 0.5


def test_a_large_bootstrap_draws_in_blocks_with_flat_memory(monkeypatch):
    import tracemalloc

    rng = np.random.default_rng(3)
    a, b = rng.random(600), rng.random(600)
    whole = paired_interval(a, b)
    monkeypatch.setattr(stats, "WHOLE_DRAW", 0)  # force blocks on a small case: same generator, same draws here
    assert paired_interval(a, b) == whole
    monkeypatch.undo()
    many = rng.random(10_000)  # 10,000 questions x 10,000 resamples: 800 MB of counts if drawn whole
    tracemalloc.start()
    mean_interval(many)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 100e6, f"the bootstrap held {peak / 1e6:.0f} MB for 10,000 questions"
