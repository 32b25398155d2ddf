"""The endpoint client against servers that misbehave on purpose (tests/embedding_server.py's `ScriptedServer`, on
127.0.0.1 only): redirects never followed and the key sent nowhere else, one deadline over a whole request, a cap
on an answer's size, every transport failure retried and then one line, a retry announced under --quiet, and a
cached dimension that the endpoint's model no longer has blamed on the cache. Reliability review round 3
(E1-E6, `../shared/reviews/reliability-2026-12-06.md`).
"""

from __future__ import annotations

import json
import shutil
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from rag_tools.chunk_eval import main
from rag_tools.embedders import EmbedderError, EndpointEmbedder
from tests.embedding_server import MODEL, EmbeddingServer, ScriptedServer
from tests.test_endpoint import DOCS, KEY, KEY_VAR, QUESTIONS, endpoint, loopback, toy_embed  # noqa: F401

REDIRECTS = [301, 302, 303, 307, 308]


def answer_json(handler, payload: bytes, status: int = 200, **headers: str) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(headers.pop("length", len(payload))))
    for name, value in headers.items():
        handler.send_header(name.replace("_", "-"), value)
    handler.end_headers()
    handler.wfile.write(payload)


def one_vector(handler, server) -> None:
    """A good answer for one input, whatever was asked (what a redirect's target would send back)."""
    answer_json(handler, json.dumps({"data": [{"index": 0, "embedding": [0.6, 0.8]}]}).encode())


def client_for(server, **options) -> EndpointEmbedder:
    client = EndpointEmbedder(server.base_url, MODEL, api_key_env=KEY_VAR, progress=False, **options)
    client.backoff = 0.001
    return client


def ends_within(seconds: float, work) -> BaseException | None:
    """Run `work()` in a thread; fail if it is still running after `seconds`; return what it raised."""
    raised: list[BaseException | None] = [None]

    def run() -> None:
        try:
            work()
        except BaseException as error:  # handed to the test
            raised[0] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still reading after {seconds} s"
    return raised[0]


# ---------------------------------------------------------------------------
# E1, E6: no redirect is followed; the key goes to the given URL only
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("code", REDIRECTS)
@pytest.mark.parametrize("where", ["another port", "the same port"])
def test_no_redirect_is_followed_and_the_key_reaches_no_second_request(code, where):
    with ScriptedServer(one_vector) as target:
        def redirect(handler, server) -> None:
            if handler.path != "/v1/embeddings":  # the same server, another path: answer as the API would
                return one_vector(handler, server)
            port = target.port if where == "another port" else server.port
            handler.send_response(code)
            handler.send_header("Location", f"http://127.0.0.1:{port}/v2/embeddings")
            handler.send_header("Content-Length", "0")
            handler.end_headers()

        with ScriptedServer(redirect) as first, pytest.raises(EmbedderError) as caught:
            client_for(first).encode(["pump"])
    requests = first.requests + target.requests
    assert [(method, path) for method, path, _ in requests] == [("POST", "/v1/embeddings")], "one request only"
    assert requests[0][2].get("Authorization") == f"Bearer {KEY}"
    port = target.port if where == "another port" else first.port
    message = str(caught.value)
    assert f"HTTP {code}, a redirect to http://127.0.0.1:{port}/v2/embeddings" in message
    assert message.endswith(f"give --embed-url http://127.0.0.1:{port}/v2") and "\n" not in message
    assert "--embed-model" not in message, "a redirect is not a question of the model (E6)"


def test_a_redirect_stops_chunk_eval_in_one_line_without_the_key(capsys):
    def redirect(handler, server) -> None:
        handler.send_response(302)
        handler.send_header("Location", f"http://127.0.0.1:{target.port}/v1/embeddings")
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    with ScriptedServer(one_vector) as target, ScriptedServer(redirect) as first:
        status = main([str(DOCS), str(QUESTIONS), "--strategy", "recursive:128", "--no-cache", "--quiet",
                       "--embed-url", first.base_url, "--embed-model", MODEL, "--api-key-env", KEY_VAR])
    out, err = capsys.readouterr()
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert f"give --embed-url http://127.0.0.1:{target.port}/v1" in err and KEY not in out + err
    assert target.requests == [] and len(first.requests) == 1


# ---------------------------------------------------------------------------
# E2, E5: one deadline over the whole request, and a cap on the answer
# ---------------------------------------------------------------------------


def trickle_body(handler, server) -> None:
    """Headers promising a million bytes, then one byte a second."""
    handler.send_response(200)
    handler.send_header("Content-Length", "1000000")
    handler.end_headers()
    while not server.stopping.wait(1.0):
        handler.wfile.write(b" ")


def trickle_headers(handler, server) -> None:
    """The status line, then a header sent one byte a second, never ending."""
    handler.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    while not server.stopping.wait(1.0):
        handler.wfile.write(b"a")


