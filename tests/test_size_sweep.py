"""chroma_eval --size-sweep: the exact-budget spans, and results/size_sweep still matching the chunkers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from course_lib.strategies import chunk_with, result_stem
from course_lib.tokens import count_tokens

ROOT = Path(__file__).resolve().parent.parent
SIZE_SWEEP = ROOT / "results" / "size_sweep"



def test_exact_budget_spans_return_the_budget_and_cut_the_last_chunk(chroma_eval):
    texts = ["one two three four five six seven eight", "alpha beta gamma delta epsilon", "x y z"]
    tokens = [count_tokens(t) for t in texts]
    starts = [0, 100, 200]
    spans = [("doc", s, s + len(t)) for s, t in zip(starts, texts)]
    budget = tokens[0] + 2
    out, returned = chroma_eval.exact_budget_spans([0, 1, 2], spans, texts, tokens, budget)
    assert returned == budget
    assert out[0] == spans[0]
    cut = out[1]
    assert cut[1] == starts[1] and cut[2] < spans[1][2]
    assert count_tokens(texts[1][:cut[2] - cut[1]]) == 2
    assert len(out) == 2


def test_exact_budget_spans_refuse_a_ranking_that_runs_out(chroma_eval):
    texts = ["short text"]
    with pytest.raises(RuntimeError, match="SIZE_DEPTH"):
        chroma_eval.exact_budget_spans([0], [("doc", 0, len(texts[0]))], texts, [count_tokens(texts[0])], 1000)


def test_size_sweep_results_match_the_current_chunkers(chroma_eval):
    """The sha256 of every chunk span of results/size_sweep, recomputed (needs the Chroma dataset)."""
    from course_lib.datasets import load_chroma_corpus

    results = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(SIZE_SWEEP.glob("*_*.json"))]
    results = [r for r in results if "strategy" in r.get("config", {})]
    assert results, f"no size-sweep results in {SIZE_SWEEP}"
    corpora = {cid: load_chroma_corpus(cid) for cid in results[0]["dataset"]["corpora"]}
    for result in results:
        strategy = result["config"]["strategy"]
        spans = [(cid, c.start, c.end) for cid, text in corpora.items() for c in chunk_with(strategy, text)]
        assert chroma_eval.spans_digest(spans) == result["chunks"]["spans_sha256"], (
            f"{strategy}: results/size_sweep was computed with other chunks; re-run "
            "`python benchmarks/chroma_eval.py --size-sweep --corpora chatlogs state_of_the_union wikitexts`")
        assert result_stem(strategy) == result["config"]["name"]
