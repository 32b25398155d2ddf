"""Notebook 00's preview of the course's end: the committed chunk-eval run it reads is current.

Notebook 00 section 3 prints the verdict of `chunk-eval` on notebook 13's folder (data/capstone/) from
results/capstone_chunk_eval.json, so it loads no model. This checks that the file was written by the
command 00 prints, on today's documents and questions (a change to data/capstone/ fails here: re-run
the command), and that what 00's prose says about it holds.
"""

from __future__ import annotations

import json

import nbformat

from course_lib.strategies import parse_strategy
from rag_tools.chunk_eval import read_documents, read_questions
from rag_tools.chunk_eval.score import _inputs_sha256
from scripts.project import RESULTS, ROOT

RUN = RESULTS / "capstone_chunk_eval.json"
COMMAND = "chunk-eval data/capstone/docs data/capstone/questions.jsonl --k 1 --json results/capstone_chunk_eval.json"
NOTEBOOK = ROOT / "notebooks" / "00_start_here.ipynb"


def _run() -> dict:
    return json.loads(RUN.read_text(encoding="utf-8"))


def test_notebook_00_prints_the_command_and_reads_its_output_without_a_model():
    cells = nbformat.read(NOTEBOOK, as_version=4).cells
    assert any(COMMAND in c.source for c in cells if c.cell_type == "markdown"), "00 shows how to reproduce the file"
    reader = next(c for c in cells if c.cell_type == "code" and RUN.name in c.source)
    imports = [line for line in reader.source.splitlines() if line.startswith(("import ", "from "))]
    assert imports == ["import json", "import textwrap"], f"00's preview loads no model: {imports}"
    assert "verdict:" in "".join(o.get("text", "") for o in reader.outputs)


def test_the_committed_run_is_of_todays_capstone_folder():
    capstone = ROOT / "data" / "capstone"
    documents, _ = read_documents(capstone / "docs")
    questions = read_questions(capstone / "questions.jsonl", documents)
    run = _run()
    assert run["inputs_sha256"] == _inputs_sha256(documents, questions), (
        f"data/capstone/ changed since {RUN.name} was written: run `{COMMAND}` from the course folder "
        "and re-execute notebook 00")
    assert run["k"] == 1 and run["budget"] is None and run["metric"] == "recall_at_k"
    assert run["questions"] == len(questions) and run["documents"] == len(documents)


def test_what_notebook_00_says_about_the_verdict_holds():
    verdict = _run()["verdict"]
    size = {s: parse_strategy(s).size for s in verdict["in_play"] + verdict["ruled_out"]}
    assert verdict["winner"] is None, "00 says no strategy wins yet"
    assert verdict["in_play"] and all(size[s] <= 128 for s in verdict["in_play"]), "the small chunks are in play"
    assert all(s in verdict["ruled_out"] for s in size if size[s] >= 256), "every 256- and 512-token one is out"
    assert any(s.startswith("late:") for s in verdict["ruled_out"])
    assert any(s.startswith("headers:") for s in verdict["ruled_out"])


def test_notebook_00_quiz_and_table_agree_with_the_verdict_it_prints():
    """The quiz quotes the printed verdict, and cost is named only among strategies shown as good (issue 46)."""
    cells = nbformat.read(NOTEBOOK, as_version=4).cells
    reader = next(c for c in cells if c.cell_type == "code" and RUN.name in c.source)
    printed = " ".join("".join(o.get("text", "") for o in reader.outputs).split())
    quiz = next(c.source for c in cells if c.cell_type == "markdown" and "Check your understanding" in c.source)
    verdict = _run()["verdict"]
    best_alone = printed.split("best alone in ")[1].split()[0]
    assert f"best alone in {best_alone} of the resamples" in quiz, f"the quiz should quote {best_alone}"
    pair = printed.split("questions would separate ")[1].split(".")[0].split(" from ")
    assert f"would separate `{pair[0]}` from `{pair[1].split()[0]}`" in quiz, f"the quiz should name {pair}"
    assert '"cheapest_in_play"' not in reader.source and "cheapest in play" not in quiz.lower()
    if not verdict["as_good"]:
        assert "No strategy shown as good as the leader yet" in printed
        prose = next(c.source for c in cells if c.cell_type == "markdown" and c.source.startswith("Read it as"))
        assert "none is shown as good as the leader" in " ".join(prose.split())
