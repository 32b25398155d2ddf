"""BM25 in the documents' language: what issue 45's tokenizer changes on the handbook sets and the capstone.

    COURSE_DATA_DIR=/path/to/datasets .venv/bin/python -m benchmarks.lexical      # a few seconds, no model

The handbook sets of benchmarks/transfer.py (`data/handbook_questions_es.jsonl` over debian_docs
`handbook/es-ES`, `data/handbook_questions_en.jsonl` over `handbook/en-US`, 63 questions each) and notebook
13's capstone folder (`data/capstone`, English, 27 questions), chunked by `recursive:256`, ranked by BM25 alone
(chunk-eval's `bm25:recursive:256`, k=5) with three tokenizers:

- `before`: chunk-eval's tokenizer before issue 45, `bm25s.tokenize` with English stop words whatever the
  language, words of two or more letters or digits, no stemming;
- `unstemmed`: `course_lib.retrieval.lexical_words` in the set's language, without stemming;
- `new`: `lexical_words` in the set's language with its Snowball stemmer (what chunk-eval now does).

Metrics as chunk-eval counts them: recall@5 (a returned chunk shares a character with the answer) and MRR
(the first chunk that does, over BM25's whole ranking). Differences are paired over the questions, with
`course_lib.stats.paired_interval` (10,000 resamples, seed 0, 95%): `new - before` and `new - unstemmed`.
The `new` rows are checked against chunk-eval's own scoring (`score._score`). Writes results/lexical_handbook.json.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from course_lib.retrieval import bm25_index, lexical_words
from course_lib.stats import paired_interval
from course_lib.strategies import chunk_with, parse_strategy
from rag_tools.chunk_eval.grades import ReferenceGrades
from rag_tools.chunk_eval.inputs import read_documents, read_questions
from rag_tools.chunk_eval.score import _score

ROOT = Path(__file__).resolve().parent.parent
STRATEGY = "bm25:recursive:256"
K = 5
# set -> (documents: under the data folder, or the repository's data/, its questions, its language)
SETS = {"es": ("debian_docs/handbook/es-ES", "data/handbook_questions_es.jsonl", "es"),
        "en": ("debian_docs/handbook/en-US", "data/handbook_questions_en.jsonl", "en"),
        "capstone": ("data/capstone/docs", "data/capstone/questions.jsonl", "en")}


def bm25s_default(texts: Sequence[str]) -> list[list[str]]:
    """The words chunk-eval's BM25 read before issue 45: bm25s's own tokenizer, English stop words."""
    import bm25s

    return bm25s.tokenize(list(texts), stopwords="en", return_ids=False, show_progress=False)


def rankings(texts: Sequence[str], queries: Sequence[str], tokenize: Callable[[Sequence[str]], list[list[str]]]
             ) -> list[np.ndarray]:
    """Each query's chunk rows with a positive BM25 score, best first (equal scores in row order)."""
    retriever, vocabulary = bm25_index(tokenize(texts))
    out = []
    for words in tokenize(queries):
        known = [w for w in words if w in vocabulary]
        scores = retriever.get_scores(known) if known else np.zeros(len(texts))
        order = np.argsort(-scores, kind="stable")
        out.append(order[scores[order] > 0])
    return out


def scores(ranked: Sequence[np.ndarray], grades: Sequence[dict[int, float]]) -> dict[str, list[float]]:
    """Per-question recall@K and reciprocal rank."""
    recall, rr = [], []
    for ranking, relevant in zip(ranked, grades):
        hits = [p for p, row in enumerate(ranking) if int(row) in relevant]
        recall.append(float(bool(hits) and hits[0] < K))
        rr.append(1.0 / (hits[0] + 1) if hits else 0.0)
    return {"recall_at_k": recall, "mrr": rr}


def run_set(name: str, data_dir: Path) -> dict:
    folder, questions_file, language = SETS[name]
    documents, _ = read_documents(ROOT / folder if folder.startswith("data/") else data_dir / folder)
    questions = read_questions(ROOT / questions_file, documents)
    spec = parse_strategy(STRATEGY)
    pairs = [(d, c) for d in documents for c in chunk_with(spec, d.text)]
    spans = [(d.path, c.start, c.end) for d, c in pairs]
    texts = [c.text for _, c in pairs]
    grade = ReferenceGrades(spans)
    grades = [grade(q.spans) for q in questions]
    queries = [q.question for q in questions]
    tokenizers = {"before": bm25s_default,
                  "unstemmed": lambda t: lexical_words(t, language, stem=False),
                  "new": lambda t: lexical_words(t, language)}
    per = {name: scores(rankings(texts, queries, tok), grades) for name, tok in tokenizers.items()}
    own = _score(spec, spans, texts, texts, [c.n_tokens for _, c in pairs], None, np.zeros((len(questions), 1)),
                 questions, documents, K, None, language=language)["per_question"]
    for metric in ("recall_at_k", "mrr"):
        assert np.allclose(own[metric], per["new"][metric]), f"{language} {metric}: not chunk-eval's scoring"
    out: dict = {"language": language, "questions": len(questions), "chunks": len(pairs),
                 "means": {name: {m: round(float(np.mean(v)), 4) for m, v in p.items()} for name, p in per.items()},
                 "differences": {}}
    for label, a, b in (("new - before", "new", "before"), ("new - unstemmed", "new", "unstemmed")):
        out["differences"][label] = {}
        for metric in ("recall_at_k", "mrr"):
            iv = paired_interval(per[a][metric], per[b][metric])
            out["differences"][label][metric] = [round(iv.mean, 4), round(iv.low, 4), round(iv.high, 4)]
        out["differences"][label]["questions_better_worse"] = [
            int(sum(x > y for x, y in zip(per[a]["mrr"], per[b]["mrr"]))),
            int(sum(x < y for x, y in zip(per[a]["mrr"], per[b]["mrr"])))]
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "lexical_handbook.json")
    args = parser.parse_args(argv)
    from course_lib.datasets import data_dir

    result = {"strategy": STRATEGY, "k": K, "method": __doc__.split("\n\n", 2)[2].strip(),
              "sets": {name: run_set(name, data_dir()) for name in SETS}}
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for name, r in result["sets"].items():
        print(f"{name}: {r['questions']} questions, {r['chunks']} chunks; means {r['means']}")
        for label, d in r["differences"].items():
            print(f"  {label}: {d}")


if __name__ == "__main__":
    main()
