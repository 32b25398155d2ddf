"""chunk-eval under faults: damaged or unwritable caches, failed and interrupted output writes, BOMs, pipes.

Each test reproduces a defect of the reliability review (D1, D3-D6, D9, D10) through `main`, with the
toy embedder of test_chunk_eval and fault injection where the real window is microseconds wide.
"""

import json
import os
import subprocess
import sys

import pytest

from rag_tools import chunk_eval
from rag_tools.chunk_eval import cli, main
from tests.test_chunk_eval import QUESTIONS, ToyEmbedder, write

ARGS = ["--strategy", "fixed:12", "--strategy", "late:fixed:12", "--k", "3", "--quiet"]


@pytest.fixture
def toy(monkeypatch):
    embedder = ToyEmbedder()
    monkeypatch.setattr(chunk_eval.run, "SentenceTransformerEmbedder", lambda model=None: embedder)
    return embedder


@pytest.fixture
def inputs(tmp_path):
    return [str(p) for p in write(tmp_path)]


def metrics(path):
    """Each row without what is timed (seconds, the index's embedding seconds, latencies)."""
    timed = ("seconds", "embed_seconds", "latency_ms", "rerank_seconds")
    return [{k: ({c: x for c, x in v.items() if c not in timed} if k == "cost" else v) for k, v in row.items()
             if k not in timed} for row in json.loads(path.read_text())["results"]]


