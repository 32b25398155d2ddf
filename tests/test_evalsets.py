"""course_lib.evalsets: the question sets of notebook 10's comparison and their scoring helpers."""

import numpy as np
import pytest

from course_lib.evalsets import course_set, first_hit, overlaps, paired_interval, sentence_units


@pytest.mark.parametrize("name, questions", [("collection", 44), ("reports", 30)])
def test_course_sets_are_spans_into_their_documents(name, questions):
    ds = course_set(name)
    assert len(ds.questions) == len(ds.references) == len(ds.question_docs) == questions
    for units in (ds.base, ds.parents, ds.sentences):
        assert units and all(0 <= s < e <= len(ds.documents[d]) for d, s, e in units)
    for doc, refs in zip(ds.question_docs, ds.references):
        assert all(d == doc and ds.documents[d][s:e].strip() for d, s, e in refs)


def test_sentence_units_cut_long_sentences_at_the_limit():
    text = "Short one. Then " + " ".join(f"w{i}" for i in range(300)) + "."
    units = sentence_units(text, limit=20)
    assert units[0] == (0, 10) and len(units) > 10
    assert all(text[s:e].strip() for s, e in units)


def test_first_hit_is_the_reciprocal_rank_of_the_first_overlap():
    refs = [("a", 10, 20)]
    assert overlaps(("a", 15, 30), refs) and not overlaps(("a", 20, 30), refs) and not overlaps(("b", 0, 99), refs)
    assert first_hit([("a", 0, 5), ("b", 10, 20), ("a", 19, 25)], refs) == pytest.approx(1 / 3)
    assert first_hit([("a", 0, 5)], refs) == 0.0


def test_paired_interval_is_the_rounded_bootstrap_of_the_mean():
    diff = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    mean, low, high = paired_interval(diff)
    assert mean == round(diff.mean(), 4) and low <= mean <= high and low >= 0 and high <= 1
