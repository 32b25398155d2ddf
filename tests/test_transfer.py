"""benchmarks/transfer.py: Kendall's tau-b against a brute-force count, its bootstrap interval, and the
committed results/transfer/ files (each run's verdicts, taus.json and README.md) recomputed from the
per-question values they hold."""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "transfer.py"
_spec = importlib.util.spec_from_file_location("transfer", SCRIPT)
transfer = sys.modules.setdefault("transfer", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(transfer)


def brute_tau_b(x, y) -> float:
    """tau-b by counting every pair: (C - D) / sqrt((C + D + T_x)(C + D + T_y)), where T_x counts the pairs
    tied in x only and T_y those tied in y only (pairs tied in both count in neither); NaN when undefined."""
    concordant = discordant = tied_x = tied_y = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        dx, dy = x[i] - x[j], y[i] - y[j]
        if dx == 0 and dy == 0:
            continue
        if dx == 0:
            tied_x += 1
        elif dy == 0:
            tied_y += 1
        elif (dx > 0) == (dy > 0):
            concordant += 1
        else:
            discordant += 1
    denominator = math.sqrt((concordant + discordant + tied_x) * (concordant + discordant + tied_y))
    return (concordant - discordant) / denominator if denominator else math.nan


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


@st.composite
def two_rankings(draw, length: int | None = None):
    """Two score lists of one length, drawn from few values so that ties are common."""
    n = length or draw(st.integers(2, 12))
    values = st.integers(0, draw(st.integers(0, 5)))
    return draw(st.lists(values, min_size=n, max_size=n)), draw(st.lists(values, min_size=n, max_size=n))


@settings(max_examples=300, deadline=None)
@given(two_rankings())
def test_tau_b_equals_a_brute_force_count_with_ties(pair):
    x, y = pair
    assert _same(transfer.kendall_tau_b(x, y), brute_tau_b(x, y)), (x, y)


@settings(max_examples=50, deadline=None)
@given(st.lists(two_rankings(length=6), min_size=1, max_size=8))
def test_tau_b_rows_scores_each_row_as_its_own_pair(rows):
    taus = transfer.tau_b_rows(np.array([x for x, _ in rows], float), np.array([y for _, y in rows], float))
    assert all(_same(t, brute_tau_b(x, y)) for t, (x, y) in zip(taus, rows))


def test_tau_b_on_known_rankings_and_near_ties():
    assert transfer.kendall_tau_b([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert transfer.kendall_tau_b([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert math.isnan(transfer.kendall_tau_b([1, 1, 1], [1, 2, 3]))  # one ranking says nothing
    # means equal but for the last bit of a float (sums in another order) are a tie, as in course_lib.stats
    third = 0.1 + 0.2
    assert transfer.kendall_tau_b([third, 0.3, 0.5], [1, 2, 3]) == brute_tau_b([0.3, 0.3, 0.5], [1, 2, 3])


def test_tau_b_agrees_with_scipy_where_it_is_installed():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    for _ in range(50):
        x, y = rng.integers(0, 4, 9), rng.integers(0, 4, 9)
        expected = stats.kendalltau(x, y, variant="b").statistic
        assert _same(transfer.kendall_tau_b(x, y), float(expected))


def test_tau_b_refuses_rankings_it_cannot_compare():
    with pytest.raises(ValueError, match="same length"):
        transfer.kendall_tau_b([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match=">= 2"):
        transfer.kendall_tau_b([1], [1])


def _runs(seed: int, strategies: int = 5, questions: int = 40):
    rng = np.random.default_rng(seed)
    a = {f"s{i}": (rng.random(questions) < 0.3 + 0.1 * i).astype(float) for i in range(strategies)}
    b = {name: np.where(rng.random(questions) < 0.2, 1 - v, v) for name, v in a.items()}
    return a, b


def test_bootstrap_interval_is_reproducible_by_seed_and_holds_the_estimate():
    a, b = _runs(0)
    first = transfer.bootstrap_tau(a, b, resamples=2_000, seed=7)
    assert first == transfer.bootstrap_tau(a, b, resamples=2_000, seed=7)
    other = transfer.bootstrap_tau(a, b, resamples=2_000, seed=8)
    assert (other["low"], other["high"]) != (first["low"], first["high"])
    assert first["low"] <= first["tau_b"] <= first["high"]
    assert first["tau_b"] == transfer.kendall_tau_b([a[s].mean() for s in sorted(a)], [b[s].mean() for s in sorted(a)])


def test_bootstrap_of_a_run_with_itself_and_with_its_mirror():
    a, _ = _runs(1)
    same = transfer.bootstrap_tau(a, a, resamples=500, seed=0)
    assert (same["tau_b"], same["low"], same["high"]) == (1.0, 1.0, 1.0)
    mirror = {name: 1 - v for name, v in a.items()}
    reversed_ = transfer.bootstrap_tau(a, mirror, resamples=500, seed=0)
    assert (reversed_["tau_b"], reversed_["low"], reversed_["high"]) == (-1.0, -1.0, -1.0)


def test_bootstrap_resamples_pair_the_questions():
    """Each resample draws the same questions for both runs: a run and a copy with its questions in the
    same order give tau 1 in every resample, and the counts are one draw per question."""
    counts = transfer.question_counts(30, 100, seed=5)
    assert counts.shape == (100, 30) and (counts.sum(axis=1) == 30).all()
    assert (counts == transfer.question_counts(30, 100, seed=5)).all()
    with pytest.raises(ValueError, match="pair them first"):
        transfer.bootstrap_tau({"a": [1, 0], "b": [0, 1]}, {"a": [1, 0, 1], "b": [0, 1, 1]}, resamples=10)
    with pytest.raises(ValueError, match="at least 2"):
        transfer.bootstrap_tau({"a": [1, 0]}, {"a": [1, 0]}, resamples=10)


def test_the_pairs_share_a_language_or_a_model():
    found = {(first, second): relation for first, second, relation in transfer.pairs()}
    assert found == {
        (("en", "minilm"), ("en", "usem3")): "same language",
        (("en", "minilm"), ("en", "e5-small")): "same language",
        (("es", "usem3"), ("en", "usem3")): "same model",
        (("es", "usem3"), ("es", "e5-small")): "same language",
        (("en", "usem3"), ("en", "e5-small")): "same language",
        (("es", "e5-small"), ("en", "e5-small")): "same model",
    }


def test_the_readme_describes_the_bm25_each_run_used():
    """Runs from before issue 45 record no language and used English stop words; today's chunk-eval records the
    language its shared tokenizer used. The README says which, and says so when the runs mix the two."""
    old = {"versions": {"bm25s": "0.3.16"}}
    spanish = {"versions": {"language": "es (detected by py3langid); BM25 drops its stop words (negations kept) "
                                        "and uses Snowball spanish stems"}}
    english = {"versions": {"language": "en (detected by py3langid); BM25 drops its stop words (negations kept) "
                                        "and uses Snowball english stems"}}
    assert "English stop words, no stemming" in transfer.bm25_words({("es", "usem3", "budget"): old})
    new = transfer.bm25_words({("es", "usem3", "budget"): spanish, ("en", "usem3", "budget"): english})
    assert "lexical_words" in new and "Snowball spanish stems" in new and "Snowball english stems" in new
    assert "English stop words" not in new
    assert transfer.bm25_words({("es", "usem3", "budget"): spanish, ("en", "usem3", "budget"): old}).startswith("mixed")


def test_winner_set_and_status():
    decided = {"winner": "a", "in_play": ["a"], "ruled_out": ["b", "c"]}
    open_ = {"winner": None, "in_play": ["a", "b"], "ruled_out": ["c"]}
    assert transfer.winner_set(decided) == ["a"] and transfer.winner_set(open_) == ["a", "b"]
    assert [transfer.status(open_, s) for s in "abc"] == ["in play", "in play", "ruled out"]
    assert transfer.status(decided, "a") == "winner"


# ---------------------------------------------------------------------------
# The committed results
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def committed():
    runs = transfer.load_runs(transfer.OUT)
    assert runs, f"no run files in {transfer.OUT}: run benchmarks/transfer.py"
    taus = json.loads((transfer.OUT / "taus.json").read_text(encoding="utf-8"))
    return runs, taus


def test_every_run_is_there_with_its_settings_and_the_current_question_files(committed):
    runs, taus = committed
    expected = {(language, model, mode) for language, model in transfer.RUNS for mode in transfer.MODES}
    assert set(runs) == expected, f"missing runs: {sorted(expected - set(runs))}"
    for (language, model, mode), record in runs.items():
        assert record["settings"] == transfer.run_settings(language, model, mode)
        assert record["questions_sha256"] == transfer.file_sha256(ROOT / transfer.LANGUAGES[language][1]), \
            f"{language}_{model}_{mode}: the question file changed since the run; run the benchmark again"
        assert record["questions_sha256"] == taus["questions_sha256"][language]
        assert set(record["per_question"]) == set(transfer.GRID)
        assert record["question_ids"] == runs[("en", "minilm", "budget")]["question_ids"], "twins pair by id"


def test_each_run_file_agrees_with_its_own_per_question_values(committed):
    runs, _ = committed
    for key, record in runs.items():
        for row in record["results"]:
            for metric in transfer.TAU_METRICS:
                mean = float(np.mean(record["per_question"][row["strategy"]][metric]))
                assert abs(mean - row[metric]) <= 2e-6, (key, row["strategy"], metric)
        chunk_eval = record["verdict"]
        again = record["verdicts"][transfer.VERDICT_METRIC]
        for field in ("winner", "in_play", "ruled_out", "leader"):
            assert chunk_eval[field] == again[field], (key, field)


def test_taus_json_and_readme_are_what_the_run_files_give(committed):
    runs, taus = committed
    again = json.loads(transfer.to_json(transfer.compute_taus(runs, resamples=taus["resamples"], seed=taus["seed"])))
    assert again == taus, "taus.json is stale: run benchmarks/transfer.py --report"
    readme = (transfer.OUT / "README.md").read_text(encoding="utf-8")
    assert readme == transfer.readme(runs, taus), "README.md is stale: run benchmarks/transfer.py --report"