def test_a_damaged_cache_file_warns_once_and_gives_a_cold_runs_metrics(tmp_path, inputs, toy, capsys):
    """D1/D4: a torn or truncated cache file ended every later run in a traceback."""
    cache, cold = tmp_path / "cache", tmp_path / "cold.json"
    assert main([*inputs, *ARGS, "--no-cache", "--json", str(cold)]) == 0
    assert main([*inputs, *ARGS, "--cache", str(cache)]) == 0
    (stored,) = cache.rglob("*.npz")
    (stored.parent / f".{stored.stem}.tmp.npz").write_bytes(stored.read_bytes()[:100])  # another run's torn file
    stored.write_bytes(stored.read_bytes()[: stored.stat().st_size // 2])
    capsys.readouterr()
    warm = tmp_path / "warm.json"
    assert main([*inputs, *ARGS, "--cache", str(cache), "--json", str(warm)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("chunk-eval: warning: cache file") and str(stored) in err[0]
    assert metrics(warm) == metrics(cold)


def test_an_unwritable_cache_costs_nothing(tmp_path, inputs, toy, capsys):
    """D3: `--cache` naming a file threw the table and the outputs away after the whole run."""
    (tmp_path / "notadir").write_text("x")
    out = tmp_path / "r.json"
    assert main([*inputs, *ARGS, "--cache", str(tmp_path / "notadir"), "--json", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("chunk-eval: warning: cannot write the vector cache") == 1
    assert "recall@3" in captured.out and json.loads(out.read_text())["results"]


def test_a_cache_write_that_fails_later_still_prints_and_writes(tmp_path, inputs, toy, capsys, monkeypatch):
    """D3: a full disk at the cache's flush lost 2,386 vectors and the table."""
    from course_lib import embed

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(embed.np, "savez", full)  # the cache's only writer
    out = tmp_path / "r.json"
    assert main([*inputs, *ARGS, "--cache", str(tmp_path / "c"), "--json", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("No space left on device") == 1 and "recall@3" in captured.out and out.exists()
    assert not [p for p in (tmp_path / "c").rglob("*") if p.is_file()]


def test_same_path_for_json_and_html_is_refused(tmp_path, inputs, toy, capsys):
    """D10: the HTML silently replaced the JSON."""
    same = str(tmp_path / "r.out")
    assert main([*inputs, *ARGS, "--no-cache", "--json", same, "--html", same]) == 2
    assert "give each its own file" in capsys.readouterr().err and not os.path.exists(same)


def test_an_unwritable_output_folder_is_found_before_the_run(tmp_path, inputs, monkeypatch, capsys):
    """D10: a read-only output folder was found only after the whole run."""
    def refuse(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(cli.tempfile, "NamedTemporaryFile", refuse)
    monkeypatch.setattr(cli, "evaluate", lambda *a, **k: pytest.fail("the run started"))
    assert main([*inputs, *ARGS, "--no-cache", "--json", str(tmp_path / "r.json")]) == 2
    err = capsys.readouterr().err
    assert f"cannot write '{tmp_path / 'r.json'}': Read-only file system" in err


def test_a_full_disk_names_the_output_and_leaves_no_temporary_file(tmp_path, inputs, toy, monkeypatch, capsys):
    """D5: "No space left on device: " named no file, and a hidden partial .tmp file stayed."""
    real = os.fsync

    def full(fd):
        if os.readlink(f"/proc/self/fd/{fd}").endswith(f".tmp{os.getpid()}"):
            raise OSError(28, "No space left on device")
        return real(fd)

    monkeypatch.setattr(cli.os, "fsync", full)
    out = tmp_path / "out"
    out.mkdir()
    assert main([*inputs, *ARGS, "--no-cache", "--json", str(out / "r.json"), "--html", str(out / "r.html")]) == 2
    assert f"cannot write '{out / 'r.json'}': No space left on device" in capsys.readouterr().err
    assert list(out.iterdir()) == []


def test_a_ctrl_c_between_the_two_renames_says_which_file_was_written(tmp_path, inputs, toy, monkeypatch, capsys):
    """D6: "interrupted; nothing written" while the new JSON stood beside the old HTML."""
    real = os.replace

    def replace(src, dst):
        if str(dst).endswith(".html"):
            raise KeyboardInterrupt
        return real(src, dst)

    monkeypatch.setattr(cli.os, "replace", replace)
    out = tmp_path / "r.json"
    assert main([*inputs, *ARGS, "--no-cache", "--json", str(out), "--html", str(tmp_path / "r.html")]) == 130
    assert f"interrupted; wrote {out} only" in capsys.readouterr().err
    assert not list(tmp_path.glob(".*tmp*"))


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_questions_files_with_a_byte_order_mark_are_read(tmp_path, toy, suffix):
    """D9: Excel's "CSV UTF-8" starts with a BOM, and the header then had no column 'question'."""
    docs, _ = write(tmp_path)
    q = QUESTIONS[1]
    text = ("question,answer\n" + f"{q['question']},{q['answer']}\n" if suffix == ".csv"
            else json.dumps({"question": q["question"], "answer": q["answer"]}) + "\n")
    path = tmp_path / f"bom{suffix}"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert main([str(docs), str(path), *ARGS, "--no-cache"]) == 0


def test_a_closed_pipe_ends_quietly(tmp_path):
    """D10: `chunk-eval ... | head -1` ended in a BrokenPipeError traceback."""
    docs, questions = write(tmp_path)
    script = ("import sys; from rag_tools import chunk_eval; from tests.test_chunk_eval import ToyEmbedder\n"
              "chunk_eval.run.SentenceTransformerEmbedder = lambda model=None: ToyEmbedder()\n"
              "from rag_tools.chunk_eval import main\n"
              f"sys.exit(main({[str(docs), str(questions), *ARGS, '--no-cache']!r}))\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=os.getcwd())
    proc.stdout.close()  # the reader is gone before the table is printed, as with `| head -0`
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and "Traceback" not in err, err


def test_a_question_with_a_lone_surrogate_is_one_line_naming_its_position(tmp_path, toy, capsys):
    """K1 (review 2026-12-02): a JSON escape such as "\\udce9" left in a question gave a UnicodeEncodeError."""
    questions = [*QUESTIONS[:2], {**QUESTIONS[2], "question": "Where is the caf\udce9 kept?"}]
    docs, path = write(tmp_path, questions=questions)
    assert main([str(docs), str(path), *ARGS, "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "questions.jsonl line 3: question 'c' holds a lone surrogate" in err
    assert "'\\udce9' at position 16" in err and "errors='replace'" in err