@pytest.mark.parametrize("reply", [trickle_body, trickle_headers], ids=["body", "headers"])
def test_a_trickling_server_ends_within_the_deadline(reply):
    with ScriptedServer(reply) as server:
        client = client_for(server, timeout=2)
        client.MAX_RETRIES = 1
        began = time.perf_counter()
        raised = ends_within(60, lambda: client.encode(["pump"]))
        took = time.perf_counter() - began
    assert isinstance(raised, EmbedderError), raised
    assert "still failed after 1 retries (last: TimeoutError: no whole answer within 2 s)" in str(raised)
    assert len(server.requests) == 2 and took < 30, f"{took:.1f} s for two requests of at most 2 s"


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> Path:
    """A self-signed certificate for 127.0.0.1 (key and certificate in one file), made by openssl."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed (it makes the test's certificate)")
    pem = tmp_path_factory.mktemp("tls") / "loopback.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(pem), "-out",
                    str(pem.with_suffix(".crt")), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext",
                    "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    pem.write_text(pem.read_text() + pem.with_suffix(".crt").read_text())
    return pem


@pytest.mark.parametrize("reply", [one_vector, trickle_body, trickle_headers], ids=["answer", "body", "headers"])
def test_the_deadline_holds_over_https(reply, certificate, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate))  # the client trusts the test's certificate
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate)
    with ScriptedServer(reply, tls=context) as server:
        client = client_for(server, timeout=2)
        client.MAX_RETRIES = 0
        if reply is one_vector:
            np.testing.assert_allclose(client.encode(["pump"]), [[0.6, 0.8]], atol=1e-6)
            return
        raised = ends_within(60, lambda: client.encode(["pump"]))
    assert isinstance(raised, EmbedderError) and "(last: TimeoutError: no whole answer within 2 s)" in str(raised)


def test_a_silent_tls_handshake_ends_within_the_deadline():
    with socket.create_server(("127.0.0.1", 0)) as listener:  # accepts the connection, never answers
        client = EndpointEmbedder(f"https://127.0.0.1:{listener.getsockname()[1]}/v1", MODEL, progress=False,
                                  timeout=2)
        client.MAX_RETRIES = 0
        raised = ends_within(60, lambda: client.encode(["pump"]))
    assert isinstance(raised, EmbedderError) and "no whole answer within 2 s" in str(raised)


def test_the_timeout_is_checked():
    for bad in (0, -1, float("nan"), float("inf"), "5", True):
        with pytest.raises(ValueError, match="--timeout"):
            EndpointEmbedder("http://127.0.0.1:9/v1", MODEL, timeout=bad)


def padded(size: int) -> bytes:
    """A valid answer for one input, padded with spaces to `size` bytes."""
    head = json.dumps({"data": [{"index": 0, "embedding": [0.6, 0.8]}]}).encode()
    return head[:-1] + b" " * (size - len(head)) + b"}"


@pytest.mark.parametrize("declared", [True, False], ids=["Content-Length", "no length"])
def test_an_answer_over_the_cap_is_refused_at_once(declared):
    def huge(handler, server) -> None:
        if declared:
            return answer_json(handler, padded(3 << 20))
        handler.protocol_version = "HTTP/1.0"  # no length: the body ends when the server closes
        handler.send_response(200)
        handler.end_headers()
        handler.wfile.write(padded(3 << 20))

    with ScriptedServer(huge) as server:
        client = client_for(server)
        client.MAX_ANSWER_BYTES = 1 << 20
        with pytest.raises(EmbedderError, match=r"malformed answer \(.*over the limit of 1,048,576"):
            client.encode(["pump"])
        assert len(server.requests) == 1, "too big is not retried"
        client.MAX_ANSWER_BYTES = 4 << 20
        np.testing.assert_allclose(client.encode(["pump"]), [[0.6, 0.8]], atol=1e-6)


# ---------------------------------------------------------------------------
# E3: every transport failure is retried, then one line
# ---------------------------------------------------------------------------


def cut_mid_body(handler, server) -> None:
    handler.send_response(200)
    handler.send_header("Content-Length", "5100")
    handler.end_headers()
    handler.wfile.write(b'{"data": [' + b" " * 90)


def not_http(handler, server) -> None:
    handler.wfile.write(b"HELLO THERE\r\n")


def closed_at_once(handler, server) -> None:
    handler.close_connection = True


def bad_chunk(handler, server) -> None:
    handler.send_response(200)
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    handler.wfile.write(b"zz\r\nnot a chunk\r\n")


@pytest.mark.parametrize(("reply", "last"), [(cut_mid_body, "IncompleteRead"), (not_http, "BadStatusLine"),
                                             (closed_at_once, "RemoteDisconnected"), (bad_chunk, "IncompleteRead")],
                         ids=["cut mid-body", "not HTTP", "closed", "bad chunk"])
def test_transport_failures_are_retried_then_one_line(reply, last):
    with ScriptedServer(reply) as server:
        client = client_for(server)
        with pytest.raises(EmbedderError) as caught:
            client.encode(["pump"])
    assert len(server.requests) == 1 + EndpointEmbedder.MAX_RETRIES and client.retries == EndpointEmbedder.MAX_RETRIES
    message = str(caught.value)
    assert f"still failed after 5 retries (last: {last}" in message and "\n" not in message


def test_a_cut_answer_stops_chunk_eval_in_one_line(capsys, monkeypatch):
    monkeypatch.setattr(EndpointEmbedder, "MAX_RETRIES", 1)  # one retry after 1 s: enough to show it
    with ScriptedServer(cut_mid_body) as server:
        status = main([str(DOCS), str(QUESTIONS), "--strategy", "recursive:128", "--no-cache", "--quiet",
                       "--embed-url", server.base_url, "--embed-model", MODEL, "--api-key-env", KEY_VAR])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 2, err
    assert "IncompleteRead" in err[0] and "retry 1 of 1 in 1 s" in err[0]
    assert err[1].startswith("chunk-eval: error: ") and "still failed after 1 retries (last: IncompleteRead" in err[1]


# ---------------------------------------------------------------------------
# E6: --timeout, and a retry is one line also under --quiet
# ---------------------------------------------------------------------------


def test_a_retry_prints_one_line_under_quiet(capsys):
    with EmbeddingServer(toy_embed, key=KEY, faults=["500"]) as server:
        status = main([str(DOCS), str(QUESTIONS), "--strategy", "recursive:128", "--no-cache", "--quiet",
                       "--embed-url", server.base_url, "--embed-model", MODEL, "--api-key-env", KEY_VAR])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 0 and len(err) == 1, err
    assert err[0] == (f"the embeddings endpoint {server.base_url}/embeddings: HTTP 500: The server had an error; "
                      "retry 1 of 5 in 1 s")


def test_timeout_option_reaches_the_request_and_needs_an_endpoint(capsys, monkeypatch):
    monkeypatch.setattr(EndpointEmbedder, "MAX_RETRIES", 0)
    with ScriptedServer(trickle_body) as server:
        began = time.perf_counter()
        status = main([str(DOCS), str(QUESTIONS), "--strategy", "recursive:128", "--no-cache", "--quiet",
                       "--embed-url", server.base_url, "--embed-model", MODEL, "--api-key-env", KEY_VAR,
                       "--timeout", "1.5"])
        took = time.perf_counter() - began
    err = capsys.readouterr().err
    assert status == 2 and "(last: TimeoutError: no whole answer within 1.5 s)" in err and took < 60
    for extra, words in ((["--timeout", "5"], "--timeout applies only with --embed-url"),
                         (["--timeout", "0", "--embed-url", server.base_url, "--embed-model", MODEL], "--timeout 0.0")):
        assert main([str(DOCS), str(QUESTIONS), "--strategy", "fixed:64", "--no-cache", "--quiet", *extra]) == 2
        assert words in capsys.readouterr().err


# ---------------------------------------------------------------------------
# E4: a cached dimension the endpoint no longer answers is the cache's, and says what to do
# ---------------------------------------------------------------------------


def test_a_dimension_change_behind_the_same_model_blames_the_cache(tmp_path, capsys):
    dims = {"now": 8}

    def embed(texts: list[str]) -> np.ndarray:
        return np.hstack([toy_embed(texts)] * (dims["now"] // 8)) / np.sqrt(dims["now"] // 8)

    common = [str(DOCS), str(QUESTIONS), "--cache", str(tmp_path / "cache"), "--quiet", "--embed-model", MODEL,
              "--api-key-env", KEY_VAR]
    with EmbeddingServer(embed, key=KEY) as server:
        assert main([*common, "--embed-url", server.base_url, "--strategy", "recursive:128"]) == 0
        dims["now"] = 16  # the model behind the name changed
        capsys.readouterr()
        status = main([*common, "--embed-url", server.base_url, "--strategy", "recursive:128",
                       "--strategy", "fixed:64"])
    err = capsys.readouterr().err
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    folder = next(p for p in (tmp_path / "cache").iterdir() if p.is_dir())
    assert f"the vector cache {folder} holds 8-dimensional vectors for --embed-model {MODEL!r}" in err
    assert "now answers 16-dimensional ones" in err and "delete that folder or give another --cache" in err
    assert "malformed" not in err


def test_the_guide_states_the_deadline_and_the_cap_the_client_uses(capsys):
    from tests.test_endpoint import ROOT

    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert f"`--timeout SECONDS` in all, the whole answer included (default {EndpointEmbedder.TIMEOUT:g})" in readme
    assert f"at most {EndpointEmbedder.MAX_ANSWER_BYTES >> 20} MiB" in readme
    with pytest.raises(SystemExit):
        main(["--help"])
    assert f"(default {EndpointEmbedder.TIMEOUT:g})" in " ".join(capsys.readouterr().out.split())


def test_a_key_that_cannot_go_in_a_header_is_one_line_that_never_shows_it(monkeypatch):
    for bad in ("sk-secret-0123456789\n", "sk-secret-0123456789\r\nX-Injected: 1", "sk-sécret-0123456789"):
        monkeypatch.setenv(KEY_VAR, bad)
        with ScriptedServer(one_vector) as server, pytest.raises(EmbedderError) as caught:
            client_for(server).encode(["pump"])
        assert server.requests == [] and f"${KEY_VAR} holds a line break" in str(caught.value)
        assert "0123456789" not in str(caught.value)
