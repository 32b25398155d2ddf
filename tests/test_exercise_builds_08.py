"""The learner's builds in notebook 08 cannot be fooled (issue 33): Exercise 8.1 (a) the ranking metrics,
(b) the span metrics (from the library's union count, `covered_characters`, built in 05) and (c) the benchmark
loop (the library's index, span scores per question; `top_k` was built in 01), and the new pieces of
Exercise 8.2, (a) `resample_means` and (b) `best_alone` with the 90% guard of the verdict.

Notebook 08 is run once, in this process (tests/notebook_checks.py). Then each part's self-check cell is run
again with the learner's functions replaced, after the exercise's solution cells are run again in a copy of
the namespace (so that a replaced helper, such as `resample_means`, is the one the other functions call):
by plausible wrong answers, which it must reject with a `SelfCheckError`, and by the reference solution and
other right answers (the library's own functions among them), which it must accept. A part is picked by its
place among the exercise's solution cells. The old wrong bootstraps and verdict rules of Exercise 8.2 are in
tests/test_exercise_checks_08.py.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from notebook_checks import Notebook

from course_lib import evaluation, stats
from scripts import build_student_edition as edition

RANKING, SPANS, BENCHMARK = range(3)  # the parts of Exercise 8.1
BOOTSTRAP, VERDICT = range(2)  # the parts of Exercise 8.2
# the given cells each exercise's checks read (the toy ranking and text; the ten questions), run again before a
# check because later sections reuse some of their names (`relevant` is section 6's list of sets at the end)
CONTEXT = {"Exercise 8.1": ["6fa61a3d", "d23f1aee"], "Exercise 8.2": ["d78679bb", "06c60f16"]}


@pytest.fixture(scope="module")
def nb08():
    return Notebook("08_measuring_chunkers.ipynb")


def _parts(nb: Notebook, name: str) -> list[edition.Exercise]:
    return nb.parts(name)


def run_part(nb: Notebook, name: str, part: int, **learner) -> str:
    """Run one part's check cell with the learner's functions in place (the exercise's given cells and its
    reference defined again first, so a reference calls a replaced helper); return what it printed."""
    return nb.run_part(name, part, before=tuple(CONTEXT[name]), **learner)[0]


def accepts(nb: Notebook, name: str, part: int, **learner) -> str:
    return nb.accepts_part(name, part, before=tuple(CONTEXT[name]), **learner)


def rejects(nb: Notebook, name: str, part: int, **learner) -> str:
    return nb.rejects_part(name, part, before=tuple(CONTEXT[name]), **learner)


def stub(*args, **kwargs):
    raise NotImplementedError("replace this line with your solution")


# --- the shape of the exercises -----------------------------------------------------------------------

def test_each_exercise_has_its_parts_each_with_its_check(nb08):
    defined = {name: [set(re.findall(r"^def (\w+)", nb08.notebook.cells[e.solution].source, re.MULTILINE))
                      for e in _parts(nb08, name)] for name in ("Exercise 8.1", "Exercise 8.2")}
    assert defined == {
        "Exercise 8.1": [{"my_recall_at_k", "my_reciprocal_rank", "my_ndcg_at_k"},
                         {"my_span_scores", "my_precision_omega"}, {"my_evaluate"}],
        "Exercise 8.2": [{"resample_means", "paired_bootstrap"}, {"best_alone", "decide"}]}


@pytest.mark.parametrize("name, part", [("Exercise 8.1", RANKING), ("Exercise 8.1", SPANS),
                                        ("Exercise 8.1", BENCHMARK), ("Exercise 8.2", BOOTSTRAP),
                                        ("Exercise 8.2", VERDICT)])
def test_each_part_accepts_the_reference_solution(nb08, name, part):
    accepts(nb08, name, part)


def test_no_visible_cell_shows_a_line_of_the_solution(nb08):
    exercises = edition.find_exercises(nb08.notebook)
    solution_lines = set()
    for exercise in exercises:
        for block in nb08.notebook.cells[exercise.solution].source.split(edition.BEGIN)[1:]:
            solution_lines |= {line.strip() for line in block.split(edition.END)[0].splitlines()
                               if len(line.strip()) > 20 and not line.strip().startswith("#")}
    solutions = {e.solution for e in exercises}
    shown = [line for i, cell in enumerate(nb08.notebook.cells) if i not in solutions
             for line in solution_lines if line in cell.source]
    assert not shown, f"visible cells show solution lines: {shown}"


def test_the_builds_replace_the_given_code(nb08):
    # the by-hand computations the learner now writes are no longer given above or beside the exercises
    given = "\n".join(c.source for i, c in enumerate(nb08.notebook.cells) if c.cell_type == "code"
                      and i not in {e.solution for e in edition.find_exercises(nb08.notebook)})
    assert "idcg" not in given.lower(), "the nDCG normaliser is the learner's"
    assert ".integers(0, len(diff)" not in given and "draws40" not in given, "the bootstrap draws are the learner's"
    assert "status = " not in given, "the verdict loop is the learner's"
    # the benchmark loop is the learner's: the check and section 4 call the library's, never a copy beside it
    assert "argsort(-" not in given and "def evaluate" not in given
    check = nb08.notebook.cells[_parts(nb08, "Exercise 8.1")[BENCHMARK].check].source
    assert "evaluate_spans(*c)" in check


@pytest.mark.parametrize("name, part, functions", [
    ("Exercise 8.1", RANKING, ("my_recall_at_k", "my_reciprocal_rank", "my_ndcg_at_k")),
    ("Exercise 8.1", SPANS, ("my_span_scores", "my_precision_omega")),
    ("Exercise 8.1", BENCHMARK, ("my_evaluate",)),
    ("Exercise 8.2", BOOTSTRAP, ("resample_means", "paired_bootstrap")),
    ("Exercise 8.2", VERDICT, ("best_alone", "decide"))])
def test_the_stubs_are_reported_without_raising(nb08, name, part, functions):
    printed = run_part(nb08, name, part, **dict.fromkeys(functions, stub))
    assert f"{name}: not solved yet" in printed and "✗" not in printed and "✓" not in printed


# --- 8.1 (a): recall@k, reciprocal rank, nDCG@k ---------------------------------------------------------

def recall_over_k(ranking, relevant, k):  # precision@k, not recall
    return len(set(ranking[:k]) & set(relevant)) / k


def recall_ignores_k(ranking, relevant, k):  # the whole ranking counts
    return len(set(ranking) & set(relevant)) / len(relevant)


def recall_over_the_shown(ranking, relevant, k):  # divides by what could be shown, min(k, relevant)
    return len(set(ranking[:k]) & set(relevant)) / min(k, len(relevant))


def rr_off_by_one(ranking, relevant):  # ranks counted from 0, then 1 / (rank + 1) one place too low
    for rank, item in enumerate(ranking, start=1):
        if item in relevant:
            return 1 / (rank + 1)
    return 0.0


def rr_from_zero(ranking, relevant):  # ranks from 0: 1 / 0 when the first result is relevant
    for rank, item in enumerate(ranking):
        if item in relevant:
            return 1 / rank
    return 0.0


def rr_none_when_missed(ranking, relevant):  # nothing relevant: None instead of 0
    return next((1 / r for r, item in enumerate(ranking, start=1) if item in relevant), None)


def _grades(relevance):
    return relevance if isinstance(relevance, dict) else dict.fromkeys(relevance, 1.0)


def _dcg(gains, offset=1):
    return sum(g / math.log2(r + offset) for r, g in enumerate(gains, start=1))


def ndcg_log2_rank(ranking, relevance, k):  # log2(rank) instead of log2(rank + 1): 1 / 0 at rank 1
    grades = _grades(relevance)
    return _dcg([grades.get(c, 0.0) for c in ranking[:k]], 0) / _dcg(sorted(grades.values(), reverse=True)[:k], 0)


def ndcg_idcg_from_retrieved(ranking, relevance, k):  # the ideal order of what was retrieved, not of all grades
    grades = _grades(relevance)
    gains = [grades.get(c, 0.0) for c in ranking[:k]]
    ideal = _dcg(sorted(gains, reverse=True))
    return _dcg(gains) / ideal if ideal else 0.0


def ndcg_idcg_not_cut(ranking, relevance, k):  # the ideal order not cut at k
    grades = _grades(relevance)
    return _dcg([grades.get(c, 0.0) for c in ranking[:k]]) / _dcg(sorted(grades.values(), reverse=True))


def ndcg_binary_only(ranking, relevance, k):  # every relevant id gains 1, the grades ignored
    return evaluation.ndcg_at_k(ranking, set(relevance), k) if any(_grades(relevance).values()) else 0.0


def ndcg_right(ranking, relevance, k):  # right, with numpy
    grades = _grades(relevance)
    discounts = 1 / np.log2(np.arange(2, k + 2))
    gains = np.array([grades.get(c, 0.0) for c in ranking[:k]])
    ideal = np.sort(np.array(list(grades.values())))[::-1][:k]
    return float(gains @ discounts[:len(gains)] / (ideal @ discounts[:len(ideal)]))


def test_a_accepts_the_library_and_another_right_ndcg(nb08):
    accepts(nb08, "Exercise 8.1", RANKING, my_recall_at_k=evaluation.recall_at_k,
            my_reciprocal_rank=evaluation.reciprocal_rank, my_ndcg_at_k=ndcg_right)


@pytest.mark.parametrize("wrong", [recall_over_k, recall_ignores_k, recall_over_the_shown], ids=lambda f: f.__name__)
def test_a_rejects_a_wrong_recall(nb08, wrong):
    assert "my_recall_at_k" not in rejects(nb08, "Exercise 8.1", RANKING, my_recall_at_k=wrong)


@pytest.mark.parametrize("wrong", [rr_off_by_one, rr_from_zero, rr_none_when_missed], ids=lambda f: f.__name__)
def test_a_rejects_a_wrong_reciprocal_rank(nb08, wrong):
    assert wrong.__name__ in rejects(nb08, "Exercise 8.1", RANKING, my_reciprocal_rank=wrong)


@pytest.mark.parametrize("wrong", [ndcg_log2_rank, ndcg_idcg_from_retrieved, ndcg_idcg_not_cut, ndcg_binary_only],
                         ids=lambda f: f.__name__)
def test_a_rejects_a_wrong_ndcg(nb08, wrong):
    assert wrong.__name__ in rejects(nb08, "Exercise 8.1", RANKING, my_ndcg_at_k=wrong)


# --- 8.1 (b): span scores and precision-omega ------------------------------------------------------------

def _chars(ranges):
    return {i for s, e in ranges for i in range(s, e)}


def spans_found_as_retrieved(retrieved, references):  # every distinct retrieved character counted as found
    excerpt, found = _chars(references), len(_chars(retrieved))
    sent = sum(e - s for s, e in retrieved)
    return found / len(excerpt), found / sent, found / (sent + len(excerpt) - found)


def spans_found_outside(retrieved, references):  # the union count the wrong way round: excerpt text not retrieved
    excerpt = _chars(references)
    found = len(excerpt | _chars(retrieved)) - len(_chars(retrieved))
    sent = sum(e - s for s, e in retrieved)
    return found / len(excerpt), found / sent, found / (sent + len(excerpt) - found)


def spans_union_sent(retrieved, references):  # retrieved characters counted once: overlap costs nothing
    excerpt, held = _chars(references), _chars(retrieved)
    covered = len(excerpt & held)
    return covered / len(excerpt), covered / len(held), covered / len(excerpt | held)


def spans_covered_per_chunk(retrieved, references):  # covered counted chunk by chunk: twice where chunks overlap
    excerpt = _chars(references)
    covered = sum(len(excerpt & _chars([r])) for r in retrieved)
    sent = sum(e - s for s, e in retrieved)
    return covered / len(excerpt), covered / sent, covered / (sent + len(excerpt) - covered)


def spans_excerpts_summed(retrieved, references):  # overlapping excerpts counted twice
    excerpt_chars = sum(e - s for s, e in references)
    covered = len(_chars(references) & _chars(retrieved))
    sent = sum(e - s for s, e in retrieved)
    return covered / excerpt_chars, covered / sent, covered / (sent + excerpt_chars - covered)


def spans_iou_without_subtracting(retrieved, references):  # the covered characters counted twice in the union
    excerpt = _chars(references)
    covered, sent = len(excerpt & _chars(retrieved)), sum(e - s for s, e in retrieved)
    return covered / len(excerpt), covered / sent, covered / (sent + len(excerpt))


def spans_right(retrieved, references):  # right, with the library's named tuple turned into a tuple
    s = evaluation.span_scores(retrieved, references)
    return s.recall, s.precision, s.iou


def omega_summed(chunks, references):  # the kept chunks' lengths summed, not their union
    touching = [(s, e) for s, e in chunks if any(s < re_ and rs < e for rs, re_ in references)]
    excerpt, kept = _chars(references), _chars(touching)
    return len(excerpt & kept) / (sum(e - s for s, e in touching) + len(excerpt - kept))


def omega_all_chunks(chunks, references):  # every chunk kept, touching or not
    excerpt, kept = _chars(references), _chars(chunks)
    return len(excerpt & kept) / len(excerpt | kept)


def omega_touching_counts(chunks, references):  # a chunk that only touches an excerpt's end is kept
    touching = [(s, e) for s, e in chunks if any(s <= re_ and rs <= e for rs, re_ in references)]
    excerpt, kept = _chars(references), _chars(touching)
    return len(excerpt & kept) / len(excerpt | kept)


def omega_precision_of_kept(chunks, references):  # the excerpt text no chunk holds left out of the denominator
    touching = [(s, e) for s, e in chunks if any(s < re_ and rs < e for rs, re_ in references)]
    excerpt, kept = _chars(references), _chars(touching)
    return len(excerpt & kept) / len(kept) if kept else 0.0


def test_b_accepts_the_library(nb08):
    accepts(nb08, "Exercise 8.1", SPANS, my_span_scores=spans_right, my_precision_omega=evaluation.precision_omega)


@pytest.mark.parametrize("wrong", [spans_found_as_retrieved, spans_found_outside, spans_union_sent,
                                   spans_covered_per_chunk, spans_excerpts_summed, spans_iou_without_subtracting],
                         ids=lambda f: f.__name__)
def test_b_rejects_wrong_span_scores(nb08, wrong):
    assert wrong.__name__ in rejects(nb08, "Exercise 8.1", SPANS, my_span_scores=wrong)


@pytest.mark.parametrize("wrong", [omega_summed, omega_all_chunks, omega_touching_counts, omega_precision_of_kept],
                         ids=lambda f: f.__name__)
def test_b_rejects_a_wrong_precision_omega(nb08, wrong):
    assert wrong.__name__ in rejects(nb08, "Exercise 8.1", SPANS, my_precision_omega=wrong)


# --- 8.1 (c): the benchmark loop ---------------------------------------------------------------------------

def _cosines(chunk_vectors, query_vectors):
    return np.asarray(query_vectors) @ np.asarray(chunk_vectors).T


def _refs(q, corpus=True):
    return [(q["corpus_id"] if corpus else "", r["start_index"], r["end_index"]) for r in q["references"]]


def top_k_library(chunk_vectors, query_vectors, k):  # right: the library's index
    return evaluation.VectorIndex(chunk_vectors).search(query_vectors, k=k)[0]


def top_k_sorted(chunk_vectors, query_vectors, k):  # right: Python's sort is stable too
    return [sorted(range(len(row)), key=lambda i: -row[i])[:k] for row in _cosines(chunk_vectors, query_vectors)]


def top_k_smallest(chunk_vectors, query_vectors, k):  # the k least similar chunks
    return np.argsort(_cosines(chunk_vectors, query_vectors), axis=1, kind="stable")[:, :k]


def top_k_ties_reversed(chunk_vectors, query_vectors, k):  # ascending order reversed: equal scores, higher row first
    return np.argsort(_cosines(chunk_vectors, query_vectors), axis=1, kind="stable")[:, ::-1][:, :k]


def top_k_one_more(chunk_vectors, query_vectors, k):  # k + 1 chunks
    return np.argsort(-_cosines(chunk_vectors, query_vectors), axis=1, kind="stable")[:, :k + 1]


def top_k_skips_the_best(chunk_vectors, query_vectors, k):  # ranks counted from 1 in a list counted from 0
    return np.argsort(-_cosines(chunk_vectors, query_vectors), axis=1, kind="stable")[:, 1:k + 1]


def _evaluate(score_one, chunk_vectors, query_vectors, questions, spans, k=5, top_k=top_k_library):
    per_question = {"recall": [], "precision": [], "iou": []}
    for q, row in zip(questions, top_k(chunk_vectors, query_vectors, k)):
        for name, value in zip(per_question, score_one(q, [spans[i] for i in row])):
            per_question[name].append(value)
    return per_question


def _scores(retrieved, refs):
    s = evaluation.span_scores(retrieved, refs)
    return s.recall, s.precision, s.iou


def evaluate_library(chunk_vectors, query_vectors, questions, spans, k=5):  # right: the library's index and scores
    return _evaluate(lambda q, retrieved: _scores(retrieved, _refs(q)), chunk_vectors, query_vectors, questions,
                     spans, k)


def evaluate_own_chars(chunk_vectors, query_vectors, questions, spans, k=5):  # right: character sets keyed by corpus
    def score(q, retrieved):
        excerpt = {(cid, i) for cid, s, e in _refs(q) for i in range(s, e)}
        covered = len(excerpt & {(cid, i) for cid, s, e in retrieved for i in range(s, e)})
        sent = sum(e - s for _, s, e in retrieved)
        return covered / len(excerpt), covered / sent, covered / (sent + len(excerpt) - covered)
    return _evaluate(score, chunk_vectors, query_vectors, questions, spans, k)


def evaluate_ignoring_the_corpus(chunk_vectors, query_vectors, questions, spans, k=5):  # offsets of any corpus
    return _evaluate(lambda q, retrieved: _scores([("", s, e) for _, s, e in retrieved], _refs(q, corpus=False)),
                     chunk_vectors, query_vectors, questions, spans, k)


def evaluate_averaging_over_chunks(chunk_vectors, query_vectors, questions, spans, k=5):  # each chunk scored alone
    return _evaluate(lambda q, retrieved: np.mean([_scores([c], _refs(q)) for c in retrieved], axis=0).tolist(),
                     chunk_vectors, query_vectors, questions, spans, k)


def evaluate_first_hit_only(chunk_vectors, query_vectors, questions, spans, k=5):  # the best chunk alone
    return _evaluate(lambda q, retrieved: _scores(retrieved[:1], _refs(q)), chunk_vectors, query_vectors,
                     questions, spans, k)


def evaluate_on(top_k):
    """The loop right, on the rows `top_k` gives (the learner's own ranking instead of `VectorIndex`)."""
    def my_evaluate(chunk_vectors, query_vectors, questions, spans, k=5):
        return _evaluate(lambda q, retrieved: _scores(retrieved, _refs(q)), chunk_vectors, query_vectors, questions,
                         spans, k, top_k=top_k)
    my_evaluate.__name__ = f"evaluate_on_{top_k.__name__}"
    return my_evaluate


def test_c_accepts_a_loop_on_a_right_ranking_of_its_own(nb08):
    accepts(nb08, "Exercise 8.1", BENCHMARK, my_evaluate=evaluate_on(top_k_sorted))


def test_c_accepts_the_library_loop_and_a_loop_over_character_sets(nb08):
    accepts(nb08, "Exercise 8.1", BENCHMARK, my_evaluate=evaluate_library)
    accepts(nb08, "Exercise 8.1", BENCHMARK, my_evaluate=evaluate_own_chars)


@pytest.mark.parametrize("wrong", [top_k_smallest, top_k_ties_reversed, top_k_one_more, top_k_skips_the_best],
                         ids=lambda f: f.__name__)
def test_c_rejects_a_loop_on_a_wrong_ranking(nb08, wrong):
    assert f"evaluate_on_{wrong.__name__}" in rejects(nb08, "Exercise 8.1", BENCHMARK, my_evaluate=evaluate_on(wrong))


@pytest.mark.parametrize("wrong", [evaluate_ignoring_the_corpus, evaluate_averaging_over_chunks,
                                   evaluate_first_hit_only], ids=lambda f: f.__name__)
def test_c_rejects_a_wrong_loop(nb08, wrong):
    assert wrong.__name__ in rejects(nb08, "Exercise 8.1", BENCHMARK, my_evaluate=wrong)


def evaluate_one_more(chunk_vectors, query_vectors, questions, spans, k=5):  # k + 1 chunks per question
    return evaluate_library(chunk_vectors, query_vectors, questions, spans, k + 1)


def evaluate_one_less(chunk_vectors, query_vectors, questions, spans, k=5):  # k - 1 chunks (at least one)
    return evaluate_library(chunk_vectors, query_vectors, questions, spans, max(k - 1, 1))


@pytest.mark.parametrize("wrong", [evaluate_one_more, evaluate_one_less], ids=lambda f: f.__name__)
def test_c_rejects_a_loop_with_k_off_by_one(nb08, wrong):
    assert wrong.__name__ in rejects(nb08, "Exercise 8.1", BENCHMARK, my_evaluate=wrong)


# --- 8.2 (a): resample_means ------------------------------------------------------------------------------

def means_loop(diff, resamples=10_000, seed=0):  # right, one resample at a time
    rng = np.random.default_rng(seed)
    return np.array([diff[rng.integers(0, len(diff), size=len(diff))].mean() for _ in range(resamples)])


def means_other_draws(diff, resamples=10_000, seed=0):  # right, with rng.choice and another seed
    return diff[np.random.default_rng(seed + 7).choice(len(diff), size=(resamples, len(diff)))].mean(axis=1)


def means_without_replacement(diff, resamples=10_000, seed=0):  # every resample is the same questions
    rng = np.random.default_rng(seed)
    return np.array([diff[rng.permutation(len(diff))].mean() for _ in range(resamples)])


def means_wrong_axis(diff, resamples=10_000, seed=0):  # the mean over the resamples: one value per question
    return diff[np.random.default_rng(seed).integers(0, len(diff), size=(resamples, len(diff)))].mean(axis=0)


def means_one_draw_reused(diff, resamples=10_000, seed=0):  # one row drawn once and repeated
    row = np.random.default_rng(seed).integers(0, len(diff), size=len(diff))
    return np.repeat(diff[row].mean(), resamples)


@pytest.mark.parametrize("right", [means_loop, means_other_draws], ids=lambda f: f.__name__)
def test_8_2_a_accepts_right_resample_means(nb08, right):
    # paired_bootstrap keeps the reference, so only resample_means changes
    accepts(nb08, "Exercise 8.2", BOOTSTRAP, resample_means=right)


@pytest.mark.parametrize("wrong", [means_without_replacement, means_wrong_axis, means_one_draw_reused],
                         ids=lambda f: f.__name__)
def test_8_2_a_rejects_wrong_resample_means(nb08, wrong):
    assert "resample_means_summary(" in rejects(nb08, "Exercise 8.2", BOOTSTRAP, resample_means=wrong)


# --- 8.2 (b): best_alone and the 90% guard ------------------------------------------------------------

def _rows(per_question, resamples, seed, seeds_apart=False):
    return np.array([means_loop_fast(np.asarray(v, dtype=float), resamples, seed + (k if seeds_apart else 0))
                     for k, v in enumerate(per_question.values())])


def means_loop_fast(diff, resamples, seed):
    return diff[np.random.default_rng(seed).integers(0, len(diff), size=(resamples, len(diff)))].mean(axis=1)


def best_alone_library(per_question, resamples=10_000, seed=0):
    return stats.verdict(per_question, costs=dict.fromkeys(per_question, 0), resamples=resamples,
                         seed=seed).p_best_alone


def best_with_ties(per_question, resamples=10_000, seed=0):  # a tie for the best counts as best alone
    means = _rows(per_question, resamples, seed)
    return {s: float(np.mean(row == means.max(axis=0))) for s, row in zip(per_question, means)}


def best_ties_shared(per_question, resamples=10_000, seed=0):  # a tie shares the win (the library's p_best)
    means = _rows(per_question, resamples, seed)
    top = means == means.max(axis=0)
    return {s: float(np.mean(row / top.sum(axis=0))) for s, row in zip(per_question, top)}


def best_unpaired(per_question, resamples=10_000, seed=0):  # each strategy drawn with its own seed: not paired
    means = _rows(per_question, resamples, seed, seeds_apart=True)
    top = means.max(axis=0)
    single = (means == top).sum(axis=0) == 1
    return {s: float(np.mean(single & (row == top))) for s, row in zip(per_question, means)}


def decide_without_the_guard(per_question):  # every other ruled out is enough: no 90% of the resamples
    leader = max(per_question, key=lambda s: np.mean(per_question[s]))
    out = sorted(s for s in per_question
                 if s != leader and stats.paired_interval(per_question[s], per_question[leader]).high < 0)
    return (leader if len(out) == len(per_question) - 1 else None), out


def test_8_2_b_accepts_the_library_shares(nb08):
    accepts(nb08, "Exercise 8.2", VERDICT, best_alone=best_alone_library)


@pytest.mark.parametrize("wrong", [best_with_ties, best_ties_shared, best_unpaired], ids=lambda f: f.__name__)
def test_8_2_b_rejects_a_wrong_best_alone(nb08, wrong):
    assert wrong.__name__ in rejects(nb08, "Exercise 8.2", VERDICT, best_alone=wrong)


def test_8_2_b_rejects_a_verdict_without_the_90_percent_guard(nb08):
    assert "decide_without_the_guard" in rejects(nb08, "Exercise 8.2", VERDICT, decide=decide_without_the_guard)
