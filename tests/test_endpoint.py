"""The embeddings endpoint for real: chunk-eval and `EndpointEmbedder` against tests/embedding_server.py, a small
OpenAI-compatible server on 127.0.0.1 (started and stopped in each test, port chosen by the system), with no mock
of the client. The server answers out of order, sends a 429 with Retry-After and a 500, checks the key, and
echoes a wrong key in its 401 (the client must never show it).

`pytest -s tests/test_endpoint.py` prints the measured request count, retries, largest vector difference and the
two runs' seconds.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import socket
import time
from pathlib import Path

import numpy as np
import pytest

from rag_tools.chunk_eval import main
from rag_tools.embedders import EmbedderError, EndpointEmbedder, _retry_after, load_embedder
from tests.embedding_server import MODEL, EmbeddingServer

ROOT = Path(__file__).resolve().parent.parent
DOCS, QUESTIONS = ROOT / "data" / "capstone" / "docs", ROOT / "data" / "capstone" / "questions.jsonl"
KEY_VAR, KEY = "CHUNK_EVAL_TEST_KEY", "sk-test-0123456789abcdef"
STRATEGIES = ["recursive:128", "headers:markdown:256", "hybrid:recursive:256", "fixed:64"]


def toy_embed(texts: list[str]) -> np.ndarray:
    """Eight numbers per text, a function of the text alone (for tests that need no real model)."""
    rows = [np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:12], 16)).normal(size=8) for t in texts]
    matrix = np.array(rows, dtype=np.float32).reshape(len(texts), 8)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


@pytest.fixture(autouse=True)
def loopback(monkeypatch):
    """The key in the environment, and loopback never sent through a proxy."""
    monkeypatch.setenv(KEY_VAR, KEY)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


def endpoint(server: EmbeddingServer, **options) -> EndpointEmbedder:
    return EndpointEmbedder(server.base_url, MODEL, api_key_env=KEY_VAR, progress=False, **options)


def cached_vectors(folder: Path) -> dict[str, np.ndarray]:
    vectors = {}
    for path in folder.rglob("*.npz"):
        with np.load(path) as stored:
            vectors.update(zip(stored["keys"].tolist(), stored["vectors"]))
    return vectors


def strategy_args() -> list[str]:
    return [arg for spec in STRATEGIES for arg in ("--strategy", spec)]


# ---------------------------------------------------------------------------
# chunk-eval through the endpoint, against the local model
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("sentence_transformers")
    from rag_tools.embedders import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


def test_chunk_eval_through_the_endpoint_gives_the_local_metrics_and_counts_retries(minilm, tmp_path, capsys):
    common = [str(DOCS), str(QUESTIONS), *strategy_args(), "--k", "3", "--quiet"]
    began = time.perf_counter()
    assert main([*common, "--cache", str(tmp_path / "local"), "--json", str(tmp_path / "local.json")]) == 0
    local_seconds = time.perf_counter() - began
    capsys.readouterr()

    with EmbeddingServer(minilm.encode, key=KEY, faults=["429", "500"]) as server:
        began = time.perf_counter()
        status = main([*common, "--embed-url", server.base_url, "--embed-model", MODEL, "--api-key-env", KEY_VAR,
                       "--cache", str(tmp_path / "endpoint"), "--json", str(tmp_path / "endpoint.json"),
                       "--html", str(tmp_path / "endpoint.html")])
        endpoint_seconds = time.perf_counter() - began
    out, err = capsys.readouterr()
    assert status == 0, err

    local, remote = (json.loads((tmp_path / f"{name}.json").read_text()) for name in ("local", "endpoint"))
    assert [r["strategy"] for r in remote["results"]] == [r["strategy"] for r in local["results"]]
    metrics = ("recall_at_k", "mrr", "ndcg_at_10", "span_recall", "iou", "answer_recall_at_k")
    for mine, theirs in zip(remote["results"], local["results"]):
        assert {m: mine[m] for m in metrics} == {m: theirs[m] for m in metrics}, mine["strategy"]
    assert remote["verdict_text"] == local["verdict_text"]

    here, there = cached_vectors(tmp_path / "local"), cached_vectors(tmp_path / "endpoint")
    assert set(here) == set(there) and len(here) > 50
    largest = max(float(np.abs(here[key] - there[key]).max()) for key in here)
    assert largest < 1e-5, f"vectors differ by up to {largest:.2e}"

    statuses = [status for status, _, _ in server.log]
    assert statuses[:3] == [429, 500, 200] and set(statuses[3:]) == {200}
    waited = server.log[1][2] - server.log[0][2]
    assert waited >= 0.95, f"the retry came {waited:.2f} s after a 429 asking for 1 s"
    facts = remote["embedding"]
    assert facts["requests"] == len(server.log) and facts["retries"] == 2
    assert facts["model"] == f"{MODEL} at {server.base_url}" and facts["dimension"] == 384 and facts["window"] is None
    assert f"{len(server.log)} requests to the endpoint (2 retries)" in out
    assert max(n for _, n, _ in server.log) <= EndpointEmbedder.MAX_INPUTS

    texts = [out, err, (tmp_path / "endpoint.html").read_text(), (tmp_path / "endpoint.json").read_text()]
    assert not any(KEY in text for text in texts), "the key was written to an output"
    assert not any(KEY.encode() in path.read_bytes() for path in (tmp_path / "endpoint").rglob("*") if path.is_file())
    print(f"\nendpoint run: {facts['requests']} requests, {facts['retries']} retries, {len(here)} vectors, largest "
          f"difference from the local model {largest:.2e}; seconds: endpoint {endpoint_seconds:.1f} (with the "
          f"server's waits and its own embedding), local {local_seconds:.1f}")


# ---------------------------------------------------------------------------
# What chunk-eval refuses, in one line
# ---------------------------------------------------------------------------


def run_bad(capsys, server: EmbeddingServer, *extra: str, key_var: str = KEY_VAR) -> str:
    status = main([str(DOCS), str(QUESTIONS), "--strategy", "recursive:128", "--no-cache", "--quiet",
                   "--embed-url", server.base_url, "--embed-model", MODEL, "--api-key-env", key_var, *extra])
    out, err = capsys.readouterr()
    assert status == 2, out + err
    assert len(err.strip().splitlines()) == 1, err
    return out + err


def test_a_wrong_key_is_one_line_that_never_shows_the_key(capsys, monkeypatch):
    monkeypatch.setenv("OTHER_KEY", "sk-wrong-secret-987654321")
    with EmbeddingServer(toy_embed, key=KEY) as server:
        text = run_bad(capsys, server, key_var="OTHER_KEY")
    assert [status for status, _, _ in server.log] == [401], "a 401 is not retried"
    assert "HTTP 401" in text and "$OTHER_KEY" in text and "--api-key-env" in text
    assert "sk-wrong-secret-987654321" not in text and "987654321" not in text


def test_no_key_at_all_says_the_variable_is_unset(capsys, monkeypatch):
    monkeypatch.delenv("UNSET_KEY_VARIABLE", raising=False)
    with EmbeddingServer(toy_embed, key=KEY) as server:
        text = run_bad(capsys, server, key_var="UNSET_KEY_VARIABLE")
    assert "no key was sent ($UNSET_KEY_VARIABLE is not set)" in text


def test_a_malformed_answer_is_one_line(capsys):
    with EmbeddingServer(toy_embed, key=KEY, faults=["malformed"]) as server:
        text = run_bad(capsys, server)
    assert "malformed answer" in text and "not a list of numbers" in text


def test_late_is_refused_for_the_endpoint_before_anything_is_embedded(capsys):
    with EmbeddingServer(toy_embed, key=KEY) as server:
        text = run_bad(capsys, server, "--strategy", "late:recursive:256")
    assert server.log == [], "nothing may be sent before the refusal"
    assert "late:recursive:256" in text and "no token vectors" in text


def test_the_default_grid_leaves_late_out_for_the_endpoint(capsys, tmp_path):
    with EmbeddingServer(toy_embed, key=KEY) as server:
        status = main([str(DOCS), str(QUESTIONS), "--no-cache", "--quiet", "--json", str(tmp_path / "r.json"),
                       "--embed-url", server.base_url, "--embed-model", MODEL, "--api-key-env", KEY_VAR])
    err = capsys.readouterr().err
    assert status == 0, err
    strategies = [r["strategy"] for r in json.loads((tmp_path / "r.json").read_text())["results"]]
    assert strategies and not any(s.startswith("late:") for s in strategies)
    assert "the default grid leaves out late:" in err


# ---------------------------------------------------------------------------
# The client alone
# ---------------------------------------------------------------------------


def test_answers_out_of_order_are_put_back_by_index():
    texts = [f"text number {i}" for i in range(150)]
    with EmbeddingServer(toy_embed, key=KEY) as server:
        client = endpoint(server)
        vectors = client.encode(texts)
    np.testing.assert_allclose(vectors, toy_embed(texts), atol=1e-6)
    assert [n for _, n, _ in server.log] == [64, 64, 22] and client.requests == 3 and client.dim == 8


def test_requests_hold_at_most_64_inputs_and_about_8000_tokens():
    client = EndpointEmbedder("http://127.0.0.1:9/v1", MODEL, progress=False)
    assert [len(b) for b in client.batches(["a few words"] * 130)] == [64, 64, 2]
    long = "word " * 3000  # about 3,000 cl100k tokens
    assert [len(b) for b in client.batches([long] * 5)] == [2, 2, 1]
    assert [len(b) for b in client.batches(["word " * 9000, "short"])] == [1, 1], "a text over the limit goes alone"


def test_retries_stop_after_five_with_one_line():
    with EmbeddingServer(toy_embed, key=KEY, faults=["500"] * 7) as server:
        client = endpoint(server, backoff=0.001)
        with pytest.raises(EmbedderError, match="still failed after 5 retries") as caught:
            client.encode(["one"])
    assert (client.requests, client.retries) == (6, 5) and len(server.log) == 6
    assert "\n" not in str(caught.value)


def test_a_change_of_dimension_is_refused():
    with EmbeddingServer(toy_embed, key=KEY, faults=["", "wrong-dimension"]) as server:
        client = endpoint(server)
        client.encode(["first"])
        with pytest.raises(EmbedderError, match="7-dimensional embeddings after 8-dimensional ones"):
            client.encode(["second"])


def test_a_404_names_the_options_to_check():
    with EmbeddingServer(toy_embed, key=KEY) as server:
        with pytest.raises(EmbedderError, match=r"HTTP 404 .*--embed-model 'other-model'"):
            EndpointEmbedder(server.base_url, "other-model", api_key_env=KEY_VAR, progress=False).encode(["x"])
        with pytest.raises(EmbedderError, match=r"HTTP 404 .*check --embed-url"):
            EndpointEmbedder(server.base_url[:-3], MODEL, api_key_env=KEY_VAR, progress=False).encode(["x"])


def test_a_server_that_is_not_there_is_one_line_at_once():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    began = time.perf_counter()
    with pytest.raises(EmbedderError, match="cannot reach the embeddings endpoint"):
        EndpointEmbedder(f"http://127.0.0.1:{port}/v1", MODEL, progress=False).encode(["x"])
    assert time.perf_counter() - began < 5, "a refused connection is not retried"


def test_the_url_is_checked_and_credentials_refused_unshown():
    for bad, words in (("ftp://host/v1", r"not an http\(s\) URL"), ("https://api.example.com/v1/embeddings", "without"),
                       ("", "base URL")):
        with pytest.raises(ValueError, match=words):
            EndpointEmbedder(bad, MODEL)
    assert EndpointEmbedder("https://api.example.com/v1/", MODEL).url == "https://api.example.com/v1/embeddings"
    with pytest.raises(ValueError, match="holds a user name or password") as caught:
        EndpointEmbedder("https://user:pa55word@api.example.com/v1", MODEL)
    assert "pa55word" not in str(caught.value)
    with pytest.raises(ValueError, match="environment variable"):
        EndpointEmbedder("https://api.example.com/v1", MODEL, api_key_env="not a name")


def test_the_key_is_never_stored_on_the_client():
    client = EndpointEmbedder("https://api.example.com/v1", MODEL, api_key_env=KEY_VAR)
    assert KEY.encode() not in pickle.dumps(client) and KEY not in repr(vars(client))


def test_retry_after_reads_seconds_and_dates():
    assert _retry_after("3") == 3.0 and _retry_after(None) is None and _retry_after("soon") is None
    later = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 20))
    assert 15 < _retry_after(later) <= 20


def test_endpoint_options_go_together():
    for options, words in (({"embed_url": "https://api.example.com/v1"}, "go together"),
                           ({"embed_url": "https://a.example/v1", "embed_model": MODEL, "window": 256}, "--window"),
                           ({"api_key_env": "X"}, "only with --embed-url")):
        with pytest.raises(ValueError, match=words):
            load_embedder(**options)
    with pytest.raises(ValueError, match="exclude each other"):
        load_embedder("minilm", embed_url="https://a.example/v1", embed_model=MODEL)
