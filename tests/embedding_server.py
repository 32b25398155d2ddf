"""A small OpenAI-compatible embeddings server for the tests: `POST /v1/embeddings` on 127.0.0.1.

It speaks the protocol `rag_tools.embedders.EndpointEmbedder` speaks (`{"model", "input": [...]}` in,
`{"data": [{"index", "embedding"}], "model", "usage"}` out) and misbehaves on purpose, as real services do:
it answers in reverse order, sends a 429 with `Retry-After` and a 500 once each when asked to, refuses a
request without the right `Authorization: Bearer` header with a 401 that echoes the key it was sent (as some
services do, masked or not), answers 404 for another model, and can send a malformed answer.

    with EmbeddingServer(embed, key="k", faults=["429", "500"]) as server:
        server.base_url   # http://127.0.0.1:PORT/v1
        server.log        # one (status, inputs, seconds since start) per request

Started and stopped by the test that uses it, on a port the system picks (port 0), in a thread.
"""

from __future__ import annotations

import contextlib
import json
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

import numpy as np

MODEL = "minilm-test"
_Server = TypeVar("_Server", bound="LoopbackServer")


class LoopbackServer:
    """A `ThreadingHTTPServer` on 127.0.0.1, on a port the system picks (port 0), answering with `handler`
    in a daemon thread from `with` entry to exit (the base of the two servers below)."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def __enter__(self: _Server) -> _Server:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


class EmbeddingServer(LoopbackServer):
    """`embed(list[str]) -> array` behind the embeddings protocol, with the faults listed in `faults`
    ("429", "500", "malformed", "wrong-dimension"), each sent once, in order, before normal answers."""

    def __init__(self, embed: Callable[[list[str]], Any], *, key: str = "test-key", model: str = MODEL,
                 faults: Sequence[str] = (), retry_after: str = "1"):
        self.embed, self.key, self.model = embed, key, model
        self.faults = list(faults)
        self.retry_after = retry_after
        self.log: list[tuple[int, int, float]] = []
        self.dim: int | None = None
        self._lock = threading.Lock()
        self._started = time.perf_counter()
        super().__init__(self._handler())

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _answer(self, body: dict) -> tuple[int, dict, dict[str, str]]:
        """(status, JSON answer, extra headers) for one authorised request."""
        if body.get("model") != self.model:
            return 404, {"error": {"message": f"The model {body.get('model')!r} does not exist"}}, {}
        inputs = body.get("input")
        if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs):
            return 400, {"error": {"message": "input must be a list of strings"}}, {}
        fault = self.faults.pop(0) if self.faults else None
        if fault == "429":
            return 429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": self.retry_after}
        if fault == "500":
            return 500, {"error": {"message": "The server had an error"}}, {}
        vectors = np.asarray(self.embed(inputs), dtype=np.float32)
        if fault == "wrong-dimension":
            vectors = vectors[:, :-1]
        data = [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]} for i, v in enumerate(vectors)]
        if fault == "malformed":
            data = [{"object": "embedding", "index": i, "embedding": "not a vector"} for i in range(len(inputs))]
        return 200, {"object": "list", "data": data[::-1], "model": self.model,  # out of order on purpose
                     "usage": {"prompt_tokens": 0, "total_tokens": 0}}, {}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet: the test reads `server.log`
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                sent = self.headers.get("Authorization", "")
                with server._lock:
                    if self.path != "/v1/embeddings":
                        status, answer, headers = 404, {"error": {"message": f"no route {self.path}"}}, {}
                    elif sent != f"Bearer {server.key}":
                        status, headers = 401, {}
                        answer = {"error": {"message": f"Incorrect API key provided: {sent.removeprefix('Bearer ')}"}}
                    else:
                        status, answer, headers = server._answer(body)
                    server.log.append((status, len(body.get("input") or []), time.perf_counter() - server._started))
                payload = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

        return Handler


class ScriptedServer(LoopbackServer):
    """A loopback HTTP server whose answer to every request is `reply(handler, server)`, which may write anything
    to `handler.wfile`: a redirect, a body sent a byte a second, a connection closed mid-body, bytes that are
    not HTTP; over HTTPS when given a server-side `tls` context. `requests` logs each request it read as
    (method, path, headers); `stopping` is set when the server stops, so a reply that trickles ends with it.

        with ScriptedServer(lambda handler, server: handler.wfile.write(b"HELLO THERE\\r\\n")) as server:
            server.base_url   # http://127.0.0.1:PORT/v1
    """

    def __init__(self, reply: Callable[[BaseHTTPRequestHandler, ScriptedServer], Any], *,
                 tls: ssl.SSLContext | None = None):
        self.reply = reply
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.stopping = threading.Event()
        super().__init__(self._handler())
        if tls is not None:  # HTTPS with the context's certificate
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.scheme = "http" if tls is None else "https"

    @property
    def base_url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}/v1"

    def __exit__(self, *exc: Any) -> None:
        self.stopping.set()  # a reply that trickles ends before the server waits for its threads
        super().__exit__(*exc)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _any(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                server.requests.append((self.command, self.path, dict(self.headers.items())))
                with contextlib.suppress(OSError):  # the client gave up (its deadline): nothing more to send
                    server.reply(self, server)

            do_GET = do_POST = do_PUT = _any

        return Handler
