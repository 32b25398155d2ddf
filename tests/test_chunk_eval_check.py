"""`chunk-eval check` (issue 36): the documents read, every quote matched, the warnings and the plan, without
loading a model; exit 0, or 2 with one line per problem. Also the plan a run prints before embedding and its
time estimate (issue 34). The toy embedder and the small folder come from tests/test_chunk_eval.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from course_lib.embed import VectorCache
from rag_tools import chunk_eval
from rag_tools.chunk_eval import main
from rag_tools.chunk_eval.check import model_folder
from rag_tools.chunk_eval.run import model_request
from rag_tools.chunk_eval.timings import EmbeddingRate, PlanCounts, plan_text
from tests.test_chunk_eval import QUESTIONS, ToyEmbedder, write

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def no_model(monkeypatch):
    """Every way a model could load raises."""
    def refuse(*args, **kwargs):
        raise AssertionError("check must not load a model")

    import course_lib.models
    import rag_tools.embedders

    for module, name in [(chunk_eval.run, "SentenceTransformerEmbedder"), (chunk_eval.run, "load_embedder"),
                         (rag_tools.embedders, "load_embedder"), (course_lib.models, "load_embedding_model")]:
        monkeypatch.setattr(module, name, refuse)


def run_check(capsys, *args) -> tuple[int, str, str]:
    status = main(["check", *map(str, args)])
    out, err = capsys.readouterr()
    return status, out, err


def test_a_clean_set_passes_with_the_plan(tmp_path, capsys, no_model):
    docs, questions = write(tmp_path)
    status, out, err = run_check(capsys, docs, questions, "--strategy", "fixed:12", "--strategy", "late:fixed:12",
                                 "--no-cache")
    assert status == 0, err
    assert out.startswith("plan: 3 documents (0.6 kB), 6 questions, 2 strategies, 26 chunks; 32 vectors, "
                          "32 distinct, 0 cached, 32 to embed (319 cl100k tokens), 3 documents encoded whole for late:")
    assert "check: no problem: ready to run" in out and "no model loaded" in out
    assert 'question b: the quote "Spare seals are kept in bin four" occurs in notes/faq.txt and pump.md' in err
    assert all(line.startswith("chunk-eval: warning: ") for line in err.splitlines())
    assert main(["--check", str(docs), str(questions), "--strategy", "fixed:12", "--no-cache"]) == 0, "--check too"


def test_the_plan_is_the_runs_plan(tmp_path, capsys, monkeypatch):
    """What check counts is what the run then prints and embeds (here through the command, with a toy model)."""
    docs, questions = write(tmp_path)
    toy = ToyEmbedder()
    monkeypatch.setattr(chunk_eval.run, "SentenceTransformerEmbedder", lambda model=None: toy)
    args = [str(docs), str(questions), "--strategy", "fixed:12", "--strategy", "hybrid:fixed:12", "--strategy",
            "headers:fixed:20", "--cache", str(tmp_path / "cache"), "--quiet"]
    assert main(["check", *args]) == 0
    planned = capsys.readouterr().out.splitlines()[0]
    assert main(args) == 0
    assert capsys.readouterr().out.splitlines()[0] == planned, "the run prints the plan check printed"
    counts = re.search(r"(\d+) vectors, (\d+) distinct, (\d+) cached, (\d+) to embed", planned).groups()
    requested, distinct, cached, to_embed = map(int, counts)
    assert requested > distinct, "fixed:12 and hybrid:fixed:12 share their vectors: each is embedded once"
    assert cached == 0 and to_embed == distinct == len(set(toy.encoded))
    assert main(["check", *args]) == 0  # the cache now holds every vector: check finds them without a model
    assert f"{distinct} distinct, {distinct} cached, 0 to embed" in capsys.readouterr().out


def test_problems_are_one_line_each_and_exit_2(tmp_path, capsys, no_model):
    """A misspelled quote, a quote in two documents, a document that does not exist and a quote that lies in text
    the reader dropped: every problem in one pass, one line each."""
    docs, questions = write(tmp_path)
    nav = "".join(f'<li><a href="p{i}.html">Chapter {i} of the guide</a></li>' for i in range(5))
    (docs / "page.html").write_text(f'<div role="navigation"><ul>{nav}</ul></div><p>The pump needs coolant before '
                                    'its first start.</p>', encoding="utf-8")
    bad = [*QUESTIONS,
           {"id": "typo", "question": "Where?", "answer": "Spare seals are kept in bin fuor"},
           {"id": "gone", "question": "What?", "answer": "Spare seals", "document": "notes/gone.txt"},
           {"id": "nav", "question": "Which chapter?", "answer": "Chapter 3 of the guide"},
           {"id": "b", "question": "Where are spare seals, again?", "answer": "Spare seals are kept in bin four"}]
    questions.write_text("".join(json.dumps(q) + "\n" for q in bad), encoding="utf-8")
    status, out, err = run_check(capsys, docs, questions, "--strategy", "fixed:12", "--no-cache")
    assert status == 2
    errors = [line for line in err.splitlines() if line.startswith("chunk-eval: error: ")]
    assert len(errors) == 3, err
    assert 'question typo: "Where?"): the answer "Spare seals are kept in bin fuor" is not in any document; ' \
           'closest passage' in errors[0]
    assert "document 'notes/gone.txt' is not a document of DOCS" in errors[1]
    assert 'lies in text the reader left out (page.html, role="navigation")' in errors[2], errors[2]
    warnings = [line for line in err.splitlines() if line.startswith("chunk-eval: warning: ")]
    assert len(errors) + len(warnings) == len(err.splitlines())
    assert any("occurs in notes/faq.txt and pump.md" in w for w in warnings), "a quote in two documents"
    assert any("questions b, b share the quote" in w for w in warnings), warnings
    assert any("2 questions have the id 'b'" in w for w in warnings)
    assert "check: 3 problems: fix them before a run" in out and out.startswith("plan: ")


def test_degenerate_sizes_warn(tmp_path, capsys, no_model):
    docs, questions = write(tmp_path)
    status, _, err = run_check(capsys, docs, questions, "--strategy", "recursive:100000", "--strategy", "fixed:8",
                               "--strategy", "recursive:64", "--k", "10", "--no-cache")
    assert status == 0
    assert "recursive:100000: the median chunk holds 99% of its document" in err
    assert "fixed:8: the median chunk holds 8 tokens, too few" in err
    assert "recursive:64: 4 chunks in all, no more than the 10 returned" in err


def test_check_reads_the_cache_folder_as_the_run_writes_it(tmp_path):
    assert model_folder(tmp_path, "some model|window=512") == VectorCache(tmp_path, "some model|window=512").folder
    assert model_request(None, {"window": None}) == model_request(None, None) != model_request("minilm", None)


def test_estimates_come_from_a_measured_rate():
    counts = PlanCounts(documents=2, document_bytes=8500, questions=27, strategies=18, chunks=280, vectors=307,
                        distinct=180, cached=0, to_embed=180, tokens_to_embed=20_000)
    assert "no embedding rate measured yet" in plan_text(counts, None)
    assert "about 20 s of embedding at 1,000 cl100k tokens a second (measured on an earlier run)" in \
        plan_text(counts, EmbeddingRate(5000, 5.0, "an earlier run"))
    cached = PlanCounts(**{**counts.__dict__, "cached": 180, "to_embed": 0, "tokens_to_embed": 0})
    assert "nothing to embed" in plan_text(cached, EmbeddingRate(5000, 5.0))


def test_a_rate_is_stored_and_a_first_run_measures_one(tmp_path, capsys, monkeypatch):
    """Without a stored rate a sample of the run's short and long texts measures one and the estimate follows;
    the run stores its rate beside the vectors, and the next plan estimates from it."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "long.txt").write_text(" ".join(f"Sentence {i} says the pump part {i} lasts {i % 9} years."
                                              for i in range(600)), encoding="utf-8")
    (tmp_path / "q.jsonl").write_text(json.dumps({"question": "How long does part 7 last?",
                                                  "answer": "Sentence 7 says"}) + "\n", encoding="utf-8")
    toy = ToyEmbedder()
    monkeypatch.setattr(chunk_eval.run, "SentenceTransformerEmbedder", lambda model=None: toy)
    args = [str(folder), str(tmp_path / "q.jsonl"), "--strategy", "fixed:16", "--cache", str(tmp_path / "c"),
            "--quiet"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "estimate: no embedding rate measured yet" in out
    assert re.search(r"estimate: about \d+ s of embedding in all \(([\d.]+ ms a text plus )?[\d,]+ cl100k tokens a "
                     r"second, measured on 32 short and 32 long texts of this run\)", out), out
    (rate_file,) = (tmp_path / "c").rglob("rate.json")
    assert json.loads(rate_file.read_text())["tokens"] > 2000
    assert main([*args[:3], "fixed:20", *args[4:]]) == 0
    assert "(measured on an earlier run)" in capsys.readouterr().out


def course_sets(tmp_path: Path) -> list[tuple[Path, Path]]:
    sets = [(ROOT / "data" / "capstone" / "docs", ROOT / "data" / "capstone" / "questions.jsonl")]
    from course_lib import datasets

    try:
        pdf = datasets.fetch("debian_docs", "developers-reference.pdf", download=False)
    except (FileNotFoundError, OSError, ValueError):
        return sets
    (tmp_path / "pdf").mkdir()
    (tmp_path / "pdf" / pdf.name).symlink_to(pdf)
    return [*sets, (tmp_path / "pdf", ROOT / "data" / "developers_reference_questions.jsonl")]


def test_the_course_sets_pass_without_loading_a_model(tmp_path):
    """The default grid on the capstone and the PDF question set: exit 0 in a fresh process that never imports
    torch, transformers or sentence-transformers (loading a model is what made `check` slow; no clock is read)."""
    script = ("import sys; from rag_tools.chunk_eval import main; status = main(sys.argv[1:]); "
              "loaded = [m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules]; "
              "print('loaded:', loaded); sys.exit(status)")
    for docs, questions in course_sets(tmp_path):
        done = subprocess.run([sys.executable, "-c", script, "check", str(docs), str(questions), "--no-cache"],
                              capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "loaded: []" in done.stdout and "check: no problem" in done.stdout, done.stdout
