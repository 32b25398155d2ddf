"""chunk-eval's memory and time against the number of questions, with a stand-in embedder (no model).

    nice -n 19 .venv/bin/python benchmarks/chunk_eval_scaling.py [--questions 1000 3000 10000]

What the command does, minus the model: `rag_tools.chunk_eval.evaluate` on one 306 kB document (4,000
numbered sentences) and N questions, each quoting one sentence, with three strategies (`fixed:32`,
`recursive:64`, `hybrid:recursive:64`), then the `--json` output written as the command writes it
(`EvalReport.json_pieces`). The embedder is a deterministic stand-in: a vector seeded by the sha256 of the
text (384 dimensions, as MiniLM), so the figures are chunk-eval's own work, not a model's.

Each size runs in a fresh subprocess. Memory is the peak resident set size (VmHWM in /proc/self/status,
Linux) of that process, which includes Python, NumPy and the inputs (the "start" column: after importing and
reading nothing yet); time is wall-clock seconds of `evaluate` plus the JSON write, per question. The ratios
printed below the table are what to read on a loaded machine: MB per 1,000 more questions between sizes (the
per-question results alone are a few kB a question) and time per question against the smallest size (1.0 =
linear). The reliability review of 2026-12-02 measured 336 / 871 / 2,611 MB at 1,000 / 3,000 / 10,000
questions (C5).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DIM = 384
SENTENCES = 4000
STRATEGIES = ("fixed:32", "recursive:64", "hybrid:recursive:64")


class StandIn:
    """A deterministic embedder without a model: a unit vector seeded by the sha256 of the text."""

    name = "stand-in-sha256"
    dim = DIM
    max_tokens = 10**9  # never windowed

    def token_counts(self, texts: list[str]) -> list[int]:
        return [1] * len(texts)

    def encode(self, texts: list[str], progress=None) -> np.ndarray:
        out = np.empty((len(texts), DIM), np.float32)
        for row, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
            vector = np.random.default_rng(seed).standard_normal(DIM)
            out[row] = vector / np.linalg.norm(vector)
        if progress:
            progress(len(texts))
        return out


def _peak_mb() -> float:
    """VmHWM, the process's peak resident set size, in MB."""
    status = Path("/proc/self/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM"))) / 1024


def _inputs(folder: Path, n: int) -> tuple[Path, Path]:
    sentences = [f"Sentence {i} says that part {i * 7} of the pump fits unit {i % 13} and no other one."
                 for i in range(SENTENCES)]
    (folder / "docs").mkdir()
    (folder / "docs" / "manual.txt").write_text(" ".join(sentences), encoding="utf-8")
    with open(folder / "questions.jsonl", "w", encoding="utf-8") as handle:
        for i in range(n):
            quote = sentences[(i * 37) % SENTENCES]
            handle.write(json.dumps({"question": f"Which unit does part {i} fit, question {i}?", "answer": quote})
                         + "\n")
    return folder / "docs", folder / "questions.jsonl"


def child(n: int) -> dict:
    """One size, in this process: evaluate and write the JSON; the peak memory and the seconds."""
    from rag_tools.chunk_eval import evaluate

    start = _peak_mb()
    with tempfile.TemporaryDirectory() as tmp:
        docs, questions = _inputs(Path(tmp), n)
        began = time.perf_counter()
        report = evaluate(docs, questions, list(STRATEGIES), embedder=StandIn(), cache=None)
        out = Path(tmp) / "report.json"
        with open(out, "w", encoding="utf-8") as handle:
            handle.writelines(report.json_pieces())
        seconds = time.perf_counter() - began
        json_mb = out.stat().st_size / 1e6
    return {"questions": n, "start_mb": start, "peak_mb": _peak_mb(), "seconds": seconds,
            "verdict_seconds": report.shared_seconds["verdict"], "json_mb": json_mb,
            "document_kb": sum(len(d.text.encode("utf-8")) for d in report.documents) / 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, nargs="+", default=[1000, 3000, 10000])
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return
    rows = []
    for n in args.questions:
        done = subprocess.run([sys.executable, __file__, "--child", str(n)], capture_output=True, text=True,
                              check=True)
        rows.append(json.loads(done.stdout.splitlines()[-1]))
    print(f"one document of {rows[0]['document_kb']:.0f} kB; strategies {', '.join(STRATEGIES)}; "
          "stand-in embedder (sha256-seeded, 384 dimensions); memory = peak RSS (VmHWM)")
    print("| questions | peak MB | start MB | seconds | ms/question | verdict s | JSON MB |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['questions']:,} | {r['peak_mb']:.0f} | {r['start_mb']:.0f} | {r['seconds']:.1f} | "
              f"{r['seconds'] / r['questions'] * 1e3:.2f} ms | {r['verdict_seconds']:.1f} | {r['json_mb']:.1f} |")
    first = rows[0]
    for r in rows[1:]:
        growth = (r["peak_mb"] - first["peak_mb"]) / (r["questions"] - first["questions"]) * 1e3
        linear = (r["seconds"] / r["questions"]) / (first["seconds"] / first["questions"])
        print(f"{first['questions']:,} -> {r['questions']:,} questions: {growth:+.1f} MB per 1,000 more questions; "
              f"time per question x{linear:.2f} (1.00 = linear)")


if __name__ == "__main__":
    main()
